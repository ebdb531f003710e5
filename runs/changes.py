"""Change sets: what a run will write to the index, kept between its stages, and the gate that refuses a
run that would delete too much.

The diff (:mod:`runs.diff`) is written as it is merged, to ``work/<run_id>/`` (:class:`ChangeSet`), by the
index stage; the validate, publish and report stages (separate Airflow tasks) read the same change set a
batch at a time. ``index.dirty`` marks an index that may differ from the published version (a run wrote to
it and has not published yet).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runs.diff import CLASSES, DIFF_SCHEMA, WRITTEN, ChangeClass, ChunkDiff, DiffStep
from runs.errors import RunError, ShrinkRefused
from runs.state import Published, RunInfo, RunOptions
from runs.versions import write_text_atomic
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, conform
from schemas.files import atomic_writer
from schemas.parquet import STREAM_ROWS, iter_parquet

if TYPE_CHECKING:
    from runs.scope import RepealShare, Scope

DIRTY = "index.dirty"
DIFF_FILE, HELD_FILE, COUNTS_FILE = "diff.parquet", "held.parquet", "diff.json"


@dataclass
class ChangeSet:
    """A run's change set on disk, in chunk id order: ``diff.parquet`` (chunk_id, class: every wanted chunk in
    the order of the version's enriched file, with the deleted ones between them), ``held.parquet`` (what
    the index holds for each ``metadata_changed`` chunk, in the same order, when that is known without
    reading the index) and ``diff.json`` (the counts). Read a batch at a time: no stage holds its ids."""

    folder: Path
    counts: dict[str, int]

    @classmethod
    def write(cls, folder: Path, steps: Iterable[DiffStep], held_schema: pa.Schema | None = None) -> ChangeSet:
        """Write the merge's steps as they come (one batch in memory) and count the classes."""
        counts = dict.fromkeys(CLASSES, 0)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / HELD_FILE).unlink(missing_ok=True)
        with contextlib.ExitStack() as stack:
            handle = stack.enter_context(atomic_writer(folder / DIFF_FILE))
            writer = stack.enter_context(pq.ParquetWriter(handle, DIFF_SCHEMA, compression="zstd"))
            held = None
            if held_schema is not None:
                held_handle = stack.enter_context(atomic_writer(folder / HELD_FILE))
                held = stack.enter_context(pq.ParquetWriter(held_handle, held_schema, compression="zstd"))
            for step in steps:
                writer.write_table(step.classes, row_group_size=STREAM_ROWS)
                for item in pc.value_counts(step.classes.column("class")).to_pylist():
                    counts[item["values"]] += item["counts"]
                if held is not None and step.held is not None and step.held.num_rows:
                    held.write_table(step.held.cast(held_schema), row_group_size=STREAM_ROWS)
        write_text_atomic(folder / COUNTS_FILE, json.dumps({str(k): v for k, v in counts.items()}))
        return cls(folder, {str(k): v for k, v in counts.items()})

    @classmethod
    def load(cls, folder: Path) -> ChangeSet:
        """The change set the index stage wrote (all counts 0 before it ran)."""
        path = folder / COUNTS_FILE
        counts = json.loads(path.read_text("utf-8")) if path.exists() else {}
        return cls(folder, {str(c): int(counts.get(str(c), 0)) for c in CLASSES})

    def count(self, *classes: str) -> int:
        return sum(self.counts.get(str(c), 0) for c in classes)

    @property
    def writes(self) -> bool:
        """Whether the run writes to the index at all (upserts, updates or deletes)."""
        return self.count(*WRITTEN, ChangeClass.DELETED) > 0

    def batches(self) -> Iterator[pa.Table]:
        """(chunk_id, class) tables in chunk id order, deleted chunks included."""
        if self.count(*CLASSES):
            yield from iter_parquet(self.folder / DIFF_FILE, STREAM_ROWS)

    def wanted(self) -> Iterator[pa.Table]:
        """The (chunk_id, class) of the version's chunks only, in the order of its enriched file."""
        for table in self.batches():
            yield table.filter(pc.not_equal(table.column("class"), ChangeClass.DELETED.value))

    def ids(self, *classes: str) -> Iterator[list[str]]:
        """The chunk ids of ``classes``, a batch at a time (for Chroma calls)."""
        wanted = pa.array([str(c) for c in classes], pa.string())
        for table in self.batches():
            picked = table.filter(pc.is_in(table.column("class"), value_set=wanted)).column("chunk_id")
            if len(picked):
                yield [str(i) for i in picked.to_pylist()]

    def table(self) -> pa.Table:
        """The whole (chunk_id, class) table (the run report tallies it; ids only, no text)."""
        tables = list(self.batches())
        return pa.concat_tables(tables) if tables else DIFF_SCHEMA.empty_table()

    def held(self) -> Iterator[pa.Table]:
        """The held rows of the ``metadata_changed`` chunks, in order (nothing when they were not known)."""
        path = self.folder / HELD_FILE
        if path.exists():
            yield from iter_parquet(path, STREAM_ROWS)

    def diff(self) -> ChunkDiff:
        """The change set as lists of ids: for tests and small tools, not for a corpus."""
        out = ChunkDiff()
        for table in self.batches():
            for i, name in zip(*(table.column(c).to_pylist() for c in ("chunk_id", "class")), strict=True):
                getattr(out, name).append(str(i))
        return out


def lockstep(
    rows: Iterator[pa.Table], other: Iterator[pa.Table], key: str = "chunk_id"
) -> Iterator[tuple[pa.Table, pa.Table]]:
    """Two streams of tables with the same number of rows in all, re-cut so that each pair has equal lengths
    (row k of one belongs to row k of the other; where both have a ``key`` column it must be equal). Raises
    RunError when one stream ends before the other or the keys differ."""
    x: pa.Table | None = None
    y: pa.Table | None = None
    while True:
        x = x if x is not None and x.num_rows else next(rows, None)
        y = y if y is not None and y.num_rows else next(other, None)
        while x is not None and not x.num_rows:
            x = next(rows, None)
        while y is not None and not y.num_rows:
            y = next(other, None)
        if x is None or y is None:
            if x is not None or y is not None:
                raise RunError("the change set and the version's chunks do not line up (a stale work folder?)")
            return
        n = min(x.num_rows, y.num_rows)
        a, b = x.slice(0, n), y.slice(0, n)
        if key in a.column_names and key in b.column_names and not a.column(key).equals(b.column(key)):
            raise RunError("the change set and the version's chunks do not line up (a stale work folder?)")
        yield a, b
        x, y = x.slice(n), y.slice(n)


def sorted_chunks(path: Path, columns: list[str] | None = None, batch_size: int = STREAM_ROWS) -> Iterator[pa.Table]:
    """A version's chunk file in chunk id order, a block at a time. Files written since the streaming merge
    are in that order already; an older one (checked on its ids alone first) is read whole and sorted."""
    last: str | None = None
    for batch in iter_parquet(path, STREAM_ROWS * 4, ["chunk_id"]):
        ids = batch.column(0)
        ordered = len(ids) < 2 or pc.all(pc.less(ids.slice(0, len(ids) - 1), ids.slice(1))).as_py()
        if not ordered or (last is not None and len(ids) and not str(ids[0]) > last):
            whole = pq.read_table(path, columns=columns).sort_by("chunk_id")
            yield from (whole.slice(at, batch_size) for at in range(0, whole.num_rows, batch_size))
            return
        last = str(ids[-1]) if len(ids) else last
    yield from iter_parquet(path, batch_size, columns)


def take_rows(stream: Iterator[pa.Table], n: int, carry: list[pa.Table]) -> pa.Table | None:
    """The next ``n`` rows of ``stream`` (``carry`` keeps what a batch had left over), or None if n is 0."""
    if not n:
        return None
    parts: list[pa.Table] = []
    have = 0
    while have < n:
        table = carry.pop() if carry else next(stream, None)
        if table is None:
            raise RunError(f"the change set's held rows ran out ({have} of {n})")
        part = table.slice(0, n - have)
        parts.append(part)
        have += part.num_rows
        if table.num_rows > part.num_rows:
            carry.append(table.slice(part.num_rows))
    return pa.concat_tables(parts)


def count_classes(info: RunInfo, counts: dict[str, int]) -> None:
    """Copy the counts per change class into the run's info."""
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
    for part in iter_parquet(path, batch):
        yield conform(part, ENRICHED_CHUNK_SCHEMA, "enriched_chunks")


def forced_rows(scope: Scope, rebuilt: set[str]) -> Callable[[pa.Table], pa.Array]:
    """Which rows of a batch (with ``doc_id``) a --force-reembed run embeds again: all of them, or those of
    the documents in scope."""
    if scope.is_full:
        return lambda table: pa.repeat(pa.scalar(True), table.num_rows)
    wanted = pa.array(sorted(scope.touched | rebuilt), pa.string())
    return lambda table: pc.fill_null(pc.is_in(table.column("doc_id"), value_set=wanted), False)


def check_shrink(previous: Published | None, registry: pa.Table, deleted: int, options: RunOptions) -> None:
    """Raise :class:`ShrinkRefused` when the run deletes more than ``options.max_shrink`` of the
    documents or chunks (unless ``--allow-shrink``)."""
    if previous is None or options.allow_shrink:
        return
    before = set(previous.registry.column("doc_id").to_pylist())
    gone = sorted(before - set(registry.column("doc_id").to_pylist()))
    doc_share = len(gone) / max(1, len(before))
    chunks_before = previous.chunk_count
    chunk_share = deleted / max(1, chunks_before)
    if doc_share > options.max_shrink or chunk_share > options.max_shrink:
        listed = ", ".join(gone[:10]) + (" …" if len(gone) > 10 else "")
        raise ShrinkRefused(
            f"refusing to publish: the run would delete {len(gone)} of {len(before)} documents ({doc_share:.0%}) "
            f"and {deleted} of {chunks_before} chunks ({chunk_share:.0%}), over the "
            f"{options.max_shrink:.0%} limit; pass --allow-shrink if this is intended. Documents: {listed or '-'}"
        )


def check_repeals(shares: list[RepealShare], options: RunOptions) -> None:
    """Raise :class:`ShrinkRefused` when the deletions in a git source would repeal more of its acts than a run
    may (``options.max_repeal`` of them, at most ``options.max_repeal_acts``, at least one), or when its tree is
    empty: the upstream rebuilds and force-pushes its tree, so a broken build deletes what it lost, and that is
    no repeal. ``--allow-shrink`` (the DAG Param ``allow_shrink``) lets the run go on, each act repealed on its
    commit's date."""
    if options.allow_shrink:
        return
    for share in shares:
        allowed = min(options.max_repeal_acts, max(1, int(options.max_repeal * share.acts)))
        if not share.emptied and len(share.repealed) <= allowed:
            continue
        commits = ", ".join(c[:12] for c in share.commits[:3]) + (" …" if len(share.commits) > 3 else "")
        listed = ", ".join(share.repealed[:10]) + (" …" if len(share.repealed) > 10 else "")
        what = "leaves its tree empty and " if share.emptied else ""
        raise ShrinkRefused(
            f"refusing to publish: in {share.root}, commit {commits or '?'} {what}deletes the folders of "
            f"{len(share.repealed)} of its {share.acts} acts ({len(share.repealed) / max(1, share.acts):.0%}), which "
            f"would repeal them: over the limit of {allowed} (--max-repeal {options.max_repeal:.0%}, at most "
            f"{options.max_repeal_acts}). A rebuilt upstream that lost them is likelier than a repeal; pass "
            f"--allow-shrink (the DAG Param allow_shrink) if they were repealed. Acts: {listed}"
        )
