"""adilet pages: both layouts, every article-heading layout, notes kept apart, trailing junk ignored."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path

import pytest

from extractors.adilet import parse_adilet_html
from extractors.model import ExtractError
from tests.conftest import SAMPLE, corpus_file


def _parse(relative: str):  # type: ignore[no-untyped-def]
    path = corpus_file(relative)
    return parse_adilet_html(path.read_text("utf-8"), str(path))


def test_labour_code_body_only_page_has_all_221_articles_and_reference_requisites() -> None:
    doc = _parse("adilet/rus/K1500000414.html")
    labels = doc.article_labels
    assert len(labels) == 221 and len(set(labels)) == 221
    assert {"156", "158", "162", "182", "127-2", "20-1", "188-1"} <= set(labels)
    req = doc.requisites
    assert (req.adilet_id, req.doc_type, req.law_zrk, req.date_approved) == (
        "K1500000414",
        "code",
        "414-V",
        dt.date(2015, 11, 23),
    )
    assert "ТК РК" in req.aliases and "ҚР ЕК" in req.aliases


def test_note_span_starting_with_statya_is_not_an_article_heading() -> None:
    doc = _parse("adilet/rus/K1500000414.html")
    art68 = next(u for u in doc.units if u.label == "68")
    assert any(n.startswith("Статья 68 с изменением") or "Статья 68 с изменением" in n for n in art68.notes)


def test_editorial_notes_are_kept_apart_from_normative_text() -> None:
    doc = _parse("adilet/rus/K1500000414.html")
    paragraphs = [p for u in doc.units for p in u.paragraphs]
    notes = [n for u in doc.units for n in u.notes]
    assert not [p for p in paragraphs if p.startswith(("Сноска", "Примечание ИЗПИ"))]
    assert sum(n.startswith("Сноска") for n in notes) > 100


def test_a_link_inside_a_note_belongs_to_the_note() -> None:
    """«Сноска. Статья 15 … от 04.05.2020 </span><a …>№ 321-VІ</a><span class="note"> (вводится …)»: the
    amending law's number is the note's, never a line of article 15's normative text."""
    doc = _parse("adilet/rus/K1500000414.html")
    art15 = next(u for u in doc.units if u.label == "15")
    note = next(n for n in art15.notes if n.startswith("Сноска. Статья 15"))
    assert "от 04.05.2020 № 321-VІ (вводится" in note and "от 21.12.2023 № 49-VIII (вводится" in note
    assert not [p for u in doc.units for p in u.paragraphs if re.fullmatch(r"(?:№ \d+-[IVXІ]+)+", p.strip())]


def test_trailing_extension_markup_is_never_text() -> None:
    doc = _parse("adilet/rus/K1500000414.html")
    text = " ".join(p for u in doc.units for p in u.paragraphs + u.notes)
    assert "shadowroot" not in text.lower() and "box-sizing" not in text


def test_constitution_h3_article_headings_without_period() -> None:
    doc = _parse("adilet/rus/K950001000_.html")
    labels = doc.article_labels
    assert len(set(labels)) == 102
    assert {"83-1", "94-1", "94-2", "1", "99"} <= set(labels)
    assert doc.requisites.date_approved == dt.date(1995, 8, 30)
    assert doc.requisites.status == "updated"
    art11 = next(u for u in doc.units if u.label == "11")
    assert art11.section_path == ["Раздел II Человек и гражданин"]


def test_law_full_page_requisites_and_quoted_heading_is_not_an_article() -> None:
    doc = _parse("adilet/rus/Z1500000410.html")
    assert doc.requisites.doc_title == "О противодействии коррупции"
    assert doc.requisites.law_zrk == "410-V"
    assert doc.requisites.date_approved == dt.date(2015, 11, 18)
    counts = Counter(doc.article_labels)
    assert len(counts) == 33 and counts["11"] == 1
    assert {"14-1", "24-1", "24-4", "26-1"} <= set(counts)
    art27 = next(u for u in doc.units if u.label == "27")
    assert any(p.startswith('"Статья 11.') for p in art27.paragraphs)


def test_bundled_kazakh_page_reads_bap_headings() -> None:
    path = SAMPLE / "adilet" / "kaz" / "K1500000414.html"
    doc = parse_adilet_html(path.read_text("utf-8"), str(path))
    assert doc.language == "kaz"
    assert doc.article_labels == ["156", "158", "162", "182"]
    assert doc.requisites.law_zrk == "414-V" and doc.requisites.doc_title == "Қазақстан Республикасының Еңбек кодексі"
    art156 = next(u for u in doc.units if u.label == "156")
    assert art156.section_path[-1] == "14-тарау. ҰЖЫМДЫҚ ШАРТ"
    assert art156.notes and art156.notes[0].startswith("Ескерту")


@pytest.mark.parametrize(
    ("name", "issuer", "number", "registration"),
    [
        ("V2400035612", "МТСЗН", "211", "35612"),
        ("V2100022334", "МЧС", "211", "22334"),
        ("V1500010907", "МЭ", "211", "10907"),
        ("V2100022239", "МЗ", "ҚР ДСМ-26", "22239"),
    ],
)
def test_bundled_orders_requisites(name: str, issuer: str, number: str, registration: str) -> None:
    path = SAMPLE / "adilet" / "rus" / f"{name}.html"
    req = parse_adilet_html(path.read_text("utf-8"), str(path)).requisites
    assert (req.doc_type, req.issuer, req.order_number, req.registration_number) == (
        "order",
        issuer,
        number,
        registration,
    )
    assert req.issuer_full and req.issuer_full.startswith("Министр")


def test_page_without_article_body_is_an_extract_error() -> None:
    with pytest.raises(ExtractError, match="no <article> body"):
        parse_adilet_html("<html><body><p>404</p></body></html>", "broken.html")


def test_a_page_saved_as_xhtml_or_naming_another_charset_is_read_as_the_utf_8_it_is(tmp_path: Path) -> None:
    """lxml refuses a str that opens with an XML declaration, and a declared charset must not undo the UTF-8
    decoding already done: both pages extract, their Russian text intact (they were rejects, or at risk)."""
    from extractors.discover import extract_file

    body = "<body><article><p><b>Статья 1. Цели</b></p><p>Работодатель обязан.</p></article></body></html>"
    pages = {
        "K0000000001": f'<?xml version="1.0" encoding="windows-1251"?>\n<html xmlns="http://www.w3.org/1999/xhtml">{body}',
        "K0000000002": f'<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"></head>{body}',
    }
    (tmp_path / "adilet").mkdir()
    for name, page in pages.items():
        path = tmp_path / "adilet" / f"{name}.html"
        path.write_text(page, "utf-8")
        outcome = extract_file(path)
        assert outcome.error is None, outcome.error
        article = outcome.document.units[-1]
        assert (article.label, article.heading, article.paragraphs) == ("1", "Статья 1. Цели", ["Работодатель обязан."])
