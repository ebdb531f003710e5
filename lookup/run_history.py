"""The history of runs under a home, read from the reports every run writes (``HOME/runs/<run_id>.json``).

What people ask of it (``zan serve``'s ``/runs`` and ``/api/runs``): what last night's run changed or
rejected and why, how long each stage took, how the corpus grew version by version, and in which versions a
document changed. Newest first, at most :data:`MAX_RUNS` runs; a report over :data:`MAX_REPORT_BYTES` or one
that does not parse is listed with the reason instead of its figures. Reports are cached by name, size and
mtime: a reader polled on every page load reads a new report once.

Beside the reports, ``HOME/runs/task_failures.jsonl``: the scheduled tasks that failed for good (the Airflow
DAGs' failure callback calls :func:`record_task_failure`), a golden-set drop after a publish or a scope that
did not update, which no run report says; the last :data:`MAX_TASK_FAILURES`, newest first in
:meth:`RunHistory.task_failures`.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.changes import CLASSES, RunStatus

MAX_RUNS = 200
TASK_FAILURES = "task_failures.jsonl"
MAX_TASK_FAILURES = 200
MAX_FAILURE_CHARS = 2000  # of each field of a failure: an exception's message is anyone's length
MAX_REPORT_BYTES = 32 * 1024 * 1024
REJECTS_LISTED = 200  # rejects per run in the history (the report file has them all)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    status: str
    version: str | None
    previous_version: str | None
    started: str | None
    finished: str | None
    scope: str | None
    documents: int
    chunks: int
    classes: dict[str, int]
    seconds: dict[str, float]
    rejected: int
    rejects: list[dict[str, Any]]
    documents_diff: dict[str, list[str]]
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "version": self.version,
            "previous_version": self.previous_version,
            "started": self.started,
            "finished": self.finished,
            "scope": self.scope,
            "documents": self.documents,
            "chunks": self.chunks,
            "classes": self.classes,
            "seconds": self.seconds,
            "rejected": self.rejected,
            "rejects": self.rejects,
            "documents_diff": self.documents_diff,
            "error": self.error,
        }


def summary(run_id: str, report: dict[str, Any]) -> RunSummary:
    rejects = [
        {k: r.get(k) for k in ("stage", "source_file", "doc_id", "reason")}
        for r in (report.get("rejects") or [])[:REJECTS_LISTED]
    ]
    classes = report.get("classes") or {}
    return RunSummary(
        run_id=run_id,
        status=str(report.get("status") or "unknown"),
        version=report.get("version"),
        previous_version=report.get("previous_version"),
        started=report.get("started"),
        finished=report.get("finished"),
        scope=report.get("scope"),
        documents=int(report.get("documents") or 0),
        chunks=int(report.get("chunks") or 0),
        classes={c: int(classes.get(c, 0) or 0) for c in CLASSES},
        seconds={str(k): round(float(v or 0), 3) for k, v in (report.get("seconds") or {}).items()},
        rejected=int(report.get("rejected") or len(report.get("rejects") or [])),
        rejects=rejects,
        documents_diff={k: list(v) for k, v in (report.get("documents_diff") or {}).items()},
        error=report.get("error"),
    )


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
        self.folder = home / "runs"
        self._cache: dict[str, tuple[tuple[int, int], RunSummary]] = {}
        self._lock = threading.Lock()

    def runs(self, limit: int = MAX_RUNS) -> list[RunSummary]:
        if not self.folder.is_dir():
            return []
        names = sorted((p.name for p in self.folder.glob("*.json")), reverse=True)[: max(0, min(limit, MAX_RUNS))]
        return [self._read(self.folder / name) for name in names]

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

    def _read(self, path: Path) -> RunSummary:
        try:
            stat = path.stat()
        except OSError as exc:
            return _unreadable(path.stem, f"cannot be read: {exc.strerror}")
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        if stat.st_size > MAX_REPORT_BYTES:
            found = _unreadable(path.stem, f"report is {stat.st_size} bytes, over {MAX_REPORT_BYTES}")
        else:
            try:
                report = json.loads(path.read_text("utf-8"))
                found = (
                    summary(str(report.get("run_id") or path.stem), report)
                    if isinstance(report, dict)
                    else (_unreadable(path.stem, "report is not a JSON object"))
                )
            except (OSError, ValueError) as exc:
                found = _unreadable(path.stem, f"report does not parse: {exc}")
        with self._lock:
            self._cache[path.name] = (key, found)
        return found


def _unreadable(run_id: str, why: str) -> RunSummary:
    return RunSummary(
        run_id, "unreadable", None, None, None, None, None, 0, 0, dict.fromkeys(CLASSES, 0), {}, 0, [], {}, why
    )
