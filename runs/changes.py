"""Change sets: what a run will write to the index, kept between its stages, and the gate that refuses a
run that would delete too much.

The diff (:mod:`runs.diff`) is saved as ``work/<run_id>/diff.parquet`` after the index stage, so the
validate, publish and report stages (separate Airflow tasks) read the same change set. ``index.dirty``
marks an index that may differ from the published version (a run wrote to it and has not published yet).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from enrich.storage import write_parquet_atomic
from runs.diff import CLASSES, ChangeClass, ChunkDiff
from runs.errors import ShrinkRefused
from runs.state import Published, RunInfo, RunOptions, RunState
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, conform

if TYPE_CHECKING:
    from runs.build import Scope

DIRTY = "index.dirty"
DIFF_SCHEMA = pa.schema([pa.field("chunk_id", pa.string(), nullable=False), pa.field("class", pa.string())])


def save_diff(state: RunState, diff: ChunkDiff) -> None:
    """Keep the run's change set for the stages after ``index``."""
    ids = [i for name in CLASSES for i in getattr(diff, name)]
    classes = [name for name in CLASSES for _ in getattr(diff, name)]
    table = pa.table({"chunk_id": ids, "class": classes}, schema=DIFF_SCHEMA)
    write_parquet_atomic(table, state.work / "diff.parquet", DIFF_SCHEMA, "diff")


def load_diff(state: RunState) -> ChunkDiff:
    """The change set ``index`` saved (empty before it ran)."""
    path = state.work / "diff.parquet"
    diff = ChunkDiff()
    if path.exists():
        table = pq.read_table(path)
        for chunk_id, name in zip(table.column("chunk_id").to_pylist(), table.column("class").to_pylist(), strict=True):
            getattr(diff, name).append(chunk_id)
    return diff


def chunk_state(enriched: pa.Table) -> pa.Table:
    """chunk_id, text_hash, meta_hash: what the diff compares."""
    return enriched.select(["chunk_id", "text_hash", "meta_hash"])


def count_classes(info: RunInfo, diff: ChunkDiff) -> None:
    """Copy the diff's counts per change class into the run's info."""
    counts = diff.counts()
    info.added, info.text_changed, info.metadata_changed = (counts[c] for c in CLASSES[:3])
    info.unchanged, info.deleted = counts[ChangeClass.UNCHANGED], counts[ChangeClass.DELETED]


def same_tables(previous: Published, registry: pa.Table, enriched: Path, rejects: pa.Table) -> bool:
    """The run rebuilt exactly the published version (its rejects compared without their run ids); the
    enriched chunks are compared file against file, a batch at a time."""
    drop = [c for c in ("run_id",) if c in rejects.column_names]
    if not registry.equals(previous.registry):
        return False
    if not rejects.drop_columns(drop).equals(previous.rejects.drop_columns(drop)):
        return False
    return same_rows(enriched, previous.folder / "enriched_chunks.parquet")


def same_rows(a: Path, b: Path, batch: int = 16_384) -> bool:
    """Two enriched-chunk files hold equal rows in the same order (each read in batches, checked against the
    contract; row groups may differ)."""
    if pq.ParquetFile(a).metadata.num_rows != pq.ParquetFile(b).metadata.num_rows:
        return False
    left, right = _rows(a, batch), _rows(b, batch)
    x = y = None
    while True:
        x = x if x is not None and x.num_rows else next(left, None)
        y = y if y is not None and y.num_rows else next(right, None)
        if x is None or y is None:
            return x is None and y is None
        n = min(x.num_rows, y.num_rows)
        if not x.slice(0, n).equals(y.slice(0, n)):
            return False
        x, y = x.slice(n), y.slice(n)


def _rows(path: Path, batch: int) -> Iterator[pa.Table]:
    for part in pq.ParquetFile(path).iter_batches(batch_size=batch):
        yield conform(pa.Table.from_batches([part]), ENRICHED_CHUNK_SCHEMA, "enriched_chunks")


def in_scope_chunks(enriched: pa.Table, scope: Scope, rebuilt: set[str]) -> list[str]:
    """The chunks a --force-reembed run embeds again: the whole version, or the documents in scope."""
    if scope.is_full:
        return [str(c) for c in enriched.column("chunk_id").to_pylist()]
    wanted = scope.touched | rebuilt
    pairs = zip(enriched.column("chunk_id").to_pylist(), enriched.column("doc_id").to_pylist(), strict=True)
    return [str(chunk_id) for chunk_id, doc_id in pairs if doc_id in wanted]


def check_shrink(previous: Published | None, registry: pa.Table, diff: ChunkDiff, options: RunOptions) -> None:
    """Raise :class:`ShrinkRefused` when the run deletes more than ``options.max_shrink`` of the
    documents or chunks (unless ``--allow-shrink``)."""
    if previous is None or options.allow_shrink:
        return
    before = set(previous.registry.column("doc_id").to_pylist())
    gone = sorted(before - set(registry.column("doc_id").to_pylist()))
    doc_share = len(gone) / max(1, len(before))
    chunks_before = previous.chunk_count
    chunk_share = len(diff.deleted) / max(1, chunks_before)
    if doc_share > options.max_shrink or chunk_share > options.max_shrink:
        listed = ", ".join(gone[:10]) + (" …" if len(gone) > 10 else "")
        raise ShrinkRefused(
            f"refusing to publish: the run would delete {len(gone)} of {len(before)} documents ({doc_share:.0%}) "
            f"and {len(diff.deleted)} of {chunks_before} chunks ({chunk_share:.0%}), over the "
            f"{options.max_shrink:.0%} limit; pass --allow-shrink if this is intended. Documents: {listed or '-'}"
        )
