"""What the query grammar finds: typed values, never loose dicts (eyecite's ``Token``)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from schemas.designations import Designation
from schemas.kinds import DocType

# One word for a whole answer (and for each match): see lookup.result.overall_status.
LookupStatus = Literal["exact", "ambiguous", "partial", "not_found", "no_identifier"]

IdentifierKind = Literal[
    "adilet_id",  # V2300031934
    "law_number",  # 414-V (a law or code by its number)
    "code_article",  # ст. 156 ТК РК: an article with its code
    "article",  # статья 2 (bound to the document named beside it, see lookup.binding)
    "point",  # п. 12 (a пункт of an act or of the rules it approves)
    "order",  # Приказ МТСЗН № 211 от 25.12.2024 (any act by issuer/type, number and date)
    "registration",  # Minjust registration number
    "standard",  # 29 CFR 1910.146, ТР ТС 004/2011, ISO 45001 …
    "title",  # Закон «О противодействии коррупции», закон о противодействии коррупции: an act by its title
    "code_name",  # Трудовой кодекс, ТК РК, Конституция, Еңбек кодексі: a code by its name, no article
]


@dataclass(frozen=True)
class Identifier:
    """One identifier found in a query; ``span`` slices the original query text."""

    kind: IdentifierKind
    raw: str
    canonical: str
    span: tuple[int, int]
    adilet_id: str | None = None
    code: str | None = None  # adilet id of a curated code, else "code:<stems>" for a code we do not know
    code_name: str | None = None  # how the canonical form names the code (ТК РК)
    article: str | None = None  # "156", "5-1"
    paragraph: str | None = None  # "2" (п. 2 ст. 156), "(c)(2)" (29 CFR 1910.146(c)(2))
    issuer: str | None = None  # short form (МТСЗН)
    doc_type: DocType | None = None  # order, resolution, decree: named by the type word
    number: str | None = None  # order key (ҚРДСМ-26), law number (414-V), registration number
    date: dt.date | None = None
    year: int | None = None
    designation: Designation | None = None
    in_annex: bool = False  # a пункт of the rules or regulation an act approves («п. 12 Правил»)
    title: str | None = None  # a title's key (:func:`schemas.identifiers.title_key`)
    title_words: tuple[str, ...] = ()  # an unquoted title's words: it may end before the question does
    bound_to: int | None = None  # an article or пункт: the index of the document identifier it belongs to
    binding: str | None = None  # the rule that bound it (``lookup.binding``)


@dataclass(frozen=True)
class Row:
    """One spelling of one family: a pattern, the examples it must read, and how a match becomes a value."""

    name: str
    kind: IdentifierKind
    pattern: re.Pattern[str]
    examples: tuple[str, ...]
    build: Callable[[re.Match[str]], Identifier | None]
    folded: bool = False  # match on look-alike-folded text (identifiers spelled in Latin letters)
