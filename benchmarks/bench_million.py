"""The million-chunk run: a generated corpus of ≥ 1 000 000 chunks built end to end against a ``chroma run``
server with Chroma's default HNSW settings, then lookups on the built home. Not part of ``make bench`` (it
takes over an hour on 2 cores and ~25 GB of disk); its figures are in ``benchmarks/README.md``.

Prints: documents, chunks, rejects; wall time and the run's stage breakdown; zan's own peak RSS (VmHWM) and the
server's (VmHWM); disk used by the corpus, HOME and Chroma; then a refusal and an exact lookup, each a
fresh ``zan lookup`` process, with their time and peak memory.

    python benchmarks/bench_million.py [--chunks 1000000] [--dir NEW_FOLDER] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, chroma_server, peak_rss_mb, wait_with_peak, zan_run  # noqa: E402
from corpus import write_corpus  # noqa: E402


def disk_gb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e9


def lookup(query: str, home: Path, url: str) -> tuple[float, float, str]:
    """One ``zan lookup --json`` process: seconds, peak RSS in MB, and the answer's status."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as answer_file:
        command = [sys.executable, "-m", "cli", "lookup", query, "--home", str(home), "--chroma-url", url, "--json"]
        process = subprocess.Popen(command, cwd=ROOT, stdout=answer_file, stderr=subprocess.DEVNULL)
        code, peak = wait_with_peak(process)
        seconds = time.perf_counter() - started
        answer_file.seek(0)
        out = answer_file.read()
    if code not in (0, 1):
        raise RuntimeError(f"zan lookup {query!r} failed")
    answer = json.loads(out.decode("utf-8"))
    return seconds, peak, str(answer.get("status"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, help="a new folder for the files (default: a fresh temporary one)")
    parser.add_argument("--keep", action="store_true", help="leave the corpus, HOME and Chroma folder in --dir")
    args = parser.parse_args()
    if args.dir is None:
        args.dir = Path(tempfile.mkdtemp(prefix="zan-million-"))
    elif args.dir.exists() and any(args.dir.iterdir()):
        parser.error(f"--dir {args.dir} is not empty (the run writes ~25 GB there and removes it after)")
    corpus, home, chroma = args.dir / "corpus", args.dir / "home", args.dir / "chroma"
    started = time.perf_counter()
    written = write_corpus(corpus, args.chunks)
    print(f"corpus: {written} in {time.perf_counter() - started:.0f} s", flush=True)
    try:
        with chroma_server(chroma) as (url, pid):
            run = zan_run(["--source", str(corpus), "--home", str(home), "--chroma-url", url])
            server = peak_rss_mb(pid)
            info = run.info
            print(f"run: {info['documents']} documents, {info['chunks']} chunks, {info['rejected']} rejects, "
                  f"status {info['status']}, version {info.get('version')}")  # fmt: skip
            print(
                f"wall {run.seconds:.0f} s; stages: "
                + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(info["seconds"].items(), key=lambda kv: -kv[1]))
            )
            print(f"peak RSS: zan {run.peak_mb:.0f} MB, chroma server {server:.0f} MB")
            sizes = ", ".join(f"{name} {disk_gb(path):.1f} GB" for name, path in [("corpus", corpus), ("HOME", home),
                                                                               ("Chroma", chroma)])  # fmt: skip
            print(f"disk: {sizes}")
            law = min(p.stem for p in corpus.glob("Z*.html"))  # the first law: one act, named by its adilet id
            for query in ("приказ МТСЗН № 99999 от 1 января 2001 года", f"статья 3 {law}"):
                seconds, peak, status = lookup(query, home, url)
                print(f"lookup {query!r}: {status}, {seconds:.1f} s, peak {peak:.0f} MB")
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
