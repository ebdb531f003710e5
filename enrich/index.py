"""Write enriched chunks to a Chroma collection with the metadata lookups filter on.

Vectors are always passed explicitly (Chroma's default embedding function downloads a model). Metadata
follows Chroma's rules measured in DESIGN.md: no None values, no empty lists, lists capped in length,
dates as ISO strings. After a run the collection holds exactly the run's chunk ids.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from enrich.chunking import LIST_CAP
from enrich.embed import Embedder

COLLECTION = "zan_chunks"
BATCH = 1000
METADATA_FIELDS = (
    "doc_id",
    "adilet_id",
    "doc_type",
    "doc_title",
    "issuer",
    "order_number",
    "law_zrk",
    "code_articles",
    "article_labels",
    "intl_org",
    "intl_section",
    "date_approved",
    "jurisdiction",
    "language",
    "source_url",
    "status",
    "registration_number",
    "path",
    "section_label",
    "text_hash",
)


@dataclass(frozen=True)
class IndexResult:
    indexed: int
    deleted: int
    collection: str


def open_client(chroma_path: Path | None = None, chroma_url: str | None = None) -> Any:
    """An embedded ``PersistentClient`` under the data dir, or an ``HttpClient`` for ``chroma run``."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if chroma_url:
        url = urlparse(chroma_url)
        return chromadb.HttpClient(
            host=url.hostname or "127.0.0.1", port=url.port or 8000, ssl=url.scheme == "https", settings=settings
        )
    if chroma_path is None:
        raise ValueError("either a Chroma path or a Chroma URL is needed")
    return chromadb.PersistentClient(path=str(chroma_path), settings=settings)


def chunk_metadata(row: dict[str, Any]) -> dict[str, Any]:
    """Chroma metadata for one enriched chunk row: empty values dropped, lists capped, dates as text."""
    meta: dict[str, Any] = {}
    for name in METADATA_FIELDS:
        value = row.get(name)
        if isinstance(value, dt.date):
            value = value.isoformat()
        if isinstance(value, list):
            value = value[:LIST_CAP]
        if value is None or value == [] or value == "":
            continue
        meta[name] = value
    return meta


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


def write_index(
    enriched: pa.Table,
    client: Any,
    embedder: Embedder,
    collection_name: str = COLLECTION,
    progress: Callable[[int], None] | None = None,
) -> IndexResult:
    """Upsert every chunk (vectors + metadata + text) and delete ids that are no longer chunks."""
    collection = get_collection(client, embedder, collection_name)
    wanted = set(enriched.column("chunk_id").to_pylist())
    for batch in _batches(enriched.to_pylist(), BATCH):
        texts = [row["text"] for row in batch]
        collection.upsert(
            ids=[row["chunk_id"] for row in batch],
            embeddings=embedder.embed(texts),
            documents=texts,
            metadatas=[chunk_metadata(row) for row in batch],
        )
        if progress:
            progress(len(batch))
    stale = [i for i in _all_ids(collection) if i not in wanted]
    for ids in _batches(stale, BATCH):
        collection.delete(ids=ids)
    return IndexResult(indexed=collection.count(), deleted=len(stale), collection=collection_name)


def _all_ids(collection: Any) -> list[str]:
    ids: list[str] = []
    offset = 0
    while True:
        page = collection.get(include=[], limit=BATCH * 10, offset=offset)["ids"]
        ids += page
        if len(page) < BATCH * 10:
            return ids
        offset += len(page)


def _batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
