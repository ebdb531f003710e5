"""The main job: extract → registry → chunks → enrich → diff → embed → index → publish → report.

A run builds its version aside (``versions/.tmp-<run_id>/``), classifies every chunk against what the
index holds (``runs.diff``), embeds only text it has never embedded (``vectors.store``), writes only what
changed, then publishes by replacing one pointer (``runs.versions``). Deletes happen after the publish.
A run that fails or is killed at any point leaves the previous version published; the next run finds the
``index.dirty`` marker, reconciles against the index itself and converges.

Scope: with no ``--source``, ``--only`` or ``--since`` a run is *full* over the sources the published
version recorded (the bundled sample the first time), and documents gone from them are deleted. With one,
only the documents in scope are rebuilt (or deleted); every other published document is carried over as is.

``run`` calls the stages of ``runs.stages`` in one process; the Airflow DAGs call the same stages, one
per task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from enrich.storage import read_parquet
from runs import lease, stages
from runs.build import DEFAULT_SAMPLE as DEFAULT_SAMPLE
from runs.changes import DIRTY, ChangeSet, count_classes, sorted_chunks
from runs.diff import KEYS, ChangeClass, classify_stream
from runs.embedding import embed_all, plan_embedding
from runs.errors import RunError as RunError
from runs.errors import ShrinkRefused as ShrinkRefused
from runs.memory import lean_arrow_memory
from runs.report import build_report, write_report
from runs.state import Progress, Published, RunInfo, RunOptions, RunStatus, new_run_id, work_dir
from runs.versions import now_iso, set_current
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA
from schemas.published import VersionError, check_home, list_versions, read_manifest, versions_dir
from vectors.embed import Embedder, identified
from vectors.embedders import embedder_for
from vectors.index import delete_ids, get_collection, index_state, open_client
from vectors.store import VectorStore

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
    processes that embed new texts at once (:mod:`runs.embedding`)."""
    lean_arrow_memory()
    options = options or RunOptions()
    embedder = embedder or embedder_for(home)
    embedder_id = identified(embedder, home, record=not options.dry_run)
    state = stages.begin(home, sources, options, chroma_url, embedder.spec, embedder_id=embedder_id, holder="process")
    try:
        for n in range(len(stages.RunState.load(state).shards)):
            stages.extract_shard(state, n, progress)
        stages.registry(state)
        stages.enrich(state)
        if workers > 1:
            embed_all(state, plan_embedding(state, workers), workers, progress)
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
    """Republish an earlier kept version (default: the one before the current): the index is brought back
    to it by the same diff a run uses (stored vectors, no re-embedding), then the pointer moves."""
    lean_arrow_memory()
    home = check_home(home, writable=True)
    embedder = embedder or embedder_for(home)
    identified(embedder, home)
    info = RunInfo(run_id=new_run_id(), scope="rollback", home=str(home), embedder=embedder.id,
                   chroma=chroma_url or str(home / "chroma"))  # fmt: skip
    with lease.held(home, info.run_id):
        current = Published.load(home)
        if current is None:
            raise RunError(f"nothing is published under {home}: nothing to roll back")
        kept = [m.version for m in list_versions(home)]
        target = version or next((v for v in reversed(kept) if v < current.version), None)
        if target is None or target not in kept:
            raise VersionError(f"no kept version {target or 'before ' + current.version}; kept: {', '.join(kept)}")
        folder = versions_dir(home) / target
        manifest = read_manifest(folder)
        if manifest.embedder != embedder.id:
            raise RunError(f"{target} was indexed with {manifest.embedder}; roll back with that embedder")
        registry = read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry")
        enriched = read_parquet(folder / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks")
        rejects = read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects")
        client = open_client(home / "chroma", chroma_url)
        collection = get_collection(client, embedder)
        work = work_dir(home, info.run_id)
        try:
            chunks = folder / "enriched_chunks.parquet"
            held = [index_state(collection).sort_by("chunk_id")]
            changes = ChangeSet.write(work, classify_stream(held, sorted_chunks(chunks, list(KEYS.names))))
            count_classes(info, changes.counts)
            info.documents, info.chunks, info.rejected = registry.num_rows, enriched.num_rows, rejects.num_rows
            store = VectorStore(home, embedder.id)
            written, info.embedded = stages.stream_changes(home, info.run_id, collection, chunks, changes, embedder,
                                                           store, progress=progress, info=info)  # fmt: skip
            info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
            set_current(home, target)
            for ids in changes.ids(ChangeClass.DELETED):
                delete_ids(collection, ids)
            (home / DIRTY).unlink(missing_ok=True)
            info.version, info.status, info.indexed = target, RunStatus.ROLLED_BACK, collection.count()
            info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
            write_report(home, build_report(info, changes, chunks, registry, current, rejects, now_iso()))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return info
