"""The 14 adilet pages and 6 kz-laws exports added to ../shared/corpus: each is read, and its facts (type,
number, date, issuer, status, the act's own articles, an annex's articles kept apart) are the ones read by
hand from the document's requisites line, status label and headings, not copied from the extractor."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import pytest

from extractors.discover import extract_file
from extractors.model import Document
from tests.conftest import corpus_file


@dataclass(frozen=True)
class Page:
    name: str
    doc_type: str
    number: str  # law_zrk when it has a convocation, else the act's number
    date: dt.date
    issuer: str
    status: str
    articles: tuple[str, ...]  # the act's own articles
    annex_articles: dict[int, int]  # annex n → how many articles it has


def _labels(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, n + 1))


PAGES = [
    # «Указ Президента Республики Казахстан от 10 апреля 2019 года № 20», label «Новый»; points, no articles
    Page("U1900000020", "decree", "20", dt.date(2019, 4, 10), "Президент РК", "in_force", (), {}),
    # «… от 28 августа 2004 года N 1428. Утратил силу Указом … № 814»; «УТВЕРЖДЕНО Указом» → Положение
    Page("U040001428_", "decree", "1428", dt.date(2004, 8, 28), "Президент РК", "repealed", (), {1: 0, 2: 0}),
    # «Постановление Правительства … от 3 декабря 2019 года № 900. Утратило силу …», status_yts
    Page("P1900000900", "resolution", "900", dt.date(2019, 12, 3), "ПРК", "repealed", (), {}),
    # «Закон … от 13 декабря 2005 года N 94»; the Ramsar Convention after the signature: Статья 1–12, 10 bis
    Page("Z050000094_", "law", "94", dt.date(2005, 12, 13), "Парламент РК", "in_force", (), {1: 13}),
    # «… от 2 июля 2014 года № 224-V ЗРК.», «Обновленный»; the ratified agreement has Статья 1–10
    Page("Z1400000224", "law", "224-V", dt.date(2014, 7, 2), "Парламент РК", "updated", (), {1: 10}),
    # «… от 3 июля 2014 года № 229-V ЗРК»; own <b>Статья 1./2.</b>, quoted «Статья 311-2.» and others
    Page("Z1400000229", "law", "229-V", dt.date(2014, 7, 3), "Парламент РК", "in_force", _labels(2), {}),
    # «… от 16 июля 2015 года № 330-V ЗРК»; own Статья 1, 2; quoted «Статья 7-1.», «Статья 18.»
    Page("Z1500000330", "law", "330-V", dt.date(2015, 7, 16), "Парламент РК", "in_force", _labels(2), {}),
    # «… от 12 июля 2017 года № 94-VI.» (no ЗРК); the ratified protocol has Статья 1, 2
    Page("Z1700000094", "law", "94-VI", dt.date(2017, 7, 12), "Парламент РК", "in_force", (), {1: 2}),
    # «… от 18 сентября 2018 года № 181-VІ ЗРК.» (Cyrillic І); protocol Статья 1–8, each beside a quoted one
    Page("Z1800000181", "law", "181-VI", dt.date(2018, 9, 18), "Парламент РК", "in_force", (), {1: 8}),
    # «… от 11 октября 2018 года № 185-VІ ЗРК.»; the KZ–Jordan agreement: Статья 1–21
    Page("Z1800000185", "law", "185-VI", dt.date(2018, 10, 11), "Парламент РК", "in_force", (), {1: 21}),
    # «… от 5 ноября 2018 года № 189-VІ ЗРК.»; the border treaty: Статья 1–10
    Page("Z1800000189", "law", "189-VI", dt.date(2018, 11, 5), "Парламент РК", "in_force", (), {1: 10}),
    # «… от 5 ноября 2018 года № 190-VІ ЗРК.»; the treaty: upper-case СТАТЬЯ 1–3; its annex «ОПИСАНИЕ»
    Page("Z1800000190", "law", "190-VI", dt.date(2018, 11, 5), "Парламент РК", "in_force", (), {1: 3, 2: 0}),
    # «… от 3 января 2019 года № 213-VІ ЗРК.»; plain «Статья 1.» / «Статья 2.» paragraphs
    Page("Z1900000213", "law", "213-VI", dt.date(2019, 1, 3), "Парламент РК", "in_force", _labels(2), {}),
    # «… от 17 апреля 2020 года № 319-VІ ЗРК.»; the protocol quotes the Charter's «Статья 21», «Статья 21¹»
    Page("Z2000000319", "law", "319-VI", dt.date(2020, 4, 17), "Парламент РК", "in_force", (), {1: 0}),
]


def _read(relative: str) -> Document:
    path = corpus_file(relative)
    outcome = extract_file(path)
    assert outcome.document is not None, outcome.error
    return outcome.document


def _annex_articles(doc: Document) -> dict[int, int]:
    annexes = {u.annex: 0 for u in doc.units if u.kind == "annex"}
    for unit in doc.units:
        if unit.kind == "article" and unit.annex:
            annexes[unit.annex] += 1
    return annexes


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_new_adilet_page_facts(page: Page) -> None:
    doc = _read(f"adilet/rus/{page.name}.html")
    r = doc.requisites
    assert doc.parser == "adilet_html" and r.adilet_id == page.name
    assert (r.doc_type, r.law_zrk or r.order_number, r.date_approved) == (page.doc_type, page.number, page.date)
    assert (r.issuer, r.status) == (page.issuer, page.status)
    assert tuple(doc.article_labels) == page.articles
    assert _annex_articles(doc) == page.annex_articles
    assert doc.headings.unexplained == 0


def test_annex_articles_are_their_own_part_and_never_the_acts() -> None:
    doc = _read("adilet/rus/Z1800000185.html")
    annex = [u for u in doc.units if u.kind == "annex"]
    assert len(annex) == 1 and annex[0].heading.startswith("СОГЛАШЕНИЕ между Правительством Республики Казахстан")
    art5 = next(u for u in doc.units if u.kind == "article" and u.label == "5")
    assert art5.annex == 1 and doc.article_labels == []


def test_ramsar_convention_reads_article_10_bis_apart_from_10() -> None:
    doc = _read("adilet/rus/Z050000094_.html")
    labels = [u.label for u in doc.units if u.kind == "article"]
    assert labels == [*_labels(10), "10bis", "11", "12"]


def test_quoted_headings_of_the_amended_code_stay_text() -> None:
    doc = _read("adilet/rus/Z1400000229.html")
    art1 = next(u for u in doc.units if u.label == "1")
    assert any(p.startswith("«Статья 311-2.") for p in art1.paragraphs)
    assert doc.headings.quoted >= 9 and not doc.headings.out_of_sequence


def test_superscript_article_number_is_read_as_a_dash_and_kept_as_quoted_text() -> None:
    doc = _read("adilet/rus/Z2000000319.html")
    text = [p for u in doc.units for p in u.paragraphs]
    assert "Статья 21-1" in text and not [u for u in doc.units if u.kind == "article"]


def test_repeal_note_is_kept_apart_and_own_points_are_not_the_quoted_ones() -> None:
    doc = _read("adilet/rus/P1900000900.html")
    notes = [n for u in doc.units for n in u.notes]
    assert any(n.startswith("Сноска. Утратило силу постановлением Правительства РК от 22.02.2023") for n in notes)
    assert [p for u in doc.units for p in u.points if p] == ["1", "2"]  # «"6. Торговое …» is quoted


def test_regulation_approved_by_a_decree_keeps_its_points() -> None:
    doc = _read("adilet/rus/U040001428_.html")
    [regulation, listing] = [u for u in doc.units if u.kind == "annex"]
    assert regulation.heading == "ПОЛОЖЕНИЕ о Республиканской гвардии Республики Казахстан"
    assert listing.heading.startswith("Перечень государственных учреждений")
    points = [p for u in doc.units if u.annex == 1 for p in u.points if p]
    assert points[0] == "1" and points[-1] == "29"  # «29. Реорганизация и упразднение …»
    assert [p for u in doc.units if u.annex == 2 for p in u.points if p] == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("relative", "language", "title_start", "status", "articles"),
    [
        ("kzlaws/rus/10189.md", "rus", "О внесении изменения и дополнения в Закон", "unknown", 0),
        ("kzlaws/kaz/10189.md", "kaz", '"Нормативтік құқықтық актілер туралы"', "unknown", 0),
        ("kzlaws/rus/10326.md", "rus", "О внесении изменений и дополнений в Закон", "unknown", 0),
        ("kzlaws/rus/10327.md", "rus", "О признании утратившим силу постановления", "unknown", 0),
        ("kzlaws/kaz/10327.md", "kaz", '"Монополияға қарсы келісілген', "unknown", 0),
        # «Сноска. Утpатил силу Указом Пpезидента РК …» (Latin «p»); plain «Статья 1.» … «Статья 6.»
        ("kzlaws/rus/104044.md", "rus", "О налоге на имущество физических лиц", "repealed", 6),
    ],
)
def test_every_kz_laws_export_is_an_act(
    relative: str, language: str, title_start: str, status: str, articles: int
) -> None:
    doc = _read(relative)
    r = doc.requisites
    assert doc.parser == "act_markdown" and doc.language == language
    assert r.doc_title and r.doc_title.startswith(title_start)
    assert (r.doc_type, r.status, r.portal_id) == ("law", status, relative.rsplit("/", 1)[1].removesuffix(".md"))
    assert doc.article_labels == list(_labels(articles))
    if status == "unknown":
        assert doc.notices == ["the export states no status; status set to unknown"]


def test_quoted_article_in_an_amending_export_is_not_an_article() -> None:
    doc = _read("kzlaws/rus/10326.md")
    assert doc.headings.quoted == 1 and doc.article_labels == []


def test_corpus_run_rejects_no_real_act(corpus_run) -> None:  # type: ignore[no-untyped-def]
    from enrich.query import connect

    _, home = corpus_run
    with connect(home) as con:
        rejects = con.sql("SELECT stage, source_file, reason FROM rejects").fetchall()
        languages = dict(con.sql("SELECT doc_id, languages FROM registry WHERE doc_id LIKE 'zan-10%'").fetchall())
        own = con.sql("SELECT code_articles FROM registry WHERE doc_id = 'z1800000185'").fetchall()
        annex = con.sql(
            "SELECT path, annex, annex_articles, code_articles FROM chunks WHERE doc_id = 'z1800000185' "
            "AND list_contains(annex_articles, '5')"
        ).fetchall()
    # only the bundled abridged copies lose to the real acts, each naming the file that was kept
    assert rejects and all(
        stage == "registry" and "/data/sample/" in source and "the same act" in reason
        for stage, source, reason in rejects
    )
    assert languages["zan-10189"] == ["kaz", "rus"] and languages["zan-10327"] == ["kaz", "rus"]
    assert own == [([],)] and annex == [("annex1/art5", 1, ["5"], [])]


def test_audit_shows_every_corpus_file_accepted_and_no_unexplained_heading_gap(corpus_run) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from cli import app
    from enrich.audit import audit_home

    _, home = corpus_run
    audit = audit_home(home)
    assert audit.gaps == 0 and audit.as_dict()["files_rejected"] == 0
    by_id = {d.doc_id: d for d in audit.documents}
    assert by_id["z1800000185"].parsers == ["adilet_html"] and by_id["z1800000185"].annex_articles == 21
    assert "file name Z1800000185 is an adilet id → adilet_html" in by_id["z1800000185"].evidence
    assert by_id["zan-104044"].missing == ["number", "date_approved", "issuer"]  # the export states none
    assert by_id["z1400000229"].quoted == 9 and by_id["k950001000_"].heading_lines == 102
    done = CliRunner().invoke(app, ["audit", "--home", str(home), "--strict"])
    assert done.exit_code == 0, done.output
    assert "0 files rejected; 0 unexplained heading lines" in done.output
    report = json.loads((home / "versions" / "v000001" / "report.json").read_text("utf-8"))
    assert report["extraction"]["unexplained_heading_lines"] == 0
    assert report["extraction"]["parsers"]["adilet_html"] >= 17
