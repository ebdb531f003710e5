"""What a run's helper process (a BM25 build or an embedding shard beside the index stage) tells its parent."""

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
