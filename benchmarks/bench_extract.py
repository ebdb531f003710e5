"""Extraction throughput on real documents (MB/s), per parser and overall, in-process, best of N rounds.

Reads every file under the given folders (default: ../shared/corpus/{adilet,kzlaws,zan} and the bundled
data/sample) with ``extractors.discover.extract_file`` and prints MB/s. Run it on two commits to compare
(the issue's bar: the new extractor stays within 1.5× of the old one per MB):

    uv run python benchmarks/bench_extract.py --rounds 5
    git stash; uv run python benchmarks/bench_extract.py --rounds 5; git stash pop
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from extractors.discover import extract_file, source_files  # noqa: E402
from extractors.html_lines import parse_html  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT = [CORPUS / "adilet", CORPUS / "kzlaws", CORPUS / "zan", ROOT / "data" / "sample"]
GOAL_MB_S = 14.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = source_files([f for f in args.folders if f.exists()])
    size = sum(f.stat().st_size for f in files)
    best = float("inf")
    per_kind: dict[str, float] = defaultdict(lambda: float("inf"))
    accepted = 0
    for _ in range(args.rounds):
        start = time.perf_counter()
        kinds: dict[str, float] = defaultdict(float)
        accepted = 0
        for path in files:
            t0 = time.perf_counter()
            outcome = extract_file(path)
            accepted += outcome.document is not None
            kinds[path.suffix.lower()] += time.perf_counter() - t0
        best = min(best, time.perf_counter() - start)
        for kind, seconds in kinds.items():
            per_kind[kind] = min(per_kind[kind], seconds)
    mb = size / 1e6
    print(f"{len(files)} files, {mb:.2f} MB, {accepted} accepted; best of {args.rounds}: {best:.3f} s", end="")
    print(f" = {mb / best:.2f} MB/s")
    pages = [f for f in files if f.suffix.lower() in (".html", ".htm")]
    floor = parse_only(pages, args.rounds)
    html_mb = sum(f.stat().st_size for f in pages) / 1e6
    html_s = per_kind.get(".html", float("nan"))
    print(
        f"  html pages {html_mb / html_s:.2f} MB/s extracted vs {html_mb / floor:.2f} MB/s parsed by libxml2 alone "
        f"(the floor, same run): extraction at {floor / html_s:.2f}× the parser's speed; "
        f"goal ≥ {GOAL_MB_S} MB/s overall (the issue's measured baseline)  {verdict(mb / best >= GOAL_MB_S)}"
    )
    for kind, seconds in sorted(per_kind.items()):
        kind_mb = sum(f.stat().st_size for f in files if f.suffix.lower() == kind) / 1e6
        print(f"  {kind:<6} {kind_mb:7.2f} MB  {seconds:7.3f} s  {kind_mb / seconds:7.2f} MB/s")


def verdict(passed: bool) -> str:
    return "pass" if passed else "FAIL"


def parse_only(pages: list[Path], rounds: int) -> float:
    """Best seconds to read and parse ``pages`` into trees, nothing else: what any HTML extractor pays."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for path in pages:
            parse_html(path.read_text("utf-8", errors="replace"), str(path))
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
