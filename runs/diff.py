"""Per-chunk change classes between what the index holds and what a run wants it to hold.

A chunk is identified by its chunk_id and described by two hashes: ``text_hash`` (of the text that is
embedded) and ``meta_hash`` (of the metadata written beside it). Comparing them decides the write:

- ``added``            new id                      → embed (or reuse a stored vector) and upsert
- ``text_changed``     same id, other text         → embed (or reuse) and upsert
- ``metadata_changed`` same text, other metadata   → metadata-only ``update``; the vector is not touched
- ``unchanged``        both equal                  → no write at all
- ``deleted``          id no longer wanted         → delete

Both sides are streams of tables in chunk id order (a version's chunk files are written in that order, see
:func:`runs.build.chunk_order`), so :func:`classify_stream` is a merge: it holds one batch of each side,
never the corpus's ids (a 200 000-chunk diff held as Python lists and sets cost more memory than any batch).
:func:`classify` is the same rules over two whole tables, for callers that have them in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from runs.errors import RunError
from schemas.changes import CLASSES as CLASSES
from schemas.changes import ChangeClass as ChangeClass

WRITTEN = (ChangeClass.ADDED, ChangeClass.TEXT_CHANGED, ChangeClass.METADATA_CHANGED)  # a write each
EMBEDDED = (ChangeClass.ADDED, ChangeClass.TEXT_CHANGED)  # a vector each (embedded, or reused from the store)


class UnorderedChunks(RunError):
    """A side of the diff is not in strictly increasing chunk id order (a merge would misclassify it)."""


@dataclass
class ChunkDiff:
    added: list[str] = field(default_factory=list)
    text_changed: list[str] = field(default_factory=list)
    metadata_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in CLASSES}

    @property
    def to_embed(self) -> list[str]:
        return self.added + self.text_changed


KEYS = pa.schema(
    [pa.field("chunk_id", pa.string()), pa.field("text_hash", pa.string()), pa.field("meta_hash", pa.string())]
)
DIFF_SCHEMA = pa.schema([pa.field("chunk_id", pa.string(), nullable=False), pa.field("class", pa.string())])


def state_table(state: Mapping[str, tuple[str | None, str | None]]) -> pa.Table:
    """A ``chunk_id → (text_hash, meta_hash)`` mapping as a :data:`KEYS` table."""
    return pa.table(
        {
            "chunk_id": list(state),
            "text_hash": [t for t, _ in state.values()],
            "meta_hash": [m for _, m in state.values()],
        },
        schema=KEYS,
    )


@dataclass
class DiffStep:
    """One step of the merge: ``classes`` holds chunk_id and class of this step's wanted chunks and of the
    held chunks deleted among them, in chunk id order; ``held`` the held rows (the columns asked for) of its
    ``metadata_changed`` chunks, in the same order, or None when no columns were asked for."""

    classes: pa.Table
    held: pa.Table | None


def classify_stream(
    previous: Iterable[pa.Table],
    desired: Iterable[pa.Table],
    forced: Callable[[pa.Table], pa.Array] | None = None,
    held_columns: Sequence[str] = (),
) -> Iterator[DiffStep]:
    """Classify every chunk of ``previous`` (what the index holds) ∪ ``desired`` (what the run wants), both
    streams of tables with ``chunk_id``, ``text_hash``, ``meta_hash`` in strictly increasing chunk id order
    (:class:`UnorderedChunks` otherwise). ``forced(batch)`` marks desired rows that count as ``text_changed``
    even when their text is the same (``--force-reembed``). Memory: one batch of each side."""
    held_iter = _ordered(previous, "the indexed chunks")
    pending: pa.Table | None = None
    for batch in _ordered(desired, "the version's chunks"):
        if not batch.num_rows:
            continue
        last = batch.column("chunk_id")[-1]
        parts: list[pa.Table] = []
        while True:  # the held rows up to this batch's last id: later wanted ids are all greater
            if pending is None or not pending.num_rows:
                pending = next(held_iter, None)
                if pending is None:
                    break
            upto = int(pc.sum(pc.less_equal(pending.column("chunk_id"), last)).as_py() or 0)
            parts.append(pending.slice(0, upto))
            pending = pending.slice(upto)
            if pending.num_rows:
                break
        yield _step(_concat(parts, batch), batch, forced, held_columns)
    rest = [pending] if pending is not None else []
    for table in (*rest, *held_iter):
        if table.num_rows:
            yield DiffStep(_deleted(table.column("chunk_id")), None)


def _step(
    old: pa.Table, new: pa.Table, forced: Callable[[pa.Table], pa.Array] | None, held_columns: Sequence[str]
) -> DiffStep:
    """The classes of one desired batch against the held rows in its id range (both small)."""
    at = pc.index_in(new.column("chunk_id"), value_set=old.column("chunk_id"))
    held = pc.is_valid(at)
    text = _differ(old.column("text_hash").take(at), new.column("text_hash"))
    if forced is not None:
        text = pc.or_(text, forced(new))
    meta = _differ(old.column("meta_hash").take(at), new.column("meta_hash"))
    name = pc.if_else(
        pc.invert(held),
        ChangeClass.ADDED.value,
        pc.if_else(
            text,
            ChangeClass.TEXT_CHANGED.value,
            pc.if_else(meta, ChangeClass.METADATA_CHANGED.value, ChangeClass.UNCHANGED.value),
        ),
    )
    wanted = pa.table({"chunk_id": new.column("chunk_id"), "class": name}, schema=DIFF_SCHEMA)
    gone = old.filter(pc.invert(pc.is_in(old.column("chunk_id"), value_set=new.column("chunk_id"))))
    if gone.num_rows:
        wanted = pa.concat_tables([wanted, _deleted(gone.column("chunk_id"))]).sort_by("chunk_id")
    rows = None
    if held_columns and old.num_rows:
        changed = pc.equal(name, ChangeClass.METADATA_CHANGED.value)
        rows = old.select(list(held_columns)).take(pc.filter(at, changed))
    return DiffStep(wanted, rows)


def _deleted(ids: pa.Array | pa.ChunkedArray) -> pa.Table:
    return pa.table(
        {"chunk_id": ids, "class": pa.repeat(pa.scalar(ChangeClass.DELETED.value), len(ids))}, schema=DIFF_SCHEMA
    )


def classify(previous: pa.Table, desired: pa.Table, force_reembed: Collection[str] = ()) -> ChunkDiff:
    """:func:`classify_stream` over two whole tables (any order: they are sorted first); ``force_reembed``
    ids that exist count as ``text_changed`` even when their text is the same."""
    forced_ids = pa.array(sorted(force_reembed), pa.string())
    old = previous.select(KEYS.names).cast(KEYS).sort_by("chunk_id")
    new = desired.select(KEYS.names).cast(KEYS).sort_by("chunk_id")
    mark = (lambda t: pc.is_in(t.column("chunk_id"), value_set=forced_ids)) if len(forced_ids) else None
    out = ChunkDiff()
    for step in classify_stream([old], [new], mark):
        for chunk_id, name in zip(*(step.classes.column(c).to_pylist() for c in ("chunk_id", "class")), strict=True):
            getattr(out, name).append(str(chunk_id))
    return out


def _ordered(tables: Iterable[pa.Table], what: str) -> Iterator[pa.Table]:
    """``tables`` as they are, checked to be in strictly increasing chunk id order across and within."""
    last: pa.Scalar | None = None
    for table in tables:
        if not table.num_rows:
            continue
        ids = table.column("chunk_id")
        if table.num_rows > 1 and not pc.all(pc.less(ids.slice(0, len(ids) - 1), ids.slice(1))).as_py():
            raise UnorderedChunks(f"{what} are not in strictly increasing chunk id order")
        if last is not None and not pc.less(last, ids[0]).as_py():
            raise UnorderedChunks(f"{what} are not in strictly increasing chunk id order ({ids[0]} after {last})")
        last = ids[-1]
        yield table


def _concat(parts: list[pa.Table], like: pa.Table) -> pa.Table:
    """The held rows of one step as one table (an empty table of the desired side's key columns if none)."""
    parts = [p for p in parts if p.num_rows]
    if parts:
        return pa.concat_tables(parts)
    empty = {
        "chunk_id": pa.array([], pa.string()),
        "text_hash": pa.array([], pa.string()),
        "meta_hash": pa.array([], pa.string()),
    }
    return pa.table(empty).cast(like.select(KEYS.names).schema, safe=False)


def _differ(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Element-wise ``a != b`` where two nulls are equal and a null differs from a value."""
    return pc.fill_null(pc.not_equal(a, b), pc.xor(pc.is_valid(a), pc.is_valid(b)))
