"""Codes named in a question: a curated code by any alias or title, declined («Трудового кодекса», «ТК РК»,
«Еңбек кодексі»), or a code we do not know by its name («Кодекс о недрах»), folded to one key."""

from __future__ import annotations

import functools
import re

from lookup.gate import gate
from schemas.identifiers import normalize_space
from schemas.reference import CodeRef, codes


def _stem(word: str) -> str:
    """A declension-tolerant regex for one word of a code alias (Трудовой → Трудо\\w*, кодекс → коде\\w*)."""
    if word.isupper() or len(word) <= 3:
        return re.escape(word) + r"(?!\w)"
    return re.escape(word[: max(4, len(word) - 3)]) + r"\w*"


def alias_regex(alias: str) -> str:
    return r"(?<!\w)" + r"\s+".join(_stem(w) for w in alias.split())


@functools.cache
def code_regexes() -> tuple[tuple[CodeRef, re.Pattern[str]], ...]:
    """Per curated code: one pattern over its aliases and titles, in every language, declined."""
    rows = []
    for code in codes():
        spellings = sorted({*code.aliases, *code.titles.values()}, key=len, reverse=True)
        rows.append((code, re.compile("|".join(alias_regex(s) for s in spellings), re.IGNORECASE)))
    return tuple(rows)


@functools.cache
def code_regex() -> str:
    """Any code: a curated alias or title (declined), or a generic «… кодекс …» we may not know."""
    known = "|".join(gate(p.pattern) for _, p in code_regexes())  # each behind its first letters
    # anchored at a word start and bounded: linear on any input (an unanchored «[а-я]+ого» backtracks
    # quadratically through one long word)
    generic = (
        r"(?<![А-ЯЁа-яё])[А-ЯЁа-яё]{1,40}(?:ого|его|ый|ий|ой)\s+кодекс\w*"
        r"|(?<!\w)[Кк]одекс\w*\s+(?:о|об)\s+[а-яё]{1,40}"
    )
    head = r"(?:(?:ҚР|Қазақстан\s+Республикасы\w*)\s+)?"
    tail = r"(?:\s+(?:РК|Республики\s+Казахстан|of\s+the\s+Republic\s+of\s+Kazakhstan))?"
    return rf"(?P<code>{head}(?:{known}|{generic}){tail})"


def code_of(text: str) -> tuple[str, str]:
    """(code id, display alias) for a code spelling: a curated code's adilet id, or ``code:<stems>``."""
    for code, pattern in code_regexes():
        if pattern.search(text):
            return code.adilet_id, code.aliases[0]
    return "code:" + code_key(text), normalize_space(text)


def code_key(text: str) -> str:
    """Declension-folded key of a code's name: «Кодекса о недрах» and «Кодекс о недрах» → «коде о недр»."""
    filler = {"рк", "қр", "республики", "казахстан", "қазақстан", "республикасының", "of", "the", "republic"}
    words = [w for w in re.findall(r"\w+", text.casefold()) if w not in filler]
    return " ".join(w[: max(4, len(w) - 3)] if len(w) > 3 else w for w in words)
