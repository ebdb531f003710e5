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
BM25 build also use processes of their own; a large run's registry, enrich and word-index builds each run in a
process of their own, :data:`OWN_PROCESS_FROM`); the Airflow DAGs call the same stages, one per task.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runs import stages
from runs.child import in_own_process, start_server_early
from runs.embedding import embedding_aside, plan_embedding
from runs.errors import RunError as RunError
from runs.errors import ShrinkRefused as ShrinkRefused
from runs.lexical import lexical_apart
from runs.memory import lean_arrow_memory
from runs.scope import DEFAULT_SAMPLE as DEFAULT_SAMPLE
from runs.state import Progress, Published, RunInfo, RunOptions, RunState
from schemas.published import check_home, published_dir
from vectors.embed import Embedder
from vectors.embedders import embedder_for
from vectors.repair import check_aside

__all__ = ["DEFAULT_SAMPLE", "Published", "RunError", "RunInfo", "RunOptions", "ShrinkRefused", "rollback", "run"]


# From this many files to read and documents carried over, the registry stage, the enrich stage and the word
# indexes each run in a process of their own, as Airflow runs each task: the word indexes' build (the bridge's
# EM, ~250 MB at any size) then no longer stacks on what enrich holds for the corpus (its registry, keys, the
# history's runs). Measured on kazakhstan-law scopes (benchmarks/README.md, "Peak memory, whole runs": 1.37× →
# 1.15× from 2 000 to 20 000 acts); below it the spawn (~0.4 s a stage) would cost more than it saves. Such a
# run's helpers (extracting processes, stages, word indexes, embedding shards) are spawned interpreters, not
# forks of the helpers' server (runs.child.processes, fresh): a fork holds the server's heap beside the stage's.
OWN_PROCESS_FROM = 1000

# Bytes of files to read worth an extracting process of their own: starting one (Python, the extractors'
# imports) costs ~0.4 s, what one core extracts of ~5 MB of pages (~11 MB/s, benchmarks/README.md), so two
# processes gain from about 10 MB. A run that reads the few files a day's amendments change reads them in this
# process (one page in a hundred edited, 20 000 chunks: the run 4.2 → 3.7 s).
SHARD_BYTES = 8 << 20


def _noop(stage: str, done: int, total: int) -> None:
    return None


def _large(state: RunState) -> bool:
    """Whether the run's registry, enrich and word-index builds are worth a process each, each a fresh
    interpreter (:data:`OWN_PROCESS_FROM`)."""
    return sum(map(len, state.shards)) + len(state.reused) >= OWN_PROCESS_FROM


def _small(home: Path) -> bool:
    """Whether the published version (if any) is below :data:`OWN_PROCESS_FROM` documents, read from its
    registry's footer: a run from it is likely small too, its helpers forked from the fork server (a first
    run, or one from a large version, starts no server before it knows)."""
    folder = published_dir(home)
    if folder is None:
        return False
    try:
        return bool(pq.read_metadata(folder / "registry.parquet").num_rows < OWN_PROCESS_FROM)
    except (OSError, pa.ArrowException):
        return False


def run(
    sources: list[Path] | None,
    home: Path,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
    options: RunOptions | None = None,
    workers: int = 1,
    own_processes: bool | None = None,
) -> RunInfo:
    """Run the main job into ``home``; returns what it did. Bad files become rejects, not failures. With no
    embedder given, the published version's is used (the offline ``hash`` one for a new HOME). ``workers``:
    processes that extract the files (one shard each, as the DAG's tasks) and embed new texts at once
    (:mod:`runs.embedding`); the version is the same whatever their number. ``own_processes``: whether the
    registry and enrich stages and the word indexes run in processes of their own (default: from
    :data:`OWN_PROCESS_FROM` files and documents); the version is the same either way."""
    lean_arrow_memory()
    options = options or RunOptions()
    embedder = embedder or embedder_for(home)
    if workers > 1 and _small(home):  # its helpers will fork from the server: it imports while the run plans
        start_server_early()
    embedder_id = embedder.bind(home, record=not options.dry_run)
    path = stages.begin(
        home,
        sources,
        options,
        chroma_url,
        embedder.spec,
        shards=workers,
        embedder_id=embedder_id,
        holder="process",
        shard_bytes=SHARD_BYTES,
    )
    state = RunState.load(path)  # once: the stages below share it (read again after a stage run elsewhere)
    large = _large(state)  # its helpers are spawned interpreters: a fork of the server holds its heap too
    checked = None
    with _finishing(path):
        if workers > 1 and state.shards and any(state.shards):
            # this process waits on the extracting ones: the index stage's import of chromadb (1.3 s) and its
            # first read of the embedded index (0.4 s at 20 000 chunks) are done meanwhile
            if chroma_url or options.dry_run:
                _import_aside("chromadb")
            else:
                checked = check_aside(Path(state.home))
        stages.extract_all(state, workers, progress, fresh=large)
        apart = large if own_processes is None else own_processes
        # with workers, the BM25 build and the embedding run in processes of their own beside the index stage,
        # whose Chroma writes hold one core (benchmarks/README.md, "zan against LangChain"); in one process the
        # BM25 build is part of enrich and the index stage embeds block by block
        aside = workers > 1
        if apart:  # each in a process of its own, the BM25 build after enrich too (or beside the index stage)
            del state  # they read the state from its file: this process holds none of it while they run
            in_own_process(stages.registry, path, what="the registry stage", fresh=large)
            in_own_process(stages.enrich, path, False, what="the enrich stage", fresh=large)
            if not aside:
                lexical_apart(path, fresh=large)
            state = RunState.load(path)
        else:
            stages.registry(state)
            stages.enrich(state, lexical=not aside)
        if aside:
            with stages.lexical_aside(state, fresh=large):
                shards = plan_embedding(state, workers)
                with embedding_aside(state, shards, workers, fresh=large) as pending:
                    stages.index(state, embedder, progress, pending, checked, beside=not large)
        else:
            stages.index(state, embedder, progress, checked=checked)
        _publish(state)
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
    path = stages.begin_rollback(home, version, chroma_url, embedder.spec, embedder.bind(home))
    state = RunState.load(path)
    with _finishing(path):
        stages.index(state, embedder, progress)
        _publish(state)
    return stages.finish(state)


@contextlib.contextmanager
def _finishing(state: Path) -> Iterator[None]:
    """A failing stage ends the run through :func:`runs.stages.finish` (the lease released, the failure
    recorded, the previous version still published) before its error goes on. It reads the state file, which
    every stage, wherever it ran, has saved."""
    try:
        yield
    except BaseException as exc:
        stages.finish(state, exc)
        raise


def _publish(state: RunState) -> None:
    """The stages after the index is written: read back, publish, report."""
    stages.validate(state)
    stages.publish(state)
    stages.report(state)


def _import_aside(module: str) -> None:
    """Import ``module`` in a thread while this process only waits (on processes that extract the files), so
    the stage that needs it does not pay its import (``chromadb``: ~1.3 s of a run that changed 1 % of its
    texts). Python's import lock makes the stage wait for an import still under way, never import twice."""
    import importlib
    import threading

    threading.Thread(target=importlib.import_module, args=(module,), name=f"zan-import-{module}", daemon=True).start()
