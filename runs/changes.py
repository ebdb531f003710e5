"""Change sets: what a run will write to the index, kept between its stages, and the gate that refuses a
run that would delete too much.

The diff (:mod:`runs.diff`) is saved as ``work/<run_id>/diff.parquet`` after the index stage, so the
validate, publish and report stages (separate Airflow tasks) read the same change set. ``index.dirty``
marks an index that may differ from the published version (a run wrote to it and has not published yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from enrich.storage import write_parquet_atomic
from runs.diff import CLASSES, ChangeClass, ChunkDiff
from runs.errors import ShrinkRefused
from runs.state import Published, RunInfo, RunOptions, RunState

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


def chunk_state(enriched: pa.Table) -> dict[str, tuple[str | None, str | None]]:
    """chunk_id → (text_hash, meta_hash): what the diff compares."""
    ids, texts, metas = (enriched.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    return {i: (t, m) for i, t, m in zip(ids, texts, metas, strict=True)}


def count_classes(info: RunInfo, diff: ChunkDiff) -> None:
    """Copy the diff's counts per change class into the run's info."""
    counts = diff.counts()
    info.added, info.text_changed, info.metadata_changed = (counts[c] for c in CLASSES[:3])
    info.unchanged, info.deleted = counts[ChangeClass.UNCHANGED], counts[ChangeClass.DELETED]


def same_tables(previous: Published, registry: pa.Table, enriched: pa.Table, rejects: pa.Table) -> bool:
    """The run rebuilt exactly the published version (its rejects compared without their run ids)."""
    drop = [c for c in ("run_id",) if c in rejects.column_names]
    same = registry.equals(previous.registry) and enriched.equals(previous.enriched)
    return bool(same and rejects.drop_columns(drop).equals(previous.rejects.drop_columns(drop)))


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
    chunk_share = len(diff.deleted) / max(1, previous.enriched.num_rows)
    if doc_share > options.max_shrink or chunk_share > options.max_shrink:
        listed = ", ".join(gone[:10]) + (" …" if len(gone) > 10 else "")
        raise ShrinkRefused(
            f"refusing to publish: the run would delete {len(gone)} of {len(before)} documents ({doc_share:.0%}) "
            f"and {len(diff.deleted)} of {previous.enriched.num_rows} chunks ({chunk_share:.0%}), over the "
            f"{options.max_shrink:.0%} limit; pass --allow-shrink if this is intended. Documents: {listed or '-'}"
        )
