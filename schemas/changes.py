"""The words of a run report: how a run ended (:class:`RunStatus`) and what it did to each chunk (the change
classes ``report.json``'s ``classes`` counts), written by the run (:mod:`runs.diff` decides the classes) and
read by the run history (:mod:`lookup.run_history`) and the pages that show it."""

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


class RunStatus(StrEnum):
    """How a run (or a rollback) ended: the one vocabulary of the text line, ``--json`` and the ``runs`` view."""

    RUNNING = "running"
    PUBLISHED = "published"  # a new version is current (a --force-reembed run of the same tables too)
    UNCHANGED = "unchanged"  # nothing changed: no version was made, the current one stays
    REPAIRED = "repaired"  # the index was brought back to the current version after an interrupted run
    DRY_RUN = "dry_run"  # nothing was written
    ROLLED_BACK = "rolled_back"  # an earlier version is current again
    REFUSED = "refused"  # the shrink gate refused to publish
    FAILED = "failed"

    def describe(self, version: str | None) -> str:
        """The words the text line opens with."""
        return {
            RunStatus.PUBLISHED: f"published {version}",
            RunStatus.UNCHANGED: f"unchanged, {version} stays published",
            RunStatus.REPAIRED: f"repaired the index of {version}",
            RunStatus.DRY_RUN: "dry run, would change",
            RunStatus.ROLLED_BACK: f"rolled back to {version}",
        }.get(self, self.value)
