"""The query grammar: rows of data that carry their own examples (eyecite/reporters-db style).

Each :class:`Row` is one spelling of one identifier family, a verbose regex built from the named parts
below, and examples it must read; ``tests/test_lookup_grammar.py`` checks both directions. Adding a
spelling is adding a row. Matches become typed :class:`Identifier` values whose ``canonical`` form is
itself a spelling the grammar reads back to the same identifier (canonicalisation is idempotent).

Canonicalisation is the registry side's (``schemas.identifiers``, ``schemas.designations``): dashes fold,
Cyrillic look-alikes fold inside identifiers, and keys compare by equality, never by prefix.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import replace

from lookup.binding import bind
from lookup.code_names import code_of, code_regex
from lookup.identifier import Identifier, IdentifierKind, Row
from lookup.parts import (
    ART,
    ART_WORD,
    BAP,
    IN_GUILLEMETS,
    ISSUER_HEAD,
    ISSUER_TAIL,
    LOCAL_ISSUER,
    NUM_SIGN,
    ORDER_NUM,
    PARA_KZ,
    PARA_RU,
    REGISTERED_RU,
    TITLE_WORD,
    TITLE_WORDS,
    TYPE_KZ,
    TYPE_NAMES,
    TYPE_RU,
    TYPE_WORDS,
    date_part,
    issuer_patterns,
    issuer_regex,
)
from schemas.designations import CFR_PARAGRAPH, FAMILIES, Designation, designation_from_match
from schemas.identifiers import (
    ADILET_ID,
    POINT_LABEL,
    canonical_adilet_id,
    canonical_article_label,
    canonical_law_number,
    canonical_order_number,
    fold_dashes,
    fold_lookalikes,
    normalize_space,
    order_key,
    title_key,
)
from schemas.kinds import DocType
from schemas.reference import find_local_issuer, parse_date

# ---------------------------------------------------------------------------------------------------------
# Builders: a match → an Identifier (or None when the match is not one after all).


def _raw(m: re.Match[str]) -> tuple[str, tuple[int, int]]:
    return m.string[m.start() : m.end()], m.span()


def _adilet(m: re.Match[str]) -> Identifier:
    raw, span = _raw(m)
    value = canonical_adilet_id(m.group("id"))
    return Identifier("adilet_id", raw, value, span, adilet_id=value)


def _law(m: re.Match[str]) -> Identifier | None:
    raw, span = _raw(m)
    number = canonical_law_number(f"{m.group('num')}-{m.group('conv')}")
    return Identifier("law_number", raw, number, span, number=number) if number else None


def _article(m: re.Match[str]) -> Identifier:
    raw, span = _raw(m)
    groups = m.groupdict()
    label = canonical_article_label(groups["art"])
    para = groups.get("para") or groups.get("para2")
    pw = (groups.get("pw") or "").lower()
    word = "ч." if pw.startswith("ч") else "пп." if pw == "пп." else "п."
    prefix = f"{word} {para} " if para else ""
    para = f"{word} {para}" if para else None
    if not groups.get("code"):
        return Identifier("article", raw, f"{prefix}ст. {label}", span, article=label, paragraph=para)
    code, alias = code_of(groups["code"])
    canonical = f"{prefix}ст. {label} {alias}"
    return Identifier("code_article", raw, canonical, span, code=code, code_name=alias, article=label, paragraph=para)


def _code_name(m: re.Match[str]) -> Identifier:
    """A code named without an article («Трудовой кодекс», «по ТК РК», «Конституция»): the whole code."""
    raw, span = _raw(m)
    code, alias = code_of(m.group("code"))
    return Identifier("code_name", raw, alias, span, code=code, code_name=alias)


_TITLE_TYPES: dict[str, str] = {
    "закон": "Закон",
    "заң": "Закон",
    "кодекс": "Кодекс",
    "постановлени": "Постановление",
    "приказ": "Приказ",
    "указ": "Указ",
    "бұйры": "Приказ",
    "қаулы": "Постановление",
}


def _title(m: re.Match[str]) -> Identifier | None:
    """An act by its title: quoted («Закон «О противодействии коррупции»», «"…" туралы Заң») or, after a type
    word, unquoted («закон о противодействии коррупции»: its words may run into the question, so the registry
    tries them longest first, each whole)."""
    raw, span = _raw(m)
    groups = m.groupdict()
    text = normalize_space(groups.get("title") or groups.get("title2") or groups.get("words") or "")
    key = title_key(text)
    content = [w for w in key.split() if w not in ("о", "об")]
    if not content or (groups.get("words") and len(content) < 2):  # «закон о том»: not a title
        return None
    written = (groups.get("type") or groups.get("type_kz") or "").lower().removeprefix("туралы").strip()
    kind = next((name for stem, name in _TITLE_TYPES.items() if written.startswith(stem)), "Акт")
    words = tuple(text.split()) if groups.get("words") else ()
    return Identifier("title", raw, f"{kind} «{text}»", span, title=key, title_words=words)


def _order(m: re.Match[str]) -> Identifier | None:
    raw, span = _raw(m)
    groups = m.groupdict()
    number = canonical_order_number(groups.get("num") or groups["bare"])  # «приказ 211»: a bare number
    doc_type = _type_of(groups.get("type"))
    law = canonical_law_number(number) if re.fullmatch(r"\d+\s*-\s*[IVXLCІ]+", fold_lookalikes(number)) else None
    if law:  # «Закон РК … № 94-VI»: a law number, whatever words came before it
        return Identifier("law_number", raw, law, span, number=law)
    if doc_type == "law" and groups.get("bare") and re.fullmatch(r"(?:19|20)\d\d", groups["bare"]):
        return None  # «закон 2015 года»: a year, not a number («закон 101» is one)
    issuer_text = groups.get("issuer") or groups.get("issuer2")
    issuer = find_issuer_short(issuer_text) if issuer_text else None
    date_text = groups.get("date1") or groups.get("date2")
    year_text = groups.get("year1") or groups.get("year2")
    date = parse_date(date_text.replace("жылгы", "жылғы")) if date_text else None
    year = int(year_text) if year_text else (date.year if date else None)
    parts = [TYPE_NAMES.get(doc_type or ""), issuer, f"№ {number}"]
    if date:
        parts.append(f"от {date:%d.%m.%Y}")
    elif year:
        parts.append(f"{year} года")
    canonical = " ".join(p for p in parts if p)
    return Identifier(
        "order", raw, canonical, span, issuer=issuer, doc_type=doc_type, number=order_key(number), date=date, year=year
    )


def _point(m: re.Match[str]) -> Identifier:
    """«п. 12», or «п. 12 Правил» (a пункт of the rules an act approves: its annex, never the act's own text)."""
    raw, span = _raw(m)
    label = canonical_article_label(m.group("pt"))
    part = m.group("part")
    canonical = f"п. {label} {m.group(0)[m.start('part') - m.start() :].split()[0]}" if part else f"п. {label}"
    return Identifier("point", raw, canonical, span, paragraph=label, in_annex=bool(part))


def _registration(m: re.Match[str]) -> Identifier:
    raw, span = _raw(m)
    number = m.group("num")
    return Identifier("registration", raw, f"рег. № {number}", span, number=number)


def _standard_builder(family_index: int) -> Callable[[re.Match[str]], Identifier]:
    family = FAMILIES[family_index]

    def build(m: re.Match[str]) -> Identifier:
        d = designation_from_match(family, m)
        canonical = display_designation(d) + (d.paragraph or "")
        raw, span = _raw(m)
        return Identifier("standard", raw, canonical, span, paragraph=d.paragraph, designation=d)

    return build


def _family_index(org: str) -> int:
    return next(i for i, f in enumerate(FAMILIES) if f.org == org)


def display_designation(d: Designation) -> str:
    """The canonical spelling of a standard designation (reads back to the same designation)."""
    if d.org == "EAEU":
        return f"{'ТР ЕАЭС' if int(d.section[-4:]) >= 2015 else 'ТР ТС'} {d.section}"
    if d.org == "OSHA":
        return f"29 CFR {d.section}"
    return f"{d.org} {d.section}"


def find_issuer_short(text: str) -> str | None:
    """The issuer's short form for a spelling: an alias (Минтруда), a declined full name, or a local body
    («Атбасарского районного маслихата» → маслихат)."""
    text = normalize_space(text)
    for short, pattern in issuer_patterns():
        if re.fullmatch(f"{ISSUER_HEAD}(?:{pattern.pattern}){ISSUER_TAIL}", text, re.IGNORECASE):
            return short
    if re.fullmatch(LOCAL_ISSUER, text):
        local = find_local_issuer(text)
        return local.short if local else None
    return None


def _type_of(word: str | None) -> DocType | None:
    if not word:
        return None
    lowered = word.lower()
    return next((kind for stem, kind in TYPE_WORDS.items() if lowered.startswith(stem)), None)


# ---------------------------------------------------------------------------------------------------------
# The rows. Ties between overlapping matches go to the leftmost, then the longest, then the earlier row.


Builder = Callable[[re.Match[str]], Identifier | None]


def _row(
    name: str, kind: IdentifierKind, regex: str, build: Builder, *examples: str, folded: bool = False, flags: int = 0
) -> Row:
    return Row(name, kind, re.compile(regex, flags), examples, build, folded)


_BUILDING = threading.Lock()


def rows() -> tuple[Row, ...]:
    """The grammar, built once on first use (no import-time work). A server's first questions arrive
    together: one thread builds it, the others wait for it instead of each building their own."""
    with _BUILDING:
        return _rows()


@functools.cache
def _rows() -> tuple[Row, ...]:
    code, issuer = code_regex(), issuer_regex()
    date_sep = r"(?:\s*,?\s*(?:от|from|dated)?\s*)"
    standard_rows = tuple(
        Row(f"standard_{f.org}", "standard", f.pattern, f.examples, _standard_builder(i), folded=True)
        for i, f in enumerate(FAMILIES)
    )
    return (
        _row(
            "adilet_id",
            "adilet_id",
            rf"(?<![\w/])(?P<id>{ADILET_ID})(?!\w)",
            _adilet,
            "V2300031934",
            "K1500000414",
            "K070000212_",
            "V16UL003811",
            "К1500000414",
            "v2400035612",
            folded=True,
            flags=re.IGNORECASE,
        ),
        _row(
            "law_number",
            "law_number",
            r"(?:(?:[Зз]акон\w*|[Кк]одекс\w*)\s+(?:(?:РК|Республики\s+Казахстан)\s+)?)?"
            rf"(?:{NUM_SIGN}\s*)?(?P<num>\d{{1,4}})\s*-\s*(?P<conv>[IVXІХ]{{1,5}})(?![\w])"
            r"(?:\s*(?:ЗРК|ҚРЗ|(?:ҚР\s+)?Заң\w*|Закон\w*|Кодекс\w*))?",
            _law,
            "№ 414-V ЗРК",
            "414-V",
            "№ 226-V",
            "№ 321-VІ",
            "№ 386-VI ҚРЗ",
            "№ 9-ІV Заңымен",
            "№ 414-V Кодексімен",
            "Закон № 188-V ЗРК",
            "№ 252-III ҚР Заңын",
        ),
        _row(
            "code_article_code_first",
            "code_article",
            rf"{code}\s*,?\s*(?:{ART_WORD}\s*)?{ART}(?:{BAP})?{PARA_KZ}?",
            _article,
            "ҚР ЕК 156",
            "ТК РК ст. 182",
            "ТК 182",
            "Еңбек кодексінің 156-бабы",
            "ҚР Еңбек кодексінің 182-бабы",
            "Labour Code Article 156",
            "Трудовой кодекс ст. 156",
            "Еңбек кодексінің 156-бабының 2-тармағы",
        ),
        _row(
            "code_article_ru",
            "code_article",
            rf"{PARA_RU}?{ART_WORD}\s*{ART}(?:\s+(?:of\s+(?:the\s+)?)?{code})?",
            _article,
            "ст. 156 ТК РК",
            "статья 156 Трудового кодекса",
            "п. 2 ст. 156 ТК РК",
            "статьи 182 Трудового кодекса Республики Казахстан",
            "ст. 5-1",
            "ст.156 ТК",
            "ч. 3 ст. 127-2 ТК РК",
            "Article 156 of the Labour Code",
            "Article 156",
            "ст. 7 Кодекса о недрах",
            "ст. 10 bis Конституции",
        ),
        _row(
            "code_article_kz",
            "code_article",
            rf"{ART}{BAP}{PARA_KZ}?(?:\s+{code})?",
            _article,
            "156-бабы",
            "156-бап",
            "5-1 бап",
            "156-бабының 2-тармағы",
        ),
        _row("code_article_number_code", "code_article", rf"{ART}\s+{code}", _article, "182 ТК", "156 ТК РК"),
        _row(
            "point_ru",
            "point",
            rf"\b(?:[Пп]\.|[Пп]ункт[а-я]{{0,3}})\s*(?P<pt>{POINT_LABEL})(?![\d.,]\d|-?\d|\))"
            r"(?:\s+(?P<part>Правил|Положени|Инструкци|Регламент|Перечн|Требовани)[а-яё]{0,3})?",
            _point,
            "п. 12",
            "пункт 5",
            "пункта 4-1",
            "п. 12 Правил",
        ),
        _row(
            "registration_ru",
            "registration",
            rf"{REGISTERED_RU}{NUM_SIGN}\s*(?P<num>\d{{3,6}})(?!\d)",
            _registration,
            "Зарегистрирован в Министерстве юстиции Республики Казахстан 27 декабря 2024 года № 35612",
            "зарегистрирован в Минюсте № 35612",
        ),
        _row(
            "registration_kz",
            "registration",
            r"№\s*(?P<num>\d{3,6})\s+(?:болып\s+)?тіркел\w*",
            _registration,
            "№ 17480 болып тіркелді",
            "№ 9947 тіркелді",
        ),
        _row(
            "registration_short",
            "registration",
            r"(?:\b[Рр]ег(?:\.|истрационн\w*)\s*(?:№|номер\w*)?|\b[Rr]egistration\s+(?:No\.?|number))\s*(?P<num>\d{3,6})(?!\d)",
            _registration,
            "рег. № 35612",
            "регистрационный номер 35612",
            "registration No. 35612",
        ),
        _row(
            "order_ru",
            "order",
            rf"{TYPE_RU}(?:\s+{issuer})?(?:{date_sep}{date_part(1)})?\s*(?:{NUM_SIGN}\s*{ORDER_NUM}|(?P<bare>\d{{1,6}})(?![\d.]))"
            rf"(?:{date_sep}{date_part(2)})?(?:\s+{issuer_regex('issuer2')})?",
            _order,
            "Приказ МТСЗН №211 от 25.12.2024",
            "Приказ №211 МТСЗН",
            "приказ 211",
            "Приказ Министра труда и социальной защиты населения Республики Казахстан от 25 декабря 2024 года № 211",
            "Приказ №999",
            "приказ МЧС № 211 2021 года",
            "Постановление Правительства РК № 1180",
            "закон 101",
            "указ 40",
            "order No. 211",
        ),
        _row(
            "order_kz",
            "order",
            rf"(?:{issuer}\s+)?(?:{date_part(1)}\s+)?{NUM_SIGN}\s*{ORDER_NUM}\s+{TYPE_KZ}",
            _order,
            "№ 211 бұйрығы",
            "2024 жылғы 25 желтоқсандағы № 211 бұйрық",
            "Қазақстан Республикасы Денсаулық сақтау министрінің 2020 жылғы 24 желтоқсандағы № ҚР ДСМ-322/2020 бұйрығы",
            "№ 881 қаулысының",
        ),
        _row(
            "order_number",
            "order",
            rf"(?:{issuer}\s+)?{NUM_SIGN}\s*{ORDER_NUM}(?:{date_sep}{date_part(2)})?",
            _order,
            "№ ҚР ДСМ-26",
            "№ ҚР ДСМ -36",
            "МТСЗН № 211",
            "№211 от 25.12.2024",
            "№ 7/71",
        ),
        _row(
            "title_quoted",
            "title",
            rf"(?:(?P<type>{TITLE_WORD})\s+(?:(?:РК|Республики\s+Казахстан|Қазақстан\s+Республикасының)\s+)?)?"
            rf"(?:«(?P<title>{IN_GUILLEMETS})»|[\"“„](?P<title2>[^\"“”„«»]{{3,2000}})[\"”“])"
            r"(?:\s*(?P<type_kz>туралы\s+(?:[Зз]аң\w*|[Кк]одекс\w*)))?",
            _title,
            "Закон «О противодействии коррупции»",
            "закона «О противодействии коррупции»",
            "Закон Республики Казахстан «О противодействии коррупции»",
            'Закон РК "О гражданской защите"',
            "«О карантине растений»",
            "«Сыбайлас жемқорлыққа қарсы іс-қимыл» туралы Заң",
        ),
        _row(
            "title_unquoted",
            "title",
            rf"(?P<type>{TITLE_WORD})\s+(?:(?:РК|Республики\s+Казахстан)\s+)?(?P<words>(?:о|об|О|Об)\s+{TITLE_WORDS})",
            _title,
            "закон о противодействии коррупции",
            "Закона РК о противодействии коррупции",
            "Закон Республики Казахстан о гражданской защите",
        ),
        _row(
            "code_name",
            "code_name",
            code,
            _code_name,
            "Трудовой кодекс",
            "ТК РК",
            "Конституция",
            "Еңбек кодексі",
            "Трудовому кодексу",
            "Кодекс о недрах",
        ),
        *standard_rows,
        _row(
            "standard_OSHA_bare",
            "standard",
            rf"(?<![\w.§/])(?P<num>19[0-2][0-9]\.\d{{1,4}})(?![\d.]){CFR_PARAGRAPH}",
            _standard_builder(_family_index("OSHA")),
            "1910.146",
            "1926.1201",
            folded=True,
        ),
    )


# ---------------------------------------------------------------------------------------------------------


def parse(query: str, limit: int | None = None) -> list[Identifier]:
    """Every identifier in ``query`` (the first ``limit``), in order, non-overlapping; spans index the original
    text. Articles and пункты are bound to the document the question names for them (:mod:`lookup.binding`)."""
    return bind(query, parse_unbound(query)[:limit])


def parse_unbound(query: str) -> list[Identifier]:
    """Every identifier in ``query``, in order, non-overlapping; spans index the original text.

    Folding dashes and look-alikes keeps the string's length, so spans found in folded text slice ``query``.
    Articles and пункты are left unbound (:func:`parse` binds them).
    """
    dashed = fold_dashes(query)
    folded = fold_lookalikes(dashed)
    candidates: list[tuple[int, int, int, re.Match[str], Row]] = []
    for order, row in enumerate(rows()):
        for m in row.pattern.finditer(folded if row.folded else dashed):
            if m.end() > m.start():
                candidates.append((m.start(), -(m.end() - m.start()), order, m, row))
    found: list[Identifier] = []
    end = -1
    for start, _, _, m, row in sorted(candidates, key=lambda c: c[:3]):
        if start < end:
            continue
        ident = row.build(m)
        if ident is not None:
            found.append(_with_original(ident, query))
            end = m.end() if ident.span[1] == m.end() else ident.span[1]
    return found


def _with_original(ident: Identifier, query: str) -> Identifier:
    """Raw text as the user typed it (the match ran on folded text)."""
    return replace(ident, raw=query[ident.span[0] : ident.span[1]])
