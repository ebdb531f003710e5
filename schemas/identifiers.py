"""Canonical forms of identifiers, shared by the registry side and the query side.

Rules (learned the hard way, see DESIGN.md): identifiers match by *equality after canonicalisation*,
never by prefix; dash spellings fold to ``-``; Cyrillic look-alike letters fold to Latin *inside*
identifiers (roman numerals, adilet ids, standard designations); spacing and ``№``/``N``/``No.`` fold.
"""

from __future__ import annotations

import re

from schemas.text import clean_text, fold_digits

# Every dash-like code point seen in adilet pages and standards, folded to ASCII hyphen-minus. The soft hyphen
# is not one: it is invisible, and :func:`schemas.text.clean_text` removes it before anything reads the text.
_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")

# Cyrillic letters that look like Latin ones. Only applied inside identifiers, never to prose.
_LOOKALIKES = str.maketrans(
    {
        "А": "A",
        "В": "B",
        "С": "C",
        "Е": "E",
        "Н": "H",
        "І": "I",
        "Ӏ": "I",
        "К": "K",
        "М": "M",
        "О": "O",
        "Р": "P",
        "Т": "T",
        "Х": "X",
        "У": "Y",
        "а": "a",
        "с": "c",
        "е": "e",
        "і": "i",
        "к": "k",
        "о": "o",
        "р": "p",
        "х": "x",
        "у": "y",
    }
)

# Kazakh letters typed for their Russian look-alikes (and back) inside an identifier: «ҚР ДСМ-26» and «КР ДСМ-26»
# are one order number. Applied on top of :data:`_LOOKALIKES`, to order numbers only (never to prose).
_KAZAKH_LOOKALIKES = str.maketrans(
    {
        "Қ": "K",
        "қ": "k",
        "Ң": "H",
        "ң": "h",
        "Ө": "O",
        "ө": "o",
        "Ү": "Y",
        "ү": "y",
        "Ұ": "Y",
        "ұ": "y",
        "Һ": "X",
        "һ": "x",
    }
)

_ROMAN = re.compile(r"^[IVXLC]+$")

# One article label, everywhere zan reads one (headings, notes, amending texts, questions): «156», «127-2»,
# «10-1», «10 bis» (Kazakh «156-бап» puts the same label before its word). Dashes are folded before any pattern
# sees the text; :func:`canonical_article_label` gives its one form (``10bis``).
ARTICLE_LABEL = r"\d{1,4}(?:\s*-\s*\d{1,3})?(?:\s*(?:bis|ter|quater)\b)?"
# One пункт label (a point of an article or an annex), wherever zan reads one: a paragraph that opens «12. …»
# or «4-1. …», a note's «Пункт 3 статьи 5», a question's «п. 12». Never four digits: a paragraph opening
# «2019. …» is a year, not a пункт.
POINT_LABEL = r"\d{1,3}(?:-\d{1,2})?"

# An adilet id as the site writes it (after look-alike folding): a type letter, two year digits, then eight
# characters or seven and a trailing ``_`` (V2300031934, V16UL003811, K070000212_). Always 11 characters.
ADILET_ID = r"[KVPUZS]\d{2}(?:[0-9A-Z]{8}|[0-9A-Z]{7}_)"


_DASH_SPELLINGS = "".join(map(chr, _DASHES))
_DASH_RE = re.compile(f"[{_DASH_SPELLINGS}]")
ANY_DASH = f"[-{_DASH_SPELLINGS}]"  # a pattern's «-» that also takes every spelling fold_dashes folds


def fold_dashes(text: str) -> str:
    """Replace every dash spelling (‐ ‑ – — − …) with ``-`` (length kept, so spans stay valid)."""
    return _DASH_RE.sub("-", text)


def fold_lookalikes(text: str) -> str:
    """Map Cyrillic letters that look Latin (К/K, І/I, С/C, Т/T…) to Latin. For identifiers only."""
    return text.translate(_LOOKALIKES)


def normalize_space(text: str) -> str:
    """The text cleaned (:func:`schemas.text.clean_text`: NFC, invisible and control characters, digits of
    any script), non-breaking and odd spaces to plain spaces, runs collapsed, ends stripped."""
    text = clean_text(text)
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text  # its only white space is single inner spaces (any other is not printable): nothing to do
    return " ".join(text.split())  # str.split() already splits on U+00A0 and U+202F


def canonical_adilet_id(raw: str) -> str:
    """``v2300031934`` / ``К1500000414`` (Cyrillic К) / ``V２４00035612`` → ``V2300031934`` / ``K1500000414`` /
    ``V2400035612``."""
    return fold_lookalikes(fold_digits(raw.strip())).upper()


def doc_id_from_adilet(adilet_id: str) -> str:
    """The stable document id for an adilet act: its adilet id, lower-cased (trailing ``_`` kept)."""
    return canonical_adilet_id(adilet_id).lower()


def canonical_law_number(raw: str) -> str | None:
    """``№ 414-V ЗРК`` / ``321-VІ`` (Cyrillic І) / ``386–VI ҚРЗ`` → ``414-V`` / ``321-VI`` / ``386-VI``.

    A law number is digits, a dash and a roman convocation number; anything else is not one.
    """
    text = fold_dashes(normalize_space(raw))
    m = re.search(r"([0-9]+)\s*-\s*([IVXLCІУХ]+)(?![\wА-Яа-яӘәҒғҚқҢңӨөҰұҮүҺһІі])", fold_lookalikes(text))
    if not m:
        return None
    roman = fold_lookalikes(m.group(2)).upper()
    number = plain_digits(m.group(1))
    return f"{number}-{roman}" if _ROMAN.match(roman) and number is not None else None


def canonical_order_number(raw: str) -> str:
    """An order's number as written, with spacing, dashes and ``№`` folded.

    ``№ ҚР ДСМ -26`` → ``ҚР ДСМ-26``; ``№211`` → ``211``; ``№ 8С 37/5`` → ``8С 37/5``.
    Cyrillic letters stay Cyrillic here (ДСМ is a word, not a look-alike); use :func:`order_key` to compare.
    """
    text = fold_dashes(normalize_space(raw))
    text = re.sub(r"^(№|N\b|No\.?)\s*", "", text)
    text = re.sub(r"\s*-\s*", "-", text)
    text = re.sub(r"\s*/\s*", "/", text)
    return text.strip(" .,;")


def order_key(raw: str) -> str:
    """Equality key for order numbers: canonical form, look-alikes folded (Cyrillic and Kazakh: «КР ДСМ-26» is
    «ҚР ДСМ-26»), upper-cased, no spaces."""
    return fold_lookalikes(canonical_order_number(raw)).translate(_KAZAKH_LOOKALIKES).upper().replace(" ", "")


def canonical_article_label(raw: str) -> str:
    """``5‑1`` / ``5 - 1`` / ``156`` / ``10 bis`` → ``5-1`` / ``5-1`` / ``156`` / ``10bis`` (no leading zeros)."""
    text = fold_dashes(fold_digits(raw.strip()))
    suffix = re.search(r"(bis|ter|quater)\s*$", text, re.IGNORECASE)
    parts = re.split(r"\s*-\s*", text[: suffix.start()].strip() if suffix else text)
    label = "-".join(p.lstrip("0") or "0" for p in parts if p.isdigit() and p.isascii())
    return label + suffix.group(1).lower() if suffix else label


MAX_NUMBER_DIGITS = 12  # no act, article or convocation number is longer; a longer run of digits is not one


def plain_digits(text: str) -> str | None:
    """ASCII digits without leading zeros (``0042`` → ``42``), or None when ``text`` is not a number of at most
    :data:`MAX_NUMBER_DIGITS` digits. Never ``int()`` of what a file says: Python refuses to convert more than
    4 300 digits, and a note naming such a «number» must not fail the document it is in."""
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_NUMBER_DIGITS:
        return None
    return text.lstrip("0") or "0"


_ORDINALS = ("", "bis", "ter", "quater")
_CANONICAL_LABEL = re.compile(r"(\d{1,12})((?:-\d{1,12})*)(bis|ter|quater)?")


def article_order(label: str | None) -> tuple[int, ...]:
    """How article labels sort, everywhere (the registry, lineage, the pages, the structure builder's «does this
    article follow that one»): «20» < «20bis» < «20-1» < «20-2» < «21» < «100»; a label with no number sorts
    last. The key is the number, each dashed number (0 when none), then the Latin ordinal (bis 1, ter 2, quater 3)."""
    found = _CANONICAL_LABEL.fullmatch(label or "")
    if found is None:
        parts = [p[:MAX_NUMBER_DIGITS] for p in (label or "").split("-") if p.isascii() and p.isdigit()]
        return tuple(int(p) for p in parts) or (10**9,)
    dashed = [int(p) for p in found.group(2).split("-")[1:]] or [0]
    return (int(found.group(1)), *dashed, _ORDINALS.index(found.group(3) or ""))


def article_number(label: str) -> int | None:
    """The plain article number of a label, or None for dashed labels (``127-2`` is not 127)."""
    return int(label) if label.isdigit() and len(label) <= 9 else None  # fits int32, whatever a file says


def slug(text: str) -> str:
    """A lower-case id fragment of ``[a-z0-9.-]`` for standard doc ids (``RP 75`` → ``rp-75``)."""
    text = fold_lookalikes(fold_dashes(normalize_space(text))).lower()
    text = re.sub(r"[^0-9a-z.]+", "-", text)
    return text.strip("-.")


# Words a title is cited with that are not the title: the country, the act's type («Закон … “О …”»).
_TITLE_FILLER = frozenset(
    {
        "рк",
        "қр",
        "республики",
        "республика",
        "казахстан",
        "қазақстан",
        "республикасының",
        "республикасы",
        "закон",
        "закона",
        "законом",
        "заң",
        "заңы",
        "заңын",
        "кодекс",
        "кодекса",
        "кодексі",
        "постановление",
        "приказ",
        "указ",
    }
)


def title_key(text: str) -> str:
    """Equality key of an act's title as it is cited: quotes, case and spacing folded, the country and a leading
    type word dropped, each word cut to its stem (declension: «О противодействии коррупции» and «о
    противодействие коррупции» agree). Compared whole, never by prefix: «О карантине растений» is not «О
    внесении изменений … в Закон "О карантине растений"»."""
    words = re.findall(r"[0-9a-zа-яёәғқңөұүһі]+(?:-[0-9a-zа-яёәғқңөұүһі]+)*", fold_dashes(clean_text(text)).casefold())
    while words and words[0] in _TITLE_FILLER:
        words = words[1:]
    kept = [w for w in words if w not in ("рк", "қр", "республики", "казахстан", "қазақстан", "республикасының")]
    return " ".join(w[: max(4, len(w) - 3)] if len(w) > 3 else w for w in kept)
