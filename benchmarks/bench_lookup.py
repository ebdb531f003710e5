"""Lookup benchmarks, printed as ratios (this machine is noisy; absolute numbers are for context only).

1. parse + registry lookup latency per query (p50/p99), on a registry of 1k and of 100k generated documents:
   hash indices make the ratio ≈ 1 (O(1) per identifier), where a scan would grow 100×.
2. ``Lookup.open`` at two registry sizes.

The registries are generated, and that is why: the sizes that matter (50 000 and 100 000 acts) are far beyond
the real corpus's few dozen, and a hashed lookup's cost depends on how many rows there are, not on their text.
The fetch inside a document moved to ``bench_fetch.py``, on the real-shaped corpus with real vectors.

Usage: ``uv run python benchmarks/bench_lookup.py [--open-sizes 5000 50000]``
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

from lookup.grammar import parse
from lookup.registry_index import RegistryIndex

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

    from runs.versions import seal, set_current, staging_dir
    from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, LINEAGE_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA
    from schemas.parquet import write_parquet_atomic
    from schemas.published import FORMAT_VERSION, Manifest
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
    manifest = Manifest("v000001", "bench", "2026-12-01T00:00:00Z", len(rows), 0, HashingEmbedder().id,
                        embedder_spec="hash", format_version=FORMAT_VERSION)  # fmt: skip
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--open-sizes", type=int, nargs=2, default=(5_000, 50_000), metavar=("SMALL", "LARGE"),
                        help="registry sizes for the Lookup.open timing")  # fmt: skip
    args = parser.parse_args()
    rng = random.Random(42)
    bench_parse_lookup(rng)
    bench_open(tuple(args.open_sizes), rng)


if __name__ == "__main__":
    main()
