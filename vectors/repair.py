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
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from schemas.background import in_thread
from schemas.errors import TransientError
from schemas.failpoints import failpoint
from schemas.parquet import iter_parquet
from vectors.embed import Embedder
from vectors.index import (
    BATCH,
    COLLECTION,
    Client,
    Collection,
    find_collection,
    get_collection,
    open_client,
    upsert_table,
)
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


# What Chroma and SQLite say about a file that is not (or no longer) a database; and what they say about a
# database that is only busy now (another writer, a full disk): that is never damage, and never rebuilt.
_DAMAGE = (
    "file is not a database",
    "malformed",
    "corrupt",
    "disk image",
    "no such table",
    "no such column",
    "hnsw",
    "segment",
    "unable to open database",
    "out of range",
)
_BUSY = ("locked", "busy", "timeout", "timed out", "no space left", "connection", "interrupted")


def is_damage(exc: BaseException) -> bool:
    """True when an error reading the embedded index means its files are damaged (rebuild them), False when it
    is the index being busy or the disk full now (retry; never throw the index away for it)."""
    text = f"{type(exc).__name__}: {exc}".lower()
    if isinstance(exc, TimeoutError | ConnectionError | PermissionError) or any(w in text for w in _BUSY):
        return False
    import sqlite3

    from chromadb.errors import InternalError

    return isinstance(exc, InternalError | sqlite3.DatabaseError) or any(w in text for w in _DAMAGE)


class IndexBusy(TransientError):
    """The embedded index could not be read now, for a reason that is not damage: retry."""


def damaged_folder(folder: Path, name: str = COLLECTION) -> str | None:
    """Why the embedded index under ``folder`` is damaged, or None when it can be read. An error that is not
    damage (:func:`is_damage`) is raised as :class:`IndexBusy`."""
    try:
        client = open_client(folder)
    except Exception as exc:
        _forget_clients()
        return _damage_or_raise(exc)
    return damaged(client, name)


def damaged(client: Client, name: str = COLLECTION) -> str | None:
    """Why the embedded collection is damaged, or None when it can be read (or does not exist yet)."""
    try:
        collection = find_collection(client, name)
        if collection is None:
            return None  # nothing built yet is not damage
        failpoint("index_check")
        collection.count()
        collection.get(limit=1, include=["metadatas"])
    except Exception as exc:
        return _damage_or_raise(exc)
    return None


def _raised_by_the_index(exc: BaseException) -> bool:
    """Is ``exc`` of a kind the index's own layers raise (Chroma's errors, SQLite's, the file system's, and the
    ValueError/RuntimeError chromadb raises for a database it cannot use)? Anything else (a TypeError, a
    KeyError…) is a defect in zan or a library, and is raised as it is: neither damage nor busy."""
    import sqlite3

    from chromadb.errors import ChromaError

    return isinstance(exc, ChromaError | sqlite3.Error | OSError | ValueError | RuntimeError)


def _damage_or_raise(exc: Exception) -> str:
    if not _raised_by_the_index(exc):
        raise exc
    if not is_damage(exc):
        raise IndexBusy(
            f"the embedded index could not be read now ({type(exc).__name__}: {str(exc)[:200]}); "
            "not damage: nothing was rebuilt, try again"
        ) from exc
    return f"{type(exc).__name__}: {exc}"


def rebuild(folder: Path, embedder: Embedder, enriched: Path, store: VectorStore) -> tuple[Collection, int]:
    """A fresh collection under ``folder`` holding the chunks of ``enriched`` (a version's file, read a batch
    at a time) with vectors from ``store`` (texts it lacks are embedded). Returns the collection and the
    number embedded."""
    client = open_client(folder)
    collection = get_collection(client, embedder)
    embedded = 0
    for part in iter_parquet(enriched, BATCH * 10):
        texts = dict(zip(part.column("text_hash").to_pylist(), part.column("text").to_pylist(), strict=True))
        vectors: dict[str, Any] = store.get(list(texts))
        missing = [h for h in texts if h not in vectors]
        if missing:
            fresh = embedder.embed_passages([texts[h] for h in missing])
            vectors.update(zip(missing, fresh, strict=True))
            embedded += len(missing)
        upsert_table(collection, part, vectors)
    return collection, embedded


def check_aside(home: Path) -> Future[str | None] | None:
    """Start :func:`damaged_folder` on HOME's embedded index in a thread, for :func:`ensure_healthy` to await
    later; None when there is no index yet. Opening the index is its first read of its files (~0.4 s on
    20 000 chunks, whatever is read first), which a run pays before it can diff against it; begun while the
    run's main process only waits on the processes that extract its files, it is hidden there."""
    folder = home / "chroma"
    if not folder.exists():
        return None
    return in_thread(lambda: damaged_folder(folder), "zan-index-check")


def ensure_healthy(
    home: Path, embedder: Embedder, published: Path | None, checked: Future[str | None] | None = None
) -> str | None:
    """Check HOME's embedded index; if damaged, move it aside and rebuild it from ``published`` (the published
    version's enriched chunks file, streamed) and the vector store. Returns what was done, or None when
    nothing was needed; an index that is only busy raises :class:`IndexBusy`. ``checked``: the check begun
    earlier by :func:`check_aside` in this run (nothing else writes HOME's index while the run holds its
    lease), awaited instead of checking again."""
    folder = home / "chroma"
    if not folder.exists():
        return None
    why = checked.result() if checked is not None else damaged_folder(folder)
    if why is None:
        return None
    _forget_clients()
    aside = home / f"chroma.damaged-{time.strftime('%Y%m%dT%H%M%S')}"
    folder.rename(aside)
    if published is not None:
        rebuild(folder, embedder, published, VectorStore(home, embedder.id))
    _forget_clients()
    return f"the embedded index was damaged ({why[:200]}); moved to {aside.name} and rebuilt from the published version"


def rebuilt_copy(home: Path, embedder: Embedder, enriched: Path) -> Collection:
    """A private, temporary collection rebuilt from the published version (for lookups on a damaged index)."""
    folder = Path(tempfile.mkdtemp(prefix="zan-chroma-rebuilt-"))
    import atexit

    atexit.register(shutil.rmtree, folder, True)
    print(
        f"zan: the index under {home / 'chroma'} is damaged; answering from a copy rebuilt from the published "
        "version (the next `zan run` repairs it)",
        file=sys.stderr,
    )
    collection, _ = rebuild(folder, embedder, enriched, VectorStore(home, embedder.id))
    return collection


def _forget_clients() -> None:
    """Chroma caches one system per path; after moving a folder the cached one must not be reused."""
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
