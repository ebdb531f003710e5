"""One run at a time per data directory: a lease file, taken atomically.

- **Taking a free lease** is one ``link(2)`` of a complete file written beside it: the kernel creates the
  name only if it does not exist, so of many simultaneous takers exactly one succeeds, and no reader ever
  sees a half-written lease (the old ``O_EXCL`` create let a loser read the winner's empty file and
  overwrite it).
- **Taking over a dead holder's lease** (its process is gone, or its TTL passed) first creates a takeover
  marker named after that holder's run with the same ``link(2)``: only one taker can, the others are told the
  directory is busy; the winner then replaces the lease in one ``rename(2)``.
- **Releasing** removes the lease only if it is still this run's.

``holder`` is ``process`` (a run living in one process: its lease dies with it) or ``tasks`` (stages run as
separate Airflow tasks: the DAG's always-run ``finish`` task releases it; the TTL is the last resort).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runs.versions import now_iso
from schemas.published import VersionError

LEASE = ".lease"
LEASE_TTL_S = 6 * 3600  # a lease older than this belongs to a run that died without finishing


class Busy(VersionError):
    """Another run holds the data directory (transient: retry later)."""

    transient = True


def take(home: Path, run_id: str, holder: str) -> None:
    """Take the lease of ``home`` for ``run_id``, or raise :class:`Busy` naming the holder."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / LEASE
    mine = json.dumps(
        {
            "run_id": run_id,
            "taken": time.time(),
            "at": now_iso(),
            "holder": holder,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
    )
    if _link_new(path, mine):
        return
    held = read(path)
    if held is not None and held.get("run_id") == run_id:
        return  # already ours (a stage of the same run)
    if held is not None and not stale(held):
        raise Busy(f"run {held.get('run_id')} holds {path} since {held.get('at')}; try again later")
    # a dead holder's lease (or an unreadable one): exactly one taker may replace it
    dead = held.get("run_id", "unknown") if held else "unreadable"
    if not _link_new(home / f"{LEASE}.takeover-{_safe(str(dead))}", mine):
        raise Busy(f"another run is taking over the lease of dead run {dead} in {home}; try again later")
    _replace(path, mine)


def release(home: Path, run_id: str) -> None:
    """Give the lease back if it is still ``run_id``'s, and remove takeover markers it left."""
    path = home / LEASE
    held = read(path)
    if held is None or held.get("run_id") == run_id:
        path.unlink(missing_ok=True)
    for marker in home.glob(f"{LEASE}.takeover-*"):
        with contextlib.suppress(OSError):
            if (read(marker) or {}).get("run_id") == run_id:
                marker.unlink()


@contextlib.contextmanager
def held(home: Path, run_id: str, holder: str = "process") -> Iterator[None]:
    """Hold the lease for a piece of work done in this process (a rollback)."""
    take(home, run_id, holder)
    try:
        yield
    finally:
        release(home, run_id)


def stale(lease: dict[str, Any]) -> bool:
    """A lease whose TTL passed, or whose holding process on this host is gone."""
    if time.time() - float(lease.get("taken", 0)) > LEASE_TTL_S:
        return True
    if lease.get("holder") == "process" and lease.get("host") == socket.gethostname():
        try:
            os.kill(int(lease.get("pid", 0)), 0)
        except ProcessLookupError:
            return True  # the process that held it is gone (killed): nothing is running
        except (PermissionError, ValueError, OSError):
            return False
    return False


def read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _link_new(path: Path, content: str) -> bool:
    """Create ``path`` holding ``content`` complete, atomically, only if it does not exist."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def _replace(path: Path, content: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]
