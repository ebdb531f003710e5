"""Peak memory of a full build at two corpus sizes 10× apart (default 20 000 and 200 000 chunks).

Each build is ``zan run`` in its own process on a generated corpus (``benchmarks/corpus.py``), writing to a
fresh ``chroma run`` server, so the figure is zan's own memory; the server's (its HNSW index lives in
memory and grows with the corpus by nature) is printed beside it. Goal: zan's peak at the large size within
25% of the small one.

The benchmark creates zan's collection on the server before the run, with a light HNSW graph (M 8,
ef_construction 16 against Chroma's 16 and 100), and zan adopts it (same name, same embedder). That halves
the server's insert time (30 000 upserts of 1 024-d vectors: 23.6 s against 44.8 s), which was most of this
benchmark's wall time. It changes nothing zan sends or holds: every request is the same. The server's peak
printed beside zan's is of that lighter graph.

    python benchmarks/bench_memory.py [--small 20000] [--factor 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import chroma_server, line, peak_rss_mb, zan_run  # noqa: E402
from corpus import write_corpus  # noqa: E402

GOAL = 0.25


def light_collection(url: str) -> None:
    """zan's collection on the server at ``url``, made beforehand with a light HNSW graph (see above)."""
    import chromadb

    from vectors.embed import HashingEmbedder
    from vectors.index import COLLECTION

    host, port = url.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port))
    metadata = {"hnsw:space": "cosine", "hnsw:M": 8, "hnsw:construction_ef": 16, "zan_embedder": HashingEmbedder().id}
    client.create_collection(COLLECTION, metadata=metadata, embedding_function=None)


def build(chunks: int, tmp: Path) -> tuple[int, float, float, float, dict[str, float]]:
    corpus = tmp / f"corpus-{chunks}"
    write_corpus(corpus, chunks)
    with chroma_server(tmp / f"chroma-{chunks}") as (url, pid):
        light_collection(url)
        run = zan_run(["--source", str(corpus), "--home", str(tmp / f"home-{chunks}"), "--chroma-url", url])
        server = peak_rss_mb(pid)
    return run.info["chunks"], run.peak_mb, server, run.seconds, run.info.get("seconds", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=20_000, help="chunks in the small corpus")
    parser.add_argument("--factor", type=int, default=10, help="how many times larger the large corpus is")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zan-bench-memory-") as name:
        tmp = Path(name)
        results = [build(size, tmp) for size in (args.small, args.small * args.factor)]
    for chunks, peak, server, seconds, stages in results:
        top = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(stages.items(), key=lambda kv: -kv[1])[:5])
        print(f"full build {chunks:>8} chunks: zan peak {peak:7.0f} MB, chroma server {server:6.0f} MB, "
              f"{seconds:6.1f} s ({top})")  # fmt: skip
    (small, small_peak, *_), (large, large_peak, *_) = results
    growth = large_peak / small_peak - 1
    print(line(f"peak RSS at {large} vs {small} chunks", f"{large_peak:.0f} MB", f"{small_peak:.0f} MB",
               f"≤ +{GOAL:.0%}", growth <= GOAL) + f"  (+{growth:.0%})")  # fmt: skip


if __name__ == "__main__":
    main()
