"""Manual backfill of a scope of the zan corpus, with typed Params rendered as a form."""

from __future__ import annotations

import sys
from pathlib import Path

import pendulum

if str(Path(__file__).parent) not in sys.path:  # the shared task module beside this file
    sys.path.insert(0, str(Path(__file__).parent))

from airflow.sdk import Param, dag
from zan_tasks import DEFAULT_ARGS, wire  # noqa: E402

DOC = """
### zan backfill
Trigger by hand with a scope: `doc_ids` (rebuild these documents), `sources` (folders to read; their
documents only), `since` (source files modified on or after a date). `dry_run` plans and diffs without
writing; `force_reembed` embeds the scope again; `allow_shrink` lets a run delete more than 10 % (or repeal, by
deleted folders, more than 5 % of a git scope's acts).
Documents outside the scope are never touched. Same library path as `zan run --only/--source/--since`.
"""

PARAMS = {
    "doc_ids": Param(
        [],
        type="array",
        items={"type": "string", "pattern": "^[a-z0-9._-]+$"},
        title="doc_ids",
        description="zan doc_ids to rebuild, e.g. v2400035612",
    ),
    "sources": Param(
        [],
        type="array",
        items={"type": "string", "minLength": 1},
        title="sources",
        description="Source folders to read (absolute paths on the workers)",
    ),
    "since": Param(
        None,
        type=["null", "string"],
        format="date",
        title="since",
        description="Only source files modified on or after this date (YYYY-MM-DD)",
    ),
    "force_reembed": Param(False, type="boolean", title="force_reembed", description="Embed the scope again"),
    "dry_run": Param(False, type="boolean", title="dry_run", description="Print what would change; write nothing"),
    "allow_shrink": Param(
        False,
        type="boolean",
        title="allow_shrink",
        description="Publish even if more than 10% of documents or chunks would go",
    ),
}


@dag(
    dag_id="zan_backfill",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["zan", "etl", "backfill"],
    doc_md=DOC,
)
def zan_backfill() -> None:
    wire()


zan_backfill()
