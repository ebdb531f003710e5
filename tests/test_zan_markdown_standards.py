"""zan.gov.kz records, markdown codes (Kazakh Labour Code) and standards in every format."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from extractors.discover import extract_file
from extractors.ecfr import parse_ecfr_xml
from extractors.markdown import parse_markdown_act
from extractors.model import ExtractError
from extractors.standards import parse_standard_text
from extractors.zan_portal import parse_zan_record
from tests.conftest import CORPUS, SAMPLE, corpus_file


def _zan_records() -> list:  # type: ignore[type-arg]
    corpus_file("zan/223240_rus.json")
    return sorted((CORPUS / "zan").glob("*.json"))


def test_every_zan_record_has_number_issuer_and_date_from_its_requisites() -> None:
    for path in _zan_records():
        req = parse_zan_record(path.read_bytes(), str(path)).requisites
        assert req.order_number or req.law_zrk, path
        assert req.issuer and req.date_approved, path
        assert req.status == "in_force" and req.portal_id == path.name.split("_")[0]


@pytest.mark.parametrize(
    ("record", "field", "value"),
    [
        ("223240", "law_zrk", "271-VIII"),
        ("223251", "issuer", "МФ"),
        ("223251", "order_number", "193"),
        ("223259", "issuer", "МЗ"),
        ("223215", "doc_type", "resolution"),
        ("223231", "order_number", "77-НП"),
        ("223249", "registration_number", "38180"),
        ("223249", "registration_date", dt.date(2026, 3, 20)),
        ("223255", "order_number", "8С 37/5"),
    ],
)
def test_zan_record_fields(record: str, field: str, value: object) -> None:
    path = corpus_file(f"zan/{record}_rus.json")
    assert getattr(parse_zan_record(path.read_bytes(), str(path)).requisites, field) == value


@pytest.mark.parametrize(
    ("payload", "reason"),
    [(b"{not json", "invalid JSON"), (b"[]", "JSON object"), (json.dumps({"_id": "1"}).encode(), "lacks title")],
)
def test_bad_zan_records_are_extract_errors_naming_the_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(ExtractError, match=reason):
        parse_zan_record(payload, "bad.json")


def test_kazakh_markdown_code_skips_table_of_contents() -> None:
    path = corpus_file("kzlaws/kaz/95666.md")
    doc = parse_markdown_act(path.read_text("utf-8"), str(path))
    assert doc.language == "kaz" and doc.requisites.adilet_id == "K1500000414"
    labels = doc.article_labels
    assert len(labels) == 206 and len(set(labels)) == 206  # each heading appears twice in the file
    assert {"127-1", "127-2", "156", "204"} <= set(labels)


def test_kazakh_dashed_bap_headings_from_snippet() -> None:
    from extractors.structure import match_article

    path = corpus_file("snippets/kzlaws_quyse_10_kaz.md")
    headings = [line.lstrip("# ") for line in path.read_text("utf-8").splitlines() if line.startswith("## ")]
    labels = [match_article(h)[0] for h in headings if match_article(h)]  # type: ignore[index]
    assert labels == ["1", "2", "3", "4", "5", "5-1", "6"]


def test_ecfr_xml_sections_follow_top_level_letters() -> None:
    path = SAMPLE / "standards" / "osha" / "29CFR1910.146.xml"
    doc = parse_ecfr_xml(path.read_bytes(), str(path))
    assert (doc.requisites.intl_org, doc.requisites.intl_section, doc.requisites.jurisdiction) == (
        "OSHA",
        "1910.146",
        "US",
    )
    labels = [u.label for u in doc.units]
    assert labels == ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)", "(g)", "(h)", "(i)", "(k)"]


@pytest.mark.parametrize(
    ("relative", "org", "section"),
    [
        ("standards/api/API_RP_75.txt", "API", "RP 75"),
        ("standards/iso/ISO_45001_2018.txt", "ISO", "45001:2018"),
        ("standards/nfpa/NFPA_652.html", "NFPA", "652"),
        ("standards/eaeu/TR_TS_004_2011.html", "EAEU", "004/2011"),
        ("standards/gost/GOST_12.0.004-2015.txt", "ГОСТ", "12.0.004-2015"),
        ("standards/iogp/IOGP_423.pdf", "IOGP", "423"),
    ],
)
def test_standards_are_identified_from_their_title(relative: str, org: str, section: str) -> None:
    outcome = extract_file(SAMPLE / relative)
    assert outcome.document is not None, outcome.error
    req = outcome.document.requisites
    assert (req.doc_type, req.intl_org, req.intl_section) == ("standard", org, section)
    assert len(outcome.document.units) >= 3


def test_text_without_designation_is_rejected_with_reason() -> None:
    with pytest.raises(ExtractError, match="no standard designation"):
        parse_standard_text("Some memo\nabout nothing\n\n1 Scope\ntext", "memo.txt")


def test_unreadable_pdf_becomes_a_reject_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 garbage")
    outcome = extract_file(bad)
    assert outcome.document is None and outcome.error


def test_lines_a_source_marks_normalized_are_so_and_the_builder_normalizes_the_rest() -> None:
    """Markdown and zan.gov.kz lines are normalised once, by their source, and say so; the builder then takes
    their text as it is. The mark must be true of every line the real files give, and a line without it is
    still normalised by the builder."""
    from extractors import markdown, zan_portal
    from extractors.structure import Line, build_units
    from schemas.identifiers import normalize_space

    corpus_file("kzlaws")
    sources = [(markdown._lines, p.read_text("utf-8").splitlines()) for p in sorted((CORPUS / "kzlaws").rglob("*.md"))]
    sources += [(lambda text: zan_portal._lines(text, ""), json.loads(p.read_bytes())["text"]) for p in _zan_records()]
    seen = 0
    for lines_of, raw in sources:
        for line in lines_of(raw):
            assert line.normalized and line.text == normalize_space(line.text), line
            seen += 1
    assert seen > 1000
    units = build_units([Line("Статья 1. Цели", heading=True), Line(" a\u00a0 b\u200b ", normalized=False)])
    assert units[-1].paragraphs == ["a b"]
