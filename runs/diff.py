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


class ChangeClass(StrEnum):
    """What a run does to one chunk (the module docstring says which write each means)."""

    ADDED = "added"
    TEXT_CHANGED = "text_changed"
    METADATA_CHANGED = "metadata_changed"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


CLASSES = tuple(ChangeClass)

State = Mapping[str, tuple[str | None, str | None]]  # chunk_id → (text_hash, meta_hash)


@dataclass
class ChunkDiff:
    added: list[str] = field(default_factory=list)
    text_changed: list[str] = field(default_factory=list)
    metadata_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in CLASSES}

    def class_of(self) -> dict[str, ChangeClass]:
        """chunk_id → its class (for per-type and per-source tallies in the run report)."""
        return {chunk_id: name for name in CLASSES for chunk_id in getattr(self, name)}

    @property
    def to_embed(self) -> list[str]:
        return self.added + self.text_changed


def classify(previous: State, desired: State, force_reembed: Collection[str] = ()) -> ChunkDiff:
    """Classify every chunk id of ``previous`` ∪ ``desired``. ``force_reembed`` ids that exist count as
    ``text_changed`` even when their text is the same (``--force-reembed`` for a scope)."""
    diff = ChunkDiff()
    forced = set(force_reembed)
    for chunk_id in sorted(desired):
        text_hash, meta_hash = desired[chunk_id]
        if chunk_id not in previous:
            diff.added.append(chunk_id)
            continue
        old_text, old_meta = previous[chunk_id]
        if old_text != text_hash or chunk_id in forced:
            diff.text_changed.append(chunk_id)
        elif old_meta != meta_hash:
            diff.metadata_changed.append(chunk_id)
        else:
            diff.unchanged.append(chunk_id)
    diff.deleted = sorted(set(previous) - set(desired))
    return diff
