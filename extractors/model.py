"""Typed documents: what every extractor returns, whatever the source format."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from schemas.errors import ZanError
from schemas.kinds import DocType
from schemas.links import link_problem


@dataclass(slots=True)
class Requisites:
    """Identifier fields of one document, as far as its source states them."""

    doc_title: str | None = None
    doc_type: DocType | None = None
    adilet_id: str | None = None
    portal_id: str | None = None
    issuer: str | None = None  # short form, e.g. МТСЗН
    issuer_full: str | None = None
    region: str | None = None  # a local body's region (Акмолинская область, город Астана)
    order_number: str | None = None
    law_zrk: str | None = None
    date_approved: dt.date | None = None
    registration_number: str | None = None
    registration_date: dt.date | None = None
    jurisdiction: str | None = None
    status: str | None = None
    language: str | None = None
    source_url: str | None = None
    intl_org: str | None = None
    intl_section: str | None = None
    aliases: list[str] = field(default_factory=list)
    replaces: list[str] = field(default_factory=list)  # doc_ids of the acts this one replaced, as its source says

    def fill_from(self, other: Requisites) -> Requisites:
        """A copy with every empty field taken from ``other``; aliases and what it replaced are merged."""
        merged: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name in ("aliases", "replaces"):
                merged[f.name] = list(dict.fromkeys([*mine, *theirs]))
            else:
                merged[f.name] = mine if mine not in (None, "") else theirs
        return Requisites(**merged)


@dataclass(slots=True)
class Unit:
    """One structural unit of a document: an article, a standard's section, a preamble or an appendix.

    ``label`` is the exact article or section label (``156``, ``5-1``, ``(c)``, ``4.1``); ``kind`` says
    which: ``article`` units are what ``code_articles`` is built from.
    """

    kind: str  # article, section, chapter, division, preamble, annex
    label: str | None
    heading: str | None
    section_path: list[str] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    annex: int = 0  # 0: the act's own text; n: its n-th annex (a ratified treaty, rules approved by an order)
    points: list[str | None] = field(default_factory=list)  # the пункт each paragraph opens («12», «(f)(1)(i)»)

    def add(self, text: str, point: str | None = None) -> None:
        """Append a paragraph, with the пункт (point) label it opens, if any."""
        self.paragraphs.append(text)
        self.points.append(point)


@dataclass(slots=True)
class HeadingTally:
    """What became of every article-heading-like line of one source (``zan audit`` compares it with the
    same lines counted straight from the source): read as an article of the act or of an annex, or set
    aside with a reason. A line counted in the source and in none of these is an unexplained gap."""

    in_source: int = 0
    articles: int = 0
    annex_articles: int = 0
    quoted: int = 0  # opens with a quote or sits inside a quotation: an amendment's text, not a heading
    notes: int = 0
    toc: int = 0  # a table of contents line
    out_of_sequence: list[str] = field(default_factory=list)  # numbered out of the act's own order

    @property
    def explained(self) -> int:
        return self.articles + self.annex_articles + self.quoted + self.notes + self.toc + len(self.out_of_sequence)

    @property
    def unexplained(self) -> int:
        return max(0, self.in_source - self.explained)


@dataclass(slots=True)
class Document:
    """A parsed document: requisites plus ordered structural units, in one language."""

    requisites: Requisites
    units: list[Unit]
    source_file: str
    language: str
    parser: str = ""  # which extractor read it (``extractors.detect``)
    evidence: list[str] = field(default_factory=list)  # why that extractor was chosen
    headings: HeadingTally = field(default_factory=HeadingTally)
    notices: list[str] = field(default_factory=list)  # facts the run report should show (status not stated…)
    incomplete: str | None = None  # why part of the text is absent (a part file the index names is not there)
    outline: Outline | None = None  # set on a header (:meth:`header`): the facts of the units it no longer holds

    @property
    def article_labels(self) -> list[str]:
        """The act's own articles; an annex's articles (a ratified treaty's) are not the act's."""
        if self.outline is not None:
            return list(self.outline.article_labels)
        return [u.label for u in self.units if u.kind == "article" and u.label and not u.annex]

    @property
    def annex_titles(self) -> list[str]:
        if self.outline is not None:
            return list(self.outline.annex_titles)
        return [u.heading or "" for u in self.units if u.kind == "annex"]

    @property
    def text_size(self) -> int:
        """Characters of text in the document's units."""
        if self.outline is not None:
            return self.outline.text_size
        return sum(len(p) for u in self.units for p in u.paragraphs)

    def header(self) -> Document:
        """The document without its units: what grouping documents into registry entries needs (requisites,
        source, articles, size), a few hundred bytes where the whole text may be megabytes."""
        outline = Outline(tuple(self.article_labels), tuple(self.annex_titles), self.text_size)
        return dataclasses.replace(self, units=[], outline=outline)


@dataclass(frozen=True, slots=True)
class Outline:
    """What a document header keeps of its units."""

    article_labels: tuple[str, ...]
    annex_titles: tuple[str, ...]
    text_size: int


class ExtractError(ZanError, ValueError):
    """A source file cannot be turned into a document. Terminal: retrying will not help."""

    def __init__(self, source_file: str, reason: str) -> None:
        super().__init__(f"{source_file}: {reason}")
        self.source_file = source_file
        self.reason = reason


# Fields that are identifiers (matched, filtered, put in addresses): letters of any script, digits, spaces and
# . : / ( ) - only, as every real number reads («ҚР ДСМ-26», «8С 37/5», «45001:2018», «004/2011»).
IDENTIFIER_FIELDS = ("order_number", "law_zrk", "registration_number", "intl_section")  # ids: checked as ids
_IDENTIFIER_TEXT = re.compile(r"[\w .:/()-]{1,64}")


def vet_requisites(document: Document) -> None:
    """Keep in the fields only what such a field may hold; say why anything else was dropped.

    A ``source_url`` that is not an http(s) link on an expected host (:func:`schemas.links.link_problem`:
    ``javascript:``, ``data:``, another host…) and an identifier field holding other characters (an order
    number «777"><img») are cleared, and the value is kept as text in the document's notices with the reason,
    which the audit and the run report show. Every extractor's document passes here
    (:func:`extractors.detect.extract`)."""
    req = document.requisites
    if req.source_url:
        why = link_problem(req.source_url)
        if why:
            document.notices.append(f"source url kept as text, not as a link ({why}): {req.source_url[:300]!r}")
            req.source_url = None
    for name in IDENTIFIER_FIELDS:
        value = getattr(req, name)
        if value and not _IDENTIFIER_TEXT.fullmatch(value):
            document.notices.append(
                f"{name} rejected (an identifier holds letters, digits, spaces and . : / ( ) - only): {value[:300]!r}"
            )
            setattr(req, name, None)
