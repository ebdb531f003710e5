"""The query grammar, table-driven (eyecite style): what each spelling must read, and what must read as
nothing or as a *different* identifier. Real spellings from ../shared/corpus/snippets are among the rows
(Kazakh requisites, «жылгы» typo, «№ ҚР ДСМ -36», «№ 9-ІV Заңымен» with a Cyrillic І)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.grammar import parse, rows
from schemas.identifiers import fold_dashes, fold_lookalikes, order_key
from tests.conftest import CORPUS

# (text, kind, canonical): the whole text is one identifier.
POSITIVE = [
    ("Приказ МТСЗН №211 от 25.12.2024", "order", "Приказ МТСЗН № 211 от 25.12.2024"),
    ("приказ МТСЗН № 211", "order", "Приказ МТСЗН № 211"),
    ("Приказ МТСЗН N 211", "order", "Приказ МТСЗН № 211"),
    ("приказ 211", "order", "Приказ № 211"),
    ("Приказ № 211", "order", "Приказ № 211"),
    ("Приказ №211 МТСЗН", "order", "Приказ МТСЗН № 211"),
    ("приказ Минтруда №211", "order", "Приказ МТСЗН № 211"),
    ("приказ МЧС РК № 211", "order", "Приказ МЧС № 211"),
    (
        "Приказ Министра по чрезвычайным ситуациям Республики Казахстан от 15 марта 2021 года № 211",
        "order",
        "Приказ МЧС № 211 от 15.03.2021",
    ),
    ("приказ Министра энергетики РК от 19 марта 2015 года № 211", "order", "Приказ МЭ № 211 от 19.03.2015"),
    ("приказ №211 от 15.03.2021", "order", "Приказ № 211 от 15.03.2021"),
    ("приказ 211 2015 года", "order", "Приказ № 211 2015 года"),
    ("приказ № 311", "order", "Приказ № 311"),
    ("Приказ МТСЗН №311 от 28.06.2023", "order", "Приказ МТСЗН № 311 от 28.06.2023"),
    ("приказ № 411", "order", "Приказ № 411"),
    ("приказ № 2119", "order", "Приказ № 2119"),
    ("приказ №21", "order", "Приказ № 21"),
    ("Приказ №999", "order", "Приказ № 999"),
    ("order No. 211", "order", "Приказ № 211"),
    ("Order № 211", "order", "Приказ № 211"),
    ("№ ҚР ДСМ-26", "order", "№ ҚР ДСМ-26"),
    ("№ ҚР ДСМ -26", "order", "№ ҚР ДСМ-26"),
    ("№ ҚР ДСМ‑26", "order", "№ ҚР ДСМ-26"),
    ("№ ҚР ДСМ – 26", "order", "№ ҚР ДСМ-26"),
    ("Приказ МЗ № ҚР ДСМ-26 от 20.02.2021", "order", "Приказ МЗ № ҚР ДСМ-26 от 20.02.2021"),
    ("№ ҚР ДСМ-322/2020", "order", "№ ҚР ДСМ-322/2020"),
    ("№ ҚР ДСМ-36", "order", "№ ҚР ДСМ-36"),
    ("№ ҚР ДСМ-76 бұйрығымен", "order", "Приказ № ҚР ДСМ-76"),
    ("МТСЗН № 211", "order", "МТСЗН № 211"),
    ("№211 от 25.12.2024", "order", "№ 211 от 25.12.2024"),
    ("№ 211 бұйрығы", "order", "Приказ № 211"),
    ("2024 жылғы 25 желтоқсандағы № 211 бұйрық", "order", "Приказ № 211 от 25.12.2024"),
    (
        "Қазақстан Республикасы Еңбек және халықты әлеуметтік қорғау министрінің 2024 жылғы 25 желтоқсандағы № 211 бұйрығы",
        "order",
        "Приказ МТСЗН № 211 от 25.12.2024",
    ),
    ("Денсаулық сақтау министрінің 2017 жылғы 16 тамыздағы № 611 бұйрығына", "order", "Приказ МЗ № 611 от 16.08.2017"),
    ("2015 жылғы 2 ақпандағы № 70 бұйрығы", "order", "Приказ № 70 от 02.02.2015"),
    ("Үкіметінің 2015 жылғы 12 қазандағы № 821 қаулысымен", "order", "Постановление ПРК № 821 от 12.10.2015"),
    ("2008 жылгы 24 қыркүйектегі № 881 қаулысының", "order", "Постановление № 881 от 24.09.2008"),
    ("Постановление Правительства РК № 1180", "order", "Постановление ПРК № 1180"),
    ("постановление № 1180", "order", "Постановление № 1180"),
    ("Указ Президента РК № 102", "order", "Указ Президент РК № 102"),
    ("V2300031934", "adilet_id", "V2300031934"),
    ("V2400035612", "adilet_id", "V2400035612"),
    ("v2400035612", "adilet_id", "V2400035612"),
    ("К1500000414", "adilet_id", "K1500000414"),
    ("K1500000414", "adilet_id", "K1500000414"),
    ("K070000212_", "adilet_id", "K070000212_"),
    ("V16UL003811", "adilet_id", "V16UL003811"),
    ("Z1400000188", "adilet_id", "Z1400000188"),
    ("P2300000321", "adilet_id", "P2300000321"),
    ("U1900000102", "adilet_id", "U1900000102"),
    ("К950001000_", "adilet_id", "K950001000_"),
    ("№ 414-V ЗРК", "law_number", "414-V"),
    ("414-V", "law_number", "414-V"),
    ("414‑V ЗРК", "law_number", "414-V"),
    ("№ 226-V", "law_number", "226-V"),
    ("№ 321-VІ", "law_number", "321-VI"),
    ("№ 386-VI ҚРЗ", "law_number", "386-VI"),
    ("№ 231-V Кодексімен", "law_number", "231-V"),
    ("№ 9-ІV Заңымен", "law_number", "9-IV"),
    ("№ 252-III ҚР Заңын", "law_number", "252-III"),
    ("N 188-V", "law_number", "188-V"),
    ("Закон № 188-V ЗРК", "law_number", "188-V"),
    ("ст. 156 ТК РК", "code_article", "ст. 156 ТК РК"),
    ("ст.156 ТК РК", "code_article", "ст. 156 ТК РК"),
    ("ст. 156 ТК", "code_article", "ст. 156 ТК РК"),
    ("статья 156 Трудового кодекса", "code_article", "ст. 156 ТК РК"),
    ("Статья 156 Трудового кодекса", "code_article", "ст. 156 ТК РК"),  # a question's first word
    ("СТАТЬЯ 156 ТК РК", "code_article", "ст. 156 ТК РК"),
    ("Пункт 2 статьи 156 ТК РК", "code_article", "п. 2 ст. 156 ТК РК"),
    ("№ 8С 37/5", "order", "№ 8С 37/5"),  # a maslikhat decision: session 8, its number 37/5
    ("решение маслихата № 8С 37/5", "order", "Решение маслихат № 8С 37/5"),
    ("№ 77-НП", "order", "№ 77-НП"),  # a Constitutional Court ruling
    ("№ 68/НҚ", "order", "№ 68/НҚ"),
    ("приказ N 33", "order", "Приказ № 33"),
    ("Указ Президента РК № 1428", "order", "Указ Президент РК № 1428"),
    ("статьи 156 Трудового кодекса Республики Казахстан", "code_article", "ст. 156 ТК РК"),
    ("статьей 156 ТК РК", "code_article", "ст. 156 ТК РК"),
    ("п. 2 ст. 156 ТК РК", "code_article", "п. 2 ст. 156 ТК РК"),
    ("пункт 2 статьи 156 Трудового кодекса РК", "code_article", "п. 2 ст. 156 ТК РК"),
    ("ч. 3 ст. 127-2 ТК РК", "code_article", "ч. 3 ст. 127-2 ТК РК"),
    ("ст. 127-2 ТК РК", "code_article", "ст. 127-2 ТК РК"),
    ("ст. 127‑2 ТК РК", "code_article", "ст. 127-2 ТК РК"),
    ("ст. 127 ТК РК", "code_article", "ст. 127 ТК РК"),
    ("ст. 5-1", "article", "ст. 5-1"),
    ("ст. 5-1 ТК РК", "code_article", "ст. 5-1 ТК РК"),
    ("156-бабы", "article", "ст. 156"),
    ("156-бап", "article", "ст. 156"),
    ("5-1 бап", "article", "ст. 5-1"),
    ("5-1-бап", "article", "ст. 5-1"),
    ("Еңбек кодексінің 156-бабы", "code_article", "ст. 156 ТК РК"),
    ("ҚР Еңбек кодексінің 182-бабы", "code_article", "ст. 182 ТК РК"),
    ("ҚР ЕК 156", "code_article", "ст. 156 ТК РК"),
    ("ҚР ЕК 156-бабы", "code_article", "ст. 156 ТК РК"),
    ("ТК РК ст. 182", "code_article", "ст. 182 ТК РК"),
    ("ТК 182", "code_article", "ст. 182 ТК РК"),
    ("182 ТК", "code_article", "ст. 182 ТК РК"),
    ("182 ТК РК", "code_article", "ст. 182 ТК РК"),
    ("Article 156", "article", "ст. 156"),
    ("Article 156 of the Labour Code", "code_article", "ст. 156 ТК РК"),
    ("Article 182 of the Labor Code", "code_article", "ст. 182 ТК РК"),
    ("Labour Code Article 156", "code_article", "ст. 156 ТК РК"),
    ("Art. 158 Labour Code", "code_article", "ст. 158 ТК РК"),
    ("Трудовой кодекс ст. 156", "code_article", "ст. 156 ТК РК"),
    ("ст. 1 Конституции", "code_article", "ст. 1 Конституция"),
    ("Конституцияның 1-бабы", "code_article", "ст. 1 Конституция"),
    ("ст. 7 Кодекса о недрах", "code_article", "ст. 7 Кодекса о недрах"),
    ("ст. 20 УК РК", "code_article", "ст. 20 УК РК"),
    ("ст. 73 КоАП", "code_article", "ст. 73 КоАП"),
    ("статья 12 Социального кодекса", "code_article", "ст. 12 СК РК"),
    (
        "Зарегистрирован в Министерстве юстиции Республики Казахстан 6 мая 2024 года № 34340",
        "registration",
        "рег. № 34340",
    ),
    ("зарегистрирован в Минюсте № 35612", "registration", "рег. № 35612"),
    ("№ 17480 болып тіркелді", "registration", "рег. № 17480"),
    ("№ 3811 болып тіркелді", "registration", "рег. № 3811"),
    ("№ 10379 тіркелді", "registration", "рег. № 10379"),
    ("рег. № 35612", "registration", "рег. № 35612"),
    ("регистрационный номер 35612", "registration", "рег. № 35612"),
    ("registration No. 35612", "registration", "рег. № 35612"),
    ("ТР ТС 004/2011", "standard", "ТР ТС 004/2011"),
    ("ТР ТС 004 / 2011", "standard", "ТР ТС 004/2011"),
    ("TR CU 004/2011", "standard", "ТР ТС 004/2011"),
    ("TP TC 010/2011", "standard", "ТР ТС 010/2011"),
    ("ТР ЕАЭС 043/2017", "standard", "ТР ЕАЭС 043/2017"),
    ("ТР ТС 032/2013", "standard", "ТР ТС 032/2013"),
    ("TR СU 010/ 2011", "standard", "ТР ТС 010/2011"),
    ("29 CFR 1910.146", "standard", "29 CFR 1910.146"),
    ("29 CFR 1910.146(c)(2)", "standard", "29 CFR 1910.146(c)(2)"),
    ("29 CFR § 1910.146(c)", "standard", "29 CFR 1910.146(c)"),
    ("29CFR1910.146", "standard", "29 CFR 1910.146"),
    ("29 CFR Part 1910.146", "standard", "29 CFR 1910.146"),
    ("OSHA 1910.146", "standard", "29 CFR 1910.146"),
    ("OSHA Standard 1910.146", "standard", "29 CFR 1910.146"),
    ("Sec.  1910.146", "standard", "29 CFR 1910.146"),
    ("§ 1926.1201", "standard", "29 CFR 1926.1201"),
    ("1910.146", "standard", "29 CFR 1910.146"),
    ("1926.1201", "standard", "29 CFR 1926.1201"),
    ("API RP 75", "standard", "API RP 75"),
    ("API RP 754", "standard", "API RP 754"),
    ("API 510", "standard", "API 510"),
    ("API Std 650", "standard", "API Std 650"),
    ("API Spec 6A", "standard", "API Spec 6A"),
    ("API Recommended Practice 75", "standard", "API RP 75"),
    ("API 75", "standard", "API 75"),
    ("api rp 75", "standard", "API RP 75"),
    ("NFPA 652", "standard", "NFPA 652"),
    ("NFPA 70E", "standard", "NFPA 70E"),
    ("nfpa 652", "standard", "NFPA 652"),
    ("ISO 45001", "standard", "ISO 45001"),
    ("ISO 45001:2018", "standard", "ISO 45001:2018"),
    ("ISO 4500", "standard", "ISO 4500"),
    ("ISO/IEC 27001", "standard", "ISO 27001"),
    ("СТ РК ISO 45001", "standard", "ISO 45001"),
    ("СТ РК ISO 45001-2019", "standard", "ISO 45001:2019"),
    ("ISO 13849-1:2015", "standard", "ISO 13849-1:2015"),
    ("IOGP Report 423", "standard", "IOGP 423"),
    ("OGP Report No. 423", "standard", "IOGP 423"),
    ("IOGP 423-02", "standard", "IOGP 423-02"),
    ("IOGP 423", "standard", "IOGP 423"),
    ("ГОСТ 12.0.004-2015", "standard", "ГОСТ 12.0.004-2015"),
    ("ГОСТ 12.0.004", "standard", "ГОСТ 12.0.004"),
    ("ГОСТ 12.1.005-88", "standard", "ГОСТ 12.1.005-88"),
    ("ГОСТ Р 12.0.007-2009", "standard", "ГОСТ Р 12.0.007-2009"),
    ("СТ РК 1.0-2015", "standard", "СТ РК 1.0-2015"),
    ("СТ РК 1.10-2015", "standard", "СТ РК 1.10-2015"),
    ("СТ РК 1-10-2015", "standard", "СТ РК 1-10-2015"),
    ("СП РК 2.02-101-2014", "standard", "СП РК 2.02-101-2014"),
    ("СП РК 2.02.101-2014", "standard", "СП РК 2.02.101-2014"),
]

# Text that must yield no identifier at all.
NOTHING = [
    "в 2019 году",
    "211",
    "2119",
    "стоимость 1910 долларов",
    "ISO",
    "API",
    "NFPA",
    "IOGP",
    "CFR",
    "ГОСТ",
    "ТР ТС",
    "страница 156",
    "156 работников",
    "в 156 случаях",
    "работа с 9.00 до 18.00",
    "версия 1.10",
    "на 25.12.2024",
    "МТСЗН",
    "приказы МТСЗН о безопасности",
    "закон о том",  # one word after «о»: not a title
    "ст.",
    "V230003193",
    "V23000319345",
    "C1500000414",
    "XV век",
    "СИЗ выдаются бесплатно",
    "номер 211",
    "пункт 5",
    "глава 3",
    "3-4 человека",
    "20 статей",
    "Article",
    "Сколько дней отпуска положено?",
    "охрана труда на высоте",
    "",
    "   ",
    "№",
    "1910",
]

# (text, canonical it must NOT have): a near-miss reads as its own identifier, never as the confusable one.
DIFFERENT = [
    ("приказ 2119", "Приказ № 211"),
    ("приказ №21", "Приказ № 211"),
    ("приказ № 311", "Приказ № 211"),
    ("29 CFR 1910.1460", "29 CFR 1910.146"),
    ("1910.14", "29 CFR 1910.146"),
    ("ISO 4500", "ISO 45001"),
    ("API RP 754", "API RP 75"),
    ("ст. 1560 ТК РК", "ст. 156 ТК РК"),
    ("ст. 15 ТК РК", "ст. 156 ТК РК"),
    ("ст. 127-2 ТК РК", "ст. 127 ТК РК"),
    ("ТР ТС 004/2012", "ТР ТС 004/2011"),
    ("NFPA 6520", "NFPA 652"),
    ("IOGP 4230", "IOGP 423"),
    ("№ 414-VI", "414-V"),
    ("ст. 156 УК РК", "ст. 156 ТК РК"),
]


@pytest.mark.parametrize(("text", "kind", "canonical"), POSITIVE)
def test_reads_the_whole_identifier(text: str, kind: str, canonical: str) -> None:
    [ident] = parse(text)
    assert (ident.kind, ident.canonical, ident.span, ident.raw) == (kind, canonical, (0, len(text)), text)


@pytest.mark.parametrize("text", NOTHING)
def test_reads_nothing(text: str) -> None:
    assert parse(text) == []


@pytest.mark.parametrize(("text", "forbidden"), DIFFERENT)
def test_near_miss_is_another_identifier(text: str, forbidden: str) -> None:
    found = parse(text)
    assert found, text
    assert all(i.canonical != forbidden for i in found)
    assert all(i.designation is None or i.designation.match_key != parse(forbidden)[0].designation.match_key  # type: ignore[union-attr]
               for i in found if i.designation)  # fmt: skip


def test_table_size_meets_the_bar() -> None:
    assert len(POSITIVE) + len(NOTHING) + len(DIFFERENT) >= 200
    assert len(NOTHING) + len(DIFFERENT) >= 40


@pytest.mark.parametrize("row", rows(), ids=lambda r: r.name)
def test_every_row_reads_its_examples(row) -> None:  # type: ignore[no-untyped-def]
    assert row.examples, f"row {row.name} has no examples"
    for example in row.examples:
        # a пункт is an identifier only with the document it belongs to (lookup.binding)
        found = parse(example) if row.kind != "point" else parse(f"{example} приказа № 211")[:1]
        assert len(found) == 1, (example, found)
        assert found[0].span == (0, len(example)), example
        assert found[0].kind in {row.kind, "article"}, example
        assert row.pattern.search(_folded(example) if row.folded else _dashed(example)), example


def test_every_example_is_read_by_its_own_row() -> None:
    """Both directions: each row's regex matches at least one of its examples in full."""
    for row in rows():
        text = [(_folded(e) if row.folded else _dashed(e)) for e in row.examples]
        assert any(row.pattern.fullmatch(t) for t in text), row.name


def _dashed(text: str) -> str:
    from schemas.identifiers import fold_dashes

    return fold_dashes(text)


def _folded(text: str) -> str:
    from schemas.identifiers import fold_dashes, fold_lookalikes

    return fold_lookalikes(fold_dashes(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("приказ МТСЗН №211 и ст. 182 ТК РК", ["Приказ МТСЗН № 211", "ст. 182 ТК РК"]),
        ("ст. 156 и 158 ТК РК", ["ст. 156 ТК РК", "ст. 158 ТК РК"]),
        ("ISO 45001 и API RP 75, а также NFPA 652", ["ISO 45001", "API RP 75", "NFPA 652"]),
        ("Что говорит 29 CFR 1910.146(c)(2) о допуске?", ["29 CFR 1910.146(c)(2)"]),
        ("V2400035612 ст. 3", ["V2400035612", "ст. 3"]),
        ("приказ 211 или приказ МЧС №411?", ["Приказ № 211", "Приказ МЧС № 411"]),
        ("ТР ТС 004/2011 и ТР ЕАЭС 043/2017", ["ТР ТС 004/2011", "ТР ЕАЭС 043/2017"]),
    ],
)
def test_several_identifiers_in_one_query(text: str, expected: list[str]) -> None:
    found = parse(text)
    assert [i.canonical for i in found] == expected
    for ident in found:
        assert text[ident.span[0] : ident.span[1]] == ident.raw


def test_fields_carry_what_the_registry_compares() -> None:
    [order] = parse("Приказ Министра труда и социальной защиты населения РК от 25 декабря 2024 года № 211")
    assert (order.issuer, order.number, order.date and order.date.isoformat()) == ("МТСЗН", "211", "2024-12-25")
    [dsm] = parse("№ ҚР ДСМ -26")
    assert dsm.number == order_key("ҚР ДСМ-26") == order_key("№ ҚР ДСМ‑26")
    [article] = parse("Еңбек кодексінің 156-бабының 2-тармағы")
    assert (article.code, article.article, article.paragraph) == ("K1500000414", "156", "п. 2")
    [cfr] = parse("29 CFR § 1910.146(c)(2)")
    assert cfr.designation is not None and cfr.designation.match_key == ("OSHA", "1910.146")
    assert cfr.paragraph == "(c)(2)"
    [iso] = parse("СТ РК ISO 45001-2019")
    assert iso.designation is not None and (iso.designation.match_key, iso.designation.qualifier) == (
        ("ISO", "45001"),
        "2019",
    )


def test_dash_and_lookalike_spellings_fold_to_one_key() -> None:
    spellings = ["№ 414-V ЗРК", "№ 414‐V ЗРК", "№ 414–V ЗРК", "№ 414—V ЗРК", "№ 414-Ⅴ ЗРК".replace("Ⅴ", "V")]
    assert {parse(s)[0].canonical for s in spellings} == {"414-V"}
    assert {parse(s)[0].canonical for s in ["К1500000414", "K1500000414", "k1500000414"]} == {"K1500000414"}
    assert {parse(s)[0].designation.match_key for s in ["СТ РК 1.10-2015", "СТ РК 1-10-2015"]} == {  # type: ignore[union-attr]
        ("СТ РК", "1.10")
    }


def test_real_snippet_spellings_are_read() -> None:
    """Every «№ … бұйрығы / тіркелді / ҚРЗ» requisites phrase in the shared snippets yields an identifier."""
    folder = CORPUS / "snippets"
    if not folder.exists():
        pytest.skip(f"{folder} is absent (set ZAN_SHARED_CORPUS to the shared/corpus folder)")
    phrase = re.compile(r"№\s*[^\s,.;]+(?:\s*-\s*\d+)?\s+(?:бұйрығы|болып тіркелді|ҚРЗ|Кодексімен|Заңымен)")
    seen = 0
    for path in sorted(folder.glob("*")):
        for m in phrase.finditer(path.read_text("utf-8", errors="replace")):
            seen += 1
            assert parse(m.group()), (path.name, m.group())
    assert seen >= 10


# --- properties -------------------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(list("0123456789 .-/№№§()–—‐КKІIСCТTРPVХX ст.ТКРКбапприказISOAPINFPACFR ҚЕДСМ жылғы"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.text(alphabet=_ALPHABET, max_size=60))
def test_parser_never_raises_and_spans_slice_back(text: str) -> None:
    for ident in parse(text):
        start, end = ident.span
        assert 0 <= start < end <= len(text)
        assert text[start:end] == ident.raw


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(POSITIVE),
    st.sampled_from(["", "Вопрос: ", "Что говорит "]),
    st.sampled_from(["", "?", " — кратко"]),
)
def test_canonical_is_idempotent_and_context_free(case: tuple[str, str, str], head: str, tail: str) -> None:
    text, kind, canonical = case
    [again] = parse(canonical)
    assert again.canonical == canonical
    found = parse(head + text + tail)
    assert [i.canonical for i in found] == [canonical]
    assert found[0].span == (len(head), len(head) + len(text))


# --- the first-character gate (lookup.gate) changes speed, never a match ------------------------------------


def _ungated_rows() -> tuple:  # type: ignore[type-arg]
    """The grammar built with the gates off (as ``zan lookup`` builds it): the patterns as they were before
    :mod:`lookup.gate`."""
    import lookup.code_names
    import lookup.grammar
    import lookup.parts
    from lookup.gate import use_gates

    def clear() -> None:
        for cached in (lookup.code_names.code_regex, lookup.parts.issuer_regex, lookup.parts._named_issuers,
                       lookup.grammar._rows):  # fmt: skip
            cached.cache_clear()

    use_gates(False)
    clear()
    try:
        return lookup.grammar._rows()
    finally:
        use_gates(True)
        clear()


def _questions() -> list[str]:
    golden = Path(__file__).resolve().parent.parent / "data" / "golden"
    asked = [json.loads(line)["query"] for f in sorted(golden.glob("*.jsonl")) for line in f.open(encoding="utf-8")]
    examples = [e for row in rows() for e in row.examples]
    return asked + examples + [f"Вопрос: {e} — что там сказано? {e.upper()} {e.lower()}" for e in examples]


def test_gate_keeps_every_match_of_every_row() -> None:
    plain = _ungated_rows()
    assert not any("(?=[" in row.pattern.pattern for row in plain)
    gated_rows = rows()
    assert [r.name for r in plain] == [r.name for r in gated_rows]
    assert sum(a.pattern.pattern != b.pattern.pattern for a, b in zip(plain, gated_rows, strict=True)) >= 4
    texts = _questions()
    assert len(texts) > 300
    for before, after in zip(plain, gated_rows, strict=True):
        for text in texts:
            target = fold_lookalikes(fold_dashes(text)) if before.folded else fold_dashes(text)
            want = [(m.span(), m.groupdict()) for m in before.pattern.finditer(target)]
            assert [(m.span(), m.groupdict()) for m in after.pattern.finditer(target)] == want, (after.name, text)


def test_gate_reads_first_characters() -> None:
    from lookup.gate import gate

    assert gate(r"(?<!\w)МТСЗН(?!\w)|Минтр\w*|ЕХӘҚМ") == r"(?=[ЕМ])(?:(?<!\w)МТСЗН(?!\w)|Минтр\w*|ЕХӘҚМ)"
    assert gate(r"(?:ҚР\s+)?ЕК") == r"(?=[ЕҚ])(?:(?:ҚР\s+)?ЕК)"
    assert gate(r"[А-Я]\w+") == r"(?=[" + "".join(chr(n) for n in range(ord("А"), ord("Я") + 1)) + r"])(?:[А-Я]\w+)"
    for open_start in (r"\w+", r".x", r"(?:a)?", r"[^a]b", r"(?i:a)b"):  # any letter may start it, or nothing
        assert gate(open_start) == f"(?:{open_start})"
