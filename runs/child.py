"""What a run's helper process (a BM25 build or an embedding shard beside the index stage) tells its parent:
:func:`report` in the child, :func:`outcome` in the parent.

A helper's failure keeps the retry class it would have had in the run's own process (``ZanError.transient``,
which an Airflow task reads: :func:`dags.zan_tasks.terminal`): its own exception when it pickles; else a
:class:`RunError` that is transient unless the helper's error said it was terminal (:func:`wrapped`). A helper
that ended without a word (killed, out of memory) is transient too: the run's own process dying the same way
would have been retried."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from runs.errors import RunError
from schemas.errors import ZanError


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
