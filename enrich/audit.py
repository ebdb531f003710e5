"""``zan audit``: how every document of the published version was read, and what it still lacks.

Per document: the parser chosen for each source file and the evidence for it; the article-heading-like
lines counted straight from the source against what extraction made of them (the act's articles, an
annex's articles, quoted headings of amended acts, notes, a table of contents, out-of-sequence lines) and
the *unexplained* rest, which should be 0; and the identifier fields its type should have but does not.
Rejected files are listed with their reasons. The same summary is a section of every run report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.arrow import REGISTRY_SCHEMA, REJECT_SCHEMA
from schemas.parquet import read_parquet
from schemas.published import published_file

# The identifier fields each kind of document is expected to carry.
EXPECTED: dict[str, tuple[str, ...]] = {
    "law": ("number", "date_approved", "issuer"),
    "code": ("number", "date_approved"),
    "constitution": ("date_approved",),
    "order": ("issuer", "number", "date_approved"),
    "resolution": ("issuer", "number", "date_approved"),
    "decree": ("issuer", "number", "date_approved"),
    "decision": ("issuer", "number", "date_approved"),
    "ruling": ("issuer", "number", "date_approved"),
    "instruction": ("issuer", "number", "date_approved"),
    "standard": ("intl_org", "intl_section"),
}


@dataclass
class DocumentAudit:
    doc_id: str
    doc_type: str
    parsers: list[str]
    evidence: list[str]
    heading_lines: int
    articles: int
    annex_articles: int
    quoted: int
    out_of_sequence: list[str]
    unexplained: int
    missing: list[str]
    notices: list[str] = field(default_factory=list)


@dataclass
class Audit:
    documents: list[DocumentAudit]
    rejects: list[dict[str, Any]]

    @property
    def gaps(self) -> int:
        return sum(d.unexplained for d in self.documents)

    def as_dict(self) -> dict[str, Any]:
        return {
            "documents": [asdict(d) for d in self.documents],
            "rejects": self.rejects,
            "files_rejected": len({r["source_file"] for r in self.rejects if r["stage"] == "extract"}),
            "unexplained_heading_lines": self.gaps,
            "documents_missing_fields": sum(1 for d in self.documents if d.missing),
        }


def audit_tables(registry: pa.Table, rejects: pa.Table) -> Audit:
    """The audit of one version's registry and rejects (what the run report and ``zan audit`` show)."""
    documents = [_document(row) for row in registry.to_pylist()]
    listed = rejects.select(["stage", "source_file", "doc_id", "reason"]).to_pylist()
    return Audit(documents, listed)


def audit_home(home: Path) -> Audit:
    """The audit of the version published under ``home``."""
    registry = read_parquet(published_file(home, "registry.parquet"), REGISTRY_SCHEMA, "registry")
    rejects = read_parquet(published_file(home, "rejects.parquet"), REJECT_SCHEMA, "rejects")
    return audit_tables(registry, rejects)


def missing_fields(row: dict[str, Any]) -> list[str]:
    """The identifier fields a registry row's type should carry but does not (and an unknown status)."""
    present = {
        "number": bool(row["law_zrk"] or row["order_number"]),
        "date_approved": row["date_approved"] is not None,
        "issuer": bool(row["issuer"]),
        "intl_org": bool(row["intl_org"]),
        "intl_section": bool(row["intl_section"]),
    }
    missing = [f for f in EXPECTED.get(row["doc_type"], ()) if not present[f]]
    if row["doc_type"] == "unknown":
        missing.insert(0, "doc_type")
    if row["status"] == "unknown":
        missing.append("status")
    return missing


def _document(row: dict[str, Any]) -> DocumentAudit:
    files = row["extraction"] or []

    def total(key: str) -> int:
        return sum(int(f[key] or 0) for f in files)

    return DocumentAudit(
        doc_id=row["doc_id"],
        doc_type=row["doc_type"],
        parsers=sorted({f["parser"] for f in files if f["parser"]}),
        evidence=list(dict.fromkeys(e for f in files for e in f["evidence"] or [])),
        heading_lines=total("heading_lines"),
        articles=total("articles"),
        annex_articles=total("annex_articles"),
        quoted=total("quoted"),
        out_of_sequence=[line for f in files for line in f["out_of_sequence"] or []],
        unexplained=total("unexplained"),
        missing=missing_fields(row),
        notices=[n for f in files for n in f["notices"] or []],
    )


def format_audit(audit: Audit) -> str:
    """A plain-text table, one line per document, then the rejects."""
    head = f"{'doc_id':<16} {'type':<12} {'parser':<14} {'head':>5} {'art':>4} {'annex':>5} {'quot':>4} "
    head += f"{'seq':>4} {'gap':>4}  missing"
    lines = [head]
    for d in audit.documents:
        lines.append(
            f"{d.doc_id:<16} {d.doc_type:<12} {','.join(d.parsers):<14} {d.heading_lines:>5} {d.articles:>4} "
            f"{d.annex_articles:>5} {d.quoted:>4} {len(d.out_of_sequence):>4} {d.unexplained:>4}  "
            f"{', '.join(d.missing) or '-'}"
        )
        lines += [f"  ! {d.doc_id}: {notice}" for notice in d.notices]
    summary = audit.as_dict()
    lines.append(
        f"{len(audit.documents)} documents; {summary['files_rejected']} files rejected; "
        f"{audit.gaps} unexplained heading lines; {summary['documents_missing_fields']} documents missing fields"
    )
    lines += [f"  rejected [{r['stage']}] {r['source_file']}: {r['reason']}" for r in audit.rejects]
    return "\n".join(lines) + "\n"
