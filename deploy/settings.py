"""The native stack's environment, read from docker-compose.yml: one source of truth for both paths.

The compose file's ``x-airflow-common`` environment is every setting the Airflow components and zan's
tasks get. The native stack takes it as it is, with three rewrites and nothing else:

- ``${VAR:-default}`` is interpolated the way ``docker compose`` does (from the caller's variables, else
  the default), so ``AIRFLOW__CORE__EXECUTOR=CeleryExecutor`` is chosen the same way on both paths; a
  required ``${VAR:?message}`` (every secret) raises :class:`MissingVariable` when the caller lacks it;
- the service hosts of the compose network (``postgres``, ``redis``, ``chroma-proxy``, ``airflow-apiserver``)
  become ``127.0.0.1`` and the port the native service listens on;
- the container paths under ``/opt/zan`` and ``/opt/airflow`` become folders of the stack.

``tests/test_deploy_settings.py`` checks that every compose setting reaches the native stack this way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<colon>:?)(?P<op>[-?])(?P<word>[^}]*))?\}")
_HOST = re.compile(
    r"(?P<head>://(?:[^@/\s]*@)?)(?P<host>postgres|redis|chroma-proxy|chroma|airflow-apiserver)(?::\d+)?(?=/|$)"
)


class MissingVariable(ValueError):
    """A ``${VAR:?message}`` the caller's variables lack (compose refuses to start the same way)."""


@dataclass(frozen=True)
class Ports:
    """Where each native service listens on 127.0.0.1: ``chroma`` is the authenticating proxy zan is
    given, ``chroma_internal`` the Chroma server behind it."""

    postgres: int
    redis: int
    chroma: int
    api: int
    scheduler_health: int
    chroma_internal: int = 0
    serve: int = 0  # zan serve (0: a stack started before it had one)

    def of(self, host: str) -> int:
        return {
            "postgres": self.postgres,
            "redis": self.redis,
            "chroma-proxy": self.chroma,
            "chroma": self.chroma_internal,
            "airflow-apiserver": self.api,
        }[host]


def compose_environment(compose: Path = COMPOSE) -> dict[str, str]:
    """The ``x-airflow-common`` environment of the compose file, uninterpolated."""
    document: dict[str, Any] = yaml.safe_load(compose.read_text("utf-8"))
    environment = document["x-airflow-common"]["environment"]
    return {str(k): "" if v is None else str(v) for k, v in environment.items()}


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """``${VAR}``, ``${VAR:-default}`` (unset or empty: the default), ``${VAR-default}`` (unset only) and
    ``${VAR:?message}`` / ``${VAR?message}`` (required: :class:`MissingVariable`) as ``docker compose``
    reads them."""

    def one(match: re.Match[str]) -> str:
        given = variables.get(match["name"])
        if match["op"] is None:
            return given or ""
        lacking = given is None or (given == "" and match["colon"] == ":")
        if match["op"] == "?":
            if lacking:
                raise MissingVariable(f"{match['name']} is required: {match['word'] or 'it is not set'}")
            return str(given)
        return match["word"] if lacking else str(given)

    return _VARIABLE.sub(one, value)


def native_environment(
    ports: Ports, folder: Path, variables: Mapping[str, str], compose: Path = COMPOSE
) -> dict[str, str]:
    """Every compose setting for a stack whose files live under ``folder`` and whose services listen on
    ``ports``, plus the three settings a container gets from its image (AIRFLOW_HOME, the DAGs folder,
    where logs go)."""
    paths = {
        "/opt/zan/sources/sample": ROOT / "data" / "sample",  # the Dockerfile copies it there
        "/opt/zan": folder / "zan",
        "/opt/airflow": folder / "airflow",
    }
    environment: dict[str, str] = {}
    for name, raw in compose_environment(compose).items():
        value = interpolate(raw, variables)
        value = _HOST.sub(lambda m: f"{m['head']}127.0.0.1:{ports.of(m['host'])}", value)
        if value.startswith("/opt/"):
            value = ":".join(_native_path(part, paths) for part in value.split(":"))
        environment[name] = value
    environment.update(
        AIRFLOW_HOME=str(folder / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "dags"),  # compose mounts ./dags at the image's DAGs folder
        AIRFLOW__LOGGING__BASE_LOG_FOLDER=str(folder / "airflow" / "logs"),
        AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT=str(ports.scheduler_health),
    )
    return environment


def _native_path(path: str, paths: Mapping[str, Path]) -> str:
    """A container path under one of ``paths`` (the longest that matches) as the native one."""
    for container in sorted(paths, key=len, reverse=True):
        if path == container or path.startswith(container + "/"):
            return str(paths[container]) + path[len(container) :]
    return path
