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
import pyarrow.compute as pc

from enrich.chunking import chunk_document
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
from enrich.join import enrich_chunks
from enrich.registry import IdentityError, build_registry, doc_id_for, registry_row
from enrich.report import build_report, write_report
from enrich.storage import read_parquet, table_from_rows, write_parquet_atomic
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
)
from extractors.discover import extract_file, source_files
from extractors.model import Document
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA

DEFAULT_SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
DIRTY = "index.dirty"


class RunError(RuntimeError):
    """The run cannot publish (no source, no document, nothing in scope); nothing published was touched."""


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
        ids, files = self.registry.column("doc_id").to_pylist(), self.registry.column("source_files").to_pylist()
        return {d: list(f or []) for d, f in zip(ids, files, strict=True)}


@dataclass
class Scope:
    kind: str  # full, source, only, since
    files: list[Path]
    roots: list[Path]  # the sources the new version records
    touched: set[str]  # published doc_ids whose files are in scope (rebuilt, or deleted when gone)

    @property
    def is_full(self) -> bool:
        return self.kind == "full"


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
    rejects: list[dict[str, Any]] = []
    with _timed(info, "extract"):
        scope = _plan_scope(sources, options, previous)
        info.scope = scope.kind
        failpoint("extract")
        documents = _extract(scope, info, rejects, progress)
    with _timed(info, "registry"):
        registry, chunks = _registry_and_chunks(documents, info, rejects)
        if options.only:
            registry, chunks = (_only(t, set(options.only)) for t in (registry, chunks))
        built = set(registry.column("doc_id").to_pylist())
        registry, chunks = _merge(previous, registry, chunks, None if scope.is_full else scope.touched | built)
        staging = staging_dir(home, info.run_id)
        write_parquet_atomic(registry, staging / "registry.parquet", REGISTRY_SCHEMA, "registry")
        write_parquet_atomic(chunks, staging / "chunks.parquet", CHUNK_SCHEMA, "chunks")
    with _timed(info, "enrich"):
        joined = enrich_chunks(staging / "registry.parquet", staging / "chunks.parquet")
        rejects += [
            _reject(
                info,
                "enrich",
                r["source_file"],
                r["doc_id"],
                f"doc_id {r['doc_id']!r} is not in the registry",
                r["chunk_id"],
            )  # fmt: skip
            for r in joined.orphans.to_pylist()
        ]
        enriched = joined.enriched
        write_parquet_atomic(enriched, staging / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks")
        rejects_table = _carry_rejects(previous, rejects, scope)
        write_parquet_atomic(rejects_table, staging / "rejects.parquet", REJECT_SCHEMA, "rejects")
    with _timed(info, "diff"):
        client = _Client(home, chroma_url)
        diff = classify(
            _index_before(home, previous, client, embedder),
            _state(enriched),
            _in_scope_chunks(enriched, scope, built) if options.force_reembed else (),
        )
        _check_shrink(previous, registry, diff, options)
    _count(info, registry, enriched, rejects_table, diff)
    same = previous is not None and _same_tables(previous, registry, enriched, rejects_table)
    writes = bool(diff.to_embed or diff.metadata_changed or diff.deleted)
    if previous is not None and same and not writes and not options.dry_run:
        info.status, info.version, info.indexed = "unchanged", previous.version, previous.enriched.num_rows
        info.outputs = {p.stem: str(p) for p in sorted((versions_dir(home) / previous.version).glob("*.parquet"))}
        write_report(home, build_report(info, diff, enriched, registry, previous, rejects_table, started))
        return
    rows = {row["chunk_id"]: row for row in enriched.to_pylist()} if diff.to_embed or diff.metadata_changed else {}
    texts = {rows[i]["text_hash"]: rows[i]["text"] for i in diff.to_embed}
    if options.dry_run:
        store = VectorStore(home, embedder.id)
        info.embedded = len(texts) if options.force_reembed else len(set(texts) - set(store.get(list(texts))))
        info.status = "dry_run"  # writes nothing, not even a report: the caller prints the counts
        return
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


def _plan_scope(sources: list[Path], options: RunOptions, previous: Published | None) -> Scope:
    """Which files to read, and which published documents they concern."""
    recorded = [Path(s) for s in previous.manifest.sources] if previous else []
    roots = [p.resolve() for p in sources] or recorded or [DEFAULT_SAMPLE]
    if previous is None and not options.only:
        files = source_files(roots)
        if not files:
            raise RunError(f"no source files under {', '.join(map(str, roots))}")
        return Scope("full", files, roots, set())
    if options.only:
        if previous is None:
            raise RunError("--only needs a published version to take the documents' source files from")
        doc_files = previous.doc_files()
        unknown = sorted(set(options.only) - set(doc_files))
        if unknown:
            raise RunError(f"--only: {', '.join(unknown)} not in the published registry (use --source to add)")
        files = sorted({Path(f) for d in options.only for f in doc_files[d] if Path(f).exists()})
        return Scope("only", files, recorded, set(options.only))
    assert previous is not None
    files = source_files(roots)
    if not files:  # a source that yields nothing is an error, never "delete everything it had"
        raise RunError(f"no source files under {', '.join(map(str, roots))}")
    kind = "source" if sources else "full"
    if options.since:
        since = options.since
        files = [f for f in files if dt.date.fromtimestamp(f.stat().st_mtime) >= since]
        kind = "since"
    if kind == "full":
        return Scope("full", files, roots, set())
    wanted = {str(f) for f in files}
    under = tuple(f"{r}/" for r in roots) if kind == "source" else ()
    touched = {
        doc
        for doc, doc_files in previous.doc_files().items()
        if any(f in wanted or (under and f.startswith(under)) for f in doc_files)
    }
    extra = {Path(f) for d in touched for f in previous.doc_files()[d] if Path(f).exists()}
    return Scope(kind, sorted(set(files) | extra), sorted(set(recorded) | set(roots)), touched)


def _extract(scope: Scope, info: RunInfo, rejects: list[dict[str, Any]], progress: Progress) -> list[Document]:
    if not scope.files:
        if scope.is_full:
            raise RunError("no source files found in the sources")
        if not scope.touched:
            raise RunError(f"nothing in scope ({scope.kind}): no source file matches")
        return []  # every document in scope is gone from its sources: a delete-only run
    info.files = len(scope.files)
    documents = []
    for n, path in enumerate(scope.files, start=1):
        outcome = extract_file(path)
        if outcome.document:
            documents.append(outcome.document)
        else:
            rejects.append(_reject(info, "extract", outcome.source_file, None, outcome.error or "unknown error"))
        progress("extract", n, len(scope.files))
    if not documents:
        reasons = "; ".join(f"{r['source_file']}: {r['reason']}" for r in rejects[:5])
        raise RunError(f"no documents could be extracted from {len(scope.files)} file(s): {reasons}")
    return documents


def _registry_and_chunks(
    documents: list[Document], info: RunInfo, rejects: list[dict[str, Any]]
) -> tuple[pa.Table, pa.Table]:
    usable = []
    for document in documents:
        try:
            doc_id_for(document.requisites)
            usable.append(document)
        except IdentityError as exc:
            rejects.append(_reject(info, "registry", document.source_file, None, str(exc)))
    entries = build_registry(usable)
    rows = [registry_row(e) for e in sorted(entries.values(), key=lambda e: e.doc_id)]
    chunk_rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for entry in entries.values():
        for document in entry.documents:
            chunks = chunk_document(entry.doc_id, document)
            clash = next((c["chunk_id"] for c in chunks if c["chunk_id"] in seen), None)
            if clash:  # the same edition of one act read twice (e.g. a page saved in two folders)
                reason = f"chunk id {clash!r} already comes from {seen[clash]}"
                rejects.append(_reject(info, "chunk", document.source_file, entry.doc_id, reason))
                continue
            seen.update((c["chunk_id"], document.source_file) for c in chunks)
            chunk_rows += chunks
    chunk_rows.sort(key=lambda c: c["chunk_id"])
    return table_from_rows(rows, REGISTRY_SCHEMA, "registry"), table_from_rows(chunk_rows, CHUNK_SCHEMA, "chunks")


def _only(table: pa.Table, doc_ids: set[str]) -> pa.Table:
    return table.filter(pc.is_in(table.column("doc_id"), pa.array(sorted(doc_ids), pa.string())))


def _merge(
    previous: Published | None, registry: pa.Table, chunks: pa.Table, scope: set[str] | None
) -> tuple[pa.Table, pa.Table]:
    """The new version: rebuilt documents in scope, published documents outside it carried over as they are."""
    if previous is None or scope is None:
        return registry, chunks
    outside = pa.array(sorted(scope), pa.string())

    def keep(table: pa.Table) -> pa.Table:
        return table.filter(pc.invert(pc.is_in(table.column("doc_id"), outside)))

    merged_registry = pa.concat_tables([keep(previous.registry), registry]).sort_by("doc_id")
    merged_chunks = pa.concat_tables([keep(previous.chunks), chunks]).sort_by("chunk_id")
    return merged_registry, merged_chunks


def _carry_rejects(previous: Published | None, rejects: list[dict[str, Any]], scope: Scope) -> pa.Table:
    """This run's rejects, plus the published ones about files this run did not read again."""
    table = table_from_rows(rejects, REJECT_SCHEMA, "rejects")
    if previous is None or scope.is_full or not previous.rejects.num_rows:
        return table
    read = pa.array([str(f) for f in scope.files], pa.string())
    older = previous.rejects.filter(
        pc.invert(pc.fill_null(pc.is_in(previous.rejects.column("source_file"), read), False))
    )
    return pa.concat_tables([older, table])


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


def _reject(
    info: RunInfo, stage: str, source_file: str | None, doc_id: str | None, reason: str, chunk_id: str | None = None
) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "stage": stage,
        "source_file": source_file,
        "doc_id": doc_id,
        "chunk_id": chunk_id,
        "reason": reason,
    }


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
