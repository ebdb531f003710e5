"""The documents' centroids of a run (:func:`vectors.documents.build_centroids`): taken in the index stage once
every vector is stored, or, by ``zan run --workers N`` on a small run, in a helper process beside the stage's
last write to Chroma (:class:`CentroidsAside`). Chroma's write holds the GIL of the run's own process for its
whole call (~2 s for the 478 records of a 1 % text edit; nothing else in that process moves meanwhile) while
the other core is mostly idle, so the means (~0.25 s there) are taken on it instead of after the write. What
is built is the same either way: the same function on the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runs.child import Helper, report, wrapped
from schemas.failpoints import failpoint
from vectors.documents import build_centroids
from vectors.store import VectorStore


def centroids(enriched: Path, home: Path, embedder_id: str, out: Path, previous: Path | None) -> int:
    """:func:`build_centroids` of the staged ``enriched`` chunks with HOME's stored vectors of ``embedder_id``."""
    return build_centroids(enriched, VectorStore(home, embedder_id), out, previous=previous)


class CentroidsAside:
    """:func:`centroids` in a helper process (forked from the run's fork server: :func:`runs.child.processes`),
    started by :meth:`start` once every vector the version needs is stored, awaited by :meth:`wait`; never
    started, :meth:`wait` says so and the caller takes them itself. A failure in the helper fails the run with
    its error (its retry class kept: :func:`runs.child.wrapped`), as the index stage's own would."""

    def __init__(self, enriched: Path, home: Path, embedder_id: str, out: Path, previous: Path | None) -> None:
        self.args = (enriched, home, embedder_id, out, previous)
        self.helper: Helper | None = None

    def start(self) -> None:
        if self.helper is None:
            self.helper = Helper(_centroids_child, self.args, name="zan-centroids", what="the centroids process")

    def wait(self) -> bool:
        """Await the helper: True when it built the centroids, False when it was never started."""
        if self.helper is None:
            return False
        kind, value = self.helper.result()
        self.helper = None
        if kind != "ok":
            raise wrapped(f"the documents' centroids were not built: {type(value).__name__}: {value}", value) from value
        return True

    def stop(self) -> None:
        """Stop the helper if it still runs (the stage failed); nothing it left is published."""
        if self.helper is not None:
            self.helper.stop()
            self.helper = None


def _centroids_child(args: tuple[Path, Path, str, Path, Path | None], send: Any) -> None:
    from runs.memory import lean_arrow_memory

    lean_arrow_memory()

    def work() -> int:
        failpoint("centroids")
        return centroids(*args)

    report(send, work, "the documents' centroids")
