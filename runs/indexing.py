"""The run's index and validate stages: diff against what the index holds, embed only new text, write
only what changed (``index``); then check the staged tables and read back what was written (``validate``).
Nothing here moves CURRENT: a failure leaves the previous version published and ``index.dirty`` set, and
the next run reconciles (:mod:`runs.changes`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runs.build import Scope
from runs.changes import DIRTY, check_shrink, chunk_state, count_classes, in_scope_chunks, load_diff, save_diff
from runs.diff import ChunkDiff, classify, state_table
from runs.errors import RunError, ValidationFailed
from runs.failpoints import failpoint
from runs.state import Progress, Published, RunInfo, RunState, RunStatus, Stage, timed
from vectors.embed import Embedder, make_embedder
from vectors.index import (
    BATCH,
    LazyClient,
    WriteResult,
    collection_embedder,
    get_collection,
    index_state,
    write_changes,
)
from vectors.repair import check_room, ensure_healthy, index_bytes
from vectors.store import VectorStore


def index(state_path: Path | str, embedder: Embedder | None = None, progress: Progress | None = None) -> RunInfo:
    """Diff against the index, check the shrink gate, embed what is new, write what changed.

    Only ids and hashes are read whole; texts, metadata and vectors go through in blocks of :data:`BLOCK`
    rows (read from the staged parquet, embedded, stored, written), so memory does not grow with the corpus."""
    state = RunState.load(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    embedder = embedder or make_embedder(state.embedder_spec)
    if embedder.id != state.embedder_id:
        raise RunError(f"run {state.run_id} was planned for {state.embedder_id}, not {embedder.id}")
    previous = Published.load(home, state.previous) if state.previous else None
    keys = state.columns("enriched_chunks", ["chunk_id", "doc_id", "text_hash", "meta_hash"])
    client = LazyClient(home, state.chroma_url)
    if not state.chroma_url and not options.dry_run:
        with timed(info, "repair"):
            repaired = ensure_healthy(home, embedder, lambda: previous.enriched if previous else None)
        if repaired:
            info.repairs.append(repaired)
    with timed(info, "diff"):
        scope = Scope.from_json(state.scope)
        force = in_scope_chunks(keys, scope, set(state.rebuilt)) if options.force_reembed else ()
        diff = classify(_index_before(home, previous, client, embedder), chunk_state(keys), force)
        save_diff(state, diff)
        count_classes(info, diff)
        check_shrink(previous, state.columns("registry", ["doc_id"]), diff, options)
    store = VectorStore(home, embedder.id)
    new_text = _hashes_of(keys, diff.to_embed)
    if options.dry_run:
        unseen = (
            new_text
            if options.force_reembed
            else new_text.filter(pc.invert(pc.is_in(new_text, value_set=store.hashes())))
        )
        info.embedded = pc.count_distinct(unseen).as_py()
        info.status = RunStatus.DRY_RUN
        state.update(info, Stage.INDEXED)
        return info
    if diff.to_embed or diff.metadata_changed:
        path = state.tables_folder() / "enriched_chunks.parquet"
        unique = pc.count_distinct(new_text).as_py()
        dim = int(getattr(embedder, "dim", 1024))
        needed = index_bytes(len(diff.to_embed), _text_bytes(path, diff.to_embed), dim) + 4 * dim * unique
        check_room(home, needed, f"index {len(diff.to_embed)} chunks")
        collection = get_collection(client.get(), embedder)
        written, info.embedded = stream_changes(
            home, state.run_id, collection, path, diff, embedder, store, force=options.force_reembed,
            progress=progress, indexed=functools.partial(_indexed_rows, home, previous, embedder), info=info,
        )  # fmt: skip
        info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
    state.update(info, Stage.INDEXED)
    return info


BLOCK = 5_000  # rows read, embedded and stored at a time by :func:`stream_changes` (Chroma calls: BATCH)


def stream_changes(
    home: Path,
    run_id: str,
    collection: Any,
    enriched_path: Path,
    diff: ChunkDiff,
    embedder: Embedder,
    store: VectorStore,
    *,
    force: bool = False,
    progress: Progress | None = None,
    indexed: Callable[[list[str]], dict[str, dict[str, Any]] | None] | None = None,
    info: RunInfo | None = None,
) -> tuple[WriteResult, int]:
    """Mark the index dirty (it may now differ from CURRENT), then, block by block of the version's enriched
    chunks: vectors for the new text (stored ones reused, the rest embedded and stored before the write),
    upserts, and metadata-only updates (``indexed`` gives what the index holds for ids, when known). Returns
    the writes and how many texts were embedded. Deletes are the caller's, after it moves CURRENT. Shared by
    runs and rollbacks."""
    (home / DIRTY).write_text(run_id + "\n", "utf-8")
    failpoint("index_begin")  # before the first write (``index`` is after each batch written)
    upserts, updates = set(diff.to_embed), set(diff.metadata_changed)
    known = pa.array([], pa.string()) if force or not upserts else store.hashes()
    done, total = [0], len(upserts) + len(updates)
    clock = info or RunInfo(run_id=run_id)

    def step(n: int) -> None:
        done[0] += n
        if progress:
            progress("index", done[0], total)

    embedded = vector_writes = metadata_writes = 0
    upsert_ids = pa.array(sorted(upserts), pa.string())
    for block, table in enumerate(_blocks(enriched_path, sorted(upserts | updates))):
        with timed(clock, "embed"):
            to_upsert = pc.is_in(table.column("chunk_id"), value_set=upsert_ids)
            vectors, fresh = block_vectors(table.filter(to_upsert), store, known, embedder, run_id, block)
            known = pa.concat_arrays([known, pa.array(fresh, pa.string())]) if fresh else known
            embedded += len(fresh)
        with timed(clock, "index"):
            for start in range(0, table.num_rows, BATCH):  # Python rows for one Chroma call at a time
                rows = {r["chunk_id"]: r for r in table.slice(start, BATCH).to_pylist()}
                ups, upd = [i for i in rows if i in upserts], [i for i in rows if i in updates]
                held = indexed(upd) if indexed and upd else None
                written = write_changes(collection, rows, ups, upd, vectors, step, lambda: failpoint("index"), held)
                vector_writes += written.vector_writes
                metadata_writes += written.metadata_writes
    return WriteResult(vector_writes=vector_writes, metadata_writes=metadata_writes), embedded


def block_vectors(
    table: pa.Table, store: VectorStore, known: pa.Array, embedder: Embedder, run_id: str, block: int
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Vectors for the texts of one block's rows: the stored ones among ``known`` read back, the rest
    embedded (256 at a time, texts taken from the Arrow column as they are needed) and stored as this
    block's part before anything is written to the index (a run killed after embedding does not embed them
    again). Returns the vectors by text hash and the hashes embedded."""
    hashes = [str(h) for h in table.column("text_hash").to_pylist()]
    stored = table.column("text_hash").filter(pc.is_in(table.column("text_hash"), value_set=known))
    vectors = store.get(sorted(set(stored.to_pylist())))
    position = {h: n for n, h in enumerate(hashes) if h not in vectors}
    missing = list(position)
    fresh: dict[str, np.ndarray] = {}
    for start in range(0, len(missing), 256):
        part = missing[start : start + 256]
        texts = table.column("text").take(pa.array([position[h] for h in part], pa.int64())).to_pylist()
        fresh.update(zip(part, embedder.embed([str(t) for t in texts]), strict=True))
    if fresh:
        store.put(run_id, fresh, block=block)
    return vectors | fresh, missing


def _blocks(path: Path, ids: list[str]) -> Iterator[pa.Table]:
    """The rows of ``ids`` as Arrow tables of up to :data:`BLOCK` rows, in file order."""
    wanted = pa.array(ids, pa.string())
    pending: list[pa.Table] = []
    held = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BLOCK):
        picked = pa.Table.from_batches([batch]).filter(pc.is_in(batch.column("chunk_id"), value_set=wanted))
        pending.append(picked)
        held += picked.num_rows
        if held >= BLOCK:
            yield pa.concat_tables(pending).combine_chunks()
            pending, held = [], 0
    if held:
        yield pa.concat_tables(pending).combine_chunks()


def _hashes_of(keys: pa.Table, ids: list[str]) -> pa.Array:
    """The text hashes of ``ids`` (an Arrow array: no Python strings for a corpus of them)."""
    picked = keys.filter(pc.is_in(keys.column("chunk_id"), value_set=pa.array(ids, pa.string())))
    return picked.column("text_hash").combine_chunks()


def _text_bytes(path: Path, ids: list[str]) -> int:
    """UTF-8 bytes of the texts of ``ids``, read a row group at a time (the disk-room check needs it)."""
    if not ids:
        return 0
    wanted, total = pa.array(ids, pa.string()), 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BLOCK, columns=["chunk_id", "text"]):
        texts = batch.filter(pc.is_in(batch.column("chunk_id"), value_set=wanted)).column("text")
        total += int(pc.sum(pc.binary_length(texts)).as_py() or 0)
    return total


def validate(state_path: Path | str) -> RunInfo:
    """Contracts of the staged tables (each was checked against its schema as it was written; here: unique
    ids, no orphan chunks), and a read-back of what this run wrote to the index."""
    state = RunState.load(state_path)
    info = state.run_info()
    if info.status == RunStatus.DRY_RUN:
        return info
    with timed(info, "validate"):
        keys = state.columns("enriched_chunks", ["chunk_id", "doc_id", "text_hash", "meta_hash"])
        doc_ids = state.columns("registry", ["doc_id"]).column("doc_id")
        problems = []
        if pc.count_distinct(doc_ids).as_py() != len(doc_ids):
            problems.append("duplicate doc_id in the registry")
        if pc.count_distinct(keys.column("chunk_id")).as_py() != keys.num_rows:
            problems.append("duplicate chunk_id in the chunks")
        orphans = pc.unique(keys.filter(pc.invert(pc.is_in(keys.column("doc_id"), value_set=doc_ids))).column("doc_id"))
        if len(orphans):
            problems.append(f"chunks of documents not in the registry: {sorted(orphans.to_pylist())[:5]}")
        diff = load_diff(state)
        written = diff.to_embed + diff.metadata_changed
        if written:
            problems += _read_back(state, keys, written, len(diff.deleted))
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
    collection = LazyClient(Path(state.home), state.chroma_url).collection()
    step = max(1, len(written) // READ_BACK)
    sample = sorted(set(written[::step]) | set(written[-1:]))
    rows = enriched.filter(pc.is_in(enriched.column("chunk_id"), value_set=pa.array(sample, pa.string())))
    columns = (rows.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    wanted = {i: (t, m) for i, t, m in zip(*columns, strict=True)}
    got = collection.get(ids=sample, include=["metadatas"])
    found = {i: ((m or {}).get("text_hash"), (m or {}).get("meta_hash"))
             for i, m in zip(got["ids"], got["metadatas"], strict=True)}  # fmt: skip
    bad = [i for i in sample if found.get(i) != wanted.get(i)]
    problems = [f"{len(bad)} of {len(sample)} written chunks read back do not match: {bad[:5]}"] if bad else []
    if collection.count() != enriched.num_rows + deleted:
        problems.append(
            f"the index holds {collection.count()} records, expected {enriched.num_rows} + {deleted} to delete"
        )
    return problems


def _indexed_rows(
    home: Path, previous: Published | None, embedder: Embedder, ids: list[str]
) -> dict[str, dict[str, Any]] | None:
    """The published rows of ``ids`` when the index holds exactly the published version (no interrupted run
    since, same embedder), so a metadata update needs no read of what is there; else None."""
    if not ids or previous is None or (home / DIRTY).exists() or previous.manifest.embedder != embedder.id:
        return None
    held = previous.metadata
    wanted = held.filter(pc.is_in(held.column("chunk_id"), value_set=pa.array(ids, pa.string())))
    return {row["chunk_id"]: row for row in wanted.to_pylist()}


def _index_before(home: Path, previous: Published | None, client: LazyClient, embedder: Embedder) -> pa.Table:
    """What the index holds: the published version's hashes; or, after an interrupted run, with data from
    before versions, or when the index is another embedder's, the index itself read back (empty for another
    embedder: it is rebuilt), so the diff converges on the truth."""
    clean = previous is not None and not (home / DIRTY).exists() and previous.manifest.embedder == embedder.id
    if clean and previous is not None:
        return chunk_state(previous.keys())
    if collection_embedder(client.get()) != embedder.id:
        return state_table({})
    return index_state(client.collection())
