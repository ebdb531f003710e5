"""The history of runs under a home, read from the reports every run writes (``HOME/runs/<run_id>.json``)
through their one reader (:func:`schemas.run_report.read_report`).

What people ask of it (``zan serve``'s ``/runs``, ``/runs/{run_id}`` and ``/api/runs``): what last night's run
changed or rejected and why, how long each stage took, how the corpus grew version by version, and in which
versions a document changed. Newest first, at most :data:`MAX_RUNS` runs; a report over
:data:`schemas.run_report.MAX_REPORT_BYTES` or one that does not parse is listed with the reason instead of
its figures. Reports are cached by name, size and mtime: a reader polled on every page load reads a new
report once.

Beside the reports, ``HOME/runs/task_failures.jsonl``: the scheduled tasks that failed for good (the Airflow
DAGs' failure callback calls :func:`record_task_failure`), a golden-set drop after a publish or a scope that
did not update, which no run report says; the last :data:`MAX_TASK_FAILURES`, newest first in
:meth:`RunHistory.task_failures`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from schemas.changes import RunStatus
from schemas.run_report import RUN_ID, RunReport, read_report, report_paths

MAX_RUNS = 200
TASK_FAILURES = "task_failures.jsonl"
MAX_TASK_FAILURES = 200
MAX_FAILURE_CHARS = 2000  # of each field of a failure: an exception's message is anyone's length
REJECTS_LISTED = 200  # rejects per run in the history (the report file and one run's page have them all)


def record_task_failure(home: Path, failure: dict[str, Any]) -> Path:
    """Add ``failure`` (string fields, each cut to :data:`MAX_FAILURE_CHARS`) as one line to the home's task
    failures: one ``O_APPEND`` write, so tasks failing at once do not interleave; past twice
    :data:`MAX_TASK_FAILURES` lines the file is replaced whole by its last :data:`MAX_TASK_FAILURES`."""
    from schemas.files import atomic_write

    path = home / "runs" / TASK_FAILURES
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {str(k)[:64]: None if v is None else str(v)[:MAX_FAILURE_CHARS] for k, v in failure.items()}
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    lines = path.read_bytes().splitlines(keepends=True)
    if len(lines) > 2 * MAX_TASK_FAILURES:
        atomic_write(path, b"".join(lines[-MAX_TASK_FAILURES:]))
    return path


class RunHistory:
    """The runs of one home, newest first."""

    def __init__(self, home: Path) -> None:
        self.home, self.folder = home, home / "runs"
        self._cache: dict[str, tuple[tuple[int, int], RunReport]] = {}
        self._lock = threading.Lock()

    def runs(self, limit: int = MAX_RUNS) -> list[RunReport]:
        """The newest ``limit`` runs (at most :data:`MAX_RUNS`), each with its first :data:`REJECTS_LISTED`
        rejects."""
        return [self._read(path) for path in report_paths(self.home)[: max(0, min(limit, MAX_RUNS))]]

    def run(self, run_id: str) -> RunReport | None:
        """One run's whole report (every reject), or None when the home has no run of that id."""
        path = self.folder / f"{run_id}.json"
        if not RUN_ID.match(run_id) or not path.is_file():
            return None
        return read_report(path)

    def task_failures(self, limit: int = MAX_TASK_FAILURES) -> list[dict[str, str | None]]:
        """The scheduled tasks that failed for good, newest first (:func:`record_task_failure`); a line that
        does not parse is skipped, a file over its bound is read from its end."""
        path = self.folder / TASK_FAILURES
        try:
            with path.open("rb") as handle:
                handle.seek(max(0, path.stat().st_size - MAX_TASK_FAILURES * 8 * MAX_FAILURE_CHARS))
                lines = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []
        found = []
        for line in reversed(lines[-MAX_TASK_FAILURES:]):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                found.append({str(k): None if v is None else str(v) for k, v in entry.items()})
        return found[: max(0, limit)]

    def versions_changed(self, doc_id: str) -> list[dict[str, str | None]]:
        """The published versions in which ``doc_id`` was added, changed or removed, newest first."""
        out = []
        for run in self.runs():
            if run.status != RunStatus.PUBLISHED or not run.version:
                continue
            for how, docs in run.documents_diff.items():
                if doc_id in docs:
                    out.append({"version": run.version, "run_id": run.run_id, "how": how, "finished": run.finished})
        return out

    def _read(self, path: Path) -> RunReport:
        try:
            stat = path.stat()
        except OSError as exc:
            return RunReport.unreadable(path.stem, f"cannot be read: {exc.strerror}")
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        found = read_report(path, rejects=REJECTS_LISTED)
        with self._lock:
            self._cache[path.name] = (key, found)
        return found
