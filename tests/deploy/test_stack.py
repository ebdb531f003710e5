"""zan's DAGs under a real Airflow: the native stack (PostgreSQL, Redis, api-server, scheduler,
dag-processor, triggerer, two Celery workers, a ``chroma run`` server), driven only through the REST API.

``make test-deploy`` runs this module (CI does too); ``make test`` leaves it out. It needs Debian's
``postgresql`` and ``redis-server`` (``make deploy-deps``) and skips, saying so, without them.

The tests share one stack and run in order: a clean re-extract is the reference the fault runs must equal.
The first test checks the stack is closed as a shared host needs it: listeners on 127.0.0.1 only, Chroma
behind its token, PostgreSQL and Redis asking for their passwords, no token signed with anything the
repository holds accepted by the API.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy.api import Api
from deploy.stack import Stack, StackError, check_packages, postgres_bin, session_processes
from tests.conftest import CORPUS, ROOT

pytestmark = pytest.mark.deploy

# Shorter than production so a dead worker's task is noticed and retried within the test: the scheduler
# declares a task instance lost after 30 s without a heartbeat, and a retry waits 2 s (then backs off).
OVERRIDES = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "2",
}
VARIABLES = {"ZAN_SCHEDULE": "none", "ZAN_SHARDS": "4"}
# a kazakhstan-law scope the DAG clones and reads: a git repository of one real act, its remote a local path
RESCUERS = ("kazlaw/ministerial/07-ministerial/103003000000-qriim/2018/"
            "0711-ob-utverzhdenii-pravil-attestatsii-i-pereattestatsii-spasatelei-123851")  # fmt: skip


def _upstream(folder: Path) -> Path | None:
    """A scope's upstream repository with the real act in it, or None without git or the shared corpus."""
    act = CORPUS / RESCUERS
    if shutil.which("git") is None or not act.is_dir():
        return None
    repo = folder / "ministerial"
    shutil.copytree(act, repo / RESCUERS.split("/", 2)[2])
    identity = {"GIT_AUTHOR_NAME": "zan", "GIT_AUTHOR_EMAIL": "zan@example.org", "GIT_COMMITTER_NAME": "zan",
                "GIT_COMMITTER_EMAIL": "zan@example.org"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "one act"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=os.environ | identity)
    return repo


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    try:
        check_packages()
    except StackError as exc:
        pytest.skip(str(exc))
    variables = dict(VARIABLES)
    upstream = _upstream(tmp_path_factory.mktemp("upstream"))
    folder = tmp_path_factory.mktemp("stack")
    if upstream is not None:
        variables["ZAN_GIT_SCOPES"] = f"ministerial={upstream}@{folder / 'scopes' / 'ministerial'}"
    stack = Stack(folder, 2, variables, dict(OVERRIDES))
    stack.up()
    try:
        yield stack
    finally:
        stack.down()


@pytest.fixture(scope="module")
def api(stack: Stack) -> Api:
    api = Api(stack.api_url, stack.api_password)
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


def test_every_listener_is_on_loopback(stack: Stack) -> None:
    """What ``ss -ltnp`` shows for the stack's processes (read from /proc, which ss reads too): each listening
    socket is bound to 127.0.0.1, the triggerer's and scheduler's log servers (which bind every interface)
    are not there, and the ports the stack announces are."""
    assert stack.ports
    listening = _listeners(_stack_pids(stack))
    assert all(address == "127.0.0.1" for address, _ in listening), (sorted(listening), _ss())
    ports = {port for _, port in listening}
    expected = {stack.ports.api, stack.ports.chroma, stack.ports.chroma_internal, stack.ports.postgres,
                stack.ports.redis, stack.ports.scheduler_health, stack.ports.serve}  # fmt: skip
    assert expected <= ports, (expected - ports, _ss())
    assert not ports & {8793, 8794}, _ss()  # no log servers


def test_chroma_answers_only_with_the_token(stack: Stack) -> None:
    heartbeat = f"{stack.chroma_url}/api/v2/heartbeat"
    assert httpx.get(heartbeat).status_code == 401
    assert httpx.get(heartbeat, headers={"Authorization": f"Bearer {stack.chroma_token}x"}).status_code == 401
    deleted = httpx.delete(
        f"{stack.chroma_url}/api/v2/tenants/default_tenant/databases/default_database/collections/zan_chunks"
    )
    assert deleted.status_code == 401
    assert httpx.get(heartbeat, headers={"Authorization": f"Bearer {stack.chroma_token}"}).status_code == 200


def test_postgres_and_redis_ask_for_their_passwords(stack: Stack) -> None:
    assert stack.ports
    psql = [str(postgres_bin() / "psql"), "-w", "-h", "127.0.0.1", "-p", str(stack.ports.postgres), "-d", "airflow",
            "-tAc", "SELECT current_user"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"PGPASSFILE": os.devnull}
    users = [[]] + ([["runuser", "-u", "nobody", "--"]] if os.geteuid() == 0 else [])  # this user, and another
    for as_user in users:
        for role in ("airflow", "postgres"):
            done = subprocess.run([*as_user, *psql, "-U", role], env=env, capture_output=True, text=True, timeout=30)
            assert done.returncode != 0 and "password" in done.stderr, (as_user, role, done.stdout, done.stderr)
    socket_dir = str(Path(stack.pg_folder) / "run")
    local = subprocess.run([*psql[:2], "-h", socket_dir, *psql[4:], "-U", "postgres"], env=env, capture_output=True,
                           text=True, timeout=30)  # fmt: skip
    assert local.returncode != 0 and "password" in local.stderr, local.stderr  # the socket too: no trust, no peer
    with_password = env | {"PGPASSWORD": stack.variables["POSTGRES_PASSWORD"]}
    done = subprocess.run([*psql, "-U", "airflow"], env=with_password, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "airflow", done.stderr
    with socket.create_connection(("127.0.0.1", stack.ports.redis), timeout=10) as redis:
        redis.sendall(b"PING\r\n")
        assert redis.recv(200).startswith(b"-NOAUTH"), "redis answered without its password"


def test_no_token_signed_with_a_value_from_the_repository_is_accepted(stack: Stack) -> None:
    """A JWT signed with any word the repository holds (its files, the defaults it used to have) gets 401;
    the same token signed with the stack's own secret gets 200, so the forgery is otherwise well formed."""
    import jwt

    def forged(key: str, audience: bool) -> str:
        now = int(time.time())
        claims = {"sub": "1", "iat": now, "nbf": now, "exp": now + 600} | (
            {"aud": "apache-airflow"} if audience else {}
        )
        with warnings.catch_warnings():  # most words are shorter than HS512 recommends: that is the point
            warnings.simplefilter("ignore")
            return jwt.encode(claims, key, algorithm="HS512")

    with httpx.Client(base_url=f"{stack.api_url}/api/v2", timeout=30) as client:

        def status(token: str) -> int:
            return client.get("/connections", headers={"Authorization": f"Bearer {token}"}).status_code

        secret = stack.environment()["AIRFLOW__API_AUTH__JWT_SECRET"]
        forms = [audience for audience in (True, False) if status(forged(secret, audience)) == 200]
        assert forms, "a token signed with the stack's own secret was refused: the forgery is malformed"
        candidates = _repository_words() | {"zan-local-jwt-secret-change-me", "zan-local-session-key-change-me",
                                            "airflow", "secret", "changeme"}  # fmt: skip
        answers = {
            (word, audience): status(forged(word, audience)) for word in sorted(candidates) for audience in forms
        }
        accepted = [(word, code) for (word, _), code in answers.items() if code not in (401, 403)]
        assert accepted == [], accepted[:10]
        assert len(candidates) > 500  # the repository's words, not a handful


def test_reextract_runs_on_both_workers_and_emits_assets(stack: Stack, api: Api, clean: dict[str, Any]) -> None:
    run = clean["run"]
    tis = api.task_instances("zan_reextract", run["dag_run_id"])
    scoped = "ZAN_GIT_SCOPES" in stack.variables
    # with no scope configured the mapped update task has nothing to map over, and Airflow skips it
    assert {t["state"] for t in tis if t["task_id"] != "update_scope"} == {"success"}
    assert {t["state"] for t in tis if t["task_id"] == "update_scope"} == {"success" if scoped else "skipped"}
    shards = [t for t in tis if t["task_id"] == "extract"]
    assert len(shards) == 4
    assert {t["hostname"].split("@")[0] for t in shards} == {"worker1", "worker2"}
    events = api.asset_events("zan_reextract", run["dag_run_id"])
    assert {e["name"] for e in events} == {"zan_registry", "zan_index"}
    assert {e["extra"]["version"] for e in events} == {clean["published"]["version"]}
    published = clean["published"]
    assert published["chunks"] and published["chunks"] == _indexed(stack)
    assert "k1500000414" in published["documents"]  # the Labour Code of the bundled sample
    if scoped:  # the scope was cloned by its task and read: the act from its meta.yaml (registration 17233)
        assert (Path(stack.folder) / "scopes" / "ministerial" / ".git").is_dir()
        assert "v1800017233" in published["documents"]
    else:
        warnings.warn("no git or no shared corpus: the kazakhstan-law scope was not configured", stacklevel=1)


def test_zan_serve_answers_from_the_version_the_dag_published(stack: Stack, clean: dict[str, Any]) -> None:
    """The stack's zan serve, started before anything was published, follows the DAG run's version without a
    restart, and answers lookups only with its token."""
    version = clean["published"]["version"]
    deadline = time.monotonic() + 30
    while (health := httpx.get(f"{stack.serve_url}/healthz").json()).get("version") != version:
        assert time.monotonic() < deadline, health
        time.sleep(0.5)
    lookup = f"{stack.serve_url}/api/lookup"
    assert httpx.get(lookup, params={"q": "приказ 211"}).status_code == 401
    answer = httpx.get(lookup, params={"q": "приказ 211"}, headers={"Authorization": f"Bearer {stack.serve_token}"})
    assert answer.status_code == 200 and answer.json()["status"] == "ambiguous"
    assert answer.json()["version"] == version == answer.headers["x-zan-version"]
    plain = httpx.get(lookup, params={"q": "обучение безопасности труда"},
                      headers={"Authorization": f"Bearer {stack.serve_token}"}, timeout=60)  # fmt: skip
    assert plain.status_code == 200 and plain.json()["chunks"], plain.text[:500]  # through the Chroma proxy


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

    client = open_client(None, stack.chroma_url, stack.chroma_token)
    keys = index_state(client.get_collection("zan_chunks"))
    return dict(zip(keys.column("chunk_id").to_pylist(), keys.column("text_hash").to_pylist(), strict=True))


def _stack_pids(stack: Stack) -> set[int]:
    """Every live process of the stack: each service's session, and PostgreSQL's postmaster."""
    pids = {p for pid in stack.pids.values() if pid for p in session_processes(pid)}
    postmaster = Path(stack.pg_folder) / "data" / "postmaster.pid"
    pids.add(int(postmaster.read_text().split()[0]))
    return pids


def _listeners(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every listening TCP socket (IPv4 and IPv6) that one of ``pids`` holds."""
    inodes = set()
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        for fd in fds.iterdir() if fds.exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host order
            found.add((socket.inet_ntop(socket.AF_INET if size == 4 else socket.AF_INET6, words), int(port, 16)))
    return found


def _ss() -> str:
    ss = shutil.which("ss")
    return subprocess.run([ss, "-ltnp"], capture_output=True, text=True).stdout if ss else "(ss not installed)"


def _repository_words() -> set[str]:
    """Every word of 4 to 80 characters in the repository's deployment files, docs and deploy code."""
    files = [ROOT / name for name in ("docker-compose.yml", "Dockerfile", "Makefile", "README.md", "pyproject.toml")]
    files += [*(ROOT / "deploy").glob("*.py"), *(ROOT / "deploy").glob("*.template"), *(ROOT / "dags").glob("*.py"),
              *(ROOT / "tests").glob("test_*deploy*.py"), *(ROOT / "tests").glob("test_compose.py"), ROOT / ".ci" / "run"]  # fmt: skip
    words: set[str] = set()
    for path in files:
        if path.exists():
            words |= set(re.findall(r"[\w.:/+=-]{4,80}", path.read_text("utf-8", "replace")))
    return words
