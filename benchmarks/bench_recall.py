"""How much of the exact nearest neighbours Chroma's HNSW search returns, at Chroma's default width and at
zan's (:data:`vectors.index.SEARCH_EF`), and what the width costs per query.

The plain-words ranking takes the 50 nearest chunks (asking the index for 100). With Chroma's default
``ef_search`` (100) the search is approximate enough to miss some of them, and to miss different ones each
time the index is opened. Here: two copies of one home's index, one at 100 and one at zan's width; for each
wide-set question, recall@50 against the exact cosine over the version's stored vectors; then query latency,
the two copies alternated (A B A B), min / median / max.

    python benchmarks/bench_recall.py --home /tmp/h            # a home built with `zan run`
    python benchmarks/bench_recall.py                          # builds one from ../shared/corpus + data/sample
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lookup.evaluate import read_golden  # noqa: E402
from lookup.route import Lookup  # noqa: E402
from vectors.index import SEARCH_EF  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEPTH = 50


def _widened(home: Path, into: Path, ef: int) -> Lookup:
    """A copy of ``home`` whose index searches ``ef`` wide. Set in a process of its own: a process that has
    the index open keeps the width it loaded it with."""
    copy = into / f"ef{ef}"
    shutil.copytree(home, copy, symlinks=True)
    script = (
        "import sys; from lookup.route import Lookup; hnsw = {'hnsw': {'ef_search': int(sys.argv[2])}}; "
        "Lookup.open(sys.argv[1]).collection.modify(configuration=hnsw)"
    )
    subprocess.run([sys.executable, "-c", script, str(copy), str(ef)], check=True, cwd=ROOT)
    return Lookup.open(copy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="a zan home (default: build one from --source, hashed)")
    parser.add_argument("--source", type=Path, action="append", help="default: ../shared/corpus and data/sample")
    parser.add_argument("--rounds", type=int, default=3, help="latency rounds, each A then B")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zan-recall-") as tmp:
        home = args.home
        if home is None:
            from runs.pipeline import run

            home = Path(tmp) / "home"
            given = [s if s.exists() else ROOT / s for s in args.source or []]
            sources = given or [p for p in (ROOT.parent / "shared" / "corpus", ROOT / "data" / "sample")
                                      if p.is_dir()]  # fmt: skip
            run(sources, home)
        version = (home / "CURRENT").read_text().strip()
        rows = duckdb.sql(f"SELECT chunk_id, text_hash FROM read_parquet('{home}/versions/{version}/chunks.parquet')")
        ids, hashes = (list(c) for c in zip(*rows.fetchall(), strict=True))
        lookups = {ef: _widened(home, Path(tmp), ef) for ef in (100, SEARCH_EF)}
        matrix, _ = lookups[100].store.matrix(hashes)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        questions = [r.query for r in read_golden(ROOT / "data" / "golden" / "semantic_wide.jsonl")]
        embedder = lookups[100].embedder
        vectors = [v / np.linalg.norm(v) for v in embedder.embed_queries(questions)]
        exact = [set(np.array(ids)[np.argsort(-(matrix @ v), kind="stable")[:DEPTH]]) for v in vectors]
        print(f"{len(ids)} chunks, {len(questions)} questions, {embedder.id if hasattr(embedder, 'id') else ''}")
        times: dict[int, list[float]] = {ef: [] for ef in lookups}
        recall: dict[int, list[float]] = {ef: [] for ef in lookups}
        for n in range(args.rounds):
            for ef, lookup in lookups.items():
                started = time.perf_counter()
                got = [lookup.collection.query(query_embeddings=[v.tolist()], n_results=2 * DEPTH, include=[])
                       for v in vectors]  # fmt: skip
                times[ef].append((time.perf_counter() - started) / len(vectors) * 1000)
                if n == 0:
                    recall[ef] = [len(set(g["ids"][0][:DEPTH]) & e) / DEPTH for g, e in zip(got, exact, strict=True)]
        for ef in lookups:
            r, t = recall[ef], times[ef]
            print(f"ef_search {ef:>4}: recall@{DEPTH} mean {statistics.mean(r):.3f}, worst {min(r):.2f}, "
                  f"questions short of exact {sum(x < 1 for x in r)}; ms a query min / median / max "
                  f"{min(t):.2f} / {statistics.median(t):.2f} / {max(t):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
