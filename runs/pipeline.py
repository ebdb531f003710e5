"""The main job: extract → registry → chunks → enrich → diff → embed → index → publish → report.

A run builds its version aside (``versions/.tmp-<run_id>/``), classifies every chunk against what the
index holds (``runs.diff``), embeds only text it has never embedded (``vectors.store``), writes only what
changed, then publishes by replacing one pointer (``runs.versions``). Deletes happen after the publish.
A run that fails or is killed at any point leaves the previous version published; the next run finds the
``index.dirty`` marker, reconciles against the index itself and converges.

Scope: with no ``--source``, ``--only`` or ``--since`` a run is *full* over the sources the published
version recorded (the bundled sample the first time), and documents gone from them are deleted. With one,
only the documents in scope are rebuilt (or deleted); every other published document is carried over as is.

``run`` calls the stages of ``runs.stages`` in one process (with ``workers``, extraction, embedding and the
BM25 build also use processes of their own); the Airflow DAGs call the same stages, one per task.
"""

from __future__ import annotations

from pathlib import Path

from runs import stages
from runs.embedding import embedding_aside, plan_embedding
from runs.errors import RunError as RunError
from runs.errors import ShrinkRefused as ShrinkRefused
from runs.memory import lean_arrow_memory
from runs.scope import DEFAULT_SAMPLE as DEFAULT_SAMPLE
from runs.state import Progress, Published, RunInfo, RunOptions
from schemas.published import check_home
from vectors.embed import Embedder, identified
from vectors.embedders import embedder_for

__all__ = ["DEFAULT_SAMPLE", "Published", "RunError", "RunInfo", "RunOptions", "ShrinkRefused", "rollback", "run"]


def _noop(stage: str, done: int, total: int) -> None:
    return None


def run(
    sources: list[Path] | None,
    home: Path,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
    options: RunOptions | None = None,
    workers: int = 1,
) -> RunInfo:
    """Run the main job into ``home``; returns what it did. Bad files become rejects, not failures. With no
    embedder given, the published version's is used (the offline ``hash`` one for a new HOME). ``workers``:
    processes that extract the files (one shard each, as the DAG's tasks) and embed new texts at once
    (:mod:`runs.embedding`); the version is the same whatever their number."""
    lean_arrow_memory()
    options = options or RunOptions()
    embedder = embedder or embedder_for(home)
    embedder_id = identified(embedder, home, record=not options.dry_run)
    state = stages.begin(home, sources, options, chroma_url, embedder.spec, shards=workers, embedder_id=embedder_id,
                         holder="process")  # fmt: skip
    try:
        stages.extract_all(state, workers, progress)
        stages.registry(state)
        # with workers, the BM25 build and the embedding run in processes of their own beside the index stage,
        # whose Chroma writes hold one core (benchmarks/README.md, "zan against LangChain"); in one process the
        # BM25 build is part of enrich and the index stage embeds block by block
        aside = workers > 1
        stages.enrich(state, lexical=not aside)
        if aside:
            with stages.lexical_aside(state):
                shards = plan_embedding(state, workers)
                with embedding_aside(state, shards, workers) as pending:
                    stages.index(state, embedder, progress, pending)
        else:
            stages.index(state, embedder, progress)
        stages.validate(state)
        stages.publish(state)
        stages.report(state)
    except BaseException as exc:
        stages.finish(state, exc)
        raise
    return stages.finish(state)


def rollback(
    home: Path,
    version: str | None = None,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
) -> RunInfo:
    """Republish an earlier kept version (default: the one before the current) through a run's own stages
    (:func:`runs.stages.begin_rollback`): the index is brought back to it by the same diff (stored vectors, no
    re-embedding), validated, then CURRENT moves back; the report is written and old versions pruned."""
    lean_arrow_memory()
    home = check_home(home, writable=True)
    embedder = embedder or embedder_for(home)
    state = stages.begin_rollback(home, version, chroma_url, embedder.spec, identified(embedder, home))
    try:
        stages.index(state, embedder, progress)
        stages.validate(state)
        stages.publish(state)
        stages.report(state)
    except BaseException as exc:
        stages.finish(state, exc)
        raise
    return stages.finish(state)
