"""zan at scale on the real-shaped corpus: peak memory at two sizes 10× apart, and the write ceiling.

1. **Peak memory.** ``zan run`` (its own process; its own peak RSS, VmHWM: :func:`common.wait_with_peak`) builds
   copies of the real corpus (:mod:`shaped`: real acts with their «Сноска» notes, so the lineage has a row per noted
   chunk as the real corpus does) at about 14 000 and 140 000 chunks, with the real model's vectors
   (:mod:`e5_service`, 384-d), once into a ``chroma run`` server (Chroma's defaults: what users run) and once into
   embedded Chroma (whose HNSW graph lives in zan's process). Goal, server mode: the large peak ≤ 1.15× the small
   one. Embedded mode is not judged: the index is in the process and grows with the corpus by nature; its growth per
   chunk is printed (the README quotes it).
2. **The write ceiling.** The large build's chunks, first 20 000 and then 100 000 of them: zan's write path
   (``vectors.index.upsert_table`` over the enriched chunk table read in the index stage's blocks, vectors
   from the run's store) against a raw ``collection.upsert`` of the same records already in memory (ids,
   float32 matrix, texts, metadata dicts), each at 1 000 records per call and at Chroma's maximum
   (``get_max_batch_size()``), into a fresh embedded cosine collection each time, the four rotated twice.
   Goal: zan at its best batch ≥ 1.0× the raw upsert at the raw upsert's best batch.

    python benchmarks/bench_scale.py [--small-copies 13] [--factor 10] [--write 20000 100000] [--reps 2]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import shaped  # noqa: E402
from common import chroma_server, embedder, line, load, peak_rss_mb, spread, zan_run  # noqa: E402

MEMORY_GOAL = 1.15
CHUNKS_PER_COPY = 1_100  # about: the real corpus's adilet pages and kz-laws exports, one copy


def build(corpus: Path, home: Path, spec: str, url: str | None) -> dict[str, Any]:
    run = zan_run(["--source", str(corpus), "--home", str(home), "--embedder", spec,
                   *(["--chroma-url", url] if url else [])])  # fmt: skip
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(run.info["seconds"].items(), key=lambda kv: -kv[1])[:4])
    return {"chunks": run.info["chunks"], "peak": run.peak_mb, "seconds": run.seconds, "stages": stages}


def memory(tmp: Path, copies: tuple[int, int], spec: str, modes: list[str]) -> Path:
    """Both sizes, server and embedded; returns the large server-mode home (for the write ceiling)."""
    from shaped import write

    results: dict[tuple[str, int], dict[str, Any]] = {}
    large_home = tmp / "home-server-large"
    for size in copies:
        corpus = tmp / f"corpus-{size}"
        write(corpus, size)
        if "server" in modes:
            with chroma_server(tmp / f"chroma-{size}") as (url, pid):
                home = large_home if size == copies[1] else tmp / f"home-server-{size}"
                results[("server", size)] = build(corpus, home, spec, url) | {"server": peak_rss_mb(pid)}
        if "embedded" in modes:
            embedded = large_home if "server" not in modes and size == copies[1] else tmp / f"home-embedded-{size}"
            results[("embedded", size)] = build(corpus, embedded, spec, None)
            if embedded != large_home:
                shutil.rmtree(embedded)
        if size != copies[1]:
            shutil.rmtree(corpus)
    for (mode, _), r in results.items():
        extra = f", chroma server {r['server']:.0f} MB" if "server" in r else ""
        print(f"  {mode:<8} {r['chunks']:>7} chunks: zan peak {r['peak']:6.0f} MB{extra}, {r['seconds']:.0f} s "
              f"({r['stages']})")  # fmt: skip
    if "server" in modes:
        server_line(results, copies)
    if "embedded" in modes:
        embedded_line(results, copies)
    return large_home


def server_line(results: dict[tuple[str, int], dict[str, Any]], copies: tuple[int, int]) -> None:
    small, large = results[("server", copies[0])], results[("server", copies[1])]
    growth = large["peak"] / small["peak"]
    label = f"peak, server mode, {large['chunks']} vs {small['chunks']} chunks"
    print(line(label, f"{large['peak']:.0f} MB", f"{small['peak']:.0f} MB", f"≤ {MEMORY_GOAL}×",
               growth <= MEMORY_GOAL) + f"  ({growth:.2f}×)")  # fmt: skip


def embedded_line(results: dict[tuple[str, int], dict[str, Any]], copies: tuple[int, int]) -> None:
    small, large = results[("embedded", copies[0])], results[("embedded", copies[1])]
    per_chunk = (large["peak"] - small["peak"]) * 1024 / (large["chunks"] - small["chunks"])
    print(line(f"peak, embedded, {large['chunks']} vs {small['chunks']} chunks", f"{large['peak']:.0f} MB",
               f"{small['peak']:.0f} MB", "stated", None) + f"  ({large['peak'] / small['peak']:.2f}×, "
          f"{per_chunk:.1f} KB per chunk: the in-process index)")  # fmt: skip


def records(home: Path, count: int) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The first ``count`` enriched chunks of ``home``'s version (as the index stage reads them) and their
    vectors; and the same records as a raw upsert takes them, in memory."""
    import numpy as np
    import pyarrow as pa

    from enrich.metadata import metadata_dicts
    from schemas.parquet import iter_parquet
    from schemas.published import published_file, read_manifest
    from vectors.store import VectorStore

    path = published_file(home, "enriched_chunks.parquet")
    tables, held = [], 0
    for table in iter_parquet(path):
        tables.append(table.slice(0, count - held))
        held += tables[-1].num_rows
        if held >= count:
            break
    table = pa.concat_tables(tables)
    store = VectorStore(home, read_manifest(path.parent).embedder)
    hashes = [str(h) for h in table.column("text_hash").to_pylist()]
    vectors = store.get(hashes)
    raw = {"ids": table.column("chunk_id").to_pylist(), "documents": table.column("text").to_pylist(),
           "metadatas": metadata_dicts(table),
           "embeddings": np.stack([vectors[h] for h in hashes]).astype(np.float32)}  # fmt: skip
    return table, vectors, raw


def write_ceiling(home: Path, counts: list[int], reps: int, tmp: Path) -> None:
    for count in counts:
        table, vectors, raw = records(home, count)
        write_once(table, vectors, raw, reps, tmp / f"write-{table.num_rows}")


def write_once(table: Any, vectors: dict[str, Any], raw: dict[str, Any], reps: int, folder: Path) -> None:
    import chromadb

    from runs.indexing import BLOCK
    from vectors.index import upsert_table

    n = table.num_rows
    maximum = chromadb.PersistentClient(str(folder / "probe")).get_max_batch_size()

    def zan(batch: int, collection: Any) -> None:
        for start in range(0, n, BLOCK):  # the index stage's blocks, each written in calls of ``batch``
            upsert_table(collection, table.slice(start, BLOCK), vectors, batch=batch)

    def bare(batch: int, collection: Any) -> None:
        for start in range(0, n, batch):
            collection.upsert(**{k: v[start : start + batch] for k, v in raw.items()})

    # zan's calls never cross the index stage's blocks: asked for the maximum, they hold min(BLOCK, maximum) records,
    # and that is the size they are labelled with
    ways = [("zan", 1000, zan), ("raw", 1000, bare), ("zan", min(BLOCK, maximum), zan), ("raw", maximum, bare)]
    seconds: dict[tuple[str, int], list[float]] = {(w, b): [] for w, b, _ in ways}
    print(f"  write {n} chunks ({load()}), the four ways rotated {reps}×:")
    for rep in range(reps):
        for who, batch, call in ways[rep % 4 :] + ways[: rep % 4]:
            path = folder / f"{who}-{batch}-{rep}"
            collection = chromadb.PersistentClient(str(path)).create_collection(
                "write-ceiling", metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
            start = time.perf_counter()
            call(batch, collection)
            seconds[(who, batch)].append(time.perf_counter() - start)
            del collection
            shutil.rmtree(path, ignore_errors=True)
    for (who, batch), values in seconds.items():
        print(f"    {who} batch {batch:>5}: {spread(values, ' s')}")
    med = {k: statistics.median(v) for k, v in seconds.items()}
    zan_best = min((k for k in med if k[0] == "zan"), key=med.__getitem__)
    raw_best = min((k for k in med if k[0] == "raw"), key=med.__getitem__)
    ratio = med[raw_best] / med[zan_best]
    print(line(f"write {n} chunks: zan (batch {zan_best[1]})", f"{med[zan_best]:.1f} s",
               f"raw upsert (batch {raw_best[1]}) {med[raw_best]:.1f} s", "≥ 1.0×", ratio >= 1.0)
          + f"  ({ratio:.2f}×)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-copies", type=int, default=13, help="copies of the real corpus in the small build")
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--write", type=int, nargs="*", default=[20_000, 100_000], help="chunks per write test")
    parser.add_argument("--modes", nargs="+", choices=["server", "embedded"], default=["server", "embedded"])
    parser.add_argument("--reps", type=int, default=2, help="rotations of the four write ways")
    parser.add_argument("--embedder", choices=["e5", "hash"], default="e5", help="hash: the tiny size CI runs")
    args = parser.parse_args()
    shaped.require_corpus()
    copies = (args.small_copies, args.small_copies * args.factor)
    print(f"{load()}; copies {copies[0]} and {copies[1]} of the real corpus (~{CHUNKS_PER_COPY} chunks each)")
    with embedder(args.embedder) as spec, tempfile.TemporaryDirectory(prefix="zan-bench-scale-") as name:
        tmp = Path(name)
        home = memory(tmp, copies, spec, args.modes)
        write_ceiling(home, args.write, args.reps, tmp)
    print(load())


if __name__ == "__main__":
    main()
