"""The main job as stages over files: ``zan run`` calls them in one process, an Airflow DAG calls one per
task and passes the state file's path through XCom. Same library path either way.

    begin → extract_shard × N → registry → enrich → index → validate → publish → report; finish (always)

- ``begin`` (:mod:`runs.begin`) takes the data directory's lease (one run at a time), plans the scope,
  decides which files must be read (unchanged documents are reused) and splits them into shards.
- ``extract_shard`` reads one shard's files, each document appended to the shard's file as it is read
  (:mod:`runs.documents`: an internal format, one document in memory at a time).
- ``registry`` merges the extracted documents into registry rows and chunks (across sources and languages),
  grouping from headers and building one entry at a time (:mod:`runs.build`).
- ``enrich`` joins the identifier fields onto the chunks, merges them with the documents that stay as they
  are (streamed, in chunk id order), and stages the version's tables (registry, chunks, enriched chunks,
  rejects, lineage).
- ``index`` classifies every chunk against the index (an Arrow join of ids and hashes), applies the shrink
  gate, embeds only unseen text and writes only what changed, in blocks (marking the index dirty first).
- ``validate`` checks the staged tables' ids and reads back what it wrote (all of a small run, a sample of a
  large one) and the index's count.
- ``publish`` makes the version current with one atomic pointer swap, then deletes what went away.
- ``report`` writes the run report; ``finish`` releases the lease, removes work files and, when a stage
  failed, records the failure (the previous version stays published).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from enrich.history_file import HISTORY
from extractors.model import Document
from runs import lease
from runs.act_history import build_history, disagreements
from runs.begin import begin as begin
from runs.begin import begin_rollback as begin_rollback
from runs.begin import record_failure
from runs.blockmemo import BlockStore
from runs.build import (
    Cut,
    Rebuilt,
    cut_document,
    enrich_version,
    extract_files,
    registry_of,
    with_repealed,
    write_small_tables,
)
from runs.changes import DIRTY, ChangeSet, same_tables
from runs.child import adopt_environment, processes
from runs.diff import ChangeClass
from runs.documents import DocumentStore, DocumentWriter
from runs.errors import RunError
from runs.gitsource import GitRefused, knows, repository
from runs.indexing import index as index
from runs.indexing import stream_changes as stream_changes
from runs.indexing import validate as validate
from runs.lease import Busy as Busy
from runs.lexical import lexical_aside as lexical_aside
from runs.lexical import lexical_jobs
from runs.notecache import NOTE_CACHE, NoteMemory
from runs.notecache import merge as merge_notes
from runs.report import build_report, write_report
from runs.scope import Prepared, Scope, carry_rejects
from runs.state import Progress, Published, RunInfo, RunStatus, Stage, StageResult, as_state, timed
from runs.state import RunState as RunState
from runs.versions import (
    next_version,
    now_iso,
    prune,
    seal,
    set_current,
    staging_dir,
    write_manifest,
    write_text_atomic,
)
from schemas.arrow import REGISTRY_SCHEMA, REJECT_SCHEMA, Reject, reject_table, rejects_of
from schemas.failpoints import failpoint
from schemas.files import atomic_writer
from schemas.parquet import read_parquet, write_parquet_atomic
from schemas.published import FORMAT_VERSION, Manifest, read_manifest, versions_dir
from vectors.index import LazyClient, delete_ids
from vectors.words import build_word_indexes

log = logging.getLogger("zan.runs")  # one line a finished run: Airflow puts it in the task's log
log.addHandler(logging.NullHandler())  # silent unless the application configures logging (Airflow, zan serve)

# --- extract --------------------------------------------------------------------------------------------


def extract_shard(state_path: RunState | Path | str, index: int, progress: Progress | None = None) -> Path:
    """Extract one shard's files: documents stream to ``shard-N.docs`` as they are read; the rejects go to
    ``shard-N.rejects.parquet`` and the time taken (and the process) to ``shard-N.json``, written last (its
    presence says the shard is complete)."""
    state = as_state(state_path)
    failpoint("extract")
    files = [Path(f) for f in state.shards[index]]
    started = time.perf_counter()
    cache = versions_dir(Path(state.home)) / state.previous / NOTE_CACHE if state.previous else None

    def cut(document: Document) -> Cut | None:
        parse = memory.parser(document)
        made = cut_document(document, parse)
        memory.remember(document, parse)
        return made

    with (
        NoteMemory(cache, state.shards[index], state.work / f"shard-{index:04d}.notes.parquet") as memory,
        atomic_writer(state.work / f"shard-{index:04d}.docs") as handle,
    ):
        blocks = None if state.run_options.dry_run else BlockStore(Path(state.home))
        rejects = extract_files(files, state.run_id, DocumentWriter(handle, cut), progress, blocks)
    seconds = time.perf_counter() - started
    write_parquet_atomic(
        reject_table(rejects), state.work / f"shard-{index:04d}.rejects.parquet", REJECT_SCHEMA, "rejects"
    )
    out = state.work / f"shard-{index:04d}.json"
    write_text_atomic(out, json.dumps({"seconds": seconds, "pid": os.getpid()}))  # the process it ran in
    return out


def extract_all(
    state_path: RunState | Path | str, workers: int = 1, progress: Progress | None = None, fresh: bool = False
) -> None:
    """Every shard of the run: here, file by file, when ``workers`` is 1 (or there is one shard); else each
    in one of ``workers`` helper processes (:func:`runs.child.processes`, ``fresh`` as there: never a fork of
    this one, whose Arrow pools may hold locks), each in this process's environment, progress counted in
    shards. Shards are written to their own files, so the version is the same either way (the registry orders
    documents by source file, not by shard)."""
    state = as_state(state_path)
    shards = len(state.shards)
    if workers <= 1 or shards <= 1:
        for n in range(shards):
            extract_shard(state, n, progress)
        return
    pool = ProcessPoolExecutor(
        max_workers=min(workers, shards),
        mp_context=processes(fresh),
        initializer=adopt_environment,
        initargs=(dict(os.environ),),
    )
    with pool:
        pending = [pool.submit(extract_shard, str(state.path), n) for n in range(shards)]
        for done, future in enumerate(as_completed(pending), 1):
            future.result()  # a shard's failure fails the run, as in one process
            if progress:
                progress("extract", done, shards)


# --- registry and enrich --------------------------------------------------------------------------------


def registry(state_path: RunState | Path | str) -> StageResult:
    """Registry rows and chunks of the documents the shards extracted (staged for the enrich stage). What the
    extraction did (its own seconds, summed over shards) is recorded beside it."""
    state = as_state(state_path)
    info, home = state.run_info(), Path(state.home)
    previous = Published.load(home, state.previous) if state.previous else None
    with timed(info, "registry"):
        documents = DocumentStore()
        rejects: list[Reject] = []
        extract_seconds = 0.0
        for n in range(len(state.shards)):
            path = state.work / f"shard-{n:04d}.json"
            if not path.exists():
                raise RunError(f"shard {n} of run {state.run_id} was not extracted ({path} is missing)")
            seconds = float(json.loads(path.read_text("utf-8"))["seconds"])
            documents.add_file(state.work / f"shard-{n:04d}.docs")
            rejects += rejects_of(read_parquet(state.work / f"shard-{n:04d}.rejects.parquet", REJECT_SCHEMA, "rejects"))
            extract_seconds += seconds  # shard by shard: the extraction's own time, wherever it ran
        prepared = Prepared(state.keys, set(state.reused), [])
        rebuilt = registry_of(
            Scope.from_json(state.scope),
            previous,
            state.run_id,
            prepared,
            documents,
            rejects,
            state.work,
            state.run_options.only,
        )
        if state.repealed and previous is not None:  # acts a git source deleted: kept, repealed on that date
            rebuilt = with_repealed(rebuilt, previous, state.repealed, state.work)
        write_parquet_atomic(rebuilt.registry, state.work / "registry.parquet", REGISTRY_SCHEMA, "registry")
        write_parquet_atomic(reject_table(rebuilt.rejects), state.work / "rejects.parquet", REJECT_SCHEMA, "rejects")
    state.reused = sorted(rebuilt.reused)
    info.seconds["extract"] = round(extract_seconds, 3)
    failed = {"extract": 0, "registry": 0}
    for r in rebuilt.rejects:
        if r.stage in failed:
            failed[r.stage] += 1
    info.files = rebuilt.extracted + failed["extract"]
    extracted = StageResult(
        "extract", info.files, rebuilt.extracted, failed["extract"], info.seconds["extract"], "files → documents"
    )
    done = StageResult(
        "registry",
        rebuilt.extracted,
        rebuilt.registry.num_rows,
        failed["registry"],
        info.seconds["registry"],
        "documents → registry rows",
    )
    state.update(info, Stage.REGISTRY, extracted, done)
    return done


def enrich(state_path: RunState | Path | str, lexical: bool = True) -> StageResult:
    """Join identifier fields onto the rebuilt chunks, combine with what stays, stage the version's tables;
    then build the BM25 index of them, unless ``lexical`` is False (the caller builds it beside the next
    stages: :func:`lexical_aside`)."""
    state = as_state(state_path)
    info, home = state.run_info(), Path(state.home)
    previous = Published.load(home, state.previous) if state.previous else None
    with timed(info, "enrich"):
        rebuilt = Rebuilt(
            registry=read_parquet(state.work / "registry.parquet", REGISTRY_SCHEMA, "registry"),
            chunks=state.work / "chunks.parquet",
            rejects=rejects_of(read_parquet(state.work / "rejects.parquet", REJECT_SCHEMA, "rejects")),
            reused=set(state.reused),
            extracted=0,
            notes=state.work / "notes.parquet",
        )
        scope = Scope.from_json(state.scope)
        out = state.work / "version"
        built = enrich_version(scope, previous, state.run_id, rebuilt, state.keys, out)
        history, left_out = _history(state, previous, scope, out)
        rejects_table = pa.concat_tables([carry_rejects(previous, built, scope), reject_table(left_out)])
        if history:  # where the notes' lineage and the commits' disagree, the report says so
            info.sources += [
                f"lineage: {d}" for d in disagreements(out / HISTORY, built.lineage or out / "lineage.parquet")
            ]
        state.same = previous is not None and same_tables(previous, built.registry, built.enriched, rejects_table)
        if history and previous is not None and not (previous.folder / HISTORY).exists():
            state.same = False  # the first history of a git source is a new version, even with the same tables
        state.rebuilt = sorted(built.rebuilt)
        state.file_keys = _live_keys(built.file_keys, built.registry, rejects_table)
        info.documents, info.chunks = built.registry.num_rows, pq.ParquetFile(built.enriched).metadata.num_rows
        if not state.same:
            write_small_tables(built, rejects_table, out)
            staging = staging_dir(home, state.run_id)
            staging.mkdir(parents=True, exist_ok=True)
            for name in VERSION_TABLES:
                os.replace(out / name, staging / name)
            merge_notes(
                previous.folder / NOTE_CACHE if previous else None,
                sorted(state.work.glob("shard-*.notes.parquet")),
                {f for shard in state.shards for f in shard},
                set(state.file_keys),
                staging / NOTE_CACHE,
            )
    fresh = sum(1 for r in built.rejects if r.stage in ("enrich", "lineage"))
    done = StageResult(
        "enrich",
        rebuilt.registry.num_rows,
        info.chunks,
        fresh,
        info.seconds["enrich"],
        "rebuilt registry rows → the version's chunks",
    )
    words = []
    if lexical:
        with timed(info, "lexical"):
            indexed = sum(build_word_indexes(enriched, out, before) for enriched, out, before in lexical_jobs(state))
        words = [StageResult("lexical", indexed, indexed, 0, info.seconds["lexical"], "chunks → word indexes")]
    info.rejected = rejects_table.num_rows
    state.update(info, Stage.ENRICHED, done, *words)
    return done


VERSION_TABLES = (
    "registry.parquet",
    "chunks.parquet",
    "enriched_chunks.parquet",
    "rejects.parquet",
    "lineage.parquet",
    HISTORY,
)


def _history(state: RunState, previous: Published | None, scope: Scope, out: Path) -> tuple[int, list[Reject]]:
    """The version's history of acts read from git (:mod:`runs.act_history`), written to ``out``; the number
    of rows (0, and an empty table, when no source is a git clone) and the versions left out: those this walk
    met, and those the last version had left out in the same repositories (not read again)."""
    recorded = previous.manifest.source_commits if previous else {}
    sources = {}
    for root in scope.roots:
        try:
            repo = repository(root)
        except GitRefused:  # git is never run on it (the plan's notes say why)
            continue
        if repo is not None:
            since = recorded.get(str(root))
            sources[root] = (repo, since if since and knows(repo, since) else None)
    carried = previous.folder / HISTORY if previous is not None else None
    repos = tuple(f"{repo}/" for repo, _ in sources.values())
    before = [r for r in rejects_of(previous.rejects) if r.stage == "history"] if previous is not None else []
    kept = [r for r in before if r.source_file and r.source_file.startswith(repos)]
    known = frozenset(r.source_file for r in kept if r.source_file)
    rows, met = build_history(sources, carried, out / HISTORY, state.run_id, known)
    return rows, kept + met


# --- publish --------------------------------------------------------------------------------------------


def publish(state_path: RunState | Path | str) -> StageResult:
    """Make the version current (one atomic pointer swap), then delete what went away (the report prunes)."""
    state = as_state(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    if info.status == RunStatus.DRY_RUN:
        return StageResult("publish", units="a dry run: nothing published")
    failpoint("publish")
    changes = ChangeSet.load(state.work)
    writes = changes.writes
    with timed(info, "publish"):
        if state.target:  # a rollback: the kept version is current again
            folder = versions_dir(home) / state.target
            set_current(home, state.target)
            info.version, info.status = state.target, RunStatus.ROLLED_BACK
        elif state.same and state.previous:
            folder = versions_dir(home) / state.previous
            # writes to the same tables are a repair (an interrupted run left the index behind), unless the
            # user asked for them: a --force-reembed run publishes the same version with new vectors
            info.version, info.status = state.previous, _same_tables_status(writes, options.force_reembed)
            manifest = read_manifest(folder)
            if manifest.file_keys != state.file_keys or (
                state.source_commits and manifest.source_commits != state.source_commits
            ):
                # same content read by new code, or a git source moved on with nothing to change: recorded
                manifest.file_keys, manifest.source_commits = state.file_keys, state.source_commits or {}
                write_manifest(folder, manifest)
        else:
            folder = state.tables_folder()
            manifest = Manifest(
                version=next_version(home),
                run_id=state.run_id,
                created=now_iso(),
                documents=pq.ParquetFile(folder / "registry.parquet").metadata.num_rows,
                chunks=pq.ParquetFile(folder / "enriched_chunks.parquet").metadata.num_rows,
                embedder=state.embedder_id,
                embedder_spec=state.embedder_spec,
                sources=state.scope["roots"],
                parent=state.previous,
                file_keys=state.file_keys,
                source_commits=state.source_commits,
                format_version=FORMAT_VERSION,
            )
            folder = seal(home, staging_dir(home, state.run_id), manifest)
            set_current(home, manifest.version)
            info.version, info.status = manifest.version, RunStatus.PUBLISHED
        info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
    state.update(info, Stage.PUBLISHED)
    failpoint("delete")
    with timed(info, "cleanup"):
        if changes.count(ChangeClass.DELETED) or (home / DIRTY).exists():
            collection = LazyClient(home, state.chroma_url).collection()
            for ids in changes.ids(ChangeClass.DELETED):  # after the publish: readers never miss a published chunk
                delete_ids(collection, ids)
            info.indexed = collection.count()
        else:
            info.indexed = info.chunks
        (home / DIRTY).unlink(missing_ok=True)
        BlockStore(home).keep(state.file_keys)  # the memo of pages the version no longer holds
    seconds = round(info.seconds["publish"] + info.seconds["cleanup"], 3)
    done = StageResult(
        "publish", info.chunks, changes.count(ChangeClass.DELETED), 0, seconds, "chunks published → index deletions"
    )
    state.update(info, Stage.PUBLISHED, done)
    return done


# --- report and finish ----------------------------------------------------------------------------------


def report(state_path: RunState | Path | str) -> Path | None:
    """Write the run report (JSON + HTML) to ``HOME/runs/`` and the version folder, then prune the versions
    beyond ``--keep`` (after the report, which compares with the version before). Dry runs write nothing."""
    state = as_state(state_path)
    info, home = state.run_info(), Path(state.home)
    if info.status == RunStatus.DRY_RUN:
        state.update(info, Stage.REPORTED)
        return None
    registry, enriched, rejects = _tables_after_publish(state, info)
    previous = Published.load(home, state.previous) if state.previous else None
    changes = ChangeSet.load(state.work)
    body = build_report(info, changes, enriched, registry, previous, rejects, state.started, state.stage_results())
    folder = versions_dir(home) / info.version if info.status == RunStatus.PUBLISHED and info.version else None
    path = write_report(home, body, folder)
    prune(home, state.run_options.keep_versions)
    state.update(info, Stage.REPORTED)
    return path


def _tables_after_publish(state: RunState, info: RunInfo) -> tuple[pa.Table, Path, pa.Table]:
    """The registry, the enriched chunks' file (the report reads its identifier columns a batch at a time)
    and the rejects."""
    folder = versions_dir(Path(state.home)) / (info.version or "")
    return (
        read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry"),
        folder / "enriched_chunks.parquet",
        read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects"),
    )


def finish(state_path: RunState | Path | str, error: BaseException | None = None) -> RunInfo:
    """Always the last step: on failure (an error, or a run that stopped before its report) record it;
    then remove work and staging files and release the lease. The previous version stays published."""
    state = as_state(state_path)
    info, home = state.run_info(), Path(state.home)
    if error is not None or state.stage != Stage.REPORTED:
        failure = error or RunError(f"run stopped after stage {state.stage!r}")
        if info.status not in (
            RunStatus.PUBLISHED,
            RunStatus.UNCHANGED,
            RunStatus.REPAIRED,
        ):  # failed before the pointer moved
            record_failure(home, info, failure, state.stage_results())
    shutil.rmtree(staging_dir(home, state.run_id), ignore_errors=True)
    shutil.rmtree(state.work, ignore_errors=True)
    lease.release(home, state.run_id)
    log.log(
        logging.ERROR if info.status in (RunStatus.FAILED, RunStatus.REFUSED) else logging.INFO,
        "run %s %s: version %s, %d documents, %d embedded, %d rejected%s",
        info.run_id,
        info.status,
        info.version,
        info.documents,
        info.embedded,
        info.rejected,
        f" ({info.error})" if info.error else "",
    )
    return info


def _same_tables_status(writes: bool, force_reembed: bool) -> RunStatus:
    if not writes:
        return RunStatus.UNCHANGED
    return RunStatus.PUBLISHED if force_reembed else RunStatus.REPAIRED


# --- lease (runs.lease) --------------------------------------------------------------------------------


def _live_keys(keys: dict[str, str], registry: pa.Table, rejects: pa.Table) -> dict[str, str]:
    """File keys worth keeping: files the version's documents or rejects came from."""
    live = {f for files in registry.column("source_files").to_pylist() for f in files or []}
    live |= {f for f in rejects.column("source_file").to_pylist() if f}
    return {f: k for f, k in keys.items() if f in live}
