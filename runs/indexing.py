"""The run's index and validate stages: diff against what the index holds, embed only new text, write
only what changed (``index``); then check the staged tables and read back what was written (``validate``).
Nothing here moves CURRENT: a failure leaves the previous version published and ``index.dirty`` set, and
the next run reconciles (:mod:`runs.changes`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from runs.build import Scope
from runs.changes import DIRTY, check_shrink, chunk_state, count_classes, in_scope_chunks, load_diff, save_diff
from runs.diff import ChunkDiff, classify
from runs.errors import RunError, ValidationFailed
from runs.failpoints import failpoint
from runs.state import Progress, Published, RunInfo, RunState, RunStatus, Stage, timed
from vectors.embed import Embedder, make_embedder
from vectors.index import LazyClient, WriteResult, collection_embedder, get_collection, index_state, write_changes
from vectors.repair import check_room, ensure_healthy, index_bytes
from vectors.store import VectorStore, vectors_for


def index(state_path: Path | str, embedder: Embedder | None = None, progress: Progress | None = None) -> RunInfo:
    """Diff against the index, check the shrink gate, embed what is new, write what changed."""
    state = RunState.load(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    embedder = embedder or make_embedder(state.embedder_spec)
    if embedder.id != state.embedder_id:
        raise RunError(f"run {state.run_id} was planned for {state.embedder_id}, not {embedder.id}")
    previous = Published.load(home, state.previous) if state.previous else None
    registry, enriched, _ = state.tables()
    client = LazyClient(home, state.chroma_url)
    if not state.chroma_url and not options.dry_run:
        with timed(info, "repair"):
            repaired = ensure_healthy(home, embedder, previous.enriched if previous else None)
        if repaired:
            info.repairs.append(repaired)
    with timed(info, "diff"):
        scope = Scope.from_json(state.scope)
        force = in_scope_chunks(enriched, scope, set(state.rebuilt)) if options.force_reembed else ()
        diff = classify(_index_before(home, previous, client, embedder), chunk_state(enriched), force)
        save_diff(state, diff)
        count_classes(info, diff)
        check_shrink(previous, registry, diff, options)
    rows = {row["chunk_id"]: row for row in enriched.to_pylist()} if diff.to_embed or diff.metadata_changed else {}
    texts = {rows[i]["text_hash"]: rows[i]["text"] for i in diff.to_embed}
    if options.dry_run:
        known = set() if options.force_reembed else set(VectorStore(home, embedder.id).get(list(texts)))
        info.embedded, info.status = len(set(texts) - known), RunStatus.DRY_RUN
        state.update(info, Stage.INDEXED)
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
            indexed = _indexed_rows(home, previous, embedder, diff.metadata_changed)
            written = apply_changes(home, state.run_id, collection, rows, diff, vectors, progress, indexed)
            info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
    state.update(info, Stage.INDEXED)
    return info


def apply_changes(
    home: Path,
    run_id: str,
    collection: Any,
    rows: dict[str, dict[str, Any]],
    diff: ChunkDiff,
    vectors: dict[str, Any],
    progress: Progress | None = None,
    indexed_rows: dict[str, dict[str, Any]] | None = None,
) -> WriteResult:
    """Mark the index dirty (it may now differ from CURRENT), then upsert new text and update changed
    metadata (``indexed_rows``: what the index holds, when known). Deletes are the caller's, after it moves
    CURRENT. Shared by runs and rollbacks."""
    (home / DIRTY).write_text(run_id + "\n", "utf-8")
    done, total = [0], len(diff.to_embed) + len(diff.metadata_changed)

    def step(n: int) -> None:
        done[0] += n
        if progress:
            progress("index", done[0], total)

    return write_changes(
        collection, rows, diff.to_embed, diff.metadata_changed, vectors, step, lambda: failpoint("index"),
        indexed_rows,
    )  # fmt: skip


def validate(state_path: Path | str) -> RunInfo:
    """Contracts of the staged tables, and a read-back of every chunk this run wrote to the index."""
    state = RunState.load(state_path)
    info = state.run_info()
    if info.status == RunStatus.DRY_RUN:
        return info
    with timed(info, "validate"):
        registry, enriched, _ = state.tables()  # read_parquet checks each table against its schema
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
        diff = load_diff(state)
        written = diff.to_embed + diff.metadata_changed
        if written:
            problems += _read_back(state, enriched, written, len(diff.deleted))
        if problems:
            raise ValidationFailed(f"run {state.run_id} not published: " + "; ".join(problems))
    state.update(info, Stage.VALIDATED)
    return info


READ_BACK = 1000  # written records read back by validate: all of a small run, an even sample of a large one


def _read_back(state: RunState, enriched: pa.Table, written: list[str], deleted: int) -> list[str]:
    """The index must hold exactly the version's chunks plus those still to be deleted after the publish, and
    the written chunks read back with the hashes they were written with: every one of a run that wrote up to
    :data:`READ_BACK`, an even sample of a larger one (reading every record back cost a quarter of a
    metadata-only re-run)."""
    columns = (enriched.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    wanted = {i: (t, m) for i, t, m in zip(*columns, strict=True)}
    collection = LazyClient(Path(state.home), state.chroma_url).collection()
    step = max(1, len(written) // READ_BACK)
    sample = sorted(set(written[::step]) | set(written[-1:]))
    got = collection.get(ids=sample, include=["metadatas"])
    found = {i: ((m or {}).get("text_hash"), (m or {}).get("meta_hash"))
             for i, m in zip(got["ids"], got["metadatas"], strict=True)}  # fmt: skip
    bad = [i for i in sample if found.get(i) != wanted[i]]
    problems = [f"{len(bad)} of {len(sample)} written chunks read back do not match: {bad[:5]}"] if bad else []
    if collection.count() != len(wanted) + deleted:
        problems.append(f"the index holds {collection.count()} records, expected {len(wanted)} + {deleted} to delete")
    return problems


def _indexed_rows(
    home: Path, previous: Published | None, embedder: Embedder, ids: list[str]
) -> dict[str, dict[str, Any]] | None:
    """The published rows of ``ids`` when the index holds exactly the published version (no interrupted run
    since, same embedder), so a metadata update needs no read of what is there; else None."""
    if not ids or previous is None or (home / DIRTY).exists() or previous.manifest.embedder != embedder.id:
        return None
    wanted = previous.enriched.filter(pc.is_in(previous.enriched.column("chunk_id"), value_set=pa.array(ids)))
    return {row["chunk_id"]: row for row in wanted.to_pylist()}


def _index_before(
    home: Path, previous: Published | None, client: LazyClient, embedder: Embedder
) -> dict[str, tuple[str | None, str | None]]:
    """What the index holds: the published version's hashes; or, after an interrupted run, with data from
    before versions, or when the index is another embedder's, the index itself read back (empty for another
    embedder: it is rebuilt), so the diff converges on the truth."""
    clean = previous is not None and not (home / DIRTY).exists() and previous.manifest.embedder == embedder.id
    if clean and previous is not None:
        return chunk_state(previous.enriched)
    if collection_embedder(client.get()) != embedder.id:
        return {}
    return index_state(client.collection())
