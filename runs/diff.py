"""Per-chunk change classes between what the index holds and what a run wants it to hold.

A chunk is identified by its chunk_id and described by two hashes: ``text_hash`` (of the text that is
embedded) and ``meta_hash`` (of the metadata written beside it). Comparing them decides the write:

- ``added``            new id                      → embed (or reuse a stored vector) and upsert
- ``text_changed``     same id, other text         → embed (or reuse) and upsert
- ``metadata_changed`` same text, other metadata   → metadata-only ``update``; the vector is not touched
- ``unchanged``        both equal                  → no write at all
- ``deleted``          id no longer wanted         → delete
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc


class ChangeClass(StrEnum):
    """What a run does to one chunk (the module docstring says which write each means)."""

    ADDED = "added"
    TEXT_CHANGED = "text_changed"
    METADATA_CHANGED = "metadata_changed"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


CLASSES = tuple(ChangeClass)


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


KEYS = pa.schema([pa.field("chunk_id", pa.string()), pa.field("text_hash", pa.string()),
                  pa.field("meta_hash", pa.string())])  # fmt: skip


def state_table(state: Mapping[str, tuple[str | None, str | None]]) -> pa.Table:
    """A ``chunk_id → (text_hash, meta_hash)`` mapping as a :data:`KEYS` table."""
    return pa.table({"chunk_id": list(state), "text_hash": [t for t, _ in state.values()],
                     "meta_hash": [m for _, m in state.values()]}, schema=KEYS)  # fmt: skip


def classify(previous: pa.Table, desired: pa.Table, force_reembed: Collection[str] = ()) -> ChunkDiff:
    """Classify every chunk id of ``previous`` ∪ ``desired`` (tables of ``chunk_id``, ``text_hash``,
    ``meta_hash``), in Arrow: a hash join, not Python dicts of the corpus. ``force_reembed`` ids that exist
    count as ``text_changed`` even when their text is the same (``--force-reembed`` for a scope)."""
    old = previous.select(KEYS.names).cast(KEYS).rename_columns(["chunk_id", "old_text", "old_meta"])
    old = old.append_column("held", pa.repeat(pa.scalar(True), old.num_rows))
    new = desired.select(KEYS.names).cast(KEYS)
    joined = new.join(old, "chunk_id", join_type="left outer").sort_by("chunk_id")
    held = pc.fill_null(joined.column("held"), False)
    forced = pc.is_in(joined.column("chunk_id"), value_set=pa.array(sorted(force_reembed), pa.string()))
    text = pc.or_(_differ(joined.column("old_text"), joined.column("text_hash")), forced)
    meta = _differ(joined.column("old_meta"), joined.column("meta_hash"))
    added = pc.invert(held)
    text_changed = pc.and_(held, text)
    metadata_changed = pc.and_(held, pc.and_(pc.invert(text), meta))
    unchanged = pc.and_(held, pc.and_(pc.invert(text), pc.invert(meta)))
    gone = old.filter(pc.invert(pc.is_in(old.column("chunk_id"), value_set=new.column("chunk_id"))))

    def ids(mask: pa.ChunkedArray | pa.Array) -> list[str]:
        return [str(i) for i in joined.filter(mask).column("chunk_id").to_pylist()]

    return ChunkDiff(ids(added), ids(text_changed), ids(metadata_changed), ids(unchanged),
                     sorted(str(i) for i in gone.column("chunk_id").to_pylist()))  # fmt: skip


def _differ(a: pa.ChunkedArray, b: pa.ChunkedArray) -> pa.ChunkedArray:
    """Element-wise ``a != b`` where two nulls are equal and a null differs from a value."""
    return pc.fill_null(pc.not_equal(a, b), pc.xor(pc.is_valid(a), pc.is_valid(b)))
