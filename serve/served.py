"""What a server answers from: its configuration, and the :class:`~lookup.route.Lookup` a watcher thread
keeps on the published version (the hot switch: :meth:`Lookup.refresh` opens a newly published version in
the background and swaps it in with one assignment)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException

from lookup.grammar import rows
from lookup.route import Lookup
from lookup.run_history import RunHistory
from lookup.version import Snapshot
from schemas.errors import ZanError
from serve.limits import ServeLimits
from serve.metrics import Metrics

POLL_SECONDS = 0.5
log = logging.getLogger("zan.serve")


@dataclass(frozen=True)
class ServeConfig:
    home: Path
    chroma_url: str | None = None
    embedder: str | None = None
    token: str | None = None
    workers: int = 8
    max_candidates: int = 5  # as `zan lookup`: documents listed for an article named with no document
    poll_seconds: float = POLL_SECONDS
    limits: ServeLimits = ServeLimits()
    host: str = "127.0.0.1"  # where it is bound: MCP's DNS-rebinding check allows loopback names only there
    cors_origins: tuple[str, ...] = ()  # origins a browser may call the API from (none by default)


class Served:
    """The lookup a server answers from, kept current by a watcher thread."""

    def __init__(self, config: ServeConfig, metrics: Metrics) -> None:
        self.config, self.metrics = config, metrics
        self.history = RunHistory(config.home)
        self.lookup: Lookup | None = None
        self.problem: str | None = "starting"  # what is wrong, in full (may name paths): for the token holder
        self.problem_kind: str | None = "starting"  # the same in words that name no path: for anyone
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="zan-serve-watch", daemon=True)
        self._open()

    def _open(self) -> None:
        rows()  # the query grammar (~0.5 s), built before the first question rather than by it
        try:
            lookup = Lookup.open(
                self.config.home, self.config.chroma_url, self.config.embedder, self.config.max_candidates
            )
        except (ZanError, OSError, ValueError) as exc:
            self._say("no published version can be opened", exc)
            return
        try:
            lookup.warm()  # every reader open before the first question: no cold-start burst of 500s
            self._say(None)
        except (ZanError, OSError, ValueError) as exc:  # identifier questions still answer; plain words retry
            self._say("the index could not be opened yet", exc)
        self.lookup = lookup
        self.metrics.serving(lookup.held().version)

    def _say(self, kind: str | None, exc: BaseException | None = None) -> None:
        """Set what /healthz reports (the kind to anyone, the whole to the token holder); a new one is logged."""
        problem = f"{kind}: {type(exc).__name__}: {exc}" if kind and exc else kind
        if problem is not None and problem != self.problem:
            log.warning("zan serve: %s", problem)
        self.problem = problem
        self.problem_kind = f"{kind} ({type(exc).__name__})" if kind and exc else kind

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
                self._say(None)
            except (ZanError, OSError, ValueError) as exc:  # keep serving the held version; say why on /healthz
                self._say("cannot open the newly published version", exc)

    def snapshot(self) -> tuple[Lookup, Snapshot]:
        if self.lookup is None:
            raise HTTPException(
                503, detail=f"no published version can be served now: {self.problem_kind}", headers={"Retry-After": "5"}
            )
        return self.lookup, self.lookup.held()
