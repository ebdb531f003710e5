"""A re-extract of the shared corpus under the native Airflow stack (deploy/), on 1 Celery worker and on 2.

Each size brings up a fresh stack (PostgreSQL, Redis, api-server, scheduler, dag-processor, triggerer, N
workers, a ``chroma run`` server), triggers ``zan_reextract`` through the REST API on an empty home, and
reads the run's duration back from the API (start to end, as Airflow records it).

    python benchmarks/bench_deploy.py [--corpus ../shared/corpus] [--shards 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.api import Api  # noqa: E402
from deploy.stack import running  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def one(workers: int, sources: str, shards: int) -> tuple[float, float, int, float, float]:
    """(run seconds as Airflow records them, wall seconds from trigger to success, extract shards, the
    mapped extract's span from its first start to its last end, and the sum of its shards' durations)."""
    variables = {"ZAN_SCHEDULE": "none", "ZAN_SOURCES": sources, "ZAN_SHARDS": str(shards)}
    with tempfile.TemporaryDirectory(prefix="zan-bench-deploy-") as folder, running(Path(folder), workers,
                                                                                     variables) as stack:  # fmt: skip
        api = Api(stack.api_url, stack.api_password)
        api.wait_dag("zan_reextract")
        api.unpause("zan_reextract")
        started = time.perf_counter()
        response = api.trigger("zan_reextract")
        response.raise_for_status()
        run = api.wait_run("zan_reextract", response.json()["dag_run_id"], 1200)
        wall = time.perf_counter() - started
        if run["state"] != "success":
            raise RuntimeError(f"the run on {workers} worker(s) ended {run['state']}")
        seconds = dt.datetime.fromisoformat(run["end_date"]) - dt.datetime.fromisoformat(run["start_date"])
        extracts = [t for t in api.task_instances("zan_reextract", run["dag_run_id"]) if t["task_id"] == "extract"]
        starts = [dt.datetime.fromisoformat(t["start_date"]) for t in extracts]
        ends = [dt.datetime.fromisoformat(t["end_date"]) for t in extracts]
        span = (max(ends) - min(starts)).total_seconds()
        busy = sum((e - b).total_seconds() for b, e in zip(starts, ends, strict=True))
        return seconds.total_seconds(), wall, len(extracts), span, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()
    folders = [args.corpus / name for name in ("adilet", "kzlaws", "zan") if (args.corpus / name).is_dir()]
    sources = ":".join(str(f.resolve()) for f in folders) or str(ROOT / "data" / "sample")
    results = {n: one(n, sources, args.shards) for n in (1, 2)}
    print(f"sources: {sources}")
    for n, (seconds, wall, shards, span, busy) in results.items():
        print(f"zan_reextract on {n} Celery worker(s): {seconds:6.1f} s run ({wall:6.1f} s trigger to success); "
              f"{shards} extract shards: {span:5.1f} s first start to last end, {busy:5.1f} s shard time")  # fmt: skip
    print(f"2 workers / 1 worker: {results[2][0] / results[1][0]:.2f}×")


if __name__ == "__main__":
    main()
