"""The run's index and validate stages: diff against what the index holds, embed only new text, write
only what changed (``index``); then check the staged tables and read back what was written (``validate``).
Nothing here moves CURRENT: a failure leaves the previous version published and ``index.dirty`` set, and
the next run reconciles (:mod:`runs.changes`)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from enrich.metadata import METADATA_FIELDS, metadata_columns, record_meta_hashes
from runs.centroids import CentroidsAside
from runs.changes import (
    DIRTY,
    ChangeSet,
    check_shrink,
    count_classes,
    forced_rows,
    lockstep,
    sorted_chunks,
    take_rows,
)
from runs.diff import EMBEDDED, WRITTEN, ChangeClass, classify_stream
from runs.errors import RunError, ValidationFailed
from runs.scope import Scope
from runs.state import Progress, Published, RunInfo, RunState, RunStatus, Stage, StageResult, as_state, timed
from schemas.arrow import ENRICHED_CHUNK_SCHEMA
from schemas.failpoints import failpoint
from schemas.parquet import iter_parquet
from vectors.documents import CENTROIDS, build_centroids
from vectors.embed import Embedder
from vectors.embedders import make_embedder
from vectors.index import (
    UPSERT_BATCH,
    Collection,
    LazyClient,
    WriteResult,
    collection_embedder,
    delete_ids,
    get_collection,
    index_state,
    update_table,
    upsert_table,
)
from vectors.repair import check_room, ensure_healthy, index_bytes
from vectors.store import VectorStore


def index(
    state_path: RunState | Path | str,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    pending: Callable[[], bool] | None = None,
    checked: Future[str | None] | None = None,
    beside: bool = False,
) -> StageResult:
    """Diff against the index, check the shrink gate, embed what is new, write what changed.

    Everything goes through in batches: the diff is a merge of two streams in chunk id order written to the
    run's change set as it comes, and texts, metadata and vectors are read from the staged parquet in blocks
    of :data:`BLOCK` rows (embedded, stored, written), so memory does not grow with the corpus. ``pending``:
    the embed stage runs beside this one (:func:`runs.embedding.embedding_aside`); each block waits for its
    vectors while that returns True (:func:`await_vectors`). ``checked``: the embedded index's check, begun
    earlier in this process (:func:`vectors.repair.check_aside`). ``beside``: the documents' centroids are
    taken in a helper process during the last write (:class:`runs.centroids.CentroidsAside`)."""
    state = as_state(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    embedder = embedder or make_embedder(state.embedder_spec)
    if embedder.bind(home) != state.embedder_id:
        raise RunError(f"run {state.run_id} was planned for {state.embedder_id}, not {embedder.id}")
    previous = Published.load(home, state.previous) if state.previous else None
    path = state.tables_folder() / "enriched_chunks.parquet"
    client = LazyClient(home, state.chroma_url)
    if not state.chroma_url and not options.dry_run:
        with timed(info, "repair"):
            published = previous.folder / "enriched_chunks.parquet" if previous else None
            repaired = ensure_healthy(home, embedder, published, checked)
        if repaired:
            info.repairs.append(repaired)
    with timed(info, "diff"):
        forced = forced_rows(Scope.from_json(state.scope), set(state.rebuilt)) if options.force_reembed else None
        before, clean = _index_before(home, previous, client, embedder)
        wanted = iter_parquet(path, BLOCK, ["chunk_id", "doc_id", "text_hash", "meta_hash"])
        held = HELD_COLUMNS if clean else ()
        changes = ChangeSet.write(
            state.work, classify_stream(before, wanted, forced, held), _held_schema() if clean else None
        )
        count_classes(info, changes.counts)
        check_shrink(previous, state.columns("registry", ["doc_id"]), changes.count(ChangeClass.DELETED), options)
    store = VectorStore(home, embedder.id)
    if options.dry_run:
        hashes, _ = _to_embed(path, changes, text=False)
        if not options.force_reembed:
            hashes = hashes[~KnownHashes.of(store.hashes()).contains(hashes)]
        info.embedded = len(hashes)
        info.status = RunStatus.DRY_RUN
        done = StageResult(
            "index", sum(changes.counts.values()), 0, 0, info.seconds["diff"], "a dry run: nothing written"
        )
        state.update(info, Stage.INDEXED, done)
        return done
    centroids, kept = state.tables_folder() / CENTROIDS, _previous_centroids(state)
    aside = CentroidsAside(path, home, embedder.id, centroids, kept) if beside else None
    if changes.count(*WRITTEN):
        to_embed = changes.count(*EMBEDDED)
        hashes, text_bytes = _to_embed(path, changes, text=True) if to_embed else (np.zeros(0, np.uint64), 0)
        dim = embedder.dim
        check_room(home, index_bytes(to_embed, text_bytes, dim) + 4 * dim * len(hashes), f"index {to_embed} chunks")
        collection = get_collection(client.get(), embedder)
        # texts the embed stage stored (forced ones included) are read back; only what it did not cover is embedded
        force = options.force_reembed and not state.embedding
        try:
            written, embedded_here = stream_changes(
                home,
                state.run_id,
                collection,
                path,
                changes,
                embedder,
                store,
                force=force,
                progress=progress,
                held=clean,
                info=info,
                pending=pending,
                stored=aside.start if aside else None,
            )
        except BaseException:
            if aside is not None:
                aside.stop()  # the stage failed: what the helper was building is not published
            raise
        info.embedded = state.to_embed + embedded_here
        info.vector_writes, info.metadata_writes = written.vector_writes, written.metadata_writes
    if not centroids.exists() or changes.count(*WRITTEN):  # every vector is stored now: the documents' means
        with timed(info, "documents"):
            if aside is None or not aside.wait():
                build_centroids(path, store, centroids, previous=kept)
    stage_seconds = sum(info.seconds.get(s, 0) for s in ("repair", "diff", "embed_wait", "index", "documents"))
    done = StageResult(
        "index",
        sum(changes.counts.values()),
        info.vector_writes + info.metadata_writes,
        0,
        round(stage_seconds, 3),
        "chunks compared → index writes",
    )
    # the texts embedded here, or by the DAG's embed tasks before this stage; an embed stage beside this one
    # (``pending``) says what it did itself when it ends (:func:`runs.embedding.embedding_aside`)
    embedded = info.embedded if pending is None else info.embedded - state.to_embed
    what = [StageResult("embed", embedded, embedded, 0, info.seconds.get("embed", 0), "texts → vectors")]
    state.update(info, Stage.INDEXED, *(what if embedded else []), done)
    return done


def _previous_centroids(state: RunState) -> Path | None:
    """The published version's centroids, for documents that did not change to keep theirs: only when they
    come from the same embedder's vectors."""
    previous = Published.load(Path(state.home), state.previous) if state.previous else None
    if previous is None or previous.manifest.embedder != state.embedder_id:
        return None
    return previous.folder / CENTROIDS


BLOCK = 5_000  # rows read, embedded and stored at a time by :func:`stream_changes` (Chroma calls: BATCH)
HELD_COLUMNS = ("chunk_id", *dict.fromkeys(METADATA_FIELDS))  # what a metadata-only update compares


def stream_changes(
    home: Path,
    run_id: str,
    collection: Collection,
    enriched_path: Path,
    changes: ChangeSet,
    embedder: Embedder,
    store: VectorStore,
    *,
    force: bool = False,
    progress: Progress | None = None,
    held: bool = False,
    info: RunInfo | None = None,
    pending: Callable[[], bool] | None = None,
    stored: Callable[[], None] | None = None,
) -> tuple[WriteResult, int]:
    """Mark the index dirty (it may now differ from CURRENT), then, block by block of the version's enriched
    chunks read beside their classes: vectors for the new text (stored ones reused, the rest embedded and
    stored before the write), upserts, and metadata-only updates (``held``: the change set holds what the
    index has for them, so nothing is read back from the index). Returns the writes and how many texts were
    embedded. Deletes are the caller's, after it moves CURRENT. Shared by runs and rollbacks. ``pending``:
    another process is still storing vectors (see :func:`index`); ``stored`` is called once every vector the
    version needs is stored, before the last write."""
    (home / DIRTY).write_text(run_id + "\n", "utf-8")
    failpoint("index_begin")  # before the first write (``index`` is after each batch written)
    known = KnownHashes.of(pa.array([], pa.string()) if force else store.hashes())
    done, total = [0], changes.count(*WRITTEN)
    clock = info or RunInfo(run_id=run_id)
    held_rows = changes.held() if held else iter(())
    carry: list[pa.Table] = []

    def step(n: int) -> None:
        done[0] += n
        if progress:
            progress("index", done[0], total)

    embedded = vector_writes = metadata_writes = 0
    embed_classes = pa.array([str(c) for c in EMBEDDED], pa.string())
    gathered = _GatheredWrites(collection, step)
    for block, (table, classes) in enumerate(
        lockstep(sorted_chunks(enriched_path, batch_size=BLOCK), changes.wanted())
    ):
        kind = classes.column("class")
        upserts = table.filter(pc.is_in(kind, value_set=embed_classes))
        # an upsert merges metadata into the record it replaces (a key the chunk no longer has would stay):
        # a record whose text changed is deleted first, so it is written whole
        replaced = table.filter(pc.equal(kind, ChangeClass.TEXT_CHANGED.value)).column("chunk_id").to_pylist()
        # an update compares metadata only: no text is turned into Python strings for it
        updates = table.filter(pc.equal(kind, ChangeClass.METADATA_CHANGED.value)).select(list(HELD_COLUMNS))
        old = take_rows(held_rows, updates.num_rows, carry) if held else None
        if not upserts.num_rows and not updates.num_rows:
            continue
        if pending is not None and upserts.num_rows:
            with timed(clock, "embed_wait"):
                await_vectors(upserts, store, known, pending)
        with timed(clock, "embed"):
            vectors, fresh = block_vectors(upserts, store, known, embedder, run_id, block)
            known.add(fresh)
            embedded += len(fresh)
        with timed(clock, "index"):
            gathered.add(replaced, upserts, vectors)
            if gathered.rows >= UPSERT_BATCH:
                vector_writes += gathered.write()
            metadata_writes += update_table(collection, updates, old, step)
    if stored is not None:
        stored()
    with timed(clock, "index"):
        vector_writes += gathered.write()
    return WriteResult(vector_writes=vector_writes, metadata_writes=metadata_writes), embedded


class _GatheredWrites:
    """The deletes and upserts of several blocks, sent as one Chroma call of each once they make a call's
    worth (:data:`~vectors.index.UPSERT_BATCH` rows) or the stream ends. A small edit is spread over every
    block of the version; each Chroma write call costs a fixed ~50 ms beside its rows (500 records replaced:
    0.4 + 1.0 s in one call of each, 1.5 + 2.4 s in twenty), so four blocks of a 1 % text edit written apart
    cost ~0.3 s more than together. Vectors are stored before they are gathered, and what is gathered is at
    most a call's worth, so a run killed here loses no embedding and holds no more in memory."""

    def __init__(self, collection: Collection, step: Callable[[int], None]) -> None:
        self.collection, self.step = collection, step
        self.replaced: list[str] = []
        self.upserts: list[pa.Table] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.rows = 0

    def add(self, replaced: list[str], upserts: pa.Table, vectors: dict[str, np.ndarray]) -> None:
        self.replaced += replaced
        if upserts.num_rows:
            self.upserts.append(upserts)
            self.vectors.update(vectors)
            self.rows += upserts.num_rows

    def write(self) -> int:
        """Delete what the gathered rows replace, then upsert them; returns the records written."""
        delete_ids(self.collection, self.replaced)
        written = 0
        if self.upserts:
            table = pa.concat_tables(self.upserts)
            written = upsert_table(self.collection, table, self.vectors, self.step, lambda: failpoint("index"))
        self.replaced, self.upserts, self.vectors, self.rows = [], [], {}, 0
        return written


class KnownHashes:
    """Text hashes with a stored vector, as a sorted array of their first 64 bits (8 bytes each, where a set
    of the hex strings cost ~100). A false match only sends the hash to the store, which then does not have
    it, and it is embedded: correctness never rests on the prefix."""

    def __init__(self, prefixes: np.ndarray) -> None:
        self.prefixes = np.unique(prefixes)

    @classmethod
    def of(cls, hashes: pa.Array | pa.ChunkedArray | list[str]) -> KnownHashes:
        return cls(prefixes(hashes))

    def contains(self, values: np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``values`` (prefixes) are known."""
        if not len(self.prefixes):
            return np.zeros(len(values), dtype=bool)
        at = np.minimum(np.searchsorted(self.prefixes, values), len(self.prefixes) - 1)
        return np.asarray(self.prefixes[at] == values)

    def add(self, hashes: list[str]) -> None:
        if hashes:
            self.prefixes = np.union1d(self.prefixes, prefixes(hashes))


def prefixes(hashes: pa.Array | pa.ChunkedArray | list[str]) -> np.ndarray:
    """The first 64 bits of each hex text hash (another string: 64 bits of its own blake2b)."""
    values = hashes if isinstance(hashes, list) else hashes.to_pylist()
    return np.fromiter((_prefix(h) for h in values), dtype=np.uint64, count=len(values))


def _prefix(value: str | None) -> int:
    text = value or ""
    try:
        return int(text[:16], 16) if len(text) >= 16 else _digest(text)
    except ValueError:
        return _digest(text)


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def await_vectors(
    table: pa.Table, store: VectorStore, known: KnownHashes, pending: Callable[[], bool], poll: float = 0.05
) -> None:
    """Wait while the embed stage beside this one (``pending()`` True) may still store vectors for the texts
    of ``table`` that ``known`` lacks, adding to ``known`` those it stored; return once every one is stored or
    the stage is over. What is still missing then is embedded here, by :func:`block_vectors` (a text that
    was never planned: nothing is lost by waiting)."""
    hashes = sorted({str(h) for h in table.column("text_hash").to_pylist()})
    missing = [h for h, hit in zip(hashes, known.contains(prefixes(hashes)), strict=True) if not hit]
    while missing:
        running = pending()  # asked first: parts stored before it said False are found just below
        found = store.hashes_among(missing)
        if found:
            known.add(found)
            missing = sorted(set(missing) - set(found))
        if not missing or not running:
            return
        time.sleep(poll)


def block_vectors(
    table: pa.Table, store: VectorStore, known: KnownHashes, embedder: Embedder, run_id: str, block: int
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Vectors for the texts of one block's rows: the stored ones among ``known`` read back, the rest
    embedded (256 at a time, texts taken from the Arrow column as they are needed) and stored as this
    block's part before anything is written to the index (a run killed after embedding does not embed them
    again). Returns the vectors by text hash and the hashes embedded."""
    hashes = [str(h) for h in table.column("text_hash").to_pylist()]
    marked = known.contains(prefixes(hashes)) if hashes else np.zeros(0, dtype=bool)
    vectors = store.get(sorted({h for h, hit in zip(hashes, marked, strict=True) if hit}))
    position = {h: n for n, h in enumerate(hashes) if h not in vectors}
    missing = list(position)
    fresh: dict[str, np.ndarray] = {}
    for start in range(0, len(missing), 256):
        part = missing[start : start + 256]
        texts = table.column("text").take(pa.array([position[h] for h in part], pa.int64())).to_pylist()
        fresh.update(zip(part, embedder.embed_passages([str(t) for t in texts]), strict=True))
    if fresh:
        store.put(run_id, fresh, block=block)
    return vectors | fresh, missing


def _to_embed(path: Path, changes: ChangeSet, text: bool) -> tuple[np.ndarray, int]:
    """The distinct text hashes (64-bit prefixes) the run needs vectors for, and the UTF-8 bytes of their
    chunks' texts when ``text`` (the disk-room check), read a batch at a time beside the classes."""
    embed_classes = pa.array([str(c) for c in EMBEDDED], pa.string())
    seen: list[np.ndarray] = []
    total = 0
    columns = ["chunk_id", "text_hash", "text"] if text else ["chunk_id", "text_hash"]
    for table, classes in lockstep(sorted_chunks(path, columns, BLOCK), changes.wanted()):
        picked = table.filter(pc.is_in(classes.column("class"), value_set=embed_classes))
        if picked.num_rows:
            seen.append(np.unique(prefixes(picked.column("text_hash"))))
            if text:
                total += int(pc.sum(pc.binary_length(picked.column("text"))).as_py() or 0)
    return (np.unique(np.concatenate(seen)) if seen else np.zeros(0, dtype=np.uint64)), total


def _held_schema() -> pa.Schema:
    return pa.schema([ENRICHED_CHUNK_SCHEMA.field(name) for name in HELD_COLUMNS])


def validate(state_path: RunState | Path | str) -> StageResult:
    """Contracts of the staged tables (each was checked against its schema as it was written; here: unique
    ids, no orphan chunks), and a read-back of what this run wrote to the index."""
    state = as_state(state_path)
    info = state.run_info()
    if info.status == RunStatus.DRY_RUN:
        return StageResult("validate", units="a dry run: nothing to validate")
    with timed(info, "validate"):
        keys = state.columns("enriched_chunks", ["chunk_id", "doc_id"])
        doc_ids = state.columns("registry", ["doc_id"]).column("doc_id")
        problems = []
        if pc.count_distinct(doc_ids).as_py() != len(doc_ids):
            problems.append("duplicate doc_id in the registry")
        if pc.count_distinct(keys.column("chunk_id")).as_py() != keys.num_rows:
            problems.append("duplicate chunk_id in the chunks")
        orphans = pc.unique(keys.filter(pc.invert(pc.is_in(keys.column("doc_id"), value_set=doc_ids))).column("doc_id"))
        if len(orphans):
            problems.append(f"chunks of documents not in the registry: {sorted(orphans.to_pylist())[:5]}")
        changes = ChangeSet.load(state.work)
        if changes.count(*WRITTEN):
            problems += _read_back(state, changes, keys.num_rows)
        if problems:
            raise ValidationFailed(f"run {state.run_id} not published: " + "; ".join(problems))
    done = StageResult("validate", keys.num_rows, 0, 0, info.seconds["validate"], "chunks checked")
    state.update(info, Stage.VALIDATED, done)
    return done


READ_BACK = 1000  # written records read back by validate: all of a small run, an even sample of a large one
READ_BACK_PER_KIND = 25  # and at least this many of every kind of write (see :func:`_written_sample`)


def _read_back(state: RunState, changes: ChangeSet, chunks: int) -> list[str]:
    """The index must hold exactly the version's chunks plus those still to be deleted after the publish, and
    the written chunks read back with the hashes they were written with: every one of a run that wrote up to
    :data:`READ_BACK`, a sample of a larger one that no kind of write escapes (reading every record back cost
    a quarter of a metadata-only re-run)."""
    collection = LazyClient(Path(state.home), state.chroma_url).collection()
    written, deleted = changes.count(*WRITTEN), changes.count(ChangeClass.DELETED)
    wanted = _written_sample(state.tables_folder() / "enriched_chunks.parquet", changes, written)
    sample = sorted(wanted)
    got = collection.get(ids=sample, include=["metadatas"])
    records = [m or {} for m in got["metadatas"]]
    held = record_meta_hashes(records)  # the hash of what each record really holds
    found = {i: (m.get("text_hash"), h) for i, m, h in zip(got["ids"], records, held, strict=True)}
    bad = [i for i in sample if found.get(i) != wanted.get(i)]
    problems = [f"{len(bad)} of {len(sample)} written chunks read back do not match: {bad[:5]}"] if bad else []
    if collection.count() != chunks + deleted:
        problems.append(f"the index holds {collection.count()} records, expected {chunks} + {deleted} to delete")
    return problems


def _written_sample(path: Path, changes: ChangeSet, written: int) -> dict[str, tuple[str | None, str | None]]:
    """chunk_id → (text_hash, meta_hash) of the written chunks to read back: every record a write replaced
    (``text_changed``: where a key the chunk lost could have been left behind), every ``step``-th of the rest
    and the last (an even sample of at most about :data:`READ_BACK`), and the first
    :data:`READ_BACK_PER_KIND` of every kind of write (its class and the metadata keys the chunk does *not*
    have), so no kind goes unread however rare. Read a batch at a time beside the classes."""
    step, seen = max(1, written // READ_BACK), 0
    written_classes = pa.array([str(c) for c in WRITTEN], pa.string())
    kinds: dict[tuple[str, ...], int] = {}
    columns = ["chunk_id", "text_hash", "meta_hash", *dict.fromkeys(METADATA_FIELDS)]
    out: dict[str, tuple[str | None, str | None]] = {}
    for table, classes in lockstep(sorted_chunks(path, columns, BLOCK), changes.wanted()):
        picked = pc.is_in(classes.column("class"), value_set=written_classes)
        rows, kind_of = table.filter(picked), _kinds(table.filter(picked), classes.filter(picked))
        at = np.arange(seen, seen + rows.num_rows)
        chosen = (at % step == 0) | (at == written - 1)
        chosen |= np.asarray(kind_of_class(classes.filter(picked), ChangeClass.TEXT_CHANGED))
        for n, kind in enumerate(kind_of):
            kinds[kind] = kinds.get(kind, 0) + 1
            chosen[n] |= kinds[kind] <= READ_BACK_PER_KIND
        rows = rows.filter(pa.array(chosen)).select(["chunk_id", "text_hash", "meta_hash"])
        seen += len(at)
        for chunk_id, text, meta in zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True):
            out[str(chunk_id)] = (text, meta)
    return out


def kind_of_class(classes: pa.Table, kind: ChangeClass) -> np.ndarray:
    return np.asarray(pc.equal(classes.column("class"), kind.value).to_numpy(zero_copy_only=False), dtype=bool)


def _kinds(rows: pa.Table, classes: pa.Table) -> list[tuple[str, ...]]:
    """Each row's kind of write: its class, then the metadata keys it lacks (null in Chroma's form)."""
    columns = metadata_columns(rows)
    absent = {name: column.is_null().to_numpy(zero_copy_only=False) for name, column in columns.items()}
    missing = [name for name in METADATA_FIELDS if name not in columns]
    return [
        (str(kind), *missing, *(name for name, nulls in absent.items() if nulls[n]))
        for n, kind in enumerate(classes.column("class").to_pylist())
    ]


def _index_before(
    home: Path, previous: Published | None, client: LazyClient, embedder: Embedder
) -> tuple[Iterable[pa.Table], bool]:
    """What the index holds, in chunk id order, and whether it is exactly the published version: then its
    chunk file is read (with what a metadata update compares: no read of the index is needed). After an
    interrupted run, with nothing published, or when the index is another embedder's, the index
    itself is read back (nothing for another embedder: it is rebuilt), so the diff converges on the truth."""
    clean = previous is not None and not (home / DIRTY).exists() and previous.manifest.embedder == embedder.id
    if clean and previous is not None:
        columns = list(dict.fromkeys(["chunk_id", "text_hash", "meta_hash", *HELD_COLUMNS]))
        return sorted_chunks(previous.folder / "enriched_chunks.parquet", columns), True
    if collection_embedder(client.get()) != embedder.id:
        return [], False
    return [index_state(client.collection()).sort_by("chunk_id")], False
