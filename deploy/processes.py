"""The stack's processes as the supervisor sees them (:mod:`deploy.stack`): whether one lives, the members of
the session each service starts, signalling them all, and whether a service answers over HTTP."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import httpx


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (a child of ours that exited is reaped here, not left a zombie)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not our child: a stack loaded from stack.json
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def session_processes(sid: int) -> list[int]:
    """The live processes of session ``sid`` (each service starts one: ``start_new_session``); zombies,
    which nothing can signal, are left out."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, session, ...
            if int(fields[3]) == sid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def signal_session(sid: int, signal_number: int) -> None:
    for pid in session_processes(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal_number)


def http_ok(url: str, token: str | None = None, ok: tuple[int, ...] = (200,)) -> bool:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        return httpx.get(url, timeout=5, headers=headers).status_code in ok
    except httpx.HTTPError:
        return False
