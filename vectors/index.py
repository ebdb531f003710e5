"""Write enriched chunks to a Chroma collection with the metadata lookups filter on.

Vectors are always passed explicitly (Chroma's default embedding function downloads a model). Metadata
follows Chroma's rules measured in DESIGN.md: no None values, no empty lists, lists capped in length,
dates as ISO strings. Writes are diffs (``runs.diff``): vectors only for new or changed text, metadata-only
``update`` for changed metadata (measured ~5× faster than an upsert, vectors untouched), nothing for
unchanged chunks. After a run the collection holds exactly the published chunk ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa

from enrich.metadata import METADATA_FIELDS, chunk_metadata
from schemas.errors import TransientError
from vectors.embed import Embedder

COLLECTION = "zan_chunks"
BATCH = 1000  # records per Chroma call; measured on 20k chunks, embedded: 28 s and 723 MB peak, where the
# client's get_max_batch_size() (5461) took 31 s and 960 MB


class IndexUnavailable(TransientError):
    """The Chroma server (or the embedded index) cannot be reached now; a retry may succeed."""


def open_client(chroma_path: Path | None = None, chroma_url: str | None = None) -> Any:
    """An embedded ``PersistentClient`` under the data dir, or an ``HttpClient`` for ``chroma run``."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if chroma_url:
        url = urlparse(chroma_url)
        try:
            return chromadb.HttpClient(
                host=url.hostname or "127.0.0.1", port=url.port or 8000, ssl=url.scheme == "https", settings=settings
            )
        except ValueError as exc:  # chromadb's words for a server that does not answer its heartbeat
            raise IndexUnavailable(f"Chroma server {chroma_url} cannot be reached: {exc}") from exc
    if chroma_path is None:
        raise ValueError("either a Chroma path or a Chroma URL is needed")
    return chromadb.PersistentClient(path=str(chroma_path), settings=settings)


def index_state(collection: Any) -> pa.Table:
    """What the collection holds now: chunk_id, text_hash, meta_hash, read page by page."""
    pages: list[pa.Table] = []
    offset = 0
    while True:
        page = collection.get(include=["metadatas"], limit=BATCH * 10, offset=offset)
        metas = [m or {} for m in page["metadatas"]]
        pages.append(pa.table({"chunk_id": pa.array(page["ids"], pa.string()),
                               "text_hash": pa.array([m.get("text_hash") for m in metas], pa.string()),
                               "meta_hash": pa.array([m.get("meta_hash") for m in metas], pa.string())}))  # fmt: skip
        if len(page["ids"]) < BATCH * 10:
            return pa.concat_tables(pages)
        offset += len(page["ids"])


class LazyClient:
    """The Chroma client of a run (embedded under HOME/chroma, or the server at ``chroma_url``), opened on
    first use: a run with nothing to write never starts Chroma."""

    def __init__(self, home: Path, chroma_url: str | None) -> None:
        self.home, self.url, self._client = home, chroma_url, None

    def get(self) -> Any:
        if self._client is None:
            self._client = open_client(self.home / "chroma", self.url)
        return self._client

    def collection(self) -> Any:
        """The zan collection, which must exist (a run that wrote to it reads it back)."""
        collection = find_collection(self.get())
        if collection is None:
            raise IndexUnavailable(f"no Chroma collection {COLLECTION!r} at {self.url or self.home / 'chroma'}")
        return collection


def find_collection(client: Any, name: str = COLLECTION) -> Any | None:
    """The collection ``name``, or None when there is none. Only "does not exist" reads as None: a server
    that cannot be reached raises :class:`IndexUnavailable`, never passes for an empty index."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except (ConnectionError, OSError) as exc:
        raise IndexUnavailable(f"the Chroma index cannot be reached: {exc}") from exc


def collection_embedder(client: Any, name: str = COLLECTION) -> str | None:
    """The embedder id a collection was built with, or None when there is no such collection (no writes)."""
    collection = find_collection(client, name)
    return None if collection is None else str((collection.metadata or {}).get("zan_embedder"))


def get_collection(client: Any, embedder: Embedder, name: str = COLLECTION) -> Any:
    """The collection for ``embedder``; a collection built by another embedder is rebuilt, on purpose."""
    collection = client.get_or_create_collection(
        name, metadata={"hnsw:space": "cosine", "zan_embedder": embedder.id}, embedding_function=None
    )
    if (collection.metadata or {}).get("zan_embedder") != embedder.id:
        client.delete_collection(name)
        collection = client.create_collection(
            name, metadata={"hnsw:space": "cosine", "zan_embedder": embedder.id}, embedding_function=None
        )
    return collection


@dataclass(frozen=True)
class WriteResult:
    vector_writes: int
    metadata_writes: int


def write_changes(
    collection: Any,
    rows: Mapping[str, Mapping[str, Any]],
    upserts: list[str],
    updates: list[str],
    vectors: Mapping[str, Any],
    progress: Callable[[int], None] | None = None,
    after_batch: Callable[[], None] | None = None,
    indexed_rows: Mapping[str, Mapping[str, Any]] | None = None,
    batch: int = BATCH,
) -> WriteResult:
    """Upsert ``upserts`` (vector looked up by the row's text hash) and metadata-update ``updates``.

    An update sends only the keys that changed. What the index holds now comes from ``indexed_rows`` (the
    published rows, when the index is known to hold exactly them) without a read; otherwise it is read back
    from Chroma batch by batch. ``batch``: records per Chroma call."""
    for ids in _batches(upserts, batch):
        collection.upsert(
            ids=ids,
            embeddings=np.stack([np.asarray(vectors[rows[i]["text_hash"]], dtype=np.float32) for i in ids]),
            documents=[rows[i]["text"] for i in ids],
            metadatas=[chunk_metadata(rows[i]) for i in ids],
        )
        if progress:
            progress(len(ids))
        if after_batch:
            after_batch()
    for ids in _batches(updates, batch):
        old = _indexed_metadata(collection, ids, indexed_rows or {})
        collection.update(ids=ids, metadatas=[_changed_metadata(old.get(i, {}), rows[i]) for i in ids])
        if progress:
            progress(len(ids))
    return WriteResult(vector_writes=len(upserts), metadata_writes=len(updates))


def _indexed_metadata(collection: Any, ids: list[str], known: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The metadata the index holds for ``ids``: from the known rows, reading Chroma only for the others."""
    old: dict[str, Any] = {i: chunk_metadata(known[i]) for i in ids if i in known}
    unknown = [i for i in ids if i not in old]
    if unknown:
        stored = collection.get(ids=unknown, include=["metadatas"])
        old |= {i: m or {} for i, m in zip(stored["ids"], stored["metadatas"], strict=True)}
    return old


def _changed_metadata(old: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Only the keys whose value changed (measured 3x faster than sending all of them). A key that became
    empty is sent as None, which deletes it; keys zan does not own (another tool's) are left alone."""
    new = chunk_metadata(row)
    changed = {k: v for k, v in new.items() if old.get(k) != v}
    changed |= {k: None for k in METADATA_FIELDS if k in old and k not in new}
    return changed


def delete_ids(collection: Any, ids: list[str]) -> int:
    for batch in _batches(ids, BATCH):
        collection.delete(ids=batch)
    return len(ids)


def _batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
