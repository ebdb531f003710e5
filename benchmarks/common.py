"""What the benchmarks share: a fresh ``chroma run`` server, a ``zan run`` in its own process with its peak
memory, and a line format that puts each figure beside its baseline and goal."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMA = Path(sys.executable).parent / "chroma"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def chroma_server(path: Path) -> Iterator[tuple[str, int]]:
    """A ``chroma run`` on 127.0.0.1 over ``path``; yields (url, pid)."""
    port = free_port()
    server = subprocess.Popen([str(CHROMA), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"chroma run did not start on {url}") from None
                time.sleep(0.3)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=60)


def peak_rss_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MB."""
    return status_mb(pid, "VmHWM:") or float("nan")


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live process below it (``/proc/PID/task/*/children``)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:  # a process may end between being listed and being read: it has no children left to count
            tasks = list(Path(f"/proc/{current}/task").glob("*/children"))
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                todo += [int(child) for child in task.read_text().split()]
    return found


def status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_with_peak(process: subprocess.Popen[Any], every: float = 0.01) -> tuple[int, float]:
    """Wait for ``process``; return its exit code and the peak RSS in MB of it and the processes it started.

    Read every ``every`` s while it lives: the sum of the current RSS (VmRSS) of the process and every process
    below it (a run's stages, extraction workers or embedding shards in processes of their own count with
    it), and each one's own high-water mark (VmHWM, which only rises, so a spike between two reads of a
    process alone is not missed); the peak is the larger. What the last read misses is teardown, which frees.
    Not ``wait4``'s ``ru_maxrss``: Linux folds the parent's peak into a child's at exec (the memory map the
    child replaced was the parent's), so a benchmark that held 500 MB, a model say, made every ``zan run`` it
    started read ≥ 500 MB whatever zan used (measured: a parent that allocated and freed 500 MB, then
    ``Popen(["true"])``: ru_maxrss 527 MB); and it is one process's, not the tree's."""
    peak = 0.0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            together = 0.0
            for pid in process_tree(process.pid):
                with contextlib.suppress(OSError):  # a process that ended between the listing and the read
                    together += status_mb(pid, "VmRSS:")
                    peak = max(peak, status_mb(pid, "VmHWM:"))
            peak = max(peak, together)
            done.wait(every)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    code = process.wait()
    done.set()
    watcher.join()
    return code, peak


@dataclass
class Run:
    seconds: float
    peak_mb: float
    info: dict[str, Any] = field(default_factory=dict)


def zan_run(args: list[str], root: Path = ROOT) -> Run:
    """``zan run ARGS --json`` in its own process: wall seconds, its own peak RSS (:func:`wait_with_peak`) and
    the run's JSON. ``root``: the checkout whose code runs (another one: a ``git worktree``, its packages
    first on the path)."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(root)} if root != ROOT else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([sys.executable, "-m", "cli", "run", *args, "--json"], cwd=root, stdout=out,
                                   stderr=err, env=env)  # fmt: skip
        code, peak = wait_with_peak(process)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "replace")
        errors = err.read().decode("utf-8", "replace")
    if code != 0:
        raise RuntimeError(f"zan run {' '.join(args)} failed: {(text + errors)[-1500:]}")
    return Run(seconds, peak, json.loads(text[text.index("{") : text.rindex("}") + 1]))


def line(label: str, value: str, baseline: str, goal: str, passed: bool | None) -> str:
    verdict = "" if passed is None else ("pass" if passed else "FAIL")
    return f"{label:<46} {value:>16}   vs {baseline:<30} goal {goal:<12} {verdict}"


def spread(values: list[float], unit: str = "") -> str:
    """``min / median / max`` of ``values``, as the benchmarks print every alternated timing."""
    import statistics

    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}{unit}"


def load() -> str:
    """The 1, 5 and 15 minute load averages, printed beside every comparison (a busy machine shows here)."""
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def embedder(kind: str) -> Iterator[str]:
    """zan's ``--embedder`` spec for a benchmark on the real-shaped corpus: ``e5`` (the default) serves the real
    model's vectors (:mod:`e5_service`, 384-d) for the ``with`` block; ``hash`` is the offline hashed n-grams,
    for the tiny size CI runs (no model vectors to compute on a fresh machine; timings mean nothing there)."""
    if kind == "hash":
        yield "hash"
        return
    from e5_service import serving

    with serving() as (spec, _):
        yield spec


@contextlib.contextmanager
def embedder_process(kind: str) -> Iterator[str]:
    """As :func:`embedder`, with the embeddings service in a process of its own, as a deployment runs one: a
    benchmark that times requests from client threads must not share their interpreter with the model."""
    if kind == "hash":
        yield "hash"
        return
    import signal

    service = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "e5_service.py"), "--port",
                                str(free_port())], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert service.stdout is not None
        first = service.stdout.readline()  # «--embedder 'openai:…'» once it listens
        if not first.startswith("--embedder"):
            raise RuntimeError(f"the embeddings service did not start: {first!r}")
        yield first.split("'")[1]
    finally:
        service.send_signal(signal.SIGINT)  # its cache of vectors is saved on the way out
        try:
            service.wait(timeout=120)
        except subprocess.TimeoutExpired:
            service.kill()
