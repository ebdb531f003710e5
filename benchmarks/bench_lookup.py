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

from lookup.fetch import fetch_chunks_by_doc_ids
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
        print(f"  ratio query(where) / filtered fetch = {w50 / f50:.1f}×")


class _FixedEmbedder:
    """The benchmark passes precomputed query vectors; this only names the dimension."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    @property
    def id(self) -> str:
        return f"fixed-{self.dim}"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--skip-fetch", action="store_true", help="only the parse+lookup part")
    args = parser.parse_args()
    rng = random.Random(42)
    bench_parse_lookup(rng)
    if not args.skip_fetch:
        bench_fetch(args.chunks, args.docs, args.dim, rng)


if __name__ == "__main__":
    main()
