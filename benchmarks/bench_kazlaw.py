"""The kazakhstan-law corpus at scale (issue 44): a git scope of real acts, full run against the run after a commit.

Each size is a scope made by :mod:`kazlaw_scope` from the real acts of ``../shared/corpus/kazlaw`` (both languages,
``meta.yaml``, their real sizes and notes; copies marked so every act and paragraph is distinct), ``--commits``
commits of history (half adding acts in batches, half amending ten acts each, every tenth repealing one for a
successor that ``replaces:`` it). Vectors: the real model's (:mod:`e5_service`, 384-d), or hashed at the tiny size.

Printed, each ``zan run`` in its own process as Airflow runs it, against a ``chroma run`` server of its own per
size (Chroma's defaults, as the Airflow stack runs it; ``--chroma embedded`` puts Chroma's HNSW index, which
grows with the corpus, inside zan's process):

- the full run (no home yet: every act, every version's history through ``git cat-file``) at each size, with
  its peak memory; goal: the largest's peak ≤ 1.15× the smallest's (memory flat as the scope grows);
- the run after a commit that amends ``--per-commit`` acts, ``--rounds`` times, against the full run of the
  largest; goal ≤ 5 %. The full run is the baseline and is run once (at 20 000 acts it is the long part; the
  incremental runs are printed min / median / max, the median judged);
- ``--as-of`` lookups against current ones on the same act (the act amended by every commit, so it holds the
  most versions), alternated one by one in one process, p50 / p99; goal: as-of p99 ≤ 2× the current one's,
  and the same as an act with one version (the answer does not grow with the versions).

    uv run python benchmarks/bench_kazlaw.py --acts 2000 20000 --commits 200
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kazlaw_scope  # noqa: E402
from common import Run, chroma_server, embedder, line, load, peak_rss_mb, spread, zan_run  # noqa: E402


def full_run(
    tmp: Path, acts: int, commits: int, per_commit: int, spec: str, chroma: list[str]
) -> tuple[kazlaw_scope.Scope, Path, Run]:
    started = time.perf_counter()
    scope = kazlaw_scope.build(tmp / f"scope-{acts}", acts, commits, per_commit)
    made = time.perf_counter() - started
    print(f"  scope of {len(scope.folders)} acts, {scope.commits} commits made in {made:.0f} s")
    home = tmp / f"home-{acts}"
    run = zan_run(["--source", str(scope.repo), "--home", str(home), "--embedder", spec, *chroma])
    _print(f"full run, {acts} acts", run)
    return scope, home, run


def _print(label: str, run: Run) -> None:
    info = run.info
    top = sorted(info["seconds"].items(), key=lambda kv: -kv[1])[:6]
    print(
        f"  {label:<28} {run.seconds:8.1f} s  peak {run.peak_mb:7.0f} MB  chunks {info['chunks']:>8}  "
        f"embedded {info['embedded']:>7}  text_changed {info.get('text_changed', 0):>6}  {info['status']}"
    )
    print("      " + ", ".join(f"{stage} {s:.1f} s" for stage, s in top))


def as_of_latency(home: Path, lookups: int, chroma_url: str | None = None) -> dict[str, list[float]]:
    """Seconds of ``route(id)`` and ``route(id, as_of=…)`` on the act with the most versions, and of an as-of
    lookup on an act with one version, alternated one by one."""
    import duckdb

    from lookup.route import Lookup
    from schemas.published import published_dir

    folder = published_dir(home)
    assert folder is not None
    history = folder / "history.parquet"
    counts = duckdb.sql(
        "SELECT doc_id, count(DISTINCT version_date) AS n, min(version_date), max(version_date) "
        f"FROM '{history}' WHERE doc_id LIKE 'v%' GROUP BY 1 ORDER BY 2 DESC, 1"
    ).fetchall()
    hot, versions, first, last = counts[0]
    single = next(row[0] for row in counts if row[1] == 1)
    print(f"  as-of on {hot.upper()} ({versions} versions) and {single.upper()} (one version)")
    lookup = Lookup.open(home, chroma_url)
    lookup.warm()
    span = max(1, (last - first).days)
    for query, when in ((hot, None), (hot, first), (single, first)):  # untimed: each reader opened once
        lookup.route(query.upper(), as_of=when)
    out: dict[str, list[float]] = {"current": [], "as_of": [], "as_of_one_version": []}
    for n in range(lookups):
        day = first + dt.timedelta(days=(n * 7919) % span)
        for key, query, when in (("current", hot, None), ("as_of", hot, day), ("as_of_one_version", single, day)):
            started = time.perf_counter()
            result = lookup.route(query.upper(), as_of=when)
            out[key].append(time.perf_counter() - started)
            if result.status != "exact" or (when is not None and result.as_of is None):
                raise RuntimeError(f"{query} as of {when}: {result.status}, {result.hint[:200]}")
    return out


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--acts", type=int, nargs="+", default=[2000, 20000], help="scope sizes (smallest, largest)")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--per-commit", type=int, default=10, help="acts an incremental commit amends")
    parser.add_argument("--rounds", type=int, default=2, help="incremental runs after a commit each")
    parser.add_argument("--lookups", type=int, default=300, help="lookups of each kind")
    parser.add_argument("--embedder", choices=["e5", "hash"], default="e5", help="hash: the tiny size CI runs")
    parser.add_argument("--chroma", choices=["server", "embedded"], default="server",
                        help="server (default): a `chroma run` per size, as the Airflow stack runs it; zan's own "
                             "peak is judged (embedded, Chroma's HNSW index lives in zan's process and grows with "
                             "it)")  # fmt: skip
    args = parser.parse_args()
    try:
        kazlaw_scope.templates()
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
        return
    if shutil.which("git") is None:
        print("skipped: git is not installed")
        return
    print(load())
    sizes = sorted(set(args.acts))
    peaks: dict[int, float] = {}
    with embedder(args.embedder) as spec, tempfile.TemporaryDirectory(prefix="zan-bench-kazlaw-") as name:
        tmp = Path(name)
        for acts in sizes:
            with contextlib.ExitStack() as stack:
                chroma: list[str] = []
                if args.chroma == "server":
                    url, pid = stack.enter_context(chroma_server(tmp / f"chroma-{acts}"))
                    chroma = ["--chroma-url", url]
                scope, home, full = full_run(tmp, acts, args.commits, args.per_commit, spec, chroma)
                peaks[acts] = full.peak_mb
                if chroma:
                    print(f"      chroma server peak {peak_rss_mb(pid):.0f} MB (its own process)")
                if acts != sizes[-1]:
                    shutil.rmtree(home)
                    shutil.rmtree(scope.repo)
                    continue
                incremental = []
                for r in range(args.rounds):
                    scope.amend_some(args.per_commit, hot=False)
                    scope.commit(f"amend {args.per_commit} acts (benchmark round {r + 1})")
                    run = zan_run(["--home", str(home), "--embedder", spec, *chroma])
                    _print(f"after a commit of {args.per_commit} acts", run)
                    if run.info["text_changed"] + run.info["added"] == 0:
                        raise RuntimeError("the incremental run saw no change")
                    incremental.append(run.seconds)
                seconds = as_of_latency(home, args.lookups, url if chroma else None)
    big, small = sizes[-1], sizes[0]
    middle = statistics.median(incremental)
    ratio = middle / full.seconds
    print(line(f"run after a {args.per_commit}-act commit / full", f"{ratio:.1%} ({middle:.1f} s)",
               f"full run {full.seconds:.0f} s ({big} acts)", "≤ 5%", ratio <= 0.05)
          + f"  (incremental {spread(incremental, ' s')})")  # fmt: skip
    if big != small:
        flat = peaks[big] / peaks[small]
        print(line(f"full run peak memory, {big} / {small} acts", f"{flat:.2f}× ({peaks[big]:.0f} MB)",
                   f"{peaks[small]:.0f} MB", "≤ 1.15×", flat <= 1.15))  # fmt: skip
    now, then, one = (p99(seconds[k]) * 1000 for k in ("current", "as_of", "as_of_one_version"))
    medians = {k: statistics.median(v) * 1000 for k, v in seconds.items()}
    print(line("as-of lookup p99 / current lookup p99", f"{then / now:.2f}× ({then:.1f} ms)", f"current {now:.1f} ms",
               "≤ 2×", then / now <= 2.0)
          + f"  (p50 {medians['as_of']:.1f} / {medians['current']:.1f} ms)")  # fmt: skip
    print(line("as-of p99, most versions / one version", f"{then / one:.2f}×", f"one version {one:.1f} ms", "≈ 1×",
               None))  # fmt: skip
    print(load())


if __name__ == "__main__":
    main()
