"""zan's DAGs under a real Airflow: the native stack (PostgreSQL, Redis, api-server, scheduler,
dag-processor, triggerer, two Celery workers, a ``chroma run`` server), driven only through the REST API.

``make test-deploy`` runs this module (CI does too); ``make test`` leaves it out. It needs Debian's
``postgresql`` and ``redis-server`` (``make deploy-deps``) and skips, saying so, without them.

The tests share one stack and run in order: a clean re-extract is the reference the fault runs must equal.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.api import Api
from deploy.stack import Stack, StackError, check_packages, session_processes

pytestmark = pytest.mark.deploy

# Shorter than production so a dead worker's task is noticed and retried within the test: the scheduler
# declares a task instance lost after 30 s without a heartbeat, and a retry waits 2 s (then backs off).
OVERRIDES = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "2",
}
VARIABLES = {"ZAN_SCHEDULE": "none", "ZAN_SHARDS": "4"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    try:
        check_packages()
    except StackError as exc:
        pytest.skip(str(exc))
    stack = Stack(tmp_path_factory.mktemp("stack"), 2, dict(VARIABLES), dict(OVERRIDES))
    stack.up()
    try:
        yield stack
    finally:
        stack.down()


@pytest.fixture(scope="module")
def api(stack: Stack) -> Api:
    api = Api(stack.api_url)
    for dag_id in ("zan_reextract", "zan_backfill"):
        api.wait_dag(dag_id)
        api.unpause(dag_id)
    return api


@pytest.fixture(scope="module")
def clean(stack: Stack, api: Api) -> dict[str, Any]:
    """An undisturbed re-extract of the bundled sample, triggered through the API: the reference."""
    run = _trigger(api, "zan_reextract")
    assert run["state"] == "success", _failed(api, run)
    return {"run": run, "published": _published(stack)}


def test_reextract_runs_on_both_workers_and_emits_assets(stack: Stack, api: Api, clean: dict[str, Any]) -> None:
    run = clean["run"]
    tis = api.task_instances("zan_reextract", run["dag_run_id"])
    assert {t["state"] for t in tis} == {"success"}
    shards = [t for t in tis if t["task_id"] == "extract"]
    assert len(shards) == 4
    assert {t["hostname"].split("@")[0] for t in shards} == {"worker1", "worker2"}
    events = api.asset_events("zan_reextract", run["dag_run_id"])
    assert {e["name"] for e in events} == {"zan_registry", "zan_index"}
    assert {e["extra"]["version"] for e in events} == {clean["published"]["version"]}
    published = clean["published"]
    assert published["chunks"] and published["chunks"] == _indexed(stack)
    assert "k1500000414" in published["documents"]  # the Labour Code of the bundled sample


def test_backfill_params_through_the_api(stack: Stack, api: Api, clean: dict[str, Any]) -> None:
    before = len(api.runs("zan_backfill"))
    for bad in ({"doc_ids": "k1500000414"}, {"doc_ids": ["K1400000251 OR 1=1"]}, {"dry_run": "yes"}):
        response = api.trigger("zan_backfill", bad)
        assert 400 <= response.status_code < 500, (bad, response.status_code, response.text[:300])
    assert len(api.runs("zan_backfill")) == before  # a rejected payload creates no run

    run = _trigger(api, "zan_backfill", {"doc_ids": ["k1500000414"], "dry_run": True})
    assert run["state"] == "success", _failed(api, run)
    assert run["conf"] == {"doc_ids": ["k1500000414"], "dry_run": True}
    index = _task(api, "zan_backfill", run, "index")
    assert index["state"] == "success"
    assert _published(stack) == clean["published"]  # a dry run publishes nothing


def test_a_worker_killed_during_extract(stack: Stack, api: Api, clean: dict[str, Any], tmp_path: Path) -> None:
    """Only worker1 runs, stopped inside its extract shards; worker2 starts, worker1 is killed (SIGKILL of
    its process group, as a machine dying): the shards are retried on worker2 and the run publishes what the
    undisturbed run did."""
    marker = tmp_path / "extract.reached"
    stack.stop("worker2")
    stack.stop("worker1")
    stack.start_worker("worker1", {"ZAN_FAILPOINT": "extract", "ZAN_FAILPOINT_FILE": str(marker),
                                   "ZAN_FAILPOINT_SLEEP": "600"})  # fmt: skip
    stack.wait_healthy()
    try:
        response = api.trigger("zan_reextract")
        assert response.status_code == 200, response.text[:300]
        run_id = response.json()["dag_run_id"]
        _wait_for(marker.exists, 180, "an extract shard to reach its failpoint on worker1")
        stack.start_worker("worker2")
        killed = stack.pids["worker1"]
        stack.stop("worker1", kill=True)
        assert session_processes(killed) == []  # its task processes died with it, as on a machine that died
        run = api.wait_run("zan_reextract", run_id, 600)
    finally:
        stack.start_worker("worker1")
        stack.wait_healthy()
    assert run["state"] == "success", _failed(api, run)
    shards = [t for t in api.task_instances("zan_reextract", run_id) if t["task_id"] == "extract"]
    assert shards and all(t["hostname"].startswith("worker2@") for t in shards)
    assert max(t["try_number"] for t in shards) >= 2  # at least the killed shard was tried again
    assert _published(stack, version=False) == _without_version(clean["published"])
    assert _published(stack)["chunks"] == _indexed(stack)


def test_chroma_stopped_during_index(stack: Stack, api: Api, clean: dict[str, Any], tmp_path: Path) -> None:
    """The Chroma server goes away while ``index`` writes: the task fails as transient, is retried after the
    server is back, and the version published equals the clean run's."""
    marker = tmp_path / "index.reached"
    failing = {"ZAN_FAILPOINT": "index_begin", "ZAN_FAILPOINT_FILE": str(marker), "ZAN_FAILPOINT_SLEEP": "8"}
    for name in ("worker1", "worker2"):
        stack.stop(name)
        stack.start_worker(name, failing)
    stack.wait_healthy()
    try:
        response = api.trigger("zan_backfill", {"doc_ids": ["k1500000414"], "force_reembed": True})
        assert response.status_code == 200, response.text[:300]
        run = response.json()
        _wait_for(marker.exists, 180, "index to reach its failpoint")
        stack.stop("chroma")
        _wait_for(lambda: _task(api, "zan_backfill", run, "index")["state"] in ("up_for_retry", "failed"), 180,
                  "index to fail while Chroma is down")  # fmt: skip
        stack.start_chroma()
        run = api.wait_run("zan_backfill", run["dag_run_id"], 600)
    finally:
        if "chroma" not in stack.pids:
            stack.start_chroma()
        for name in ("worker1", "worker2"):
            stack.stop(name)
            stack.start_worker(name)
        stack.wait_healthy()
    assert run["state"] == "success", _failed(api, run)
    index = _task(api, "zan_backfill", run, "index")
    assert index["try_number"] >= 2
    tries = api.tries("zan_backfill", run["dag_run_id"], "index")
    assert tries[0]["state"] in ("up_for_retry", "failed")
    assert _published(stack, version=False) == _without_version(clean["published"])
    assert _published(stack)["chunks"] == _indexed(stack)


# ---- helpers ------------------------------------------------------------------------------------------
def _trigger(api: Api, dag_id: str, conf: dict[str, Any] | None = None) -> dict[str, Any]:
    response = api.trigger(dag_id, conf)
    assert response.status_code == 200, response.text[:500]
    return api.wait_run(dag_id, response.json()["dag_run_id"], 600)


def _task(api: Api, dag_id: str, run: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in api.task_instances(dag_id, run["dag_run_id"]) if t["task_id"] == task_id)


def _failed(api: Api, run: dict[str, Any]) -> str:
    tis = api.task_instances(run["dag_id"], run["dag_run_id"])
    return ", ".join(f"{t['task_id']}[{t['map_index']}]={t['state']}" for t in tis)


def _wait_for(ready: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def _published(stack: Stack, version: bool = True) -> dict[str, Any]:
    """What the stack's zan home publishes: version, documents, and chunk ids with their text hashes."""
    from runs.state import Published

    published = Published.load(Path(stack.environment()["ZAN_HOME"]))
    assert published is not None
    keys = published.keys(("chunk_id", "text_hash"))
    body = {"documents": sorted(published.registry_rows()),
            "chunks": dict(zip(keys.column("chunk_id").to_pylist(), keys.column("text_hash").to_pylist(), strict=True))}  # fmt: skip
    return {"version": published.version, **body} if version else body


def _without_version(published: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in published.items() if k != "version"}


def _indexed(stack: Stack) -> dict[str, str]:
    """chunk_id → text_hash as the Chroma server holds them."""
    from vectors.index import index_state, open_client

    client = open_client(None, stack.chroma_url)
    keys = index_state(client.get_collection("zan_chunks"))
    return dict(zip(keys.column("chunk_id").to_pylist(), keys.column("text_hash").to_pylist(), strict=True))
