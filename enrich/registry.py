"""Documents → registry rows: one row per document, identifiers merged across sources and languages.

doc_id rules (DESIGN.md): an adilet act is its adilet id lower-cased; a standard is ``<org>-<number>``;
a zan.gov.kz record without an adilet id is ``zan-<portal id>``. One act seen in two sources becomes one
row: the same adilet id, or the same type + issuer + number + date.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from enrich.chunking import LIST_CAP
from enrich.lineage import amends_of, repeal_of
from extractors.model import Document, Requisites
from schemas.designations import parse_designation
from schemas.errors import ZanError
from schemas.identifiers import article_order, doc_id_from_adilet, order_key
from schemas.text import is_clean_id


class IdentityError(ZanError, ValueError):
    """A document has nothing to build a doc_id from."""


def doc_id_for(requisites: Requisites) -> str:
    """The stable doc_id of a document, from the strongest identifier it has; an id that would hold anything
    but lower-case ASCII letters, digits, ``.``, ``_`` and ``-`` (a control character, a space) is refused."""
    doc_id = _doc_id(requisites)
    if not is_clean_id(doc_id):
        raise IdentityError(f"the document's id {doc_id[:80]!r} holds characters an id cannot (only a-z 0-9 . _ -)")
    return doc_id


def _doc_id(requisites: Requisites) -> str:
    if requisites.adilet_id:
        return doc_id_from_adilet(requisites.adilet_id)
    if requisites.intl_org and requisites.intl_section:
        designation = parse_designation(_designation_text(requisites.intl_org, requisites.intl_section))
        if designation:
            return designation.doc_id
    if requisites.portal_id:
        return f"zan-{requisites.portal_id}"
    raise IdentityError("no adilet id, standard designation or portal id")


def _designation_text(org: str, section: str) -> str:
    return {"OSHA": f"29 CFR {section}", "EAEU": f"ТР ТС {section}", "IOGP": f"IOGP {section}"}.get(
        org, f"{org} {section}"
    )


def _act_key(r: Requisites) -> tuple[str, str, str, str] | None:
    """Same type + issuer + number + date identifies one act across sources."""
    number = r.law_zrk or (order_key(r.order_number) if r.order_number else None)
    if not (r.doc_type and r.issuer and number and r.date_approved):
        return None
    return (r.doc_type, r.issuer, number, r.date_approved.isoformat())


@dataclass
class Entry:
    """A registry row being assembled from one or more documents."""

    doc_id: str
    requisites: Requisites
    documents: list[Document] = field(default_factory=list)  # whose text is the document's chunks
    also: list[Document] = field(default_factory=list)  # the same act from another kind of source: requisites only

    def add(self, document: Document, text: bool = True) -> None:
        (self.documents if text else self.also).append(document)
        # the Russian edition states requisites first; other editions fill what it lacks
        if document.language == "rus" and self.requisites.language != "rus":
            self.requisites = document.requisites.fill_from(self.requisites)
        else:
            self.requisites = self.requisites.fill_from(document.requisites)


@dataclass(frozen=True)
class Displaced:
    """A document that claimed the same act and language as a better one, and was set aside."""

    document: Document
    doc_id: str
    winner: Document
    reason: str


# Which source speaks for an act, best first: the official adilet page, the official portal record, then
# exports and standards' own files (see :func:`evidence_rank`).
AUTHORITY = ("adilet_html", "zan_json", "act_markdown", "ecfr_xml", "standard_html", "standard_text", "standard_pdf")


NEAR_EMPTY = 200  # characters: below this (or a quarter of the largest copy) a text is a stub, not the act


def evidence_rank(document: Document, largest: int = 0) -> tuple[int, bool, int, int, int, str]:
    """How strongly a document stands for its act; higher wins. Articles read; then substance (a near-empty
    text, a stub or a saved «страница не найдена», never outranks a real one, whatever its format:
    ``largest`` is the longest copy's length); then the source's authority, the text's length and the
    requisites present; the path only breaks an exact tie, so the choice never depends on folder order."""
    r = document.requisites
    size = document.text_size
    stated = sum(bool(v) for v in (r.doc_title, r.order_number or r.law_zrk, r.date_approved, r.issuer, r.adilet_id))
    authority = len(AUTHORITY) - AUTHORITY.index(document.parser) if document.parser in AUTHORITY else 0
    substantial = size >= min(NEAR_EMPTY, largest) and size * 4 >= largest
    return (len(document.article_labels), substantial, authority, size, stated, document.source_file)


def build_registry(documents: Iterable[Document]) -> tuple[dict[str, Entry], list[Displaced]]:
    """Group documents into registry entries keyed by doc_id, merging one act seen in several sources and
    languages. When two documents claim the same act in the same language, the one with the stronger
    evidence (:func:`evidence_rank`) is kept and the other is returned as displaced, naming the winner."""
    by_id: dict[str, list[Document]] = {}
    by_act: dict[tuple[str, str, str, str], str] = {}
    for document in sorted(documents, key=lambda d: (d.requisites.adilet_id is None, d.source_file)):
        act = _act_key(document.requisites)
        doc_id = by_act.get(act) if act and not document.requisites.adilet_id else None
        doc_id = doc_id or doc_id_for(document.requisites)
        by_id.setdefault(doc_id, []).append(document)
        if act:
            by_act.setdefault(act, doc_id)
    entries: dict[str, Entry] = {}
    displaced: list[Displaced] = []
    for doc_id, group in by_id.items():
        kept, losers = [], []
        for language in sorted({d.language for d in group}):
            same = [d for d in group if d.language == language]
            largest = max(d.text_size for d in same)
            ranked = sorted(same, key=functools.partial(_ranked_against, largest=largest), reverse=True)
            kept.append(ranked[0])
            losers += [(d, ranked[0]) for d in ranked[1:]]
        kept.sort(key=lambda d: (d.requisites.adilet_id is None, d.source_file))
        entry = Entry(doc_id, dataclasses.replace(kept[0].requisites))
        for document in kept:
            entry.add(document)
        for loser, winner in losers:
            other_source = loser.parser != winner.parser  # the same act on the portal and on adilet
            if other_source:
                entry.add(loser, text=False)
            displaced.append(Displaced(loser, doc_id, winner, _why(loser, winner, other_source)))
        entries[doc_id] = entry
    return entries, displaced


def _ranked_against(document: Document, largest: int) -> tuple[int, bool, int, int, int, str]:
    return evidence_rank(document, largest)


def _why(loser: Document, winner: Document, other_source: bool) -> str:
    a, b = evidence_rank(winner), evidence_rank(loser)
    facts = f"{a[0]} articles, {a[3]} characters, read as {winner.parser} vs {b[0]}, {b[3]}, {loser.parser}"
    used = "; its requisites fill the registry row, its text is not used" if other_source else ""
    clash = conflicts(winner.requisites, loser.requisites)
    said = f"; conflicting requisites: {'; '.join(clash)}" if clash else ""
    return f"the same act ({loser.language}) as {winner.source_file}, whose text was kept ({facts}){used}{said}"


_COMPARED = ("doc_type", "order_number", "law_zrk", "date_approved", "issuer", "registration_number")


def conflicts(kept: Requisites, other: Requisites) -> list[str]:
    """Requisites two sources of one act state differently («order_number 211 (kept) vs 2119»)."""
    out = []
    for name in _COMPARED:
        a, b = getattr(kept, name), getattr(other, name)
        if a not in (None, "") and b not in (None, "") and a != b:
            out.append(f"{name} {a} (kept) vs {b}")
    return out


def registry_row(
    entry: Entry, amends: list[dict[str, Any]] | None = None, repeal: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One row of ``REGISTRY_SCHEMA``. ``amends`` and ``repeal`` (:func:`enrich.lineage.amends_of` and
    :func:`enrich.lineage.repeal_of` of its documents), when already made where they were extracted: the
    entry's documents may then be headers, without their texts."""
    r = entry.requisites
    labels = sorted({lab for d in entry.documents for lab in d.article_labels}, key=article_order)
    languages = sorted({d.language for d in entry.documents})
    return {
        "doc_id": entry.doc_id,
        "doc_title": r.doc_title or entry.doc_id,
        "doc_type": r.doc_type or "unknown",
        "adilet_id": r.adilet_id,
        "portal_id": r.portal_id,
        "issuer": r.issuer,
        "issuer_full": r.issuer_full,
        "region": r.region,
        "order_number": r.order_number,
        "law_zrk": r.law_zrk,
        "date_approved": r.date_approved,
        "registration_number": r.registration_number,
        "registration_date": r.registration_date,
        "jurisdiction": r.jurisdiction,
        "status": r.status or "unknown",
        "language": "rus" if "rus" in languages else languages[0],
        "languages": languages,
        "source_url": r.source_url,
        "intl_org": r.intl_org,
        "intl_section": r.intl_section,
        "code_articles": sorted({int(lab) for lab in labels if lab.isdigit()}),
        "article_labels": labels,
        "aliases": _aliases(r),
        "annexes": list(dict.fromkeys(t for d in entry.documents for t in d.annex_titles if t))[:LIST_CAP],
        "source_files": sorted({d.source_file for d in (*entry.documents, *entry.also)}),
        **(repeal_of(n for d in entry.documents for u in d.units for n in u.notes) if repeal is None else repeal),
        "replaced_by": None,  # known once the whole registry is (enrich.lineage.with_replacements)
        "amends": amends_of(entry.documents) if amends is None else amends,
        "replaces": sorted({d for doc in entry.documents for d in doc.requisites.replaces}) or None,
        "extraction": [extraction(d) for d in sorted((*entry.documents, *entry.also), key=lambda d: d.source_file)],
    }


def extraction(document: Document) -> dict[str, Any]:
    """How one source file was read, for ``zan audit`` (``EXTRACTION`` in ``schemas.arrow``)."""
    t = document.headings
    return {
        "source_file": document.source_file,
        "parser": document.parser,
        "evidence": document.evidence,
        "heading_lines": t.in_source,
        "articles": t.articles,
        "annex_articles": t.annex_articles,
        "quoted": t.quoted,
        "notes": t.notes,
        "toc": t.toc,
        "out_of_sequence": t.out_of_sequence[:LIST_CAP],
        "unexplained": t.unexplained,
        "notices": document.notices,
    }


_TYPE_WORDS = {
    "order": "Приказ",
    "resolution": "Постановление",
    "decree": "Указ",
    "decision": "Решение",
    "ruling": "Нормативное постановление",
    "law": "Закон",
    "code": "Кодекс",
}


def _aliases(r: Requisites) -> list[str]:
    """Short spellings people use for this document, beside the curated ones."""
    aliases = list(r.aliases)
    if r.order_number and r.doc_type in _TYPE_WORDS:
        issuer = f" {r.issuer}" if r.issuer and len(r.issuer) <= 12 else ""
        aliases.append(f"{_TYPE_WORDS[r.doc_type]}{issuer} № {r.order_number}")
    if r.law_zrk:
        aliases.append(f"№ {r.law_zrk} ЗРК")
    if r.intl_org and r.intl_section:
        aliases.append(_designation_text(r.intl_org, r.intl_section))
    return list(dict.fromkeys(a for a in aliases if a and not re.fullmatch(r"\W*", a)))
