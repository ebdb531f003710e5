"""The first stage of a run or a rollback: take the home's lease, clear what earlier runs left, plan what the run
reads and split it into shards (:func:`begin`), or stand a kept version where a run's staged tables would
(:func:`begin_rollback`); a failure while planning is recorded and the lease released (:func:`record_failure`,
which :func:`runs.stages.finish` also uses)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from runs import lease
from runs.changes import check_repeals
from runs.errors import RunError, ShrinkRefused
from runs.report import write_report
from runs.scope import Scope, plan_scope, prepare
from runs.state import Published, RunInfo, RunOptions, RunState, RunStatus, Stage, new_run_id, timed, work_dir
from runs.versions import clear_staging, now_iso
from schemas.published import VersionError, check_home, list_versions, read_manifest, versions_dir
from schemas.run_report import RunReport, StageResult
from vectors.embedders import make_embedder


def begin(
    home: Path,
    sources: list[Path] | None = None,
    options: RunOptions | None = None,
    chroma_url: str | None = None,
    embedder: str = "hash",
    shards: int = 1,
    embedder_id: str | None = None,
    holder: str = "tasks",
    shard_bytes: int = 0,
) -> Path:
    """Take the lease, plan the run, split the files to read into ``shards``; returns the state file.
    ``shard_bytes``: fewer shards where the files to read are few, one per this many bytes at least (0: always
    ``shards``, as the DAG's extract tasks are configured)."""
    home, options = check_home(home, writable=True), options or RunOptions()
    run_id = new_run_id()
    info = RunInfo(run_id=run_id, home=str(home), chroma=chroma_url or str(home / "chroma"))
    info.embedder = embedder_id or make_embedder(embedder).bind(home, record=not options.dry_run)
    with _planning(home, info, holder):
        previous = Published.load(home)
        with timed(info, "plan"):
            scope = plan_scope(list(sources or []), options.only, options.since, previous)
            prepared = prepare(scope, previous, options.only)
        info.scope = scope.kind
        info.sources, info.repealed = prepared.notes, len(prepared.repealed)
        check_repeals(prepared.shares, options)  # before anything is read: a mass deletion is held here
        state = RunState(
            run_id=run_id,
            home=str(home),
            options=options.as_json(),
            chroma_url=chroma_url,
            embedder_spec=embedder,
            embedder_id=info.embedder,
            previous=previous.version if previous else None,
            scope=scope.as_json(),
            keys=prepared.keys,
            reused=sorted(prepared.reused),
            shards=_split([str(f) for f in prepared.pending], shards, shard_bytes),
            started=now_iso(),
            info=info.as_dict(),
            source_commits=prepared.commits,
            repealed=prepared.repealed,
        )
        return state.save()


def begin_rollback(home: Path, version: str | None, chroma_url: str | None, embedder: str, embedder_id: str) -> Path:
    """Take the lease and plan a rollback: the kept ``version`` (default: the one before the current) stands
    where a run's staged tables would, and the same stages follow (index: the diff against the index and the
    writes; validate; publish: CURRENT moves back; report, which prunes; finish). Nothing is extracted and no
    table is loaded: the counts come from the files' metadata."""
    home = check_home(home, writable=True)
    run_id = new_run_id()
    info = RunInfo(
        run_id=run_id, scope="rollback", home=str(home), chroma=chroma_url or str(home / "chroma"), embedder=embedder_id
    )
    with _planning(home, info, "process"):
        current = Published.load(home)
        if current is None:
            raise RunError(f"nothing is published under {home}: nothing to roll back")
        kept = [m.version for m in list_versions(home)]
        target = version or next((v for v in reversed(kept) if v < current.version), None)
        if target is None or target not in kept:
            raise VersionError(f"no kept version {target or 'before ' + current.version}; kept: {', '.join(kept)}")
        folder = versions_dir(home) / target
        manifest = read_manifest(folder)
        if manifest.embedder != embedder_id:
            raise RunError(f"{target} was indexed with {manifest.embedder}; roll back with that embedder")
        info.documents = pq.ParquetFile(folder / "registry.parquet").metadata.num_rows
        info.chunks = pq.ParquetFile(folder / "enriched_chunks.parquet").metadata.num_rows
        info.rejected = pq.ParquetFile(folder / "rejects.parquet").metadata.num_rows
        scope = Scope("rollback", [], [Path(s) for s in manifest.sources], set())
        state = RunState(
            run_id=run_id,
            home=str(home),
            options=RunOptions(allow_shrink=True).as_json(),
            chroma_url=chroma_url,
            embedder_spec=embedder,
            embedder_id=embedder_id,
            previous=current.version,
            scope=scope.as_json(),
            keys={},
            reused=[],
            shards=[],
            started=now_iso(),
            stage=Stage.ENRICHED,
            file_keys=manifest.file_keys,
            target=target,
            info=info.as_dict(),
        )
        work_dir(home, run_id).mkdir(parents=True, exist_ok=True)
        return state.save()


@contextlib.contextmanager
def _planning(home: Path, info: RunInfo, holder: str) -> Iterator[None]:
    """Take the lease for run ``info.run_id`` and clear what earlier runs left; if planning fails, record the
    failure, release the lease and remove the run's work folder before the error goes on."""
    lease.take(home, info.run_id, holder)
    try:
        clear_staging(home)
        clear_work(home, keep=info.run_id)
        yield
    except BaseException as exc:
        record_failure(home, info, exc)
        lease.release(home, info.run_id)
        shutil.rmtree(work_dir(home, info.run_id), ignore_errors=True)
        raise


def _split(files: list[str], shards: int, shard_bytes: int = 0) -> list[list[str]]:
    """Round-robin by size, largest first, so shards take about the same time; with ``shard_bytes``, no more
    shards than the files' bytes fill at that many each."""
    sizes = {f: _size(f) for f in files}
    if shard_bytes > 0:
        shards = min(shards, sum(sizes.values()) // shard_bytes)
    shards = max(1, shards)
    out: list[list[str]] = [[] for _ in range(shards)]
    loads = [0] * shards
    for path in sorted(files, key=lambda f: -sizes[f]):
        n = loads.index(min(loads))
        out[n].append(path)
        loads[n] += sizes[path]
    return [sorted(s) for s in out]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def record_failure(home: Path, info: RunInfo, error: BaseException, stages: Iterable[StageResult] = ()) -> None:
    """Write the failed run's report (with the stages it finished); best effort: a full disk must not hide
    the run's own error."""
    info.status = RunStatus.REFUSED if isinstance(error, ShrinkRefused) else RunStatus.FAILED
    info.error = f"{type(error).__name__}: {error}"
    try:
        write_report(home, RunReport.of(info, finished=now_iso(), stages=list(stages)))
    except OSError as exc:
        print(f"zan: could not write the report of failed run {info.run_id}: {exc}", file=sys.stderr)


def clear_work(home: Path, keep: str) -> None:
    folder = home / "work"
    if folder.exists():
        for leftover in folder.iterdir():
            if leftover.name != keep:
                shutil.rmtree(leftover, ignore_errors=True)
