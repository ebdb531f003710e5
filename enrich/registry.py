"""Documents → registry rows: one row per document, identifiers merged across sources and languages.

doc_id rules (DESIGN.md): an adilet act is its adilet id lower-cased; a standard is ``<org>-<number>``;
a zan.gov.kz record without an adilet id is ``zan-<portal id>``. One act seen in two sources becomes one
row: the same adilet id, or the same type + issuer + number + date.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from extractors.model import Document, Requisites
from schemas.designations import parse_designation
from schemas.identifiers import doc_id_from_adilet, order_key


class IdentityError(ValueError):
    """A document has nothing to build a doc_id from."""


def doc_id_for(requisites: Requisites) -> str:
    """The stable doc_id of a document, from the strongest identifier it has."""
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
    documents: list[Document] = field(default_factory=list)

    def add(self, document: Document) -> None:
        self.documents.append(document)
        # the Russian edition states requisites first; other editions fill what it lacks
        if document.language == "rus" and self.requisites.language != "rus":
            self.requisites = document.requisites.fill_from(self.requisites)
        else:
            self.requisites = self.requisites.fill_from(document.requisites)


def build_registry(documents: Iterable[Document]) -> dict[str, Entry]:
    """Group documents into registry entries keyed by doc_id, merging one act seen in several sources."""
    entries: dict[str, Entry] = {}
    by_act: dict[tuple[str, str, str, str], str] = {}
    pending = sorted(documents, key=lambda d: (d.requisites.adilet_id is None, d.source_file))
    for document in pending:
        act = _act_key(document.requisites)
        doc_id = by_act.get(act) if act and not document.requisites.adilet_id else None
        doc_id = doc_id or doc_id_for(document.requisites)
        entry = entries.setdefault(doc_id, Entry(doc_id, dataclasses.replace(document.requisites)))
        entry.add(document)
        if act:
            by_act.setdefault(act, doc_id)
    return entries


def _label_order(label: str) -> tuple[int, ...]:
    return tuple(int(p) for p in label.split("-") if p.isdigit())


def registry_row(entry: Entry) -> dict[str, Any]:
    """One row of ``REGISTRY_SCHEMA``."""
    r = entry.requisites
    labels = sorted({lab for d in entry.documents for lab in d.article_labels}, key=_label_order)
    languages = sorted({d.language for d in entry.documents})
    return {
        "doc_id": entry.doc_id,
        "doc_title": r.doc_title or entry.doc_id,
        "doc_type": r.doc_type or "unknown",
        "adilet_id": r.adilet_id,
        "portal_id": r.portal_id,
        "issuer": r.issuer,
        "issuer_full": r.issuer_full,
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
        "source_files": sorted({d.source_file for d in entry.documents}),
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
