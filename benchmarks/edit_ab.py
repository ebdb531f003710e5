"""One code change against another on ``bench_langchain``'s edit steps: ``zan run`` of this checkout (A) and of
another (B: a ``git worktree`` of the commit to compare with), alternated A B A B on the same edit of the
real-shaped corpus. Each side first publishes the unedited corpus with its own code (a home of its own: a
changed code fingerprint would make the other side read every file again), with the offline ``hash`` vectors by default
(neither side pays a model); the corpus is then edited in place, and each run starts from a copy of its side's
home. Prints each side's seconds (min / median / max), the ratio of the medians and the stages of each side's
last run, so a change to the edit path is judged on the step it is meant for. ``--edit build``: the full build
instead, each run from an empty home (a change to the edit path must not slow it). ``--embedder e5``: the real
model's vectors through the embeddings service, as ``bench_langchain.py`` runs zan (the new texts are embedded
by an untimed build first, so neither side pays the model; the service's threads then share the two cores with
the run, which the hash vectors do not show).

    git worktree add /tmp/zan-before d8d9517
    uv run python benchmarks/edit_ab.py /tmp/zan-before [--copies 18] [--reps 3] [--edit text|files|build]
        [--embedder hash|e5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import shaped  # noqa: E402
from bench_langchain import WORKERS, edit_files, edit_text, warm  # noqa: E402
from common import ROOT, embedder, load, spread  # noqa: E402
from common import zan_run as common_run  # noqa: E402


def zan_run(root: Path, corpus: Path, home: Path, spec: str = "hash") -> tuple[float, dict[str, float]]:
    """``zan run`` of the checkout at ``root`` (:func:`common.zan_run`) with the vectors of ``spec``: wall
    seconds, its stages."""
    run = common_run(["--source", str(corpus), "--home", str(home), "--embedder", spec, "--workers", str(WORKERS)],
                     root=root)  # fmt: skip
    return run.seconds, run.info["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="the checkout to compare with (B), e.g. a git worktree")
    parser.add_argument("--copies", type=int, default=18, help="copies of the real corpus (about 1 100 chunks each)")
    parser.add_argument("--reps", type=int, default=3, help="runs of each side, alternated")
    parser.add_argument("--edit", choices=["text", "files", "build"], default="text",
                        help="bench_langchain's edit step, or build: the full build from an empty home")  # fmt: skip
    parser.add_argument("--embedder", choices=["hash", "e5"], default="hash",
                        help="e5: the real model's vectors, served as bench_langchain does")  # fmt: skip
    args = parser.parse_args()
    shaped.require_corpus()
    if not (args.other / "cli").is_dir():
        raise SystemExit(f"{args.other} is not a zan checkout (no cli/ folder)")
    print(load())
    sides = {"A (this checkout)": ROOT, f"B ({args.other})": args.other.resolve()}
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    stages: dict[str, dict[str, float]] = {}
    with embedder(args.embedder) as spec, tempfile.TemporaryDirectory(prefix="zan-edit-ab-") as name:
        tmp = Path(name)
        corpus = tmp / "corpus"  # one path throughout: the homes know its files by path
        shaped.write(corpus, args.copies)
        bases = {side: tmp / f"base-{n}" for n, side in enumerate(sides)}
        if args.edit == "build":
            print(f"{args.copies} copies; each run builds them from an empty home")
        else:
            for side, root in sides.items():
                zan_run(root, corpus, bases[side], spec)
            edited = (edit_text if args.edit == "text" else edit_files)(corpus)
            what = "paragraphs" if args.edit == "text" else "pages"
            print(f"{args.copies} copies; the {args.edit} edit changed {edited} {what}")
        if spec != "hash":  # the service then holds a vector for every text the runs ask for: no model time
            warm(corpus, tmp / "warm-home", spec)
        for rep in range(args.reps):
            for side, root in sides.items():
                home = tmp / "home"
                shutil.rmtree(home, ignore_errors=True)
                if args.edit != "build":
                    shutil.copytree(bases[side], home)
                    os.sync()  # the copy's write-back would otherwise land inside the timed run
                took, stages[side] = zan_run(root, corpus, home, spec)
                seconds[side].append(took)
                print(f"  round {rep + 1} {side}: {took:.2f} s")
    a, b = (statistics.median(v) for v in seconds.values())
    for side, values in seconds.items():
        print(f"{side:<40} {spread(values, ' s')}   stages {stages[side]}")
    verdict = "parity (within ±3 %)" if abs(a / b - 1) <= 0.03 else ("A is faster" if a < b else "A is slower")
    print(f"A / B (medians): {a / b:.2f}×  ({a:.2f} s against {b:.2f} s: {verdict})")
    print(load())


if __name__ == "__main__":
    main()
