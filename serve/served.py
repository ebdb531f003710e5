"""What a server answers from: its configuration, and the :class:`~lookup.route.Lookup` a watcher thread
keeps on the published version (the hot switch: :meth:`Lookup.refresh` opens a newly published version in
the background and swaps it in with one assignment)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException

from lookup.grammar import rows
from lookup.route import Lookup
from lookup.version import Snapshot
from runs.history import RunHistory
from schemas.errors import ZanError
from serve.metrics import Metrics

POLL_SECONDS = 0.5


@dataclass(frozen=True)
class ServeConfig:
    home: Path
    chroma_url: str | None = None
    embedder: str | None = None
    token: str | None = None
    workers: int = 8
    max_candidates: int = 5  # as `zan lookup`: documents listed for an article named with no document
    poll_seconds: float = POLL_SECONDS


class Served:
    """The lookup a server answers from, kept current by a watcher thread."""

    def __init__(self, config: ServeConfig, metrics: Metrics) -> None:
        self.config, self.metrics = config, metrics
        self.history = RunHistory(config.home)
        self.lookup: Lookup | None = None
        self.problem: str | None = "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="zan-serve-watch", daemon=True)
        self._open()

    def _open(self) -> None:
        rows()  # the query grammar (~0.5 s), built before the first question rather than by it
        try:
            self.lookup = Lookup.open(self.config.home, self.config.chroma_url, self.config.embedder,
                                      self.config.max_candidates)  # fmt: skip
            self.problem = None
            self.metrics.serving(self.lookup.held().version)
        except (ZanError, OSError, ValueError) as exc:
            self.problem = f"{type(exc).__name__}: {exc}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        while not self._stop.wait(self.config.poll_seconds):
            try:
                if self.lookup is None:
                    self._open()  # says its own problem
                    continue
                if self.lookup.refresh():
                    self.metrics.serving(self.lookup.held().version, switched=True)
                self.problem = None
            except (ZanError, OSError, ValueError) as exc:  # keep serving the held version; say why on /healthz
                self.problem = f"cannot open the published version: {type(exc).__name__}: {exc}"

    def snapshot(self) -> tuple[Lookup, Snapshot]:
        if self.lookup is None:
            raise HTTPException(503, detail=f"no published version can be served: {self.problem}")
        return self.lookup, self.lookup.held()
