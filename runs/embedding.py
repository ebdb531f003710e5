"""The embed stage: the texts a version needs vectors for, embedded in shards that never collide.

A real model is the slow part of a run (multilingual-e5-small: a few chunks per CPU-second), so embedding is
its own stage, between ``enrich`` and ``index``, split into shards:

- :func:`plan_embedding` reads the staged version's chunks a batch at a time and keeps the distinct texts
  the vector store has no vector for (a text embedded by any earlier run is never embedded again; with
  ``--force-reembed``, every text in scope), dealt round-robin into ``work/embed-<n>.parquet`` files;
- :func:`embed_shard` embeds one shard and stores its vectors as parts named by the run and the shard, so
  shards run anywhere at once (the reextract DAG maps them across Celery workers; ``zan run --workers N``
  across processes) and a shard retried after a crash stores the same part again;
- the index stage then finds every vector in the store and embeds nothing. ``zan run --workers N`` runs the
  shards beside the index stage (:func:`embedding_aside`): each block of the index waits for its vectors,
  so writing to Chroma and embedding overlap.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from runs.changes import forced_rows
from runs.child import Helper, report
from runs.indexing import KnownHashes, prefixes
from runs.scope import Scope
from runs.state import Progress, RunState, StageResult, as_state, timed
from schemas.background import in_thread
from schemas.files import atomic_writer
from schemas.parquet import iter_parquet
from vectors.embed import EmbedderSpec
from vectors.embedders import make_embedder
from vectors.store import VectorStore

SHARD_SCHEMA = pa.schema([pa.field("text_hash", pa.string(), nullable=False), pa.field("text", pa.string())])
BATCH = 64  # texts per call of the model
PART = 2_048  # vectors per stored part


def shard_path(state: RunState, shard: int) -> Path:
    return state.work / f"embed-{shard:04d}.parquet"


def plan_embedding(state_path: RunState | Path | str, shards: int = 1) -> list[str]:
    """Split the texts to embed into ``shards`` files; returns one ``state#n`` reference per shard (at least
    one, possibly empty). A dry run embeds nothing."""
    state = as_state(state_path)
    info, home, options = state.run_info(), Path(state.home), state.run_options
    shards = max(1, shards)
    refs = [f"{state.path}#{n}" for n in range(shards)]
    with timed(info, "plan_embed"):
        store = VectorStore(home, state.embedder_id)
        known = KnownHashes.of(pa.array([], pa.string()) if options.force_reembed else store.hashes())
        forced = forced_rows(Scope.from_json(state.scope), set(state.rebuilt)) if options.force_reembed else None
        seen: set[int] = set()
        count = 0
        with _ShardWriters([shard_path(state, n) for n in range(shards)]) as writers:
            if not options.dry_run:
                path = state.tables_folder() / "enriched_chunks.parquet"
                for table in iter_parquet(path, columns=["doc_id", "text_hash", "text"]):
                    if forced is not None:
                        table = table.filter(forced(table))
                    heads = prefixes(table.column("text_hash"))
                    fresh = ~known.contains(heads)
                    keep = [n for n in np.flatnonzero(fresh) if int(heads[n]) not in seen]
                    seen.update(int(heads[n]) for n in keep)
                    picked = table.take(pa.array(keep, pa.int64())).select(["text_hash", "text"])
                    count = writers.deal(picked, count)
    state.embedding, state.to_embed = refs, count
    state.update(info)
    return refs


class _ShardWriters:
    """One parquet writer per shard (each file renamed into place when whole); rows are dealt round-robin so
    shards take about the same time."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.stack = contextlib.ExitStack()
        self.writers: list[pq.ParquetWriter] = []

    def __enter__(self) -> _ShardWriters:
        for path in self.paths:
            handle = self.stack.enter_context(atomic_writer(path))
            self.writers.append(self.stack.enter_context(pq.ParquetWriter(handle, SHARD_SCHEMA)))
        return self

    def deal(self, rows: pa.Table, start: int) -> int:
        positions = (np.arange(rows.num_rows) + start) % len(self.writers)
        for shard, writer in enumerate(self.writers):
            part = rows.filter(pa.array(positions == shard))
            if part.num_rows:
                writer.write_table(part.cast(SHARD_SCHEMA))
        return start + int(rows.num_rows)

    def __exit__(self, *exc: Any) -> None:
        self.stack.__exit__(*exc)


def embed_shard(
    state_path: Path | str, shard: int, threads: int | None = None, progress: Progress | None = None
) -> int:
    """Embed one shard's texts (passages) into the vector store; returns how many. ``threads``: the model's
    threads in this process (a worker given one core of several)."""
    state = RunState.load(state_path)
    path = shard_path(state, shard)
    if not path.exists():
        return 0
    embedder = make_embedder(with_threads(state.embedder_spec, threads))
    home = Path(state.home)
    if embedder.bind(home) != state.embedder_id:
        raise RuntimeError(f"shard {shard} of run {state.run_id} was planned for {state.embedder_id}")
    store = VectorStore(home, state.embedder_id)
    total = pq.ParquetFile(path).metadata.num_rows
    done = 0
    for block, table in enumerate(iter_parquet(path, PART)):
        hashes, texts = table.column("text_hash").to_pylist(), table.column("text").to_pylist()
        vectors: dict[str, np.ndarray] = {}
        for start in range(0, len(texts), BATCH):
            batch = [str(t or "") for t in texts[start : start + BATCH]]
            vectors.update(zip(hashes[start : start + BATCH], embedder.embed_passages(batch), strict=True))
            if progress:
                progress("embed", done + start + len(batch), total)
        store.put(f"{state.run_id}-s{shard}", vectors, block=block + 1)
        done += len(texts)
    return done


def threads_each(workers: int) -> int:
    """An in-process model's threads in each of ``workers`` embedding processes on one host: its share of the
    cores (one process would take them all: issue 46 measured two e5 workers at 1.08× with every core each
    and 1.96× with one each on 2 cores)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def with_threads(spec: str, threads: int | None) -> str:
    """The spec with the model's thread count set, for an in-process model (e5); others are left as they are."""
    parsed = EmbedderSpec.parse(spec)
    if not threads or parsed.kind != "e5":
        return spec
    return str(EmbedderSpec(parsed.kind, parsed.target, {**parsed.options, "threads": str(threads)}))


IN_PROCESS_MODELS = frozenset({"e5", "st"})  # embedder kinds that compute on this machine's cores


@contextlib.contextmanager
def embedding_aside(
    state_path: RunState | Path | str, shards: list[str], workers: int, apart: bool | None = None, fresh: bool = False
) -> Iterator[Callable[[], bool]]:
    """Embed every shard while the ``with`` body runs: the index stage, which is handed the yielded
    ``pending`` and, block by block, waits for the vectors it needs to be stored
    (:func:`runs.indexing.await_vectors`) instead of waiting for the whole stage. Writing to Chroma holds one
    core and embedding mostly waits on the model or the service, so the two overlap and the shorter is hidden.

    Each shard embeds in a helper process of its own (:func:`runs.child.processes`; ``zan run --workers N``:
    one core each; ``fresh`` as there) or in a thread of this process, as :func:`embeds_apart` decides
    (``apart`` overrides it).

    ``pending()`` is True while a shard is still embedding and raises the first shard's error (the others are
    stopped); at the end the shards are awaited and the longest shard's seconds recorded as ``embed`` (the
    index stage's waits for vectors are its ``embed_wait``). A body that fails stops the shards. The shards
    only add vector-store parts (never the state file); what is stored, and so the version, is the same as
    embedding first."""
    state = as_state(state_path)
    indices = [n for n in (int(ref.rsplit("#", 1)[1]) for ref in shards) if _rows(shard_path(state, n))]
    apart = embeds_apart(state.embedder_spec, state.to_embed) if apart is None else apart
    running: list[_Shard] = [
        _ShardProcess(str(state.path), shard, threads_each(workers), fresh)
        if apart
        else _ShardThread(str(state.path), shard, threads_each(workers))
        for shard in indices
    ]
    done: set[int] = set()
    seconds = [0.0]  # the longest shard's own time

    def stop() -> None:
        for shard in running:
            shard.stop()

    def pending() -> bool:
        busy = False
        for shard in running:
            if shard.index in done:
                continue
            result = shard.poll()
            if result is None:
                busy = True
                continue
            kind, value = result
            if kind != "ok":
                stop()
                raise value
            done.add(shard.index)
            seconds[0] = max(seconds[0], float(value[1]))
        return busy

    try:
        yield pending
        while pending():
            time.sleep(0.05)
    except BaseException:
        stop()
        raise
    stop()
    if not indices:
        return
    state = as_state(state_path)  # as the body left it (read again when this was given a path)
    info = state.run_info()
    info.seconds["embed"] = round(info.seconds.get("embed", 0) + seconds[0], 3)
    state.update(
        info, None, StageResult("embed", state.to_embed, state.to_embed, 0, round(seconds[0], 3), "texts → vectors")
    )


def embeds_apart(spec: str, texts: int) -> bool:
    """Whether :func:`embedding_aside` embeds ``texts`` with the embedder ``spec`` in helper processes rather
    than threads of this process. A model that computes here (:data:`IN_PROCESS_MODELS`) always does: it
    needs cores of its own. Any other embedder (a service, the hash one) does from :data:`SPAWN_FROM` texts:
    a spawned process cost ~0.7 s of CPU to start (its imports; the threshold was measured then, before
    helpers forked from a server that imported them once), more than the hash embedder's or a warm service's
    whole work on a 1 % text edit (477 texts: the run 0.92x in threads), while a thread of the index stage's
    process competes with its writes for the interpreter (a full build of 20 000 texts embedded in threads:
    1.08x)."""
    return EmbedderSpec.parse(spec).kind in IN_PROCESS_MODELS or texts >= SPAWN_FROM


SPAWN_FROM = 2_000  # texts to embed from which a service's or the hash embedder's shards run in processes


class _Shard(Protocol):
    """One shard embedding beside the index stage: :meth:`poll` is None while it runs, then what
    :func:`runs.child.report` says of it (("ok", (texts, seconds)) or ("error", the exception))."""

    index: int

    def poll(self) -> tuple[str, Any] | None: ...

    def stop(self) -> None: ...


class _ShardProcess:
    def __init__(self, state_path: str, index: int, threads: int, fresh: bool) -> None:
        self.index = index
        self.helper = Helper(
            _embed_child,
            state_path,
            index,
            threads,
            name=f"zan-embed-{index}",
            what=f"embedding shard {index}",
            fresh=fresh,
        )

    def poll(self) -> tuple[str, Any] | None:
        return self.helper.poll()

    def stop(self) -> None:
        self.helper.stop()


class _Stopped(Exception):
    """Raised in a shard's thread at its next batch once the run stopped it."""


class _ShardThread:
    def __init__(self, state_path: str, index: int, threads: int) -> None:
        self.index = index
        self.stopped = threading.Event()

        def check(stage: str, done: int, total: int) -> None:
            if self.stopped.is_set():
                raise _Stopped(f"embedding shard {index} stopped")

        def work() -> tuple[int, float]:
            started = time.perf_counter()
            return embed_shard(state_path, index, progress=check), time.perf_counter() - started

        # a daemon thread: a run that fails does not wait, at exit, for a shard it stopped
        self.result: Future[tuple[int, float]] = in_thread(work, f"zan-embed-{index}")

    def poll(self) -> tuple[str, Any] | None:
        if not self.result.done():
            return None
        error = self.result.exception()
        return ("error", error) if error is not None else ("ok", self.result.result())

    def stop(self) -> None:
        self.stopped.set()


def _rows(shard: Path) -> int:
    """Texts in a shard file (none when it is absent: a dry run, or nothing to embed): no process for it."""
    return pq.ParquetFile(shard).metadata.num_rows if shard.exists() else 0


def _embed_child(state_path: str, shard: int, threads: int, send: Any) -> None:
    """:func:`embedding_aside`'s process: embed one shard, and say how it went (:func:`runs.child.report`:
    the texts embedded and the seconds from the process's start)."""
    report(send, lambda: embed_shard(state_path, shard, threads), f"embedding shard {shard}")
