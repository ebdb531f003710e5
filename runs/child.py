"""What a run's helper process (a BM25 build or an embedding shard beside the index stage, a stage run in a
process of its own) tells its parent: :func:`report` in the child, :func:`outcome` in the parent;
:func:`in_own_process` runs one call that way and returns its result or raises its error.

A helper's failure keeps the retry class it would have had in the run's own process (``ZanError.transient``,
which an Airflow task reads: :func:`dags.zan_tasks.terminal`): its own exception when it pickles; else a
:class:`RunError` that is transient unless the helper's error said it was terminal (:func:`wrapped`). A helper
that ended without a word (killed, out of memory) is transient too: the run's own process dying the same way
would have been retried.

Every helper process starts from :func:`processes`: a fork server that imported zan's stages once (POSIX), so
a helper costs a fork, not an interpreter and its imports (~0.6 s of CPU each); never a fork of the run's own
process, whose Arrow pools or model threads may hold locks. A large run's helpers are ``fresh`` instead: each a
spawned interpreter, and no server is started (a fork carries the server's whole heap, and the server stays
resident beside the run: measured in :func:`processes`). A helper takes the parent's environment as it is
when the helper starts (:func:`start_helper`), as a spawned one would."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from runs.errors import RunError
from schemas.errors import ZanError

T = TypeVar("T")

# What the fork server imports once, before any helper forks from it: the stages a helper runs (extraction,
# registry, enrich) and what they import (pyarrow, lxml, the extractors); the BM25 build and the embedders.
PRELOAD = ("runs.stages", "runs.lexical", "runs.embedding")


def processes(fresh: bool = False) -> ForkServerContext | SpawnContext:
    """The context a run's helper processes start from: ``forkserver`` with :data:`PRELOAD` where the platform
    has it, else ``spawn``. The server starts at the first helper and serves the process's later runs too; like
    a spawned process, a helper holds none of its parent's memory, threads or locks.

    ``fresh``: ``spawn`` even where a server exists, for a large run (``runs.pipeline.OWN_PROCESS_FROM``),
    whose helpers run for tens of seconds each, so their 0.6 s start is nothing, and whose peak is a helper's
    (a stage's: the word indexes at 2 000 and 20 000 acts). A fork of the server holds the server's heap too, not
    only the stage's: at 2 000 acts of ``bench_kazlaw.py`` the largest helper was 505 MB forked against 423 MB
    spawned, with the server resident beside it (79 MB); the run's tree peaked at 713 against 550 MB (sum of
    RSS; PSS 615 against 485 MB)."""
    if fresh or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))  # read when the server starts; later calls change nothing
    return context


def start_server_early(fresh: bool = False) -> bool:
    """Start the fork server of :func:`processes` now, when the platform has one and ``fresh`` is false, so its
    imports (~0.6 s) run beside the caller's own work (a run's planning) instead of before the first helper.
    Returns whether a server is (now) starting or running. The call only starts the server's process: it
    does not wait for the server's imports."""
    context = processes(fresh)
    if not isinstance(context, ForkServerContext):
        return False
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return True


def adopt_environment(environment: dict[str, str]) -> None:
    """Make this helper's environment ``environment`` (its parent's when it started: the fork server's own is
    the one it was started with, and a setting such as ``ZAN_MAX_FILE_MB`` may have changed since)."""
    if dict(os.environ) != environment:
        os.environ.clear()
        os.environ.update(environment)


def start_helper(target: Callable[..., Any], *args: Any, name: str, fresh: bool = False) -> tuple[BaseProcess, Any]:
    """Start ``target(*args, send)`` in a daemon helper process (:func:`processes`, ``fresh`` as there) that
    first adopts this process's environment as it is now (:func:`adopt_environment`); returns the process and
    the receiving end of its pipe (``send``, the other end, is the helper's alone: :func:`report` writes to it)."""
    context = processes(fresh)
    receive, send = context.Pipe(duplex=False)
    environment = dict(os.environ)
    child = context.Process(target=_in_environment, args=(environment, target, (*args, send)), name=name, daemon=True)
    child.start()
    send.close()
    return child, receive


def _in_environment(environment: dict[str, str], target: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    adopt_environment(environment)
    return target(*args)


class Helper:
    """One call in a helper process started now (:func:`start_helper`: ``target(*args, send)``, which reports
    through ``send`` with :func:`report`): :meth:`poll` while it runs, :meth:`result` to await what it reported
    (:func:`outcome`), :meth:`stop` when the caller failed. Either of the last two releases the process."""

    def __init__(self, target: Callable[..., Any], *args: Any, name: str, what: str, fresh: bool = False) -> None:
        self.what = what
        self.child, self.receive = start_helper(target, *args, name=name, fresh=fresh)

    def poll(self) -> tuple[str, Any] | None:
        """None while the helper runs and has said nothing; then :meth:`result`."""
        if not self.receive.poll() and self.child.is_alive():
            return None
        return self.result()

    def result(self) -> tuple[str, Any]:
        """What the helper reported, awaited: ("ok", (its result, seconds)) or ("error", an exception). Interrupted
        while it waits, the helper is stopped."""
        try:
            answer = outcome(self.receive, self.child, self.what)
        except BaseException:
            self._release(stop=True)
            raise
        self._release(stop=False)
        return answer

    def stop(self) -> None:
        """Stop the helper if it still runs (the caller failed) and release it."""
        self._release(stop=True)

    def _release(self, stop: bool) -> None:
        if stop and self.child.is_alive():
            self.child.terminate()
        self.child.join(timeout=30)
        self.receive.close()


def retry_may_help(exc: BaseException) -> bool:
    """What a caller may do with ``exc``: zan's own errors say (``transient``); anything unexpected may pass
    on a retry, as the Airflow tasks treat it."""
    return exc.transient if isinstance(exc, ZanError) else True


def wrapped(message: str, cause: BaseException | None = None) -> RunError:
    """A :class:`RunError` saying ``message`` that a retry is allowed for exactly when it is for ``cause``
    (no cause: a helper that died or sent what cannot be read, allowed)."""
    error = RunError(message)
    error.transient = retry_may_help(cause) if cause is not None else True  # pickled with the instance
    return error


def report(send: Any, work: Callable[[], Any], what: str) -> None:
    """Run ``work`` and send its outcome through the pipe end ``send``, then close it: ("ok", (its result,
    seconds)) or ("error", the exception itself, so a transient one stays transient; when it does not pickle,
    a :class:`RunError` naming ``what`` with its words and its retry class)."""
    started = time.perf_counter()
    try:
        result = work()
        send.send(("ok", (result, time.perf_counter() - started)))
    except BaseException as exc:  # reported to the run, which fails with it
        try:
            send.send(("error", exc))
        except Exception:
            send.send(("error", wrapped(f"{what}: {type(exc).__name__}: {exc}", exc)))
    finally:
        send.close()


def outcome(receive: Any, child: Any, what: str) -> tuple[str, Any]:
    """What :func:`report` sent from ``child`` through the pipe end ``receive``: ("ok", (result, seconds)) or
    ("error", an exception): the child's own, or a transient :class:`RunError` naming ``what`` when the child
    ended without a word or its message does not unpickle here."""
    try:
        kind, value = receive.recv()
        return kind, value
    except EOFError:
        return "error", wrapped(f"{what} died (exit code {child.exitcode})")
    except Exception as exc:  # an error that does not unpickle here
        return "error", wrapped(f"{what} failed: {type(exc).__name__}: {exc}")


def in_own_process(work: Callable[..., T], *args: Any, what: str, fresh: bool = False) -> T:
    """``work(*args)`` in a helper process of its own (:func:`processes`, ``fresh`` as there; ``work`` and
    ``args`` pickle: a module-level function and plain values); returns its result or raises its error, the
    child's own exception when it pickles (so its class and retry class stay what they were), noted as raised
    there. What the call holds is held by that process alone and goes with it, so two stages never stack
    their memory (``benchmarks/README.md``, "Peak memory, whole runs"). Interrupted or failing in the parent,
    the child is stopped."""
    kind, value = Helper(_reported, work, args, what, name=f"zan {what}", what=what, fresh=fresh).result()
    if kind != "ok":
        value.add_note(f"(raised in {what}, run in a process of its own)")
        raise value
    result: T = value[0]
    return result


def _reported(work: Callable[..., Any], args: tuple[Any, ...], what: str, send: Any) -> None:
    """:func:`in_own_process`'s child: the run's memory settings (:func:`runs.memory.lean_arrow_memory`),
    then the call, reported through ``send``."""
    from runs.memory import lean_arrow_memory

    lean_arrow_memory()
    report(send, lambda: work(*args), what)
