"""Fetch inside a bound document, on the real-shaped corpus: zan's ranking against Chroma's own filtered query.

When a question names a document, zan ranks that document's chunks only. It does so from the published
version's rows (the enriched chunk table, read by document) and the vectors the run stored by text hash
(``vectors/store.py``, float32), fused with BM25 and the question's language first
(``lookup.chunks.rank_in_version``); it never pulls the document's records out of Chroma. The baseline is
what a user of Chroma alone writes: ``collection.query(query_embeddings=[v], n_results=5, where={"doc_id": d})``
on the same collection (embedded, cosine) with the same vector. Both get the question's vector precomputed,
so the query embedding (the same for both) is not timed.

Documents of about 2, 80, 700 and 5 000 chunks are taken from a home built from :mod:`shaped` (real acts,
their notes, Russian and Kazakh; the 5 000-chunk code is the Labour Code's body several times over) with the
real model's vectors (:mod:`e5_service`); the article-bound case is the Labour Code with «ст. 52» against
Chroma's ``where`` with the same ``$contains`` on ``article_labels``. Each sample times zan and Chroma back to
back, the order alternating (A B, B A); questions rotate through :data:`QUESTIONS`. zan is timed warm (a
long-lived ``Lookup``, as ``zan serve`` or Lumi keeps one) and cold (its per-document row cache emptied
before each call). Goal: zan's median ≤ Chroma's at every size, warm.

    python benchmarks/bench_fetch.py [--copies 12] [--giant 15] [--samples 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import shaped  # noqa: E402
from common import embedder, line, spread, zan_run  # noqa: E402

QUESTIONS = [
    "Может ли работодатель уволить беременную?",
    "какой испытательный срок максимум",
    "Жыл сайынғы ақылы еңбек демалысының ұзақтығы қанша?",
    "сверхурочная работа сколько часов в год",
    "обязанности работодателя по безопасности и охране труда",
    "компенсация при сокращении штата",
    "Жұмыс уақытының қалыпты ұзақтығы",
    "расследование несчастного случая на производстве",
]
TARGETS = (2, 80, 700, 5000)


def build_home(tmp: Path, copies: int, giant: int, spec: str) -> Path:
    from shaped import write

    corpus, home = tmp / "corpus", tmp / "home"
    write(corpus, copies, giant)
    run = zan_run(["--source", str(corpus), "--home", str(home), "--embedder", spec])
    print(f"home: {run.info['documents']} documents, {run.info['chunks']} chunks, built in {run.seconds:.0f} s")
    return home


def pick_documents(home: Path) -> dict[int, str]:
    """The document whose chunk count is nearest each of :data:`TARGETS`."""
    import duckdb

    from schemas.published import published_file

    chunks = published_file(home, "enriched_chunks.parquet")
    counts = duckdb.sql(f"select doc_id, count(*) n from '{chunks}' group by doc_id").fetchall()
    return {t: min(counts, key=lambda c: (abs(c[1] - t), c[0]))[0] for t in TARGETS}


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = call()
    return (time.perf_counter() - start) * 1e3, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=12, help="copies of the real corpus (about 1 100 chunks each)")
    parser.add_argument("--giant", type=int, default=15, help="the large code: the Labour Code's body N times")
    parser.add_argument("--samples", type=int, default=60, help="timed pairs per document size")
    parser.add_argument("--home", type=Path, help="a home built before by this script (kept with --keep)")
    parser.add_argument("--embedder", choices=["e5", "hash"], default="e5", help="hash: the tiny size CI runs")
    args = parser.parse_args()
    shaped.require_corpus()

    from lookup.chunks import doc_filter
    from lookup.route import Lookup
    from lookup.version import Narrowing

    with embedder(args.embedder) as spec, tempfile.TemporaryDirectory(prefix="zan-bench-fetch-") as name:
        home = args.home or build_home(Path(name), args.copies, args.giant, spec)
        lookup = Lookup.open(home)
        collection = lookup.collection
        snap = lookup.snapshot()
        assert snap.chunks is not None
        docs = pick_documents(home)
        sizes = {t: snap.chunks.rows([d]).num_rows for t, d in docs.items()}
        vectors = lookup.embedder.embed_queries(QUESTIONS)
        cases: list[tuple[str, str, Narrowing, dict[str, Any]]] = [
            (f"{sizes[t]} chunks ({d})", d, Narrowing(), {"doc_id": d}) for t, d in docs.items()
        ]
        labour = "k1500000414"
        cases.append(("article-bound (ст. 52, Labour Code)", labour, Narrowing(("52",)), doc_filter([labour], ["52"])))

        def zan(doc: str, narrowing: Narrowing, n: int, cold: bool) -> Callable[[], Any]:
            def call() -> Any:
                if cold:
                    snap.chunks._docs.clear()  # noqa: SLF001 - the cold case empties the row cache on purpose
                return lookup._fetch(snap, [doc], vectors[n], 5, narrowing, QUESTIONS[n])  # noqa: SLF001

            return call

        def chroma(where: dict[str, Any], n: int) -> Callable[[], Any]:
            return lambda: collection.query(query_embeddings=[vectors[n].tolist()], n_results=5, where=where,
                                            include=["documents", "metadatas", "distances"])  # fmt: skip

        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.samples} pairs per case, "
              "order alternating; ms, min / median / max")  # fmt: skip
        results = []
        for label, doc, narrowing, where in cases:
            warm, cold, bare = [], [], []
            for s in range(args.samples):
                n = s % len(QUESTIONS)
                pair = [("zan", zan(doc, narrowing, n, False)), ("chroma", chroma(where, n))]
                for who, call in pair if s % 2 == 0 else pair[::-1]:
                    ms, found = timed(call)
                    (warm if who == "zan" else bare).append(ms)
                    if who == "zan" and not found:
                        raise SystemExit(f"zan found nothing in {doc} for {QUESTIONS[n]!r}")
                cold.append(timed(zan(doc, narrowing, n, True))[0])
            results.append((label, warm, cold, bare))
        for label, warm, cold, bare in results:
            ok = statistics.median(warm) <= statistics.median(bare)
            print(f"  {label}: zan warm {spread(warm)}  zan cold {spread(cold)}  chroma query(where) {spread(bare)}")
            ratio = statistics.median(bare) / statistics.median(warm)
            print(line(f"fetch {label}", f"{statistics.median(warm):.1f} ms", f"query(where) "
                       f"{statistics.median(bare):.1f} ms", "≥ 1.0×", ok) + f"  ({ratio:.2f}×)")  # fmt: skip
        print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
