"""The main job as stages over files: ``zan run`` calls them in one process, an Airflow DAG calls one per
task and passes the state file's path through XCom. Same library path either way.

    begin → extract_shard × N → registry → enrich → index → validate → publish → report; finish (always)

- ``begin`` takes the data directory's lease (one run at a time), plans the scope, decides which files
  must be read (unchanged documents are reused) and splits them into shards.
- ``extract_shard`` reads one shard's files into documents (pickled beside the state: an internal format).
- ``registry`` merges the extracted documents into registry rows and chunks (across sources and languages).
- ``enrich`` joins the identifier fields onto the chunks (DuckDB), combines them with the documents that
  stay as they are, and stages the version's tables (registry, chunks, enriched chunks, rejects).
- ``index`` classifies every chunk against the index, applies the shrink gate, embeds only unseen text
  and writes only what changed (marking the index dirty first).
- ``validate`` checks the staged tables' contracts and reads back every chunk it wrote.
- ``publish`` makes the version current with one atomic pointer swap, then deletes what went away.
- ``report`` writes the run report; ``finish`` releases the lease, removes work files and, when a stage
  failed, records the failure (the previous version stays published).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from enrich import lease
from enrich.build import (
    Prepared,
    Rebuilt,
    RunError,
    Scope,
    carry_rejects,
    enrich_version,
    extract_files,
    plan_scope,
    prepare,
    registry_of,
)
from enrich.diff import CLASSES, ChunkDiff, classify
from enrich.embed import Embedder, embedder_id_of, make_embedder
from enrich.failpoints import failpoint
from enrich.home import check_home
from enrich.index import (
    COLLECTION,
    WriteResult,
    collection_embedder,
    delete_ids,
    get_collection,
    index_state,
    open_client,
    write_changes,
)
from enrich.lease import Busy as Busy
from enrich.repair import check_room, ensure_healthy, index_bytes
from enrich.report import build_report, write_report
from enrich.runstate import (
    Progress,
    Published,
    RunInfo,
    RunOptions,
    ShrinkRefused,
    new_run_id,
    timed,
    work_dir,
)
from enrich.runstate import RunState as RunState
from enrich.storage import read_parquet, write_parquet_atomic
from enrich.vectors import VectorStore, vectors_for
from enrich.versions import (
    Manifest,
    clear_staging,
    next_version,
    now_iso,
    prune,
    seal,
    set_current,
    staging_dir,
    versions_dir,
    write_manifest,
    write_text_atomic,
)
from extractors.files import atomic_writer
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA

DIRTY = "index.dirty"
DIFF_SCHEMA = pa.schema([pa.field("chunk_id", pa.string(), nullable=False), pa.field("class", pa.string())])


class ValidationFailed(RunError):
    """The staged version or the index writes do not check out; nothing was published."""


# --- begin ----------------------------------------------------------------------------------------------


def begin(
    home: Path,
    sources: list[Path] | None = None,
    options: RunOptions | None = None,
    chroma_url: str | None = None,
    embedder: str = "hash",
    shards: int = 1,
    embedder_id: str | None = None,
    holder: str = "tasks",
) -> Path:
    """Take the lease, plan the run, split the files to read into ``shards``; returns the state file."""
    home, options = check_home(home, writable=True), options or RunOptions()
    run_id = new_run_id()
    info = RunInfo(run_id=run_id, home=str(home), chroma=chroma_url or str(home / "chroma"))
    info.embedder = embedder_id or embedder_id_of(embedder)
    lease.take(home, run_id, holder)
    try:
        clear_staging(home)
        _clear_work(home, keep=run_id)
        previous = Published.load(home)
        with timed(info, "plan"):
            scope = plan_scope(list(sources or []), options.only, options.since, previous)
            prepared = prepare(scope, previous, options.only)
        info.scope = scope.kind
        state = RunState(
            run_id=run_id,
            home=str(home),
            options=options.as_json(),
            chroma_url=chroma_url,
            embedder_spec=embedder,
            embedder_id=info.embedder,
            previous=previous.version if previous else None,
            scope={
                "kind": scope.kind,
                "files": [str(f) for f in scope.files],
                "roots": [str(r) for r in scope.roots],
                "touched": sorted(scope.touched),
                "skipped": [list(pair) for pair in scope.skipped],
            },  # fmt: skip
            keys=prepared.keys,
            reused=sorted(prepared.reused),
            shards=_split([str(f) for f in prepared.pending], shards),
            started=now_iso(),
            info=info.as_dict(),
        )
        return state.save()
    except BaseException as exc:
        _record_failure(home, info, exc)
        lease.release(home, run_id)
        shutil.rmtree(work_dir(home, run_id), ignore_errors=True)
        raise


def _split(files: list[str], shards: int) -> list[list[str]]:
    """Round-robin by size, largest first, so shards take about the same time."""
    shards = max(1, shards)
    out: list[list[str]] = [[] for _ in range(shards)]
    loads = [0] * shards
    sizes = {f: _size(f) for f in files}
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


# --- extract --------------------------------------------------------------------------------------------


def extract_shard(state_path: Path | str, index: int, progress: Progress | None = None) -> Path:
    """Extract one shard's files; documents and rejects are pickled beside the state."""
    state = RunState.load(state_path)
    failpoint("extract")
    files = [Path(f) for f in state.shards[index]]
    documents, rejects = extract_files(files, state.run_id, progress)
    out = state.work / f"shard-{index:04d}.pkl"
    with atomic_writer(out) as handle:
        pickle.dump((documents, rejects), handle, protocol=pickle.HIGHEST_PROTOCOL)
    return out


# --- registry and enrich --------------------------------------------------------------------------------


def registry(state_path: Path | str) -> Path:
    """Registry rows and chunks of the documents the shards extracted (staged for the enrich stage)."""
    state = RunState.load(state_path)
    info, home = state.run_info(), Path(state.home)
    previous = Published.load(home, state.previous) if state.previous else None
    with timed(info, "registry"):
        documents: dict[str, Any] = {}
        rejects: list[dict[str, Any]] = []
        for n in range(len(state.shards)):
            path = state.work / f"shard-{n:04d}.pkl"
            if not path.exists():
                raise RunError(f"shard {n} of run {state.run_id} was not extracted ({path} is missing)")
            with open(path, "rb") as handle:
                shard_documents, shard_rejects = pickle.load(handle)
            documents.update(shard_documents)
            rejects += shard_rejects
        prepared = Prepared(state.keys, set(state.reused), [])
        rebuilt = registry_of(_scope(state), previous, state.run_id, prepared, documents, rejects,
                              state.run_options.only)  # fmt: skip
        write_parquet_atomic(rebuilt.registry, state.work / "registry.parquet", REGISTRY_SCHEMA, "registry")
        write_parquet_atomic(rebuilt.chunks, state.work / "chunks.parquet", CHUNK_SCHEMA, "chunks")
        write_text_atomic(state.work / "rejects.json", json.dumps(rebuilt.rejects, ensure_ascii=False))
    state.reused = sorted(rebuilt.reused)
    info.files = rebuilt.extracted + sum(1 for r in rebuilt.rejects if r["stage"] == "extract")
    state.update(info, "registry")
    return state.path


def enrich(state_path: Path | str) -> Path:
    """Join identifier fields onto the rebuilt chunks, combine with what stays, stage the version's tables."""
    state = RunState.load(state_path)
    info, home = state.run_info(), Path(state.home)
    previous = Published.load(home, state.previous) if state.previous else None
    with timed(info, "enrich"):
        rebuilt = Rebuilt(
            registry=read_parquet(state.work / "registry.parquet", REGISTRY_SCHEMA, "registry"),
            chunks=read_parquet(state.work / "chunks.parquet", CHUNK_SCHEMA, "chunks"),
            rejects=json.loads((state.work / "rejects.json").read_text("utf-8")),
            reused=set(state.reused),
            extracted=0,
        )
        scope = _scope(state)
        built = enrich_version(scope, previous, state.run_id, rebuilt, state.keys)
        rejects_table = carry_rejects(previous, built, scope)
        state.same = previous is not None and _same_tables(previous, built.registry, built.enriched, rejects_table)
        state.rebuilt = sorted(built.rebuilt)
        state.file_keys = _live_keys(built.file_keys, built.registry, rejects_table)
        if not state.same:
            staging = staging_dir(home, state.run_id)
            write_parquet_atomic(built.registry, staging / "registry.parquet", REGISTRY_SCHEMA, "registry")
            write_parquet_atomic(built.chunks, staging / "chunks.parquet", CHUNK_SCHEMA, "chunks")
            write_parquet_atomic(built.enriched, staging / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA,
                                 "enriched_chunks")  # fmt: skip
            write_parquet_atomic(rejects_table, staging / "rejects.parquet", REJECT_SCHEMA, "rejects")
    info.documents, info.chunks = built.registry.num_rows, built.enriched.num_rows
    info.rejected = rejects_table.num_rows
    state.update(info, "enriched")
    return state.path


def _scope(state: RunState) -> Scope:
    s = state.scope
    skipped = [(str(p), str(r)) for p, r in s.get("skipped", [])]
    files, roots = [Path(f) for f in s["files"]], [Path(r) for r in s["roots"]]
    return Scope(s["kind"], files, roots, set(s["touched"]), skipped)


def _tables(state: RunState) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(registry, enriched, rejects) of the run's version: staged, or the published one when identical."""
    home = Path(state.home)
    folder = versions_dir(home) / state.previous if state.same and state.previous else staging_dir(home, state.run_id)
    return (
        read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry"),
        read_parquet(folder / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks"),
        read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects"),
    )


# --- index ----------------------------------------------------------------------------------------------


def index(state_path: Path | str, embedder: Embedder | None = None, progress: Progress | None = None) -> RunInfo:
    """Diff against the index, check the shrink gate, embed what is new, write what changed."""
    state = RunState.load(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    embedder = embedder or make_embedder(state.embedder_spec)
    if embedder.id != state.embedder_id:
        raise RunError(f"run {state.run_id} was planned for {state.embedder_id}, not {embedder.id}")
    previous = Published.load(home, state.previous) if state.previous else None
    registry, enriched, _ = _tables(state)
    client = _Client(home, state.chroma_url)
    if not state.chroma_url and not options.dry_run:
        with timed(info, "repair"):
            repaired = ensure_healthy(home, embedder, previous.enriched if previous else None)
        if repaired:
            info.repairs.append(repaired)
    with timed(info, "diff"):
        force = _in_scope_chunks(enriched, _scope(state), set(state.rebuilt)) if options.force_reembed else ()
        diff = classify(_index_before(home, previous, client, embedder), chunk_state(enriched), force)
        _save_diff(state, diff)
        count_classes(info, diff)
        _check_shrink(previous, registry, diff, options)
    rows = {row["chunk_id"]: row for row in enriched.to_pylist()} if diff.to_embed or diff.metadata_changed else {}
    texts = {rows[i]["text_hash"]: rows[i]["text"] for i in diff.to_embed}
    if options.dry_run:
        known = set() if options.force_reembed else set(VectorStore(home, embedder.id).get(list(texts)))
        info.embedded, info.status = len(set(texts) - known), "dry_run"
        state.update(info, "indexed")
        return info
    if texts or diff.metadata_changed:
        text_bytes = sum(len(t.encode("utf-8")) for t in texts.values())
        dim = int(getattr(embedder, "dim", 1024))
        check_room(home, index_bytes(len(diff.to_embed), text_bytes, dim) + 4 * dim * len(texts),
                   f"index {len(diff.to_embed)} chunks")  # fmt: skip
        with timed(info, "embed"):
            store = VectorStore(home, embedder.id)
            vectors, info.embedded = vectors_for(texts, store, embedder, state.run_id, force=options.force_reembed)
        with timed(info, "index"):
            collection = get_collection(client.get(), embedder)
            written = apply_changes(home, state.run_id, collection, rows, diff, vectors, progress)
            info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
    state.update(info, "indexed")
    return info


def apply_changes(
    home: Path,
    run_id: str,
    collection: Any,
    rows: dict[str, dict[str, Any]],
    diff: ChunkDiff,
    vectors: dict[str, Any],
    progress: Progress | None = None,
) -> WriteResult:
    """Mark the index dirty (it may now differ from CURRENT), then upsert new text and update changed
    metadata. Deletes are the caller's, after it moves CURRENT. Shared by runs and rollbacks."""
    (home / DIRTY).write_text(run_id + "\n", "utf-8")
    done, total = [0], len(diff.to_embed) + len(diff.metadata_changed)

    def step(n: int) -> None:
        done[0] += n
        if progress:
            progress("index", done[0], total)

    return write_changes(
        collection, rows, diff.to_embed, diff.metadata_changed, vectors, step, lambda: failpoint("index")
    )


def count_classes(info: RunInfo, diff: ChunkDiff) -> None:
    """Copy the diff's counts per change class into the run's info."""
    counts = diff.counts()
    info.added, info.text_changed, info.metadata_changed = (counts[c] for c in CLASSES[:3])
    info.unchanged, info.deleted = counts["unchanged"], counts["deleted"]


def _collection(state: RunState) -> Any:
    return open_client(Path(state.home) / "chroma", state.chroma_url).get_collection(
        COLLECTION, embedding_function=None
    )


# --- validate -------------------------------------------------------------------------------------------


def validate(state_path: Path | str) -> RunInfo:
    """Contracts of the staged tables, and a read-back of every chunk this run wrote to the index."""
    state = RunState.load(state_path)
    info = state.run_info()
    if info.status == "dry_run":
        return info
    with timed(info, "validate"):
        registry, enriched, _ = _tables(state)  # read_parquet checks each table against its schema
        doc_ids = registry.column("doc_id").to_pylist()
        chunk_ids = enriched.column("chunk_id").to_pylist()
        problems = []
        if len(set(doc_ids)) != len(doc_ids):
            problems.append("duplicate doc_id in the registry")
        if len(set(chunk_ids)) != len(chunk_ids):
            problems.append("duplicate chunk_id in the chunks")
        orphans = set(enriched.column("doc_id").to_pylist()) - set(doc_ids)
        if orphans:
            problems.append(f"chunks of documents not in the registry: {sorted(orphans)[:5]}")
        diff = _load_diff(state)
        written = diff.to_embed + diff.metadata_changed
        if written:
            problems += _read_back(state, enriched, written, len(diff.deleted))
        if problems:
            raise ValidationFailed(f"run {state.run_id} not published: " + "; ".join(problems))
    state.update(info, "validated")
    return info


def _read_back(state: RunState, enriched: pa.Table, written: list[str], deleted: int) -> list[str]:
    """Every chunk this run wrote must read back with the hashes it was written with, and the index must
    hold exactly the version's chunks plus those still to be deleted after the publish."""
    columns = (enriched.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    wanted = {i: (t, m) for i, t, m in zip(*columns, strict=True)}
    collection = _collection(state)
    bad = []
    for start in range(0, len(written), 1000):
        got = collection.get(ids=written[start : start + 1000], include=["metadatas"])
        found = {i: ((m or {}).get("text_hash"), (m or {}).get("meta_hash"))
                 for i, m in zip(got["ids"], got["metadatas"], strict=True)}  # fmt: skip
        bad += [i for i in written[start : start + 1000] if found.get(i) != wanted[i]]
    problems = [f"{len(bad)} written chunks do not read back as written: {bad[:5]}"] if bad else []
    if collection.count() != len(wanted) + deleted:
        problems.append(f"the index holds {collection.count()} records, expected {len(wanted)} + {deleted} to delete")
    return problems


# --- publish --------------------------------------------------------------------------------------------


def publish(state_path: Path | str) -> RunInfo:
    """Make the version current (one atomic pointer swap), then delete what went away and prune."""
    state = RunState.load(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    if info.status == "dry_run":
        return info
    failpoint("publish")
    diff = _load_diff(state)
    writes = bool(diff.to_embed or diff.metadata_changed or diff.deleted)
    with timed(info, "publish"):
        if state.same and state.previous:
            folder = versions_dir(home) / state.previous
            info.version, info.status = state.previous, "repaired" if writes else "unchanged"
            manifest = Manifest(**json.loads((folder / "manifest.json").read_text("utf-8")))
            if manifest.file_keys != state.file_keys:  # same content read by new code: don't re-read it again
                manifest.file_keys = state.file_keys
                write_manifest(folder, manifest)
        else:
            registry, enriched, _ = _tables(state)
            manifest = Manifest(
                version=next_version(home),
                run_id=state.run_id,
                created=now_iso(),
                documents=registry.num_rows,
                chunks=enriched.num_rows,
                embedder=state.embedder_id,
                sources=state.scope["roots"],
                parent=state.previous,
                file_keys=state.file_keys,
            )
            folder = seal(home, staging_dir(home, state.run_id), manifest)
            set_current(home, manifest.version)
            info.version, info.status = manifest.version, "published"
        info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
    state.update(info, "published")
    failpoint("delete")
    with timed(info, "cleanup"):
        if diff.deleted or (home / DIRTY).exists():
            collection = _collection(state)
            delete_ids(collection, diff.deleted)  # after the publish: readers never miss a published chunk
            info.indexed = collection.count()
        else:
            info.indexed = info.chunks
        (home / DIRTY).unlink(missing_ok=True)
        prune(home, options.keep_versions)
    state.update(info, "published")
    return info


# --- report and finish ----------------------------------------------------------------------------------


def report(state_path: Path | str) -> Path | None:
    """Write the run report (JSON + HTML) to ``HOME/runs/`` and the version folder. Dry runs write nothing."""
    state = RunState.load(state_path)
    info, home = state.run_info(), Path(state.home)
    if info.status == "dry_run":
        state.update(info, "reported")
        return None
    registry, enriched, rejects = _tables_after_publish(state, info)
    previous = Published.load(home, state.previous) if state.previous else None
    body = build_report(info, _load_diff(state), enriched, registry, previous, rejects, state.started)
    folder = versions_dir(home) / info.version if info.status == "published" and info.version else None
    path = write_report(home, body, folder)
    state.update(info, "reported")
    return path


def _tables_after_publish(state: RunState, info: RunInfo) -> tuple[pa.Table, pa.Table, pa.Table]:
    folder = versions_dir(Path(state.home)) / (info.version or "")
    return (
        read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry"),
        read_parquet(folder / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks"),
        read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects"),
    )


def finish(state_path: Path | str, error: BaseException | None = None) -> RunInfo:
    """Always the last step: on failure (an error, or a run that stopped before its report) record it;
    then remove work and staging files and release the lease. The previous version stays published."""
    state = RunState.load(state_path)
    info, home = state.run_info(), Path(state.home)
    if error is not None or state.stage not in ("reported", "finished"):
        failure = error or RunError(f"run stopped after stage {state.stage!r}")
        if info.status not in ("published", "unchanged", "repaired"):  # failed before the pointer moved
            _record_failure(home, info, failure)
    shutil.rmtree(staging_dir(home, state.run_id), ignore_errors=True)
    shutil.rmtree(state.work, ignore_errors=True)
    lease.release(home, state.run_id)
    return info


def _record_failure(home: Path, info: RunInfo, error: BaseException) -> None:
    """Write the failed run's report; best effort: a full disk must not hide the run's own error."""
    info.status = "refused" if isinstance(error, ShrinkRefused) else "failed"
    info.error = f"{type(error).__name__}: {error}"
    try:
        write_report(home, {**info.as_dict(), "finished": now_iso()})
    except OSError as exc:
        print(f"zan: could not write the report of failed run {info.run_id}: {exc}", file=sys.stderr)


# --- lease (enrich.lease) --------------------------------------------------------------------------------


def _clear_work(home: Path, keep: str) -> None:
    folder = home / "work"
    if folder.exists():
        for leftover in folder.iterdir():
            if leftover.name != keep:
                shutil.rmtree(leftover, ignore_errors=True)


# --- helpers --------------------------------------------------------------------------------------------


def _save_diff(state: RunState, diff: ChunkDiff) -> None:
    ids = [i for name in CLASSES for i in getattr(diff, name)]
    classes = [name for name in CLASSES for _ in getattr(diff, name)]
    table = pa.table({"chunk_id": ids, "class": classes}, schema=DIFF_SCHEMA)
    write_parquet_atomic(table, state.work / "diff.parquet", DIFF_SCHEMA, "diff")


def _load_diff(state: RunState) -> ChunkDiff:
    path = state.work / "diff.parquet"
    diff = ChunkDiff()
    if path.exists():
        table = pq.read_table(path)
        for chunk_id, name in zip(table.column("chunk_id").to_pylist(), table.column("class").to_pylist(), strict=True):
            getattr(diff, name).append(chunk_id)
    return diff


def _live_keys(keys: dict[str, str], registry: pa.Table, rejects: pa.Table) -> dict[str, str]:
    """File keys worth keeping: files the version's documents or rejects came from."""
    live = {f for files in registry.column("source_files").to_pylist() for f in files or []}
    live |= {f for f in rejects.column("source_file").to_pylist() if f}
    return {f: k for f, k in keys.items() if f in live}


def chunk_state(enriched: pa.Table) -> dict[str, tuple[str | None, str | None]]:
    ids, texts, metas = (enriched.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    return {i: (t, m) for i, t, m in zip(ids, texts, metas, strict=True)}


def _index_before(
    home: Path, previous: Published | None, client: _Client, embedder: Embedder
) -> dict[str, tuple[str | None, str | None]]:
    """What the index holds: the published version's hashes; or, after an interrupted run, with data from
    before versions, or when the index is another embedder's, the index itself read back (empty for another
    embedder: it is rebuilt), so the diff converges on the truth."""
    clean = previous is not None and not (home / DIRTY).exists() and previous.manifest.embedder == embedder.id
    if clean and previous is not None:
        return chunk_state(previous.enriched)
    if collection_embedder(client.get()) != embedder.id:
        return {}
    return index_state(client.get().get_collection(COLLECTION, embedding_function=None))


class _Client:
    """The Chroma client, opened on first use: a run with nothing to write never starts Chroma."""

    def __init__(self, home: Path, chroma_url: str | None) -> None:
        self.home, self.url, self._client = home, chroma_url, None

    def get(self) -> Any:
        if self._client is None:
            self._client = open_client(self.home / "chroma", self.url)
        return self._client


def _same_tables(previous: Published, registry: pa.Table, enriched: pa.Table, rejects: pa.Table) -> bool:
    """The run rebuilt exactly the published version (its rejects compared without their run ids)."""
    drop = [c for c in ("run_id",) if c in rejects.column_names]
    same = registry.equals(previous.registry) and enriched.equals(previous.enriched)
    return bool(same and rejects.drop_columns(drop).equals(previous.rejects.drop_columns(drop)))


def _in_scope_chunks(enriched: pa.Table, scope: Scope, rebuilt: set[str]) -> list[str]:
    if scope.is_full:
        return [str(c) for c in enriched.column("chunk_id").to_pylist()]
    wanted = scope.touched | rebuilt
    pairs = zip(enriched.column("chunk_id").to_pylist(), enriched.column("doc_id").to_pylist(), strict=True)
    return [str(chunk_id) for chunk_id, doc_id in pairs if doc_id in wanted]


def _check_shrink(previous: Published | None, registry: pa.Table, diff: ChunkDiff, options: RunOptions) -> None:
    if previous is None or options.allow_shrink:
        return
    before = set(previous.registry.column("doc_id").to_pylist())
    gone = sorted(before - set(registry.column("doc_id").to_pylist()))
    doc_share = len(gone) / max(1, len(before))
    chunk_share = len(diff.deleted) / max(1, previous.enriched.num_rows)
    if doc_share > options.max_shrink or chunk_share > options.max_shrink:
        listed = ", ".join(gone[:10]) + (" …" if len(gone) > 10 else "")
        raise ShrinkRefused(
            f"refusing to publish: the run would delete {len(gone)} of {len(before)} documents ({doc_share:.0%}) "
            f"and {len(diff.deleted)} of {previous.enriched.num_rows} chunks ({chunk_share:.0%}), over the "
            f"{options.max_shrink:.0%} limit; pass --allow-shrink if this is intended. Documents: {listed or '-'}"
        )
