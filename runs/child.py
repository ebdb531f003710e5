"""What a run's helper process (a BM25 build or an embedding shard beside the index stage) tells its parent:
:func:`report` in the child, :func:`outcome` in the parent."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from runs.errors import RunError


def report(send: Any, work: Callable[[], Any], what: str) -> None:
    """Run ``work`` and send its outcome through the pipe end ``send``, then close it: ("ok", (its result,
    seconds)) or ("error", the exception itself, so a transient one stays transient; when it does not pickle,
    a :class:`RunError` naming ``what`` with its words)."""
    started = time.perf_counter()
    try:
        result = work()
        send.send(("ok", (result, time.perf_counter() - started)))
    except BaseException as exc:  # reported to the run, which fails with it
        try:
            send.send(("error", exc))
        except Exception:
            send.send(("error", RunError(f"{what}: {type(exc).__name__}: {exc}")))
    finally:
        send.close()


def outcome(receive: Any, child: Any, what: str) -> tuple[str, Any]:
    """What :func:`report` sent from ``child`` through the pipe end ``receive``: ("ok", (result, seconds)) or
    ("error", an exception): the child's own, or a :class:`RunError` naming ``what`` when the child ended
    without a word or its message does not unpickle here."""
    try:
        kind, value = receive.recv()
        return kind, value
    except EOFError:
        return "error", RunError(f"{what} died (exit code {child.exitcode})")
    except Exception as exc:  # an error that does not unpickle here
        return "error", RunError(f"{what} failed: {type(exc).__name__}: {exc}")
