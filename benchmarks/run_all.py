"""``make bench``: every benchmark at one size, each figure beside its baseline from the same run and its goal.

    python benchmarks/run_all.py              # the default size (88 minutes on 2 cores, model vectors cached)
    python benchmarks/run_all.py --size tiny  # what CI runs so the suite never rots (no timing is asserted)

Sections: extraction MB/s against libxml2 parsing alone; on copies of the real acts with the real model's
vectors (``shaped.py``, ``e5_service.py``): fetch inside documents of 2 to 5 000 chunks against Chroma's
``query(where)``, peak memory at ~14k and ~140k chunks (server and embedded), the write path against a raw
upsert at 1 000 and at Chroma's maximum batch, zan against LangChain's indexing API (full, unchanged,
metadata-only, 1 % edits); re-run ratios; parse + resolve latency and ``Lookup.open``; the embed stage with the
real model, the BM25 build, fused plain-words lookups; how fast the CLI starts on the real corpus's home;
``zan serve``'s latency and throughput beside a bare ``query(where)``, at the bundled size and 50 000 documents. The
summary lists every goal with pass or FAIL; at the tiny size (hashed vectors, no model) the verdicts are
printed but mean nothing, and the exit status only says whether every benchmark ran.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import line  # noqa: E402

SIZES: dict[str, dict[str, list[str]]] = {
    "default": {
        "bench_extract.py": ["--rounds", "10"],
        "bench_fetch.py": ["--copies", "12", "--giant", "15", "--samples", "60"],
        "bench_scale.py": ["--small-copies", "13", "--factor", "10", "--write", "20000", "100000", "--reps", "2"],
        "bench_langchain.py": ["--copies", "18", "--reps", "2"],
        "bench_reextract.py": ["--docs", "400", "--articles", "50"],
        "bench_lookup.py": ["--open-sizes", "5000", "50000"],
        "bench_semantic.py": ["--rounds", "2"],
        "bench_cli.py": ["--runs", "5"],
        "bench_serve.py": ["--docs", "50000"],
        "bench_kazlaw.py": ["--acts", "500", "2000", "--commits", "60", "--rounds", "3"],
        "bench_recall.py": ["--rounds", "3"],
    },
    "tiny": {
        "bench_extract.py": ["--rounds", "1"],
        "bench_fetch.py": ["--copies", "1", "--giant", "2", "--samples", "4", "--embedder", "hash"],
        "bench_scale.py": [
            "--small-copies",
            "1",
            "--factor",
            "2",
            "--write",
            "500",
            "--reps",
            "1",
            "--embedder",
            "hash",
        ],  # fmt: skip
        "bench_langchain.py": ["--copies", "1", "--embedder", "hash", "--reps", "1"],
        "bench_reextract.py": ["--docs", "8", "--articles", "10"],
        "bench_lookup.py": ["--open-sizes", "200", "2000"],
        "bench_million.py": ["--chunks", "1500"],  # the million-chunk run's script, so it never rots
        "edit_floor.py": ["--copies", "1", "--reps", "1"],  # not in `make bench`: run at the tiny size so it never rots
        "edit_ab.py": [str(HERE.parent), "--copies", "1", "--reps", "1"],  # the same: this checkout against itself
        "bench_semantic.py": ["--tiny"],
        "bench_cli.py": ["--runs", "1"],
        "bench_serve.py": ["--docs", "300", "--embedder", "hash", "--seconds", "2", "--rounds", "1"],
        "bench_recall.py": ["--source", "data/sample", "--rounds", "1"],
        "bench_kazlaw.py": [
            "--acts",
            "20",
            "40",
            "--commits",
            "12",
            "--rounds",
            "1",
            "--lookups",
            "30",
            "--embedder",
            "hash",
        ],
    },
}
# seconds for the default size on 2 cores, once the real model's vectors are cached (see README). Run whole once:
# 5 283 s, then 5 353 s; of the first, bench_scale 3 474 (two 146k builds, then 16 timed writes), bench_langchain 842,
# bench_serve ~15 min
BUDGET = 5500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    args = parser.parse_args()
    goals: list[str] = []
    failed: list[str] = []
    started = time.perf_counter()
    for script, options in SIZES[args.size].items():
        print(f"\n== {script} {' '.join(options)}", flush=True)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE / script), *options], capture_output=True, text=True)
        print(done.stdout, end="", flush=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            failed.append(f"{script} exited {done.returncode}")
        goals += [
            f"{script}: {ln.strip()}" for ln in done.stdout.splitlines() if "goal" in ln or ln.startswith("skipped:")
        ]
        print(f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    total = time.perf_counter() - started
    print(f"\n== summary ({args.size} size, {total:.0f} s)")
    for goal in goals:
        print("  " + goal)
    if args.size == "default":
        print("  " + line("make bench at the default size", f"{total:.0f} s", "", f"< {BUDGET} s", total < BUDGET))
    if args.size == "tiny":
        print("  (tiny size: the suite ran end to end; its timings are too small to judge a goal)")
    for failure in failed:
        print(f"  ERROR {failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
