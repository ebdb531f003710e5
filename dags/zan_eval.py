"""After each publish, the golden set against the published version (see ``dags/zan_tasks.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pendulum

if str(Path(__file__).parent) not in sys.path:  # the shared task module beside this file
    sys.path.insert(0, str(Path(__file__).parent))

from airflow.sdk import dag
from zan_tasks import DEFAULT_ARGS, REGISTRY_ASSET, check_golden  # noqa: E402

DOC = """
### zan eval
Scheduled on the `zan_registry` asset: runs after every publish of `zan_reextract` or `zan_backfill`. It
answers the golden set (``ZAN_GOLDEN``; default `data/golden/golden.jsonl`) from the version just published and
compares its hit@5, refusals, wrong-document answers and lineage checks with the last check's
(``ZAN_HOME/runs/golden.json``). A drop fails the run with what dropped; the baseline stays the last good one.
"""


@dag(
    dag_id="zan_eval",
    schedule=[REGISTRY_ASSET],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": 0},  # a drop is not transient
    tags=["zan", "eval"],
    doc_md=DOC,
)
def zan_eval() -> None:
    check_golden()


zan_eval()
