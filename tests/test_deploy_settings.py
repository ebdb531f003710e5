"""One source of truth for both deployment paths: the native stack's environment is docker-compose.yml's,
as Docker's own tool resolves it, with only the hosts and container paths rewritten; the Docker image
installs what uv.lock resolved. (The stack itself runs in tests/deploy, under ``make test-deploy``.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from deploy.secrets import fresh
from deploy.settings import MissingVariable, Ports, compose_environment, interpolate, native_environment
from tests.conftest import ROOT

PORTS = Ports(postgres=15432, redis=16379, chroma=18000, api=18080, scheduler_health=18974, chroma_internal=18001)
SECRETS = fresh()


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    return None


def _config(variables: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``docker compose config`` of the repository's compose file with ``variables`` only (an empty env file:
    a developer's .env stays out)."""
    command = _compose_command()
    if command is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed (make deploy-deps)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ZAN_", "_AIRFLOW"))} | variables
    env = {k: v for k, v in env.items() if k not in SECRETS or k in variables}
    with tempfile.TemporaryDirectory() as empty:
        env_file = Path(empty) / ".env"
        env_file.touch()
        return subprocess.run([*command, "-f", str(ROOT / "docker-compose.yml"), "--env-file", str(env_file), *args,
                               "config"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip


def _resolved(variables: dict[str, str], *args: str) -> dict[str, Any]:
    """The resolved compose file, as JSON-able data; the secrets come from a fresh ``deploy secrets`` set."""
    import yaml

    done = _config({**SECRETS, **variables}, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    data: dict[str, Any] = yaml.safe_load(done.stdout)
    return data


def test_docker_compose_config_validates_both_profiles() -> None:
    plain = _resolved({})
    celery_only = {n for n, service in plain["services"].items() if "celery" in service.get("profiles", [])}
    assert celery_only == {"redis", "airflow-worker"}  # (docker-compose 1.x lists them all, with their profiles)
    assert plain["services"]["airflow-scheduler"]["environment"]["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    celery = _resolved({"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor"}, "--profile", "celery")
    assert {"redis", "airflow-worker"} <= set(celery["services"])
    assert celery["services"]["airflow-worker"]["environment"]["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"


def test_compose_refuses_to_start_without_a_secret() -> None:
    for name in SECRETS:
        done = _config({k: v for k, v in SECRETS.items() if k != name}, "--profile", "celery")
        assert done.returncode != 0 and "run python -m deploy secrets" in done.stderr, (name, done.stderr[-500:])
    with pytest.raises(MissingVariable, match="AIRFLOW__CORE__FERNET_KEY is required: run python -m deploy secrets"):
        native_environment(PORTS, ROOT, {k: v for k, v in SECRETS.items() if k != "AIRFLOW__CORE__FERNET_KEY"})


def test_native_environment_is_what_compose_resolves(tmp_path: Path) -> None:
    """Each setting docker compose gives the worker reaches the native worker: equal, or with only the
    compose network's host (→ 127.0.0.1 and the native port) or a container path (→ the stack's folder)
    rewritten. Variables (.env) are interpolated the same way on both paths."""
    variables = {"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor", "ZAN_SHARDS": "8", "ZAN_SCHEDULE": "", **SECRETS}
    compose = _resolved(variables, "--profile", "celery")["services"]["airflow-worker"]["environment"]
    native = native_environment(PORTS, tmp_path, variables)
    common = set(compose_environment())
    assert common <= set(compose) and common <= set(native)
    assert native["ZAN_SHARDS"] == compose["ZAN_SHARDS"] == "8"
    assert native["ZAN_SCHEDULE"] == compose["ZAN_SCHEDULE"] == "@weekly"  # empty takes the default, as in compose
    database = SECRETS["POSTGRES_PASSWORD"]
    hosted = {  # the settings that name a compose service, as the native stack must have them
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://airflow:{database}@127.0.0.1:15432/airflow",
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql://airflow:{database}@127.0.0.1:15432/airflow",
        "AIRFLOW__CELERY__BROKER_URL": f"redis://:{SECRETS['REDIS_PASSWORD']}@127.0.0.1:16379/0",
        "ZAN_CHROMA_URL": "http://127.0.0.1:18000",  # the proxy, not Chroma itself
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": "http://127.0.0.1:18080/execution/",
    }
    for name in sorted(common):
        want, got = str(compose[name]), native[name]
        if name in hosted:
            assert got == hosted[name] and _hosts(want) & _hosts(compose_environment()[name]), (name, want, got)
        elif want.startswith("/opt/"):
            assert got.startswith((str(tmp_path), str(ROOT))) and got.endswith(want.rsplit("/", 1)[-1]), (name, got)
        else:
            assert got == want, (name, want, got)
    assert native["ZAN_CHROMA_TOKEN"] == compose["ZAN_CHROMA_TOKEN"] == SECRETS["ZAN_CHROMA_TOKEN"]
    assert native["AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST"] == "127.0.0.1"
    assert native["ZAN_SOURCES"] == str(ROOT / "data" / "sample")
    assert native["ZAN_HOME"] == str(tmp_path / "zan" / "data")


def test_interpolation_reads_variables_as_compose_does() -> None:
    assert interpolate("${X:-d}", {}) == "d"
    assert interpolate("${X:-d}", {"X": ""}) == "d"
    assert interpolate("${X:-d}", {"X": "v"}) == "v"
    assert interpolate("a ${X} b", {"X": "v"}) == "a v b"
    assert interpolate("${X:-}", {}) == ""
    assert interpolate("no variables", {"X": "v"}) == "no variables"
    assert interpolate("${X-d}", {}) == "d" and interpolate("${X-d}", {"X": ""}) == ""  # without ':', unset only
    assert interpolate("${X:?say}", {"X": "v"}) == "v" and interpolate("${X?say}", {"X": ""}) == ""
    for required, given in (("${X:?say}", {}), ("${X:?say}", {"X": ""}), ("${X?say}", {})):
        with pytest.raises(MissingVariable, match="X is required: say"):
            interpolate(required, given)


def test_the_image_installs_what_the_lock_resolved() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    assert "pip install --no-cache-dir -r /opt/zan/requirements.txt" in dockerfile
    assert "COPY --chown=airflow:0 deploy/requirements.txt /opt/zan/requirements.txt" in dockerfile
    assert "--no-deps /opt/zan/src" in dockerfile  # zan itself brings no unlocked dependency
    committed = (ROOT / "deploy" / "requirements.txt").read_text("utf-8")
    pins = dict(line.split("==", 1) for line in committed.splitlines() if "==" in line and not line.startswith(" "))
    assert pins["apache-airflow"] == "3.3.2" and "apache-airflow-providers-celery" in pins and "chromadb" in pins
    lock = (ROOT / "uv.lock").read_text("utf-8")
    for name, version in pins.items():
        assert f'name = "{name.split("[")[0]}"\nversion = "{version.split(" ")[0]}"' in lock, (name, version)
    uv = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if not Path(uv).exists():
        pytest.skip("uv is not installed here (make setup installs it): the export was compared with the lock only")
    exported = subprocess.run([uv, "export", "--frozen", "--no-hashes", "--no-default-groups", "--group", "airflow",
                               "--group", "models", "--no-emit-project", "--no-emit-workspace", "--no-header",
                               "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == committed, "deploy/requirements.txt is stale: run make requirements"


def _hosts(value: str) -> set[str]:
    return set(re.findall(r"(?:@|//)(postgres|redis|chroma-proxy|airflow-apiserver)\b", value))
