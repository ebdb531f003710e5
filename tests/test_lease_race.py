"""The lease under a race: many processes take it at the same instant, on a free lease and on a dead
holder's lease; in every trial exactly one wins (the old O_EXCL create let two win in 86 of 300)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import Any

import pytest

from runs import lease

TAKERS = 8
TRIALS = 240


def _taker(n: int, inbox: Any, outbox: Any, barrier: Any) -> None:
    while True:
        job = inbox.get()
        if job is None:
            return
        home, trial = job
        barrier.wait()
        try:
            lease.take(Path(home), f"run-{trial}-{n}", "process")
            outbox.put((trial, n, True))
        except lease.Busy:
            outbox.put((trial, n, False))


def _dead_lease(home: Path) -> None:
    """A lease left by a killed process on this host (its pid no longer exists)."""
    child = mp.get_context("fork").Process(target=time.sleep, args=(0,))
    child.start()
    child.join()
    held = {"run_id": "dead", "taken": time.time(), "holder": "process", "host": os.uname().nodename,
            "pid": child.pid, "at": "then"}  # fmt: skip
    (home / lease.LEASE).write_text(json.dumps(held), "utf-8")


@pytest.mark.slow
def test_exactly_one_of_many_simultaneous_takers_wins(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(TAKERS)
    inboxes = [ctx.Queue() for _ in range(TAKERS)]
    outbox = ctx.Queue()
    workers = [ctx.Process(target=_taker, args=(n, inboxes[n], outbox, barrier)) for n in range(TAKERS)]
    for w in workers:
        w.start()
    winners: dict[str, list[int]] = {"free": [], "dead holder": []}
    try:
        for trial in range(TRIALS):
            home = tmp_path / f"home-{trial}"
            home.mkdir()
            kind = "dead holder" if trial % 2 else "free"
            if kind == "dead holder":
                _dead_lease(home)
            for inbox in inboxes:
                inbox.put((str(home), trial))
            results = [outbox.get(timeout=60) for _ in range(TAKERS)]
            won = [n for _, n, ok in results if ok]
            winners[kind].append(len(won))
            held = lease.read(home / lease.LEASE)
            assert held is not None and len(won) == 1 and held["run_id"] == f"run-{trial}-{won[0]}", (trial, kind)
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for w in workers:
            w.join(timeout=30)
    print(f"lease race: {TRIALS} trials × {TAKERS} takers; winners per trial: "
          f"free {set(winners['free'])}, dead holder {set(winners['dead holder'])}")  # fmt: skip
    assert set(winners["free"]) == {1} and set(winners["dead holder"]) == {1}


def test_a_lease_is_released_only_by_its_holder(tmp_path: Path) -> None:
    lease.take(tmp_path, "a", "process")
    lease.release(tmp_path, "b")
    assert (lease.read(tmp_path / lease.LEASE) or {})["run_id"] == "a"
    lease.release(tmp_path, "a")
    assert not (tmp_path / lease.LEASE).exists()
