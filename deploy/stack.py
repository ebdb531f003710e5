"""The native stack: zan's Airflow deployment on one machine, from packages only.

PostgreSQL (Debian's ``postgresql``) is the metadata database and the Celery result backend, Redis
(Debian's ``redis-server``) the Celery broker; then ``airflow api-server``, ``scheduler``, ``dag-processor``,
``triggerer``, N ``celery worker``s, a ``chroma run`` server behind its token proxy (Debian's nginx,
:mod:`deploy.proxy`) and ``zan serve`` (the lookup API and pages, requiring ``ZAN_SERVE_TOKEN``), each in its
own session, with the settings of docker-compose.yml
(:mod:`deploy.settings`). Everything lives under one folder: data, logs, and ``stack.json`` (ports, pids and
the stack's secrets, readable by its owner only), so ``down`` works from another process.

Safe on a shared host: every listener binds 127.0.0.1 (the log servers, which cannot be told a host, are
off: the api-server reads the task logs from the stack's folder); each secret is random per stack
(:mod:`deploy.secrets`); PostgreSQL asks every role for its password (scram-sha-256, never trust); Redis
requires its password; Chroma answers only requests with the token, through the proxy. Chroma's own port is
on loopback too, so a local user could reach it past the proxy: the compose deployment, where Chroma has no
published port, closes that as well.

    python -m deploy up --folder /tmp/zan-stack --workers 2     # prints the API URL when healthy
    python -m deploy down --folder /tmp/zan-stack
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from deploy import proxy
from deploy.api import until
from deploy.processes import alive, http_ok, session_processes, signal_session
from deploy.secrets import check, fresh, missing, write_private
from deploy.settings import ROOT, Ports, native_environment

BIN = Path(sys.executable).parent
PACKAGES = {"postgres": "postgresql", "redis-server": "redis-server", "nginx": "nginx-light"}  # binary → package
USER = "airflow"  # as docker-compose.yml creates the API user (_AIRFLOW_WWW_USER_USERNAME)


class StackError(RuntimeError):
    """A service did not start or become healthy; the message names it and its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's binaries (Debian puts them under /usr/lib/postgresql/<major>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise StackError("PostgreSQL is not installed: apt-get install postgresql (make deploy-deps)")
    return found[-1].parent


def check_packages() -> None:
    """Raise :class:`StackError` naming the Debian packages the stack needs and this machine lacks."""
    lacking = [] if list(Path("/usr/lib/postgresql").glob("*/bin/postgres")) else [PACKAGES["postgres"]]
    lacking += [PACKAGES["redis-server"]] if shutil.which("redis-server") is None else []
    try:
        proxy.nginx()
    except FileNotFoundError:
        lacking.append(PACKAGES["nginx"])
    if lacking:
        raise StackError(f"missing Debian packages: {' '.join(lacking)} (make deploy-deps installs them)")


@dataclass
class Stack:
    """One native stack under ``folder``. ``variables`` are what compose interpolates from (its .env);
    ``overrides`` are settings added on top (a test's shorter heartbeat timeout, say)."""

    folder: Path
    workers: int = 2
    variables: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    ports: Ports | None = None
    pids: dict[str, int] = field(default_factory=dict)
    pg_folder: str = ""  # PostgreSQL's data and socket: its own folder in /tmp, which its user can reach

    # ---- state on disk -------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.folder / "stack.json"

    def save(self) -> None:
        body = {
            "workers": self.workers,
            "variables": self.variables,
            "overrides": self.overrides,
            "pids": self.pids,
            "ports": asdict(self.ports) if self.ports else None,
            "pg_folder": self.pg_folder,
        }
        write_private(self.state_file, json.dumps(body, indent=2), atomic=True)  # it holds the stack's secrets

    @classmethod
    def load(cls, folder: Path) -> Stack:
        body = json.loads((folder / "stack.json").read_text("utf-8"))
        ports = Ports(**body["ports"]) if body["ports"] else None
        return cls(
            folder,
            body["workers"],
            body["variables"],
            body["overrides"],
            ports,
            body["pids"],
            pg_folder=body["pg_folder"],
        )

    # ---- settings -----------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        assert self.ports
        return f"http://127.0.0.1:{self.ports.api}"

    @property
    def chroma_url(self) -> str:
        """The proxy zan is given: every request needs :attr:`chroma_token`."""
        assert self.ports
        return f"http://127.0.0.1:{self.ports.chroma}"

    @property
    def chroma_token(self) -> str:
        return self.variables["ZAN_CHROMA_TOKEN"]

    @property
    def api_password(self) -> str:
        """The API user's (``airflow``) password, random per stack."""
        return self.variables["_AIRFLOW_WWW_USER_PASSWORD"]

    def describe(self) -> dict[str, object]:
        """What ``python -m deploy up|status`` prints: where things are, never a secret."""
        return {
            "api": self.api_url,
            "chroma": self.chroma_url,
            "serve": self.serve_url,
            "pids": self.pids,
            "secrets": f"{self.state_file} (variables: the API user's password, ZAN_CHROMA_TOKEN, …)",
        }

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        assert self.ports
        variables = {"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor", **self.variables}
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ZAN_"))}
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        return {
            **keep,
            **native_environment(self.ports, self.folder, variables),
            "PYTHONPATH": pythonpath,
            **self.overrides,
            **(extra or {}),
        }

    # ---- lifecycle ----------------------------------------------------------------------------------
    def up(self, timeout: float = 240) -> None:
        """Start every service and wait until each is healthy; on failure everything started is stopped."""
        check_packages()
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "logs").mkdir(exist_ok=True)
        self.ports = Ports(*(free_port() for _ in range(7)))
        self.variables.update({k: v for k, v in fresh().items() if k in missing(self.variables)})
        check(self.variables)
        env = self.environment()
        for path in ("ZAN_HOME", "ZAN_LANDING"):
            Path(env[path]).mkdir(parents=True, exist_ok=True)
        self.save()
        try:
            self._postgres()
            self._start("redis", ["redis-server", str(self._redis_config())])
            self.start_chroma()
            self._start_proxy()
            self._airflow_once(["db", "migrate"], timeout=300)
            person = ["--role", "Admin", "--email", "airflow@example.com", "--firstname", "Air", "--lastname", "Flow"]
            self._airflow_once(["users", "create", "--username", USER, f"--password={self.api_password}", *person])
            # the DAGs' embed tasks run in this pool (dags/zan_tasks.py EMBED_POOL), as docker-compose.yml makes it
            slots = env.get("ZAN_EMBED_CONCURRENCY", "2")
            self._airflow_once(["pools", "set", "zan_embed", slots, "zan embed tasks at once"])
            api = f"api-server --host 127.0.0.1 --port {self.ports.api} --workers 1".split()
            self._start("api-server", [str(BIN / "airflow"), *api])
            # no log servers: they listen on every interface and cannot be told otherwise
            for name in ("scheduler", "triggerer"):
                self._start(name, [str(BIN / "airflow"), name, "--skip-serve-logs"])
            self._start("dag-processor", [str(BIN / "airflow"), "dag-processor"])
            for n in range(1, self.workers + 1):
                self.start_worker(f"worker{n}")
            self.start_serve()
            self.wait_healthy(timeout)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop every service this stack started (see :meth:`stop`), then PostgreSQL."""
        for name in reversed(list(self.pids)):
            if name != "postgres":
                self.stop(name)
        self._pg_ctl("stop", "-m", "fast")
        if self.pg_folder:
            shutil.rmtree(self.pg_folder, ignore_errors=True)
        self.pids.clear()
        if self.state_file.exists():
            self.save()

    def stop(self, name: str, kill: bool = False) -> None:
        """Stop one service and every process of its session: a worker's task processes run in process
        groups of their own, so the group alone is not enough (``kill``: SIGKILL at once, as a machine dying
        would; else SIGTERM, then SIGKILL after 20 s)."""
        pid = self.pids.pop(name, None)
        if pid is None:
            return
        signal_session(pid, signal.SIGKILL if kill else signal.SIGTERM)
        until(lambda: not (alive(pid) or session_processes(pid)), 20, 0.2)
        signal_session(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        self.save()

    def start_chroma(self) -> None:
        """The Chroma server on its loopback port behind the proxy (the proxy keeps running without it)."""
        assert self.ports
        self._start(
            "chroma",
            [
                str(BIN / "chroma"),
                "run",
                "--path",
                str(self.folder / "chroma"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.ports.chroma_internal),
            ],
        )
        internal = f"http://127.0.0.1:{self.ports.chroma_internal}/api/v2/heartbeat"
        _wait(lambda: http_ok(internal), 60, "chroma", self._log("chroma"))

    def _start_proxy(self) -> None:
        assert self.ports
        config = proxy.write_config(
            self.folder / "chroma-proxy",
            f"127.0.0.1:{self.ports.chroma}",
            f"127.0.0.1:{self.ports.chroma_internal}",
            self.chroma_token,
        )
        self._start("chroma-proxy", proxy.command(config))
        heartbeat = f"{self.chroma_url}/api/v2/heartbeat"
        _wait(lambda: http_ok(heartbeat, self.chroma_token), 30, "chroma-proxy", self._log("chroma-proxy"))

    def _redis_config(self) -> Path:
        """Redis's settings in a file only its owner reads: the password stays off the command line."""
        assert self.ports
        path = self.folder / "redis.conf"
        write_private(
            path,
            f'port {self.ports.redis}\nbind 127.0.0.1\nprotected-mode yes\nsave ""\nappendonly no\n'
            f"dir {self.folder}\nrequirepass {self.variables['REDIS_PASSWORD']}\n",
        )
        return path

    @property
    def serve_url(self) -> str:
        """``zan serve``: every request but ``/healthz`` needs :attr:`serve_token`."""
        assert self.ports
        return f"http://127.0.0.1:{self.ports.serve}"

    @property
    def serve_token(self) -> str:
        return self.variables["ZAN_SERVE_TOKEN"]

    def start_serve(self) -> None:
        """``zan serve`` over the stack's home and Chroma proxy, as the compose file's ``zan-serve`` runs it."""
        assert self.ports
        home = self.environment()["ZAN_HOME"]
        self._start(
            "zan-serve",
            [str(BIN / "zan"), "serve", "--home", home, "--host", "127.0.0.1", "--port", str(self.ports.serve)],
            {"ZAN_SERVE_TOKEN": self.serve_token},
        )

    def start_worker(self, name: str, extra: Mapping[str, str] | None = None) -> None:
        """A Celery worker named ``name``: its task instances record ``<name>@<host>`` as their hostname."""
        env = {
            "ZAN_WORKER_NAME": name,
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "deploy.naming.worker_hostname",
            **(extra or {}),
        }
        self._start(
            name,
            [
                str(BIN / "airflow"),
                *f"celery worker --celery-hostname {name}@%h --concurrency 2 --skip-serve-logs".split(),
                "--pid",
                str(self.folder / f"{name}.pid"),
            ],
            env,
        )

    def wait_healthy(self, timeout: float = 240) -> None:
        """The API answers, the scheduler, dag-processor and triggerer heartbeat, every worker answers a
        Celery ping."""
        checks: list[tuple[Callable[[], bool], str]] = [
            (lambda: http_ok(f"{self.api_url}/api/v2/version"), "api-server"),
            (self._components_healthy, "scheduler"),
            (self._workers_answer, "worker1"),
            (lambda: http_ok(f"{self.serve_url}/healthz", ok=(200, 503)), "zan-serve"),  # 503: nothing published yet
        ]
        for ready, name in checks:
            _wait(functools.partial(self._running_and, ready), timeout, name, self._log(name))

    def _running_and(self, ready: Callable[[], bool]) -> bool:
        return self._running() and ready()

    def _running(self) -> bool:
        """Every process the stack started is alive (else :class:`StackError` naming the first that died)."""
        for name, pid in self.pids.items():
            if pid and not alive(pid):
                tail = self._log(name).read_text("utf-8", "replace")[-1500:]
                raise StackError(f"{name} died; see {self._log(name)}:\n{tail}")
        return True

    # ---- internals ----------------------------------------------------------------------------------
    def _log(self, name: str) -> Path:
        return self.folder / "logs" / f"{name}.log"

    def _start(self, name: str, command: list[str], extra: Mapping[str, str] | None = None) -> None:
        with self._log(name).open("ab") as log:
            process = subprocess.Popen(
                command,
                env=self.environment(extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.folder,
            )
        self.pids[name] = process.pid
        self.save()
        time.sleep(0.2)
        if process.poll() is not None:
            raise StackError(f"{name} exited at once ({process.returncode}); see {self._log(name)}")

    def _airflow_once(self, args: list[str], timeout: float = 120) -> None:
        name = "airflow-" + args[0]
        with self._log(name).open("ab") as log:
            done = subprocess.run(
                [str(BIN / "airflow"), *args],
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                cwd=self.folder,
            )
        if done.returncode != 0:
            raise StackError(f"airflow {' '.join(args[:2])} failed ({done.returncode}); see {self._log(name)}")

    def _postgres(self) -> None:
        """initdb into the stack's folder, start on 127.0.0.1, create the ``airflow`` role and database
        (PostgreSQL refuses to run as root, so as root it runs as the ``postgres`` user)."""
        assert self.ports
        self.pg_folder = tempfile.mkdtemp(prefix="zan-postgres-")
        self.save()
        data, sockets = Path(self.pg_folder) / "data", Path(self.pg_folder) / "run"
        for folder in (Path(self.pg_folder), data, sockets):
            folder.mkdir(exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(folder, "postgres", "postgres")
        superuser = fresh()["POSTGRES_PASSWORD"]  # used once, here, then only a scram verifier in the cluster
        if not (data / "PG_VERSION").exists():
            pwfile = Path(self.pg_folder) / "pwfile"
            write_private(pwfile, superuser + "\n")
            if os.geteuid() == 0:
                shutil.chown(pwfile, "postgres", "postgres")
            try:
                self._as_postgres(
                    [
                        str(postgres_bin() / "initdb"),
                        "-D",
                        str(data),
                        f"--pwfile={pwfile}",
                        *["-U", "postgres", "-E", "UTF8", "--auth-local=scram-sha-256", "--auth-host=scram-sha-256"],
                    ],
                    "initdb",
                )
            finally:
                pwfile.unlink()
        options = f"-p {self.ports.postgres} -k {sockets} -c listen_addresses=127.0.0.1"
        self._pg_ctl("start", "-w", "-t", "60", "-o", options)
        self.pids["postgres"] = 0
        psql = [
            str(postgres_bin() / "psql"),
            *f"-h 127.0.0.1 -p {self.ports.postgres} -U postgres -w".split(),
            *["-v", "ON_ERROR_STOP=1", "-c"],
        ]
        role = self.variables["POSTGRES_PASSWORD"].replace("'", "''")
        with_password = {"PGPASSWORD": superuser}
        self._as_postgres([*psql, f"CREATE ROLE {USER} LOGIN PASSWORD '{role}'"], "psql", env=with_password)
        self._as_postgres([*psql, f"CREATE DATABASE airflow OWNER {USER}"], "psql", env=with_password)

    def _pg_ctl(self, *args: str) -> None:
        data = Path(self.pg_folder) / "data"
        if not self.pg_folder or not (data / "PG_VERSION").exists():
            return
        self._as_postgres(
            [str(postgres_bin() / "pg_ctl"), "-D", str(data), "-l", str(Path(self.pg_folder) / "log"), *args],
            "pg_ctl",
            check=args[0] == "start",
        )

    def _as_postgres(
        self, command: list[str], name: str, check: bool = True, env: Mapping[str, str] | None = None
    ) -> None:
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, cwd="/", env={**os.environ, **(env or {})}
        )
        if check and done.returncode != 0:
            raise StackError(f"{name} failed ({done.returncode}): {(done.stdout + done.stderr)[-800:]}")

    def _components_healthy(self) -> bool:
        try:
            body = httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return False
        return all(
            body.get(c, {}).get("status") == "healthy"
            for c in ("metadatabase", "scheduler", "triggerer", "dag_processor")
        )

    def _workers_answer(self) -> bool:
        done = subprocess.run(
            [
                str(BIN / "celery"),
                *["--app", "airflow.providers.celery.executors.celery_executor.app"],
                *["inspect", "ping", "--json", "--timeout", "5"],
            ],
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.folder,
        )
        try:
            answers = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        except ValueError:
            return False
        names = {n.split("@")[0] for n in (answers if isinstance(answers, dict) else {})}
        wanted = {n for n in self.pids if n.startswith("worker")}
        return wanted <= names


def _wait(ready: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    if not until(ready, timeout, 1):
        tail = log.read_text("utf-8", "replace")[-1500:] if log.exists() else "(no log)"
        raise StackError(f"{what} not healthy after {timeout:.0f} s; {log}:\n{tail}")


@contextlib.contextmanager
def running(
    folder: Path,
    workers: int = 2,
    variables: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Iterator[Stack]:
    """A stack for the length of a ``with`` block (tests, benchmarks)."""
    stack = Stack(folder, workers, dict(variables or {}), dict(overrides or {}))
    stack.up()
    try:
        yield stack
    finally:
        stack.down()
