"""A small client of the Airflow 3 REST API (``/api/v2``), authenticated as the compose file configures:
the FAB auth manager's ``POST /auth/token`` with the ``airflow`` user and its password (random per
deployment: ``_AIRFLOW_WWW_USER_PASSWORD``), then a bearer token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import httpx
from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_delay, wait_fixed

FINISHED = {"success", "failed"}


T = TypeVar("T")


def polled(fetch: Callable[[], T], ok: Callable[[T], bool], timeout: float, every: float) -> tuple[T, bool]:
    """Call ``fetch`` every ``every`` seconds until ``ok`` says yes of what it gave or ``timeout`` seconds have
    passed: the last value, and whether it was ok. Every wait of the deployment (a service healthy, a process
    gone, a DAG parsed, a run finished)."""

    def last(state: RetryCallState) -> T:  # the value of the last call, not an error, once the time is up
        assert state.outcome is not None
        return cast(T, state.outcome.result())

    asking = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(every),
        retry=retry_if_result(lambda value: not ok(value)),
        retry_error_callback=last,
    )
    value = asking(fetch)
    return value, ok(value)


def until(done: Callable[[], bool], timeout: float, every: float) -> bool:
    """Ask ``done`` every ``every`` seconds until it says yes (True) or ``timeout`` seconds have passed (False)."""
    return polled(done, bool, timeout, every)[1]


class Api:
    def __init__(self, url: str, password: str, username: str = "airflow") -> None:
        self.url = url.rstrip("/")
        token = httpx.post(f"{self.url}/auth/token", json={"username": username, "password": password}, timeout=30)
        token.raise_for_status()
        self.client = httpx.Client(
            base_url=f"{self.url}/api/v2",
            timeout=30,
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        )

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def wait_dag(self, dag_id: str, timeout: float = 180) -> dict[str, Any]:
        """The DAG once the dag-processor has parsed and serialized it."""
        response, parsed = polled(
            lambda: self.client.get(f"/dags/{dag_id}"), lambda r: r.status_code == 200, timeout, 2
        )
        if not parsed:
            raise TimeoutError(f"{dag_id} not parsed after {timeout:.0f} s: {response.text[:300]}")
        return dict(response.json())

    def unpause(self, dag_id: str) -> None:
        self.client.patch(f"/dags/{dag_id}", json={"is_paused": False}).raise_for_status()

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None) -> httpx.Response:
        """``POST /dags/{dag_id}/dagRuns``: the response as it is (a 4xx for Params that do not validate)."""
        return self.client.post(f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf or {}})

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/dags/{dag_id}/dagRuns", limit=100)["dag_runs"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 600) -> dict[str, Any]:
        run, finished = polled(
            lambda: self.get(f"/dags/{dag_id}/dagRuns/{run_id}"), lambda r: r["state"] in FINISHED, timeout, 2
        )
        if not finished:
            raise TimeoutError(f"{dag_id} {run_id} still {run['state']} after {timeout:.0f} s")
        return dict(run)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=200)["task_instances"])

    def tries(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> list[dict[str, Any]]:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/{map_index}/tries"
        if map_index == -1:
            path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/tries"
        return list(self.get(path)["task_instances"])

    def asset_events(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        events = self.get("/assets/events", source_dag_id=dag_id, source_run_id=run_id, limit=100)
        return list(events["asset_events"])
