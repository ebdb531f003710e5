"""What a run does to one chunk: the change classes a run report counts (``report.json``'s ``classes``), read
by the run that writes them (:mod:`runs.diff` decides them) and by the run history (:mod:`lookup.run_history`)
and pages that show them."""

from __future__ import annotations

from enum import StrEnum


class ChangeClass(StrEnum):
    """What a run does to one chunk (:mod:`runs.diff` says which write each means)."""

    ADDED = "added"
    TEXT_CHANGED = "text_changed"
    METADATA_CHANGED = "metadata_changed"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


CLASSES = tuple(ChangeClass)
