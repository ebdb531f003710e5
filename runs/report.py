"""The run report (:class:`schemas.run_report.RunReport`), built from what the run did: JSON for tools (and the
``runs`` view), a small static HTML page for people (the template ``zan serve`` shows it with).

Written to ``HOME/runs/<run_id>.json`` and ``.html`` by every run (failed, refused and dry runs too), and
into the version's folder when the run publishes one. Contents: counts per change class, per document type
and per source folder; identifier-field coverage (share of chunks with each field filled) per document
type; documents added, removed and changed against the previous version; rejects with reasons; seconds per
stage; texts sent to the embedder.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from runs.changes import ChangeSet, lockstep, sorted_chunks
from runs.diff import CLASSES, WRITTEN, ChangeClass
from runs.versions import now_iso, write_text_atomic
from schemas.arrow import REGISTRY_FIELDS_ON_CHUNK
from schemas.parquet import iter_parquet
from schemas.run_report import RejectLine, RunReport, StageResult

if TYPE_CHECKING:
    from runs.state import Published
    from schemas.run_report import RunInfo

COVERAGE_FIELDS = tuple(f for f in REGISTRY_FIELDS_ON_CHUNK if f not in ("doc_title", "doc_type")) + (
    "code_articles",
    "article_labels",
)
REPORT_COLUMNS = ("chunk_id", "doc_id", "doc_type", "source_file", *COVERAGE_FIELDS)  # what the report reads


def build_report(
    info: RunInfo,
    changes: ChangeSet,
    enriched: Path,
    registry: pa.Table,
    previous: Published | None,
    rejects: pa.Table,
    started: str,
    stages: Iterable[StageResult] = (),
) -> RunReport:
    """The report of a run whose version's chunks are ``enriched`` (read a batch at a time beside the change
    set, only :data:`REPORT_COLUMNS`: the tallies hold counts per doc type and folder, never the corpus), with
    what each of its ``stages`` did."""
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    by_source: dict[str, Counter[str]] = defaultdict(Counter)
    filled: dict[str, Counter[str]] = defaultdict(Counter)
    touched: set[str] = set()
    written = pa.array([str(c) for c in WRITTEN], pa.string())
    for table, classes in lockstep(sorted_chunks(enriched, list(REPORT_COLUMNS)), changes.wanted()):
        rows = table.append_column("class", classes.column("class"))
        _tally(rows, by_type, by_source)
        _count_filled(table, filled)
        changed = rows.filter(pc.is_in(rows.column("class"), value_set=written)).column("doc_id")
        touched |= {str(d) for d in pc.unique(changed).to_pylist()}
    if previous is not None and changes.count(ChangeClass.DELETED):
        deleted = pa.array([i for ids in changes.ids(ChangeClass.DELETED) for i in ids], pa.string())
        for old in iter_parquet(
            previous.folder / "enriched_chunks.parquet", columns=["chunk_id", "doc_id", "doc_type", "source_file"]
        ):
            gone = old.filter(pc.is_in(old.column("chunk_id"), value_set=deleted))
            _tally(gone.append_column("class", pa.repeat(pa.scalar("deleted"), gone.num_rows)), by_type, by_source)
            touched |= {str(d) for d in pc.unique(gone.column("doc_id")).to_pylist()}
    return RunReport.of(
        info,
        started=started,
        finished=now_iso(),
        previous_version=previous.version if previous else None,
        classes=dict(changes.counts),
        by_doc_type={k: _ordered(v) for k, v in sorted(by_type.items())},
        by_source={k: _ordered(v) for k, v in sorted(by_source.items())},
        coverage=_coverage(filled),
        documents_diff=documents_diff(registry, previous, touched),
        rejects=[RejectLine(**r) for r in rejects.select(["stage", "source_file", "doc_id", "reason"]).to_pylist()],
        extraction=extraction_summary(registry, rejects),
        stages=list(stages),
    )


def extraction_summary(registry: pa.Table, rejects: pa.Table) -> dict[str, Any]:
    """The run report's extraction section: parsers used, heading gaps, fields missing, statuses unstated."""
    from enrich.audit import audit_tables

    audit = audit_tables(registry, rejects)
    parsers = Counter(p for d in audit.documents for p in d.parsers)
    return {
        "parsers": dict(sorted(parsers.items())),
        "unexplained_heading_lines": audit.gaps,
        "gaps": {d.doc_id: d.unexplained for d in audit.documents if d.unexplained},
        "missing_fields": {d.doc_id: d.missing for d in audit.documents if d.missing},
        "notices": {d.doc_id: d.notices for d in audit.documents if d.notices},
        "conflicts": [
            {"doc_id": r["doc_id"], "source_file": r["source_file"], "reason": r["reason"]}
            for r in audit.rejects
            if "conflicting requisites" in r["reason"]
        ],
    }


def _tally(
    rows: pa.Table, by_type: dict[str, Counter[str]], by_source: dict[str, Counter[str]], default: str = "unchanged"
) -> None:
    """Count ``rows`` (chunk_id, doc_type, source_file, class) per doc type and per source folder, in Arrow:
    one group per (doc type, source file, class), then folders from the few distinct files."""
    table = pa.table(
        {
            "doc_type": pc.fill_null(rows.column("doc_type"), "unknown"),
            "source_file": pc.fill_null(rows.column("source_file"), ""),
            "class": pc.fill_null(rows.column("class"), default),
            "n": pa.repeat(pa.scalar(1), rows.num_rows),
        }
    )
    grouped = table.group_by(["doc_type", "source_file", "class"]).aggregate([("n", "sum")])
    for doc_type, source, name, n in zip(*(grouped.column(c).to_pylist() for c in grouped.column_names), strict=True):
        by_type[doc_type][name] += n
        by_source[str(Path(source).parent)][name] += n


def _ordered(counter: Counter[str]) -> dict[str, int]:
    return {name: counter.get(name, 0) for name in CLASSES}


def coverage(enriched: pa.Table) -> dict[str, dict[str, float]]:
    """Per doc type: the share of chunks whose identifier field is filled (lists: non-empty)."""
    filled: dict[str, Counter[str]] = defaultdict(Counter)
    _count_filled(enriched, filled)
    return _coverage(filled)


def _count_filled(table: pa.Table, filled: dict[str, Counter[str]]) -> None:
    """Add one batch's chunks per doc type (``n``) and those with each coverage field filled to ``filled``."""
    columns: dict[str, Any] = {
        "doc_type": pc.fill_null(table.column("doc_type"), "unknown"),
        "n": pa.repeat(1, table.num_rows),
    }
    for name in COVERAGE_FIELDS:
        column = table.column(name)
        if pa.types.is_list(column.type):
            mask = pc.fill_null(pc.greater(pc.list_value_length(column), 0), False)
        elif pa.types.is_string(column.type):
            mask = pc.fill_null(pc.not_equal(column, ""), False)
        else:
            mask = column.is_valid()
        columns[name] = pc.cast(mask, pa.int64())
    grouped = pa.table(columns).group_by("doc_type").aggregate([("n", "sum"), *((f, "sum") for f in COVERAGE_FIELDS)])
    for row in grouped.to_pylist():
        counts = filled[row["doc_type"]]
        counts["n"] += row["n_sum"]
        for name in COVERAGE_FIELDS:
            counts[name] += row[f"{name}_sum"]


def _coverage(filled: dict[str, Counter[str]]) -> dict[str, dict[str, float]]:
    return {
        doc_type: {f: round(counts[f] / counts["n"], 4) for f in COVERAGE_FIELDS}
        for doc_type, counts in sorted(filled.items())
        if counts["n"]
    }


def documents_diff(registry: pa.Table, previous: Published | None, touched: set[str]) -> dict[str, list[str]]:
    """Documents added, removed, and changed (``touched``: documents with a chunk written or deleted; or
    whose registry row changed)."""
    now = {r["doc_id"]: r for r in registry.to_pylist()}
    before = {r["doc_id"]: r for r in previous.registry.to_pylist()} if previous else {}
    touched = set(touched)
    touched |= {d for d in now if d in before and now[d] != before[d]}
    return {
        "added": sorted(set(now) - set(before)),
        "removed": sorted(set(before) - set(now)),
        "changed": sorted(d for d in touched if d in now and d in before),
    }


def write_report(home: Path, report: RunReport, version_dir: Path | None = None) -> Path:
    """``runs/<run_id>.json`` + ``.html`` (and a copy in the version folder). Returns the JSON path."""
    text, page = report.to_json(), report.html()
    path = home / "runs" / f"{report.run_id}.json"
    write_text_atomic(path, text)
    write_text_atomic(path.with_suffix(".html"), page)
    if version_dir is not None:
        write_text_atomic(version_dir / "report.json", text)
        write_text_atomic(version_dir / "report.html", page)
    return path
