"""docker-compose.yml and the Dockerfile, validated without a Docker engine: the file parses, every service
Airflow 3 needs is there (LocalExecutor by default, a celery profile to scale out), images are pinned,
every setting and volume the DAGs read is declared, and nothing in it is a usable secret or a port open on
every interface."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

CORE = {"postgres", "airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
        "airflow-triggerer", "chroma", "chroma-proxy"}  # fmt: skip
# A setting whose name says it holds a secret.
SECRET_NAME = re.compile(r"PASSWORD|SECRET|_KEY\b|KEY$|TOKEN|PASSWD", re.I)
REQUIRED = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):?\?[^}]+\}")
LOOPBACK = {"127.0.0.1", "${ZAN_PUBLISH_ADDRESS:-127.0.0.1}"}


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
    assert compose["services"]["airflow-scheduler"]["environment"]["ZAN_CHROMA_URL"] == "http://chroma-proxy:8000"


def test_dockerfile_copies_what_the_package_needs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    import tomllib

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["hatch"]["build"]["targets"]["wheel"]
    for package in packages["packages"]:
        assert f"COPY --chown=airflow:0 {package} " in dockerfile, package
    # the typed answer the server imports: its own distribution, which zan's built wheel carries (hatch_build.py)
    assert "COPY --chown=airflow:0 clients/python /opt/zan/src/clients/python" in dockerfile
    assert "hatch_build.py /opt/zan/src/" in dockerfile
    assert "clients/python" not in (ROOT / "deploy" / "requirements.txt").read_text("utf-8")
    assert Path(ROOT / ".dockerignore").read_text("utf-8").count(".venv") == 1


def _settings(compose: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(service, name, value) of every environment setting, the shared x-airflow-common ones included."""
    found = [
        ("x-airflow-common", k, "" if v is None else str(v))
        for k, v in compose["x-airflow-common"]["environment"].items()
    ]
    for service_name, service in compose["services"].items():
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.partition("=")[::2] for item in environment)
        found += [(service_name, str(k), "" if v is None else str(v)) for k, v in environment.items()]
    return found


def test_no_secret_has_a_default_or_is_empty(compose: dict[str, Any]) -> None:
    """Every secret is a required variable (``${VAR:?…}``: compose refuses to start without it), never a
    value or a default someone could read here; passwords inside URLs too; the Fernet key is set."""
    text = (ROOT / "docker-compose.yml").read_text("utf-8")
    for variable in re.finditer(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<rest>[^}]*)\}", text):
        if SECRET_NAME.search(variable["name"]):
            assert re.fullmatch(r":\?.+", variable["rest"]), f"${{{variable['name']}{variable['rest']}}} may default"
    secrets = [(s, n, v) for s, n, v in _settings(compose) if SECRET_NAME.search(n)]
    assert {n for _, n, _ in secrets} >= {"AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET",
                                           "AIRFLOW__API__SECRET_KEY", "POSTGRES_PASSWORD", "ZAN_CHROMA_TOKEN",
                                           "_AIRFLOW_WWW_USER_PASSWORD"}  # fmt: skip
    for service, name, value in secrets:
        required = REQUIRED.fullmatch(value)
        assert required and SECRET_NAME.search(required["name"]), (
            f"{service}: {name}={value!r} is not a required secret"
        )
    for service, name, value in _settings(compose):
        for userinfo in re.findall(r"://([^@/\s]*)@", value):
            password = userinfo.partition(":")[2]
            assert REQUIRED.fullmatch(password), f"{service}: {name} has a password in clear: {value!r}"
    commands = " ".join(str(s.get("command", "")) for s in compose["services"].values())
    assert "requirepass" in commands and not re.search(r"requirepass\s+[\w-]", commands)  # redis: from the variable
    init = compose["services"]["postgres"]["environment"]
    assert init["POSTGRES_HOST_AUTH_METHOD"] == "scram-sha-256" and "trust" not in str(init)


def test_no_port_is_published_on_every_interface(compose: dict[str, Any]) -> None:
    published = 0
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            if isinstance(port, dict):
                address = port.get("host_ip", "")
            else:
                parts = re.split(r":(?![^{]*\})", str(port))  # host_ip:published:target; ':' inside ${…} is not one
                address = parts[0] if len(parts) == 3 else ""
            assert address in LOOPBACK, f"{name} publishes {port!r} on every interface"
            published += 1
    assert published >= 2  # the API and the Chroma proxy, on loopback unless ZAN_PUBLISH_ADDRESS says otherwise


def test_chroma_is_reached_only_through_its_token_proxy(compose: dict[str, Any]) -> None:
    from deploy.proxy import compose_template

    services = compose["services"]
    chroma, proxy = services["chroma"], services["chroma-proxy"]
    assert "ports" not in chroma and chroma["networks"] == ["chroma-internal"]
    assert compose["networks"]["chroma-internal"]["internal"] is True
    assert "chroma-internal" in proxy["networks"]
    assert not any(
        "chroma-internal" in (s.get("networks") or [])
        for n, s in services.items()
        if n not in ("chroma", "chroma-proxy")
    )
    assert REQUIRED.fullmatch(proxy["environment"]["ZAN_CHROMA_TOKEN"])
    mounted = {v.split(":")[0]: v.split(":")[1] for v in proxy["volumes"]}
    assert mounted["./deploy/chroma-proxy.conf.template"] == "/etc/nginx/templates/default.conf.template"
    template = (ROOT / "deploy" / "chroma-proxy.conf.template").read_text("utf-8")
    assert template == compose_template(), "deploy/chroma-proxy.conf.template is stale: write compose_template()"
    assert "Bearer ${ZAN_CHROMA_TOKEN}" in template and "proxy_pass http://chroma:8000;" in template
