"""Work started in a daemon thread, its outcome handed over as a :class:`~concurrent.futures.Future`.

A run starts work it will need later while it waits on other processes (the embedded index's check while its
files are extracted, a small embedding beside the index stage). ``ThreadPoolExecutor`` would do the same, but
its threads are joined at exit, so a run that failed would wait for work it no longer needs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def in_thread(work: Callable[[], T], name: str) -> Future[T]:
    """Run ``work`` in a daemon thread named ``name``; its result, or what it raised, is the future's."""
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:  # handed to whoever awaits it, as the work run there would raise it
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done
