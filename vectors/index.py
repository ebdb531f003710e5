"""Write enriched chunks to a Chroma collection with the metadata lookups filter on.

Vectors are always passed explicitly (Chroma's default embedding function downloads a model). Metadata
follows Chroma's rules measured in DESIGN.md: no None values, no empty lists, lists capped in length,
dates as ISO strings. Writes are diffs (``runs.diff``): vectors only for new or changed text, metadata-only
``update`` for changed metadata (measured ~5× faster than an upsert, vectors untouched), nothing for
unchanged chunks. After a run the collection holds exactly the published chunk ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from enrich.metadata import METADATA_FIELDS, meta_hashes, metadata_columns, metadata_dicts, metadata_table
from schemas.errors import TransientError, ZanError
from schemas.published import COLLECTION as COLLECTION
from vectors.embed import Embedder

BATCH = 1000  # records per metadata-only update, delete and page read: updates of 20k records' two changed keys
# took 3.5-5.2 s in calls of 1 000 against 5.4-5.9 s at Chroma's maximum (benchmarks/bench_scale.py, embedded)
UPSERT_BATCH = 1_000  # records per upsert. Measured both ways (benchmarks/README.md, "The write ceiling"): a
# write alone into an embedded collection favours Chroma's maximum (5 461; zan's calls of 5 000: 20 000 records
# 47.3 against 49.0 s, 100 000 records 227.9 against 248.8 s), but a whole run on 2 workers, where the embedding
# shards and the BM25 build run beside the writes, favours 1 000 (20 207 chunks, A B A B: 59.6 against 63.1 s;
# its index stage 40.7 against 44.3 s), and that is what users run

# HNSW candidates per query. Chroma's default, 100, is what a query for 100 records (zan asks twice the 50 a
# ranking takes) gets at least: on the real corpus's 1 323 chunks the 50 nearest it returned held 0.959 of the
# exact 50 with hashed vectors (0.26 at worst; e5 0.993) and differed between two openings of the same index,
# so tuning and tests saw different candidates. At 400: 0.998 (e5 1.000), ~0.2 ms more a query
# (`python benchmarks/bench_recall.py --home H`; benchmarks/README.md).
SEARCH_EF = 400


class Collection(Protocol):
    """What zan calls on a Chroma collection (embedded or over HTTP): the one typed boundary with Chroma."""

    @property
    def metadata(self) -> dict[str, Any] | None: ...

    def count(self) -> int: ...

    def get(
        self,
        ids: list[str] | None = ...,
        where: dict[str, Any] | None = ...,
        limit: int | None = ...,
        offset: int | None = ...,
        include: list[str] = ...,
    ) -> Any: ...

    def query(
        self, query_embeddings: Any, n_results: int = ..., where: dict[str, Any] | None = ..., include: list[str] = ...
    ) -> Any: ...

    def upsert(self, ids: list[str], embeddings: Any, documents: Any = ..., metadatas: Any = ...) -> None: ...

    def add(self, ids: list[str], embeddings: Any, documents: Any = ..., metadatas: Any = ...) -> None: ...

    def update(self, ids: list[str], metadatas: Any = ...) -> None: ...

    def delete(self, ids: list[str] | None = ...) -> None: ...

    @property
    def configuration_json(self) -> dict[str, Any] | None: ...

    def modify(self, configuration: dict[str, Any]) -> None: ...


class Client(Protocol):
    """What zan calls on a Chroma client (``PersistentClient`` or ``HttpClient``), each collection returned as
    a :class:`Collection` (no embedding function: zan embeds)."""

    def get_collection(self, name: str, embedding_function: None = ...) -> Collection: ...

    def get_or_create_collection(
        self, name: str, metadata: dict[str, Any] | None = ..., embedding_function: None = ...
    ) -> Collection: ...

    def create_collection(
        self, name: str, metadata: dict[str, Any] | None = ..., embedding_function: None = ...
    ) -> Collection: ...

    def delete_collection(self, name: str) -> None: ...


class IndexUnavailable(TransientError):
    """The Chroma server (or the embedded index) cannot be reached now; a retry may succeed."""


class IndexRefused(ZanError):
    """The Chroma server (its authenticating proxy) refused zan's requests: no token, or a wrong one.
    Terminal: retrying with the same settings will not help."""


_REFUSED = ("401", "403", "unauthorized", "forbidden", "token is required")


def open_client(chroma_path: Path | None = None, chroma_url: str | None = None, token: str | None = None) -> Client:
    """An embedded ``PersistentClient`` under the data dir, or an ``HttpClient`` for a Chroma server. A server
    is reached with the bearer token ``token`` (default: ``ZAN_CHROMA_TOKEN``), which the proxy in front of
    it requires (:mod:`deploy.proxy`)."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if chroma_url:
        url = urlparse(chroma_url)
        token = token if token is not None else os.environ.get("ZAN_CHROMA_TOKEN") or None
        try:
            return cast(
                Client,
                chromadb.HttpClient(
                    host=url.hostname or "127.0.0.1",
                    port=url.port or 8000,
                    ssl=url.scheme == "https",
                    headers={"Authorization": f"Bearer {token}"} if token else None,
                    settings=settings,
                ),
            )
        except ValueError as exc:  # chromadb's words for a server that does not answer its heartbeat
            if any(word in str(exc).lower() for word in _REFUSED):
                said = "ZAN_CHROMA_TOKEN is not set" if not token else "the token in ZAN_CHROMA_TOKEN was refused"
                raise IndexRefused(f"Chroma server {chroma_url} refused zan: {said}") from exc
            raise IndexUnavailable(f"Chroma server {chroma_url} cannot be reached: {exc}") from exc
    if chroma_path is None:
        raise ValueError("either a Chroma path or a Chroma URL is needed")
    return cast(Client, chromadb.PersistentClient(path=str(chroma_path), settings=settings))


def index_state(collection: Collection) -> pa.Table:
    """What the collection holds now: chunk_id, text_hash and the hash of the metadata it holds (recomputed
    from the record's metadata: the index does not store it), read page by page."""
    pages: list[pa.Table] = []
    offset = 0
    while True:
        page = collection.get(include=["metadatas"], limit=BATCH * 10, offset=offset)
        metas = [m or {} for m in page["metadatas"]]
        pages.append(
            pa.table(
                {
                    "chunk_id": pa.array(page["ids"], pa.string()),
                    "text_hash": pa.array([m.get("text_hash") for m in metas], pa.string()),
                    "meta_hash": meta_hashes(metadata_table(metas)),
                }
            )
        )
        if len(page["ids"]) < BATCH * 10:
            return pa.concat_tables(pages)
        offset += len(page["ids"])


class LazyClient:
    """The Chroma client of a run (embedded under HOME/chroma, or the server at ``chroma_url``), opened on
    first use: a run with nothing to write never starts Chroma."""

    def __init__(self, home: Path, chroma_url: str | None) -> None:
        self.home, self.url = home, chroma_url
        self._client: Client | None = None

    def get(self) -> Client:
        if self._client is None:
            self._client = open_client(self.home / "chroma", self.url)
        return self._client

    def collection(self) -> Collection:
        """The zan collection, which must exist (a run that wrote to it reads it back)."""
        collection = find_collection(self.get())
        if collection is None:
            raise IndexUnavailable(f"no Chroma collection {COLLECTION!r} at {self.url or self.home / 'chroma'}")
        return collection


def find_collection(client: Client, name: str = COLLECTION) -> Collection | None:
    """The collection ``name``, or None when there is none. Only "does not exist" reads as None: a server
    that cannot be reached raises :class:`IndexUnavailable`, never passes for an empty index."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except (ConnectionError, OSError) as exc:
        raise IndexUnavailable(f"the Chroma index cannot be reached: {exc}") from exc


def collection_embedder(client: Client, name: str = COLLECTION) -> str | None:
    """The embedder id a collection was built with, or None when there is no such collection (no writes)."""
    collection = find_collection(client, name)
    return None if collection is None else str((collection.metadata or {}).get("zan_embedder"))


def get_collection(client: Client, embedder: Embedder, name: str = COLLECTION) -> Collection:
    """The collection for ``embedder``; a collection built by another embedder is rebuilt, on purpose. One
    created before :data:`SEARCH_EF` was set searches that wide from now on (a setting, no data rewritten)."""
    metadata = {"hnsw:space": "cosine", "hnsw:search_ef": SEARCH_EF, "zan_embedder": embedder.id}
    collection = client.get_or_create_collection(name, metadata=metadata, embedding_function=None)
    if (collection.metadata or {}).get("zan_embedder") != embedder.id:
        client.delete_collection(name)
        collection = client.create_collection(name, metadata=metadata, embedding_function=None)
    elif (collection.configuration_json or {}).get("hnsw", {}).get("ef_search", SEARCH_EF) < SEARCH_EF:
        _widen(collection)
    return collection


def _widen(collection: Collection) -> None:
    """Set an older collection's search width to :data:`SEARCH_EF`. Chroma's own writer may hold its SQLite
    file a moment after the collection is made (``database is locked``, an ``InternalError``, seen on a loaded
    machine): a setting is worth a few tries before the run fails on it."""
    from chromadb.errors import InternalError
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    for attempt in Retrying(
        stop=stop_after_attempt(4),
        wait=wait_exponential(0.25, max=2),
        retry=retry_if_exception_type(InternalError),
        reraise=True,
    ):
        with attempt:
            collection.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})


@dataclass(frozen=True)
class WriteResult:
    vector_writes: int
    metadata_writes: int


def upsert_table(
    collection: Collection,
    table: pa.Table,
    vectors: Mapping[str, Any],
    progress: Callable[[int], None] | None = None,
    after_batch: Callable[[], None] | None = None,
    batch: int = UPSERT_BATCH,
) -> int:
    """Upsert every row of ``table`` (enriched chunks) with its vector, looked up by the row's text hash.
    Ids, texts and metadata are taken column-wise from Arrow, one Chroma call of ``batch`` rows at a time.
    Returns the records written."""
    for start in range(0, table.num_rows, batch):
        part = table.slice(start, batch)
        hashes = part.column("text_hash").to_pylist()
        collection.upsert(
            ids=part.column("chunk_id").to_pylist(),
            embeddings=np.stack([np.asarray(vectors[h], dtype=np.float32) for h in hashes]),
            documents=part.column("text").to_pylist(),
            metadatas=metadata_dicts(part),
        )
        if progress:
            progress(part.num_rows)
        if after_batch:
            after_batch()
    return int(table.num_rows)


def update_table(
    collection: Collection,
    table: pa.Table,
    held: pa.Table | None = None,
    progress: Callable[[int], None] | None = None,
    batch: int = BATCH,
) -> int:
    """Metadata-only ``update`` of every row of ``table``, sending only the keys that changed (measured 3x
    faster than sending all of them); vectors and texts are untouched. What the index holds now is ``held``
    (the same chunk ids in the same order, from the published version), or, when None, read back from
    Chroma batch by batch; either is compared column-wise in Arrow (:func:`changed_keys`). Returns the
    records written (a row whose metadata did not change is not sent)."""
    written = 0
    for start in range(0, table.num_rows, batch):
        part = table.slice(start, batch)
        ids = part.column("chunk_id").to_pylist()
        if held is not None:
            metadatas = changed_keys(held.slice(start, batch), part)
        else:
            stored = collection.get(ids=ids, include=["metadatas"])
            old = {i: m or {} for i, m in zip(stored["ids"], stored["metadatas"], strict=True)}
            metadatas = changed_keys(metadata_table([old.get(i, {}) for i in ids], ids), part)
        sent = [(i, m) for i, m in zip(ids, metadatas, strict=True) if m]  # a row with nothing changed: no write
        if sent:
            collection.update(ids=[i for i, _ in sent], metadatas=[m for _, m in sent])
        written += len(sent)
        if progress:
            progress(part.num_rows)
    return written


def changed_keys(old: pa.Table, new: pa.Table) -> list[dict[str, Any]]:
    """Row by row, the metadata keys whose Chroma value differs between ``old`` (what the index holds) and
    ``new`` (the same chunk ids, same order), compared column by column, with Python values made only for
    the keys that changed. A key that became empty is sent as None, which deletes it; keys zan does not own
    (another tool's) are never compared or sent."""
    if not old.column("chunk_id").equals(new.column("chunk_id")):
        raise ValueError("changed_keys: the held rows and the new rows are not the same chunks in the same order")
    before, after = metadata_columns(old), metadata_columns(new)
    out: list[dict[str, Any]] = [{} for _ in range(new.num_rows)]
    for name in METADATA_FIELDS:
        if name not in before and name not in after:
            continue
        kind = (after[name] if name in after else before[name]).type
        a = _as(before.get(name), kind, new.num_rows)
        b = _as(after.get(name), kind, new.num_rows)
        at = np.flatnonzero(_differs(a, b))
        for i, value in zip(at.tolist(), b.take(pa.array(at, pa.int64())).to_pylist(), strict=True):
            out[i][name] = value  # None: the key became empty, and None deletes it
    return out


def _differs(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Where two columns of Chroma values differ (null equals null; lists compare element by element)."""
    a_null = a.is_null().to_numpy(zero_copy_only=False)
    b_null = b.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_list(a.type) or pa.types.is_large_list(a.type):
        lengths_a = pc.list_value_length(a).fill_null(-1).to_numpy()
        lengths_b = pc.list_value_length(b).fill_null(-1).to_numpy()
        comparable = np.flatnonzero((lengths_a == lengths_b) & ~a_null & ~b_null)
        same = np.zeros(len(a), dtype=bool)
        if len(comparable):
            left, right = a.take(pa.array(comparable, pa.int64())), b.take(pa.array(comparable, pa.int64()))
            inner = _differs(pc.list_flatten(left), pc.list_flatten(right))
            owners = pc.list_parent_indices(left).to_numpy()
            same[comparable] = np.bincount(owners[inner], minlength=len(comparable)) == 0
        return np.asarray(~(same | (a_null & b_null)))
    equal = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
    return np.asarray(~(equal | (a_null & b_null)))


def _as(column: pa.Array | None, kind: pa.DataType, rows: int) -> pa.Array:
    """A column of Chroma values as ``kind`` (what the index returned may be int64 where the table is int32,
    or absent where no record has the key)."""
    if column is None:
        return pa.nulls(rows, kind)
    return column if column.type == kind else column.cast(kind)


def delete_ids(collection: Collection, ids: list[str]) -> int:
    for batch in _batches(ids, BATCH):
        collection.delete(ids=batch)
    return len(ids)


def _batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
