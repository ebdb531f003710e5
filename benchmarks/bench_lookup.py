"""Lookup benchmarks, printed as ratios (this machine is noisy; absolute numbers are for context only).

1. parse + registry lookup latency per query (p50/p99), on a registry of 1k and of 100k generated documents:
   hash indices make the ratio ≈ 1 (O(1) per identifier), where a scan would grow 100×.
2. filtered fetch inside one document: ``get`` by doc_id + local cosine (``fetch_chunks_by_doc_ids``) vs
   Chroma's own ``query(where={"doc_id": …})``, on a generated collection of ≥ 100k chunks.

Usage: ``uv run python benchmarks/bench_lookup.py [--chunks 100000] [--dim 384] [--docs 2000]``
(the collection build dominates: ~3 minutes for 100k chunks on 2 cores).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from lookup.chunks import fetch_chunks_by_doc_ids
from lookup.grammar import parse
from lookup.registry_index import RegistryIndex
from vectors.index import open_client

ISSUERS = ["МТСЗН", "МЧС", "МЭ", "МЗ", "МФ", "МИИР"]
QUERIES = [
    "Приказ МТСЗН №{n} от {d}",
    "приказ {n}",
    "приказ МЧС № {n}",
    "ст. {a} ТК РК",
    "ҚР ЕК {a}",
    "Article {a} of the Labour Code",
    "29 CFR 1910.{a}",
    "API RP {a}",
    "ISO {n}",
    "Что требует приказ №{n} о вводном инструктаже по ст. {a} ТК РК?",
]


def registry_rows(size: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for i in range(size):
        date = dt.date(2010, 1, 1) + dt.timedelta(days=rng.randrange(5000))
        rows.append(
            {
                "doc_id": f"v{i:010d}",
                "doc_title": f"Приказ {i}",
                "doc_type": "order",
                "adilet_id": f"V{i:010d}",
                "issuer": rng.choice(ISSUERS),
                "issuer_full": None,
                "order_number": str(rng.randrange(1, 1000)),
                "law_zrk": None,
                "date_approved": date,
                "registration_number": str(10000 + i),
                "intl_org": None,
                "intl_section": None,
                "status": "in_force",
                "article_labels": [],
                "aliases": [],
            }
        )
    rows.append({**rows[0], "doc_id": "k1500000414", "doc_type": "code", "adilet_id": "K1500000414",
                 "order_number": None, "article_labels": [str(a) for a in range(1, 420)]})  # fmt: skip
    return rows


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def bench_parse_lookup(rng: random.Random) -> None:
    queries = [
        q.format(n=rng.randrange(1, 1000), a=rng.randrange(1, 400), d="25.12.2024") for q in QUERIES for _ in range(50)
    ]
    results = {}
    for size in (1_000, 100_000):
        index = RegistryIndex.from_rows(registry_rows(size, rng))
        timings = []
        for query in queries:
            start = time.perf_counter()
            index.resolve(parse(query))
            timings.append((time.perf_counter() - start) * 1e6)
        results[size] = (percentile(timings, 50), percentile(timings, 99))
        print(f"parse+lookup, registry {size:>7,} docs: p50 {results[size][0]:7.1f} µs  p99 {results[size][1]:7.1f} µs")
    ratio = results[100_000][0] / results[1_000][0]
    print(f"  ratio p50 100k/1k registry = {ratio:.2f}  (1.0 = constant time per identifier; a scan would be ~100)")
    p99 = results[100_000][1]
    print(f"  parse + resolve p99 at 100k docs {p99 / 1000:.3f} ms  goal ≤ 1 ms  {'pass' if p99 <= 1000 else 'FAIL'}")


def published_home(home: Path, rows: list[dict[str, Any]]) -> None:
    """A published version holding a registry of ``rows`` and no chunks: what ``Lookup.open`` reads."""
    import pyarrow as pa

    from enrich.storage import write_parquet_atomic
    from runs.versions import seal, set_current, staging_dir
    from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, LINEAGE_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA
    from schemas.published import Manifest
    from vectors.embed import HashingEmbedder

    def filled(row: dict[str, Any]) -> dict[str, Any]:
        empty = {f.name: [] if pa.types.is_list(f.type) else None for f in REGISTRY_SCHEMA}
        return empty | {"language": "rus", "languages": ["rus"], "jurisdiction": "KZ"} | row

    staging = staging_dir(home, "bench")
    registry = pa.Table.from_pylist([filled(r) for r in rows], schema=REGISTRY_SCHEMA)
    write_parquet_atomic(registry, staging / "registry.parquet", REGISTRY_SCHEMA, "registry")
    for name, schema in (("chunks", CHUNK_SCHEMA), ("enriched_chunks", ENRICHED_CHUNK_SCHEMA),
                         ("rejects", REJECT_SCHEMA), ("lineage", LINEAGE_SCHEMA)):  # fmt: skip
        write_parquet_atomic(schema.empty_table(), staging / f"{name}.parquet", schema, name)
    manifest = Manifest("v000001", "bench", "2026-12-01T00:00:00Z", len(rows), 0, HashingEmbedder().id)
    seal(home, staging, manifest)
    set_current(home, "v000001")


OPEN_GOAL = 2.0  # seconds for Lookup.open on a 50 000-document registry


def bench_open(sizes: tuple[int, int], rng: random.Random) -> None:
    """``Lookup.open`` (registry indices, lineage, published chunk ids) at two registry sizes."""
    from lookup.route import Lookup

    seconds = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            published_home(Path(tmp), registry_rows(size, rng))
            times = []
            for _ in range(3):
                start = time.perf_counter()
                Lookup.open(Path(tmp))
                times.append(time.perf_counter() - start)
            seconds[size] = statistics.median(times)
        print(f"Lookup.open, registry {size:>7,} docs: {seconds[size]:6.3f} s (median of 3)")
    small, large = sizes
    ratio = seconds[large] / seconds[small]
    verdict = "pass" if large < 50_000 or seconds[large] < OPEN_GOAL else "FAIL"
    goal = f"goal < {OPEN_GOAL} s at 50 000 docs" + ("" if large >= 50_000 else " (not measured at this size)")
    print(
        f"  Lookup.open {large:,} / {small:,} docs = {ratio:.1f}× for {large / small:.0f}× the rows "
        f"(linear: {large / small:.0f}×)  {goal}  {verdict if large >= 50_000 else ''}"
    )


def bench_fetch(chunks: int, docs: int, dim: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        collection = open_client(Path(tmp)).create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        gen = np.random.default_rng(7)
        start = time.perf_counter()
        for lo in range(0, chunks, 2000):
            ids = range(lo, min(chunks, lo + 2000))
            vectors = gen.standard_normal((len(ids), dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            collection.add(
                ids=[f"c{i}" for i in ids],
                embeddings=vectors,
                documents=[f"chunk {i}" for i in ids],
                metadatas=[{"doc_id": f"d{i % docs}", "article_labels": [str(i % 400)]} for i in ids],
            )
        print(f"built {chunks:,} chunks × {dim}-d in {time.perf_counter() - start:.0f} s")
        embedder = _FixedEmbedder(dim)
        fetch_ms, where_ms = [], []
        for _ in range(40):
            doc = f"d{rng.randrange(docs)}"
            query = gen.standard_normal(dim).astype(np.float32)
            start = time.perf_counter()
            fetch_chunks_by_doc_ids([doc], "q", 5, collection=collection, embedder=embedder, query_vector=query)
            fetch_ms.append((time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            collection.query(query_embeddings=[query.tolist()], n_results=5, where={"doc_id": doc})
            where_ms.append((time.perf_counter() - start) * 1e3)
        f50, w50 = statistics.median(fetch_ms), statistics.median(where_ms)
        f99, w99 = percentile(fetch_ms, 99), percentile(where_ms, 99)
        print(f"fetch_chunks_by_doc_ids (get + local cosine): p50 {f50:7.1f} ms  p99 {f99:7.1f} ms")
        print(f"Chroma query(where=doc_id):                   p50 {w50:7.1f} ms  p99 {w99:7.1f} ms")
        print(
            f"  ratio query(where) / filtered fetch = {w50 / f50:.1f}×  goal ≥ 1×  {'pass' if w50 >= f50 else 'FAIL'}"
        )


class _FixedEmbedder:
    """The benchmark passes precomputed query vectors; this only names the dimension."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    spec = "fixed"

    @property
    def id(self) -> str:
        return f"fixed-{self.dim}"

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--skip-fetch", action="store_true", help="only the parse+lookup part")
    parser.add_argument("--open-sizes", type=int, nargs=2, default=(5_000, 50_000), metavar=("SMALL", "LARGE"),
                        help="registry sizes for the Lookup.open timing")  # fmt: skip
    args = parser.parse_args()
    rng = random.Random(42)
    bench_parse_lookup(rng)
    bench_open(tuple(args.open_sizes), rng)
    if not args.skip_fetch:
        bench_fetch(args.chunks, args.docs, args.dim, rng)


if __name__ == "__main__":
    main()
