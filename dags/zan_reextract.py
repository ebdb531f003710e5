"""Scheduled re-extract of the zan corpus (see ``dags/zan_tasks.py`` for the tasks and their settings)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pendulum

if str(Path(__file__).parent) not in sys.path:  # the shared task module beside this file
    sys.path.insert(0, str(Path(__file__).parent))

from airflow.sdk import Param, dag
from zan_tasks import DEFAULT_ARGS, fetch, git_scopes, update_scope, wire  # noqa: E402

SCHEDULE = os.environ.get("ZAN_SCHEDULE", "@weekly")

DOC = """
### zan re-extract
Weekly (``ZAN_SCHEDULE`` overrides, e.g. ``@daily``; ``none``: only triggered runs): fetch configured adilet
acts into the landing zone and bring each kazakhstan-law scope's clone up to its remote (``ZAN_GIT_SCOPES``,
one mapped task a scope), then re-extract every source, enrich and index **only what changed**, validate,
and publish a new version of the registry and the Chroma index atomically. Emits the `zan_registry` and
`zan_index` assets.
A failed run leaves the previous version published; its report (``ZAN_HOME/runs/``) says why. A run that would
delete more than 10 % of the documents, or repeal more than 5 % of a scope's acts (at most 50) by deleting their
folders, or whose scope's tree is empty, is refused; trigger it with `allow_shrink` when that is intended.
"""

PARAMS = {
    "allow_shrink": Param(
        False,
        type="boolean",
        title="allow_shrink",
        description="Publish even if documents would go, or a scope's deleted folders would repeal many of its acts",
    ),
}


@dag(
    dag_id="zan_reextract",
    schedule=None if SCHEDULE.lower() == "none" else SCHEDULE,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["zan", "etl", "re-extract"],
    doc_md=DOC,
)
def zan_reextract() -> None:
    wire(fetch(), update_scope.expand(scope=git_scopes()))


zan_reextract()
