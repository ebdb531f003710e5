"""Extraction rules that generalise beyond the pages they were built on: detection by evidence, headings in
every layout, annexes, requisites in every form (numbers, dates, issuers, statuses) as reference data with
examples, both zan.gov.kz layouts, and eCFR structure by designator levels."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from extractors.detect import detect, extract
from extractors.ecfr import assign_levels, parse_ecfr_xml
from extractors.model import ExtractError
from extractors.requisites import parse_requisites
from extractors.structure import Line, build
from extractors.zan_portal import parse_zan_record
from schemas.reference import find_issuer, find_local_issuer, issuers, local_bodies
from schemas.statuses import says_repealed, status_of
from tests.conftest import ROOT, SAMPLE, corpus_file

FIXTURES = ROOT / "tests" / "fixtures"

# --- detection by evidence --------------------------------------------------------------------------------


def test_a_scraped_adilet_page_is_read_as_adilet_whatever_its_head_holds() -> None:
    path = corpus_file("adilet/rus/Z1900000213.html")  # the ASCII word «adilet» is nowhere near the top
    detection = detect(path, path.read_text("utf-8")[:65536])
    assert detection.locked and detection.candidates == ("adilet_html",)
    assert "file name Z1900000213 is an adilet id → adilet_html" in [str(e) for e in detection.evidence]
    assert extract(path, path.read_bytes()).parser == "adilet_html"


def test_a_page_in_an_adilet_folder_named_by_id_is_never_read_as_a_standard(tmp_path: Path) -> None:
    page = tmp_path / "adilet" / "rus" / "V2499000001.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body><h1>ISO 45001 Occupational health</h1><p>text</p></body></html>", "utf-8")
    with pytest.raises(ExtractError) as caught:
        extract(page, page.read_bytes())
    assert "no <article> body" in caught.value.reason and "read as adilet_html" in caught.value.reason


def test_an_unplaced_page_says_which_parsers_were_tried_and_why_each_declined(tmp_path: Path) -> None:
    page = tmp_path / "memo.html"
    page.write_text("<html><body><h1>A memo</h1><p>about nothing</p></body></html>", "utf-8")
    with pytest.raises(ExtractError) as caught:
        extract(page, page.read_bytes())
    reason = caught.value.reason
    assert "tried adilet_html: no <article> body" in reason and "standard_html: no standard designation" in reason


def test_standards_in_their_folder_are_read_as_standards() -> None:
    path = SAMPLE / "standards" / "nfpa" / "NFPA_652.html"
    assert extract(path, path.read_bytes()).parser == "standard_html"


# --- headings, annexes, quotations --------------------------------------------------------------------------


def _labels(lines: list[Line]) -> list[tuple[int, str]]:
    units, _ = build(lines)
    return [(u.annex, u.label or "") for u in units if u.kind == "article"]


def test_upper_case_and_plain_paragraph_headings_count_only_in_their_own_order() -> None:
    lines = [
        Line("СТАТЬЯ 1. Общие положения"),
        Line("Текст статьи."),
        Line("Статья 2. Внести в Кодекс следующие изменения:"),
        Line("Статья 311-2. Нарушение законодательства"),  # a plain line out of the act's order: the code's
        Line("СТАТЬЯ 3. Порядок введения в действие"),
    ]
    assert _labels(lines) == [(0, "1"), (0, "2"), (0, "3")]


def test_a_quotation_keeps_marked_headings_inside_it_as_text() -> None:
    lines = [
        Line("Статья 1", heading=True),
        Line("Изложить главу в следующей редакции:"),
        Line('"Глава VII Наблюдатели', heading=True),
        Line("Статья 21", heading=True),  # inside the open quotation: the amended act's article
        Line('Текст статьи 21.".'),
        Line("Статья 2", heading=True),
    ]
    assert _labels(lines) == [(0, "1"), (0, "2")]


def test_after_the_signature_a_document_title_opens_an_annex_with_its_own_articles() -> None:
    lines = [
        Line("Ратифицировать Соглашение между Республикой Казахстан и Королевством Иордания."),
        Line("Президент Республики Казахстан | Н. НАЗАРБАЕВ"),
        Line("СОГЛАШЕНИЕ между Правительством Республики Казахстан и Правительством Королевства", heading=True),
        Line("Статья 1", heading=True),
        Line("Стороны сотрудничают."),
        Line("Приложение 1 к Соглашению"),
        Line("ОПИСАНИЕ пунктов пропуска", heading=True),
    ]
    units, _ = build(lines)
    annexes = [(u.annex, u.heading) for u in units if u.kind == "annex"]
    assert annexes == [(1, lines[2].text), (2, "ОПИСАНИЕ пунктов пропуска")]
    assert _labels(lines) == [(1, "1")]


def test_rules_approved_by_an_order_keep_their_points_per_paragraph() -> None:
    lines = [
        Line("1. Утвердить прилагаемые Правила."),
        Line("2. Настоящий приказ вводится в действие."),
        Line("Министр | Т. Дуйсенова"),
        Line("Утверждены приказом Министра от 25 декабря 2024 года № 211"),
        Line("Правила обучения", heading=True),
        Line("Глава 1. Общие положения", heading=True),
        Line("1. Настоящие Правила определяют порядок."),
        Line('"6. Цитата изменяемого пункта."'),
        Line("12. Инструктаж проводится."),
    ]
    units, _ = build(lines)
    rules = [u for u in units if u.annex == 1]
    assert rules[0].kind == "annex" and rules[0].heading == "Правила обучения"
    assert [p for u in rules for p in u.points if p] == ["1", "12"]
    assert [p for u in units if not u.annex for p in u.points if p] == ["1", "2"]


# --- requisites: numbers, dates, issuers, statuses -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "doc_type", "number", "issuer", "date"),
    [
        (
            "Закон Республики Казахстан от 18 ноября 2015 года № 286-V ЗРК.",
            "law",
            "286-V",
            "Парламент РК",
            dt.date(2015, 11, 18),
        ),
        ("Закон Республики Казахстан от 13 декабря 2005 года N 94", "law", "94", "Парламент РК", dt.date(2005, 12, 13)),
        (
            "Приказ Министра национальной экономики Республики Казахстан от 28 февраля 2015 года № 174",
            "order",
            "174",
            "МНЭ",
            dt.date(2015, 2, 28),
        ),
        (
            "Приказ Министра цифрового развития, инноваций и аэрокосмической промышленности Республики Казахстан от 31 марта 2020 года № 117/НҚ",
            "order",
            "117/НҚ",
            "МЦРИАП",
            dt.date(2020, 3, 31),
        ),
        (
            "Решение Атбасарского районного маслихата Акмолинской области от 18 марта 2026 года № 8С 37/5",
            "decision",
            "8С 37/5",
            "маслихат",
            dt.date(2026, 3, 18),
        ),
        (
            "Нормативное постановление Конституционного Суда Республики Казахстан от 20 января 2026 года № 81-НП",
            "ruling",
            "81-НП",
            "КС РК",
            dt.date(2026, 1, 20),
        ),
        (
            "Қазақстан Республикасы Мәдениет және ақпарат министрінің 2023 жылғы 14 қыркүйектегі № 68/НҚ бұйрығы",
            "order",
            "68/НҚ",
            "МКИ",
            dt.date(2023, 9, 14),
        ),
        (
            "Указ Президента Республики Казахстан от 28 августа 2004 года N 1428. Утратил силу Указом Президента Республики Казахстан от 4 мая 2014 года № 814",
            "decree",
            "1428",
            "Президент РК",
            dt.date(2004, 8, 28),
        ),
    ],
)
def test_requisites_in_every_form(line: str, doc_type: str, number: str, issuer: str, date: dt.date) -> None:
    r = parse_requisites(line)
    assert (r.doc_type, r.law_zrk or r.order_number, r.issuer, r.date_approved) == (doc_type, number, issuer, date)


def test_a_repeal_clause_in_the_requisites_is_a_status_not_the_acts_number() -> None:
    r = parse_requisites("Постановление Правительства Республики Казахстан от 3 декабря 2019 года № 900. "
                         "Утратило силу постановлением Правительства Республики Казахстан от 22 февраля 2023 года № 149.")  # fmt: skip
    assert (r.order_number, r.date_approved, r.status) == ("900", dt.date(2019, 12, 3), "repealed")


def test_local_bodies_keep_their_region() -> None:
    r = parse_requisites("Постановление акимата Камыстинского района Костанайской области от 19 марта 2026 года № 29")
    assert (r.issuer, r.region, r.issuer_full) == (
        "акимат",
        "Костанайская область",
        "акимата Камыстинского района Костанайской области",
    )
    assert find_local_issuer("Ақмола облысы Атбасар аудандық мәслихатының шешімі").short == "маслихат"  # type: ignore[union-attr]


def test_every_issuer_reads_its_own_examples_and_no_one_elses() -> None:
    shorts = [i.short for i in issuers()]
    assert len(shorts) == len(set(shorts)) and len(shorts) >= 40
    for issuer in issuers():
        assert issuer.examples, issuer.short
        for example in issuer.examples:
            found = find_issuer(example)
            assert found is not None and found.short == issuer.short, (issuer.short, example)
    for short, _, examples in local_bodies():
        for example in examples:
            assert find_issuer(example) is None and find_local_issuer(example).short == short  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("label", "status"),
    [
        ("Действующий", "in_force"), ("Новый", "in_force"), ("Обновленный", "updated"),
        ("Утративший силу", "repealed"), ("Не введен в действие", "not_in_force"),
        ("Қолданыстағы", "in_force"), ("Жаңа", "in_force"), ("Жаңартылған", "updated"),
        ("Күшін жойған", "repealed"), ("Күші жойылған", "repealed"), ("exe", "in_force"), ("Утpатил силу", "repealed"),
        ("что-то ещё", None),
    ],
)  # fmt: skip
def test_statuses_in_russian_kazakh_and_portal_codes(label: str, status: str | None) -> None:
    assert status_of(label) == status


def test_a_repeal_note_is_the_acts_own_only_when_it_opens_the_note() -> None:
    assert says_repealed("Сноска. Утpатил силу Указом Пpезидента РК от 18.07.1995 № 2367")  # Latin «p», as received
    assert says_repealed("Ескерту. Күші жойылды - ҚР 2015.23.11. № 414-V Кодексімен")
    assert not says_repealed("Сноска. Пункт 3 утратил силу Законом РК от 04.05.2020 № 321-VI")


# --- zan.gov.kz: both layouts, fields checked at the boundary ---------------------------------------------------


def test_newer_zan_layout_keeps_its_adilet_id_and_says_its_status_is_unstated() -> None:
    path = FIXTURES / "zan" / "V2600038175_rus.json"
    doc = parse_zan_record(path.read_bytes(), str(path))
    r = doc.requisites
    assert (r.adilet_id, r.order_number, r.issuer, r.doc_type) == ("V2600038175", "81-НП", "КС РК", "ruling")
    assert r.status == "unknown" and doc.notices == ["no status field; status set to unknown"]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"_id": "1", "title": 123, "text": "т"}, "field 'title' must be str, not int"),
        ({"_id": "1", "title": "т", "text": "т", "url": {}}, "field 'url' must be str, not dict"),
        ({"_id": True, "title": "т", "text": "т"}, "field '_id' must be str or int, not bool"),
        ({"_id": "1", "title": "т", "text": "т", "act_types": ["ПРИК"]}, "field 'act_types' must be str, not list"),
        ({"_id": "1", "title": "т\ud800", "text": "т"}, "unpaired surrogate"),
        ({"title": "т", "text": "т"}, "lacks _id"),
    ],
)
def test_zan_fields_are_checked_against_their_types(record: dict, reason: str) -> None:  # type: ignore[type-arg]
    raw = json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with pytest.raises(ExtractError, match=reason.replace("(", r"\(")):
        parse_zan_record(raw, "x.json")


def test_zan_nan_is_not_a_json_value() -> None:
    with pytest.raises(ExtractError, match="invalid JSON: NaN"):
        parse_zan_record(b'{"_id": NaN, "title": "t", "text": "t"}', "x.json")


# --- eCFR: designator levels from the XML, roman numerals kept in their paragraph ------------------------------


def test_ecfr_roman_subparagraphs_stay_inside_their_lettered_paragraph() -> None:
    path = FIXTURES / "ecfr" / "29CFR1910.147.xml"
    doc = parse_ecfr_xml(path.read_bytes(), str(path))
    sections = [u.label for u in doc.units if u.kind == "section"]
    assert sections == ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)"]  # no false (i) or (v)
    f = next(u for u in doc.units if u.label == "(f)")
    assert [p for p in f.points if p and p.startswith("(f)(1)")] == [
        "(f)(1)", "(f)(1)(i)", "(f)(1)(ii)", "(f)(1)(iii)", "(f)(1)(iv)", "(f)(1)(v)"
    ]  # fmt: skip
    assert "(f)(3)(ii)(D)" in f.points and "(f)(4)" in f.points
    appendix = [u for u in doc.units if u.kind == "annex"]
    assert [u.heading for u in appendix] == ["Appendix A to § 1910.147—Typical Minimal Lockout Procedures"]
    assert not [p for p in f.paragraphs if "simple lockout procedure" in p]  # Appendix A is not part of (f)


def test_ecfr_1910_146_keeps_c_5_i_in_c_and_reads_i_after_h_as_a_letter() -> None:
    path = SAMPLE / "standards" / "osha" / "29CFR1910.146.xml"
    doc = parse_ecfr_xml(path.read_bytes(), str(path))
    assert [u.label for u in doc.units if u.kind == "section"] == [f"({c})" for c in "abcdefghik"]
    c = next(u for u in doc.units if u.label == "(c)")
    assert [p for p in c.points if p and "(5)(" in p] == ["(c)(5)(i)", "(c)(5)(i)(A)", "(c)(5)(i)(B)", "(c)(5)(ii)"]
    i = next(u for u in doc.units if u.label == "(i)")
    assert i.points == ["(i)", "(i)(1)", "(i)(2)"]


@pytest.mark.parametrize(
    ("markers", "levels"),
    [
        ([("h", False), ("1", False), ("i", False), ("ii", False)], [1, 2, 3, 3]),  # (i) then (ii): roman
        ([("h", False), ("1", False), ("i", False), ("1", False)], [1, 2, 1, 2]),  # (i) then (1): the letter
        ([("f", False), ("1", False), ("i", False), ("j", False)], [1, 2, 3, 1]),  # (i) under (f)(1): roman
        ([("a", False), ("1", False), ("i", False), ("A", False), ("1", True), ("i", True)], [1, 2, 3, 4, 5, 6]),
        ([("u", False), ("v", False)], [1, 1]),
        ([("a", False), ("1", False), ("iv", False), ("v", False)], [1, 2, 3, 3]),
    ],
)
def test_designator_levels(markers: list, levels: list) -> None:  # type: ignore[type-arg]
    assert assign_levels(markers) == levels


@pytest.mark.parametrize(
    ("title", "body", "doc_type"),
    [
        ("О введении в действие Уголовно-процессуального кодекса Республики Казахстан",
         "Статья 1. Ввести в действие Уголовно-процессуальный кодекс. Настоящий Закон вводится в действие", "law"),
        ("Қазақстан Республикасының Қылмыстық-процестік кодексін күшіне енгізу туралы",
         "1-бап. Кодекс күшіне енгізілсін.\n\nҚазақстан Республикасының Президенті", "law"),
        ("В О Д Н Ы Й  К О Д Е К С  Р Е С П У Б Л И К И  К А З А Х С Т А Н", "Статья 1. Основные понятия", "code"),
        ("Трудовой кодекс Республики Казахстан", "Статья 1. Основные понятия", "code"),
        ("Кодекс Республики Казахстан о недрах и недропользовании", "Статья 1. Отношения", "code"),
        ("Қазақстан Республикасының Еңбек кодексі", "1-бап. Негізгі ұғымдар", "code"),
    ],
)  # fmt: skip
def test_a_markdown_export_is_typed_by_its_titles_form_not_a_word_in_it(title: str, body: str, doc_type: str) -> None:
    from extractors.markdown import parse_markdown_act

    document = parse_markdown_act(f"# {title}\n\n{body}\n", "kzlaws/rus/990100.md")
    assert document.requisites.doc_type == doc_type


def test_a_bis_article_is_one_label_in_headings_notes_amending_texts_and_questions() -> None:
    """«Статья 10 bis»: the one article-label pattern (schemas.identifiers.ARTICLE_LABEL) reads it everywhere."""
    from extractors.amendments import amendments
    from extractors.notes import parse_note
    from extractors.structure import match_article
    from lookup.grammar import parse

    assert match_article("Статья 10 bis. Высшие ценности") == ("10bis", "Высшие ценности")
    assert match_article("Статья 127-2. Гарантии") == ("127-2", "Гарантии")
    assert [
        r.article
        for r in parse_note("Сноска. Статья 10 bis с изменениями, внесенными Законом РК от 10.03.2017 № 51-VI.")
    ] == ["10bis"]
    text = "1. Внести в Закон Республики Казахстан от 2 августа 1999 года «О языках» следующие изменения:\n1) статью 10 bis исключить;"
    assert {a.article for a in amendments(text)} == {"10bis"}
    assert [(i.kind, i.article) for i in parse("ст. 10 bis Конституции")] == [("code_article", "10bis")]


def test_the_audit_counts_pieces_that_start_like_an_article_heading_and_nothing_inside_them() -> None:
    from extractors.structure import count_heading_like

    pieces = [
        "Статья 1. Цели",  # the first piece counts as much as any other
        "текст со ссылкой на\nСтатья 5 внутри",  # a line break inside a piece is only spacing
        "  «Статья 2. Задачи",  # quoted and indented: still heading-like
        "156\u2013бап. Еңбек шарты",  # a dash spelling folds
        "",
        "Article 3 Scope",
        "Статьи 4 и 5",
    ]
    assert count_heading_like(pieces) == 4
    assert count_heading_like([]) == 0 and count_heading_like(["", ""]) == 0


def test_the_audit_count_agrees_with_heading_like_for_every_dash_spelling() -> None:
    """The one-pass count takes dashes in its pattern rather than folding them first: for every spelling
    ``fold_dashes`` folds, in both places a Kazakh heading has one, it counts what ``heading_like`` says."""
    from extractors.structure import count_heading_like, heading_like
    from schemas.identifiers import _DASHES

    for dash in ["-", *map(chr, _DASHES)]:
        pieces = [
            f"156{dash}бап. Еңбек шарты",
            f"5 {dash} 1 бап",
            f"5{dash}1{dash}бап",
            f"Статья 5{dash}1.",
            f"{dash}5 бап",
        ]
        assert count_heading_like(pieces) == sum(map(heading_like, pieces)) == 4, ascii(dash)


def test_the_article_headings_signal_is_a_line_that_starts_like_one_as_a_multiline_pattern_reads_it() -> None:
    """Detection looks for a line feed and the heading, and for the heading at the head's start: the same
    lines a multiline ``^`` finds, no more (a heading after a carriage return or mid-line is not a line's)."""
    import re

    from extractors.detect import _ARTICLE_LINE, _signals

    multiline = re.compile(r"(?m)^" + _ARTICLE_LINE)
    heads = ["Статья 1. Цели", "текст\n## Статья 2", "текст\n\n  156-бап. Еңбек", "текст Статья 3", "a\rСтатья 4",
             "x\n> «Статья 5", "5-бап", "текст 5 бап", "\n\n", "", "12 бапта"]  # fmt: skip
    for head in heads:
        said = any(e.signal == "article headings" for e in _signals(Path("a.md"), head))
        assert said == bool(multiline.search(head)), head
    assert [bool(multiline.search(h)) for h in heads].count(True) == 5
