"""docker-compose.yml and the Dockerfile, validated without a Docker engine: the file parses, every service
Airflow 3 needs is there (LocalExecutor by default, a celery profile to scale out), images are pinned, and
every setting and volume the DAGs read is declared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

CORE = {"postgres", "airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
        "airflow-triggerer", "chroma"}  # fmt: skip


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text("utf-8"))
    return data


def test_services_and_profiles(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) >= CORE
    assert {n for n, s in services.items() if "celery" in s.get("profiles", [])} == {"redis", "airflow-worker"}
    assert all(not s.get("profiles") for n, s in services.items() if n in CORE)  # default: LocalExecutor
    common = services["airflow-scheduler"]["environment"]
    assert common["AIRFLOW__CORE__EXECUTOR"] == "${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
    assert services["airflow-apiserver"]["command"] == "api-server"
    assert services["airflow-dag-processor"]["command"] == "dag-processor"
    assert services["airflow-worker"]["command"] == "celery worker"
    assert services["chroma"]["command"][:2] == ["chroma", "run"]


def test_images_are_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image = service["image"]
        assert re.fullmatch(r"[\w./-]+:\d[\w.-]*", image), f"{name}: image {image!r} is not pinned to a version"
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    assert re.search(r"^FROM apache/airflow:3\.3\.2-python3\.11$", dockerfile, re.M)
    assert "apache-airflow==3.3.2" in (ROOT / "deploy" / "requirements.txt").read_text("utf-8").splitlines()


def test_everything_the_dags_read_is_declared(compose: dict[str, Any]) -> None:
    used = set(re.findall(r'setting\("(ZAN_[A-Z_]+)"', (ROOT / "dags" / "zan_tasks.py").read_text("utf-8")))
    used |= set(re.findall(r'"(ZAN_[A-Z_]+)"', (ROOT / "dags" / "zan_reextract.py").read_text("utf-8")))
    assert used >= {"ZAN_HOME", "ZAN_SOURCES", "ZAN_LANDING", "ZAN_CHROMA_URL", "ZAN_EMBEDDER", "ZAN_SHARDS"}
    for name in ("airflow-scheduler", "airflow-worker", "airflow-dag-processor", "airflow-apiserver"):
        environment = compose["services"][name]["environment"]
        assert used <= set(environment), (name, used - set(environment))
        volumes = compose["services"][name]["volumes"]
        targets = {v.split(":")[1] for v in volumes}
        assert {"/opt/airflow/dags", "/opt/zan/data", "/opt/zan/landing"} <= targets
        named = {v.split(":")[0] for v in volumes if not v.startswith((".", "$"))}
        assert named <= set(compose["volumes"]), named - set(compose["volumes"])
    assert compose["services"]["airflow-scheduler"]["environment"]["ZAN_CHROMA_URL"] == "http://chroma:8000"


def test_dockerfile_copies_what_the_package_needs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    import tomllib

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["hatch"]["build"]["targets"]["wheel"]
    for package in packages["packages"]:
        assert f"COPY --chown=airflow:0 {package} " in dockerfile, package
    assert Path(ROOT / ".dockerignore").read_text("utf-8").count(".venv") == 1
