"""Typed documents: what every extractor returns, whatever the source format."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Requisites:
    """Identifier fields of one document, as far as its source states them."""

    doc_title: str | None = None
    doc_type: str | None = None  # code, law, constitution, order, resolution, decree, decision, ruling, standard
    adilet_id: str | None = None
    portal_id: str | None = None
    issuer: str | None = None  # short form, e.g. МТСЗН
    issuer_full: str | None = None
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

    def fill_from(self, other: Requisites) -> Requisites:
        """A copy with every empty field taken from ``other``; aliases are merged."""
        merged: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "aliases":
                merged[f.name] = list(dict.fromkeys([*mine, *theirs]))
            else:
                merged[f.name] = mine if mine not in (None, "") else theirs
        return Requisites(**merged)


@dataclass
class Unit:
    """One structural unit of a document: an article, a standard's section, a preamble or an appendix.

    ``label`` is the exact article or section label (``156``, ``5-1``, ``(c)``, ``4.1``); ``kind`` says
    which: ``article`` units are what ``code_articles`` is built from.
    """

    kind: str  # article, section, preamble, body, appendix
    label: str | None
    heading: str | None
    section_path: list[str] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Document:
    """A parsed document: requisites plus ordered structural units, in one language."""

    requisites: Requisites
    units: list[Unit]
    source_file: str
    language: str

    @property
    def article_labels(self) -> list[str]:
        return [u.label for u in self.units if u.kind == "article" and u.label]


class ExtractError(ValueError):
    """A source file cannot be turned into a document. Terminal: retrying will not help."""

    def __init__(self, source_file: str, reason: str) -> None:
        super().__init__(f"{source_file}: {reason}")
        self.source_file = source_file
        self.reason = reason
