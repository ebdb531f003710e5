"""The main job: extract → registry → chunks → enrich → diff → embed → index → publish → report.

A run builds its version aside (``versions/.tmp-<run_id>/``), classifies every chunk against what the
index holds (``enrich.diff``), embeds only text it has never embedded (``enrich.vectors``), writes only what
changed, then publishes by replacing one pointer (``enrich.versions``). Deletes happen after the publish.
A run that fails or is killed at any point leaves the previous version published; the next run finds the
``index.dirty`` marker, reconciles against the index itself and converges.

Scope: with no ``--source``, ``--only`` or ``--since`` a run is *full* over the sources the published
version recorded (the bundled sample the first time), and documents gone from them are deleted. With one,
only the documents in scope are rebuilt (or deleted); every other published document is carried over as is.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from enrich.build import RunError as RunError  # re-exported: callers catch it from here
from enrich.build import Scope, build, carry_rejects, plan_scope
from enrich.diff import ChunkDiff, classify
from enrich.embed import Embedder, HashingEmbedder
from enrich.failpoints import failpoint
from enrich.index import (
    COLLECTION,
    collection_embedder,
    delete_ids,
    get_collection,
    index_state,
    open_client,
    write_changes,
)
from enrich.report import build_report, write_report
from enrich.storage import read_parquet, write_parquet_atomic
from enrich.vectors import VectorStore, vectors_for
from enrich.versions import (
    KEEP_VERSIONS,
    Manifest,
    VersionError,
    clear_staging,
    list_versions,
    locked,
    next_version,
    now_iso,
    prune,
    published_dir,
    read_manifest,
    seal,
    set_current,
    staging_dir,
    versions_dir,
    write_manifest,
)
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA

DIRTY = "index.dirty"


class ShrinkRefused(RunError):
    """The run would delete more than the allowed share of documents or chunks."""


@dataclass(frozen=True)
class RunOptions:
    only: tuple[str, ...] = ()  # doc_ids to rebuild
    since: dt.date | None = None  # source files modified on or after this date
    dry_run: bool = False
    force_reembed: bool = False
    allow_shrink: bool = False
    max_shrink: float = 0.10
    keep_versions: int = KEEP_VERSIONS


@dataclass
class RunInfo:
    """What a run did; ``zan run --json`` prints it and Airflow tasks return it."""

    run_id: str
    status: str = "running"  # published, dry_run, refused, failed
    version: str | None = None
    scope: str = "full"
    documents: int = 0
    chunks: int = 0
    rejected: int = 0
    indexed: int = 0
    files: int = 0
    added: int = 0
    text_changed: int = 0
    metadata_changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    embedded: int = 0
    vector_writes: int = 0
    metadata_writes: int = 0
    home: str = ""
    chroma: str = ""
    embedder: str = ""
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _noop(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class Published:
    """The version a run starts from."""

    version: str
    manifest: Manifest
    registry: pa.Table
    chunks: pa.Table
    enriched: pa.Table
    rejects: pa.Table

    @classmethod
    def load(cls, home: Path) -> Published | None:
        folder = published_dir(home)
        if folder is None:
            return None
        return cls(
            version=folder.name,
            manifest=read_manifest(folder),
            registry=read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry"),
            chunks=read_parquet(folder / "chunks.parquet", CHUNK_SCHEMA, "chunks"),
            enriched=read_parquet(folder / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks"),
            rejects=read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects"),
        )

    def doc_files(self) -> dict[str, list[str]]:
        """doc_id → the source files it was built from."""
        if not hasattr(self, "_doc_files"):
            ids, files = self.registry.column("doc_id").to_pylist(), self.registry.column("source_files").to_pylist()
            self._doc_files = {d: list(f or []) for d, f in zip(ids, files, strict=True)}
        return self._doc_files

    def file_owners(self) -> dict[str, set[str]]:
        """source file → the doc_ids built from it."""
        if not hasattr(self, "_owners"):
            owners: dict[str, set[str]] = {}
            for doc_id, files in self.doc_files().items():
                for f in files:
                    owners.setdefault(f, set()).add(doc_id)
            self._owners = owners
        return self._owners

    def registry_rows(self) -> dict[str, dict[str, Any]]:
        return {r["doc_id"]: r for r in self.registry.to_pylist()}


def run(
    sources: list[Path] | None,
    home: Path,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
    options: RunOptions | None = None,
) -> RunInfo:
    """Run the main job into ``home``; returns what it did. Bad files become rejects, not failures."""
    options = options or RunOptions()
    embedder = embedder or HashingEmbedder()
    info = RunInfo(run_id=_run_id(), home=str(home), embedder=embedder.id, chroma=chroma_url or str(home / "chroma"))
    with locked(home):
        clear_staging(home)
        try:
            _run(sources or [], home, chroma_url, embedder, progress, options, info)
        except BaseException as exc:
            info.status = "refused" if isinstance(exc, ShrinkRefused) else "failed"
            info.error = f"{type(exc).__name__}: {exc}"
            write_report(home, {**info.as_dict(), "finished": now_iso()})
            raise
        finally:
            shutil.rmtree(home / "versions" / f".tmp-{info.run_id}", ignore_errors=True)
    return info


def _run(
    sources: list[Path],
    home: Path,
    chroma_url: str | None,
    embedder: Embedder,
    progress: Progress,
    options: RunOptions,
    info: RunInfo,
) -> None:
    started = now_iso()
    previous = Published.load(home)
    with _timed(info, "extract"):
        scope = plan_scope(sources, options.only, options.since, previous)
        info.scope = scope.kind
        failpoint("extract")
        built = build(scope, previous, info.run_id, options.only, progress)
        info.files = built.extracted_files
    registry, chunks, enriched = built.registry, built.chunks, built.enriched
    rejects_table = carry_rejects(previous, built, scope)
    with _timed(info, "diff"):
        client = _Client(home, chroma_url)
        diff = classify(
            _index_before(home, previous, client, embedder),
            _state(enriched),
            _in_scope_chunks(enriched, scope, built.rebuilt) if options.force_reembed else (),
        )
        _check_shrink(previous, registry, diff, options)
    _count(info, registry, enriched, rejects_table, diff)
    same = previous is not None and _same_tables(previous, registry, enriched, rejects_table)
    writes = bool(diff.to_embed or diff.metadata_changed or diff.deleted)
    if previous is not None and same and not writes and not options.dry_run:
        info.status, info.version, info.indexed = "unchanged", previous.version, previous.enriched.num_rows
        folder = versions_dir(home) / previous.version
        info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
        keys = _live_keys(built.file_keys, registry, rejects_table)
        if keys != previous.manifest.file_keys:  # same content read by new code: remember, don't re-read again
            previous.manifest.file_keys = keys
            write_manifest(folder, previous.manifest)
        write_report(home, build_report(info, diff, enriched, registry, previous, rejects_table, started))
        return
    rows = {row["chunk_id"]: row for row in enriched.to_pylist()} if diff.to_embed or diff.metadata_changed else {}
    texts = {rows[i]["text_hash"]: rows[i]["text"] for i in diff.to_embed}
    if options.dry_run:
        store = VectorStore(home, embedder.id)
        info.embedded = len(texts) if options.force_reembed else len(set(texts) - set(store.get(list(texts))))
        info.status = "dry_run"  # writes nothing, not even a report: the caller prints the counts
        return
    with _timed(info, "stage"):
        staging = staging_dir(home, info.run_id)
        write_parquet_atomic(registry, staging / "registry.parquet", REGISTRY_SCHEMA, "registry")
        write_parquet_atomic(chunks, staging / "chunks.parquet", CHUNK_SCHEMA, "chunks")
        write_parquet_atomic(enriched, staging / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks")
        write_parquet_atomic(rejects_table, staging / "rejects.parquet", REJECT_SCHEMA, "rejects")
    with _timed(info, "embed"):
        store = VectorStore(home, embedder.id)
        vectors, info.embedded = vectors_for(texts, store, embedder, info.run_id, force=options.force_reembed)
    with _timed(info, "index"):
        (home / DIRTY).write_text(info.run_id + "\n", "utf-8")  # from here the index may differ from CURRENT
        collection = get_collection(client.get(), embedder)
        done = [0]

        def step(n: int) -> None:
            done[0] += n
            progress("index", done[0], len(diff.to_embed) + len(diff.metadata_changed))

        written = write_changes(
            collection, rows, diff.to_embed, diff.metadata_changed, vectors, step, lambda: failpoint("index")
        )
        info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
    failpoint("publish")
    with _timed(info, "publish"):
        if same and previous is not None:  # the index was repaired (an interrupted run): same version stays
            folder, info.version, info.status = versions_dir(home) / previous.version, previous.version, "repaired"
            report = build_report(info, diff, enriched, registry, previous, rejects_table, started)
        else:
            manifest = Manifest(
                version=next_version(home),
                run_id=info.run_id,
                created=now_iso(),
                documents=registry.num_rows,
                chunks=enriched.num_rows,
                embedder=embedder.id,
                sources=[str(p) for p in scope.roots],
                parent=previous.version if previous else None,
                file_keys=_live_keys(built.file_keys, registry, rejects_table),
            )
            info.version, info.status = manifest.version, "published"
            report = build_report(info, diff, enriched, registry, previous, rejects_table, started)
            write_report(home, report, staging)
            folder = seal(home, staging, manifest)
            set_current(home, manifest.version)
        info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
    failpoint("delete")
    with _timed(info, "cleanup"):
        delete_ids(collection, diff.deleted)  # after the publish: readers never miss a published chunk
        (home / DIRTY).unlink(missing_ok=True)
        prune(home, options.keep_versions)
        info.indexed = collection.count()
    write_report(home, {**report, **info.as_dict(), "finished": now_iso()}, folder)


def _live_keys(keys: dict[str, str], registry: pa.Table, rejects: pa.Table) -> dict[str, str]:
    """File keys worth keeping: files the version's documents or rejects came from."""
    live = {f for files in registry.column("source_files").to_pylist() for f in files or []}
    live |= {f for f in rejects.column("source_file").to_pylist() if f}
    return {f: k for f, k in keys.items() if f in live}


def _state(enriched: pa.Table) -> dict[str, tuple[str | None, str | None]]:
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
        return _state(previous.enriched)
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


def _in_scope_chunks(enriched: pa.Table, scope: Scope, built: set[str]) -> list[str]:
    if scope.is_full:
        return [str(c) for c in enriched.column("chunk_id").to_pylist()]
    wanted = scope.touched | built
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


def _count(info: RunInfo, registry: pa.Table, enriched: pa.Table, rejects: pa.Table, diff: ChunkDiff) -> None:
    info.documents, info.chunks, info.rejected = registry.num_rows, enriched.num_rows, rejects.num_rows
    counts = diff.counts()
    info.added, info.text_changed, info.metadata_changed = (
        counts["added"],
        counts["text_changed"],
        counts["metadata_changed"],
    )
    info.unchanged, info.deleted = counts["unchanged"], counts["deleted"]


def _run_id() -> str:
    """Sortable by start time (milliseconds), unique by its random tail."""
    now = dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%dT%H%M%S}{now.microsecond // 1000:03d}Z-{uuid.uuid4().hex[:6]}"


class _timed:
    def __init__(self, info: RunInfo, stage: str) -> None:
        self.info, self.stage = info, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.info.seconds[self.stage] = round(time.perf_counter() - self.start, 3)


def rollback(
    home: Path,
    version: str | None = None,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
) -> RunInfo:
    """Republish an earlier kept version (default: the one before the current): the index is brought back
    to it by the same diff a run uses (stored vectors, no re-embedding), then the pointer moves."""
    embedder = embedder or HashingEmbedder()
    info = RunInfo(run_id=_run_id(), scope="rollback", home=str(home), embedder=embedder.id,
                   chroma=chroma_url or str(home / "chroma"))  # fmt: skip
    with locked(home):
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
        diff = classify(index_state(collection), _state(enriched))
        _count(info, registry, enriched, rejects, diff)
        rows = {row["chunk_id"]: row for row in enriched.to_pylist()}
        texts = {rows[i]["text_hash"]: rows[i]["text"] for i in diff.to_embed}
        vectors, info.embedded = vectors_for(texts, VectorStore(home, embedder.id), embedder, info.run_id)
        (home / DIRTY).write_text(info.run_id + "\n", "utf-8")
        written = write_changes(collection, rows, diff.to_embed, diff.metadata_changed, vectors)
        info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
        set_current(home, target)
        delete_ids(collection, diff.deleted)
        (home / DIRTY).unlink(missing_ok=True)
        info.version, info.status, info.indexed = target, "rolled_back", collection.count()
        info.outputs = {p.stem: str(p) for p in sorted(folder.glob("*.parquet"))}
        write_report(home, build_report(info, diff, enriched, registry, current, rejects, now_iso()))
    return info
