"""A damaged embedded index, found and rebuilt from what zan keeps beside it; and room checked before writing.

A full disk while Chroma persists (its compaction can leave a 0-byte segment file) damages the embedded
collection for good: every later read raises. zan keeps everything needed to rebuild it without embedding
again: the published version's enriched chunks (text and metadata) and the vector store (vectors by text
hash). So:

- a run checks the embedded index before it diffs against it (:func:`ensure_healthy`); a damaged one is
  moved aside (``chroma.damaged-<time>``) and rebuilt from the published version, then the run goes on;
- a lookup that finds it damaged answers from a private rebuilt copy (:func:`rebuilt_copy`) and says so,
  until the next run repairs HOME itself;
- before a run writes, it checks the free space for what it is about to write (:func:`check_room`) and stops
  with a clear reason, rather than filling the disk halfway through Chroma's files.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.errors import TransientError
from vectors.embed import Embedder
from vectors.index import BATCH, COLLECTION, find_collection, get_collection, open_client, upsert_table
from vectors.store import VectorStore

MIN_FREE_MB = 64  # always left free on HOME's file system (ZAN_MIN_FREE_MB)


class DiskFull(TransientError, OSError):
    """Not enough free space for what a run is about to write; nothing was written. Transient: free space
    and run again."""


def check_room(home: Path, needed: int, what: str) -> None:
    """Raise :class:`DiskFull` unless HOME's file system has ``needed`` bytes plus the reserve free."""
    reserve = int(float(os.environ.get("ZAN_MIN_FREE_MB", MIN_FREE_MB)) * 1024 * 1024)
    free = shutil.disk_usage(home).free
    if free < needed + reserve:
        raise DiskFull(
            f"not enough space on {home} to {what}: {free / 1e6:.1f} MB free, {(needed + reserve) / 1e6:.1f} MB "
            f"needed ({needed / 1e6:.1f} MB + {reserve / 1e6:.0f} MB reserve, ZAN_MIN_FREE_MB); nothing was written"
        )


def index_bytes(rows: int, text_bytes: int, dim: int) -> int:
    """What Chroma's files grow by for ``rows`` upserts (measured: about three copies of each float32 vector
    between its log, its metadata segment and the HNSW files, plus the text twice)."""
    return rows * (3 * 4 * dim + 2048) + 2 * text_bytes


def damaged_folder(folder: Path, name: str = COLLECTION) -> str | None:
    """Why the embedded index under ``folder`` cannot be opened or read, or None when it can."""
    try:
        client = open_client(folder)
    except Exception as exc:  # noqa: BLE001 - a database Chroma cannot open is damage
        _forget_clients()
        return f"{type(exc).__name__}: {exc}"
    return damaged(client, name)


def damaged(client: Any, name: str = COLLECTION) -> str | None:
    """Why the embedded collection cannot be read, or None when it can (or does not exist yet)."""
    try:
        collection = find_collection(client, name)
        if collection is None:
            return None  # nothing built yet is not damage
        collection.count()
        collection.get(limit=1, include=["metadatas"])
    except Exception as exc:  # noqa: BLE001 - any failure to read the embedded index is damage
        return f"{type(exc).__name__}: {exc}"
    return None


def rebuild(folder: Path, embedder: Embedder, enriched: pa.Table, store: VectorStore) -> tuple[Any, int]:
    """A fresh collection under ``folder`` holding ``enriched`` with vectors from ``store`` (texts it lacks
    are embedded: the count is returned). Returns the collection and the number embedded."""
    client = open_client(folder)
    collection = get_collection(client, embedder)
    embedded = 0
    for start in range(0, enriched.num_rows, BATCH * 10):
        part = enriched.slice(start, BATCH * 10)
        texts = dict(zip(part.column("text_hash").to_pylist(), part.column("text").to_pylist(), strict=True))
        vectors: dict[str, Any] = store.get(list(texts))
        missing = [h for h in texts if h not in vectors]
        if missing:
            fresh = embedder.embed_passages([texts[h] for h in missing])
            vectors.update(zip(missing, fresh, strict=True))
            embedded += len(missing)
        upsert_table(collection, part, vectors)
    return collection, embedded


def ensure_healthy(home: Path, embedder: Embedder, published: Callable[[], pa.Table | None]) -> str | None:
    """Check HOME's embedded index; if damaged, move it aside and rebuild it from ``published()`` (the
    published version's enriched chunks, read only then) and the vector store. Returns what was done, or None
    when nothing was needed."""
    folder = home / "chroma"
    if not folder.exists():
        return None
    why = damaged_folder(folder)
    if why is None:
        return None
    _forget_clients()
    aside = home / f"chroma.damaged-{time.strftime('%Y%m%dT%H%M%S')}"
    folder.rename(aside)
    enriched = published()
    if enriched is not None:
        rebuild(folder, embedder, enriched, VectorStore(home, embedder.id))
    _forget_clients()
    return f"the embedded index was damaged ({why[:200]}); moved to {aside.name} and rebuilt from the published version"


def rebuilt_copy(home: Path, embedder: Embedder, enriched: pa.Table) -> Any:
    """A private, temporary collection rebuilt from the published version (for lookups on a damaged index)."""
    folder = Path(tempfile.mkdtemp(prefix="zan-chroma-rebuilt-"))
    import atexit

    atexit.register(shutil.rmtree, folder, True)
    print(f"zan: the index under {home / 'chroma'} is damaged; answering from a copy rebuilt from the published "
          "version (the next `zan run` repairs it)", file=sys.stderr)  # fmt: skip
    collection, _ = rebuild(folder, embedder, enriched, VectorStore(home, embedder.id))
    return collection


def _forget_clients() -> None:
    """Chroma caches one system per path; after moving a folder the cached one must not be reused."""
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
