"""The data directory (HOME) checked before anything touches it.

A run needs a HOME it can create and write; a lookup, ``zan sql`` or ``zan audit`` needs one that exists and
can be read. An empty path, a file, a device (``/dev/null``) or a path under ``/proc``, ``/sys`` or ``/dev``
is refused up front with one line saying why, never as a traceback halfway through a run.
"""

from __future__ import annotations

import os
from pathlib import Path

_SYSTEM = ("/proc", "/sys", "/dev")


class HomeError(ValueError):
    """HOME cannot serve what was asked of it; the message says why."""


def check_home(home: Path | str, writable: bool) -> Path:
    """``home`` as a Path, or :class:`HomeError`. ``writable``: a run will create and write it."""
    if str(home).strip() == "":
        raise HomeError("--home is empty: give the data directory (default ./data)")
    path = Path(home)
    resolved = path.resolve()
    if any(resolved == Path(s) or resolved.is_relative_to(s) for s in _SYSTEM):
        raise HomeError(f"HOME {path} is a system path ({resolved}): not a data directory")
    if path.exists() and not path.is_dir():
        raise HomeError(f"HOME {path} exists and is not a directory")
    if not writable:
        if not path.is_dir():
            raise HomeError(f"nothing published under {path} (no registry.parquet: the folder does not exist); "
                            f"run `zan run --home {path}` first")  # fmt: skip
        if not os.access(path, os.R_OK | os.X_OK):
            raise HomeError(f"HOME {path} cannot be read")
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HomeError(f"HOME {path} cannot be created: {exc.strerror or exc}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise HomeError(f"HOME {path} is not writable (a run writes its versions there; lookups can read it)")
    return path
