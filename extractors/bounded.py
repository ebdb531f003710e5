"""The one way a file a source names is read: its text, an act's ``meta.yaml`` and parts, the files hashed for a
file key.

Every read is confined and bounded:

- a file is opened only where it resolves inside ``root`` (its source folder, or an act's folder): a symlink out
  of it is refused, and so is anything under ``/proc``, ``/sys`` or ``/dev`` whatever the root;
- only a regular file is read (a FIFO, a device, a socket or a directory never), opened without following a last
  link swapped in after the check and without blocking (a FIFO put in its place cannot hold the run);
- the size limit (``ZAN_MAX_FILE_MB``, default 64) is checked before the read and again while reading: a file that
  says it is empty but never ends (``/proc/self/pagemap`` is a "regular file" of size 0) or grows as it is read is
  refused at the limit, never read to its end.

A refusal is a :class:`Refused` naming the file and the reason; a file that is not there is ``FileNotFoundError``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from extractors.model import ExtractError

MAX_FILE_MB = 64.0
BLOCK = 1 << 20
SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))


class Refused(ExtractError):
    """A file a source names that is not read (outside its folder, not a regular file, over the size limit)."""


def max_file_bytes() -> int:
    """The size limit for one source file (``ZAN_MAX_FILE_MB``, default 64 MB)."""
    try:
        return int(float(os.environ.get("ZAN_MAX_FILE_MB", MAX_FILE_MB)) * 1024 * 1024)
    except ValueError:
        return int(MAX_FILE_MB * 1024 * 1024)


def over_limit(size: int, limit: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB is over the {limit / 1024 / 1024:g} MB limit (ZAN_MAX_FILE_MB)"


def refusal(path: Path, root: Path | None, where: str = "") -> str | None:
    """Why ``path`` must not be opened (None: it may be; a missing file is not refused here: opening it says so).
    ``root``: the folder it must resolve into (None: the caller confined it already), ``where`` what it is called
    in the reason («the source folder»)."""
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        return None if not path.is_symlink() else "a symlink that cannot be followed (FileNotFoundError)"
    except (OSError, RuntimeError) as exc:  # a loop, a component that is not a folder
        return f"a symlink that cannot be followed ({type(exc).__name__})"
    if root is not None and not target.is_relative_to(root.resolve()):
        return f"a symlink to {target}, outside {where or 'the folder'} {root.resolve()}: not followed"
    if any(target == s or target.is_relative_to(s) for s in SYSTEM):
        return f"{target} is a system file (/proc, /sys, /dev): never opened"
    return None


def _open(path: Path, root: Path | None, limit: int) -> int:
    """A descriptor on ``path`` after every check but the running count (see :func:`read_source`)."""
    reason = refusal(path, root)
    if reason:
        raise Refused(str(path), reason)
    target = path.resolve(strict=True)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a link swapped in after the check; EACCES…
        raise Refused(str(path), f"cannot be opened: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            raise Refused(str(path), "not a regular file (a directory, FIFO, device or socket): never read")
        if mode.st_size > limit:
            raise Refused(str(path), over_limit(mode.st_size, limit))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def blocks(path: Path, root: Path | None = None, limit: int | None = None) -> Any:
    """The bytes of ``path`` in blocks of at most 1 MB, checked (:func:`refusal`) and bounded by ``limit`` bytes
    (default :func:`max_file_bytes`) as they are read: a generator that raises :class:`Refused` past it."""
    limit = max_file_bytes() if limit is None else limit
    fd = _open(path, root, limit)
    try:
        read = 0
        while block := os.read(fd, BLOCK):
            read += len(block)
            if read > limit:
                raise Refused(str(path), f"{over_limit(read, limit)}: it grew, or never ends, as it was read")
            yield block
    finally:
        os.close(fd)


def read_source(path: Path, root: Path | None = None, limit: int | None = None) -> bytes:
    """The whole of ``path``, confined to ``root`` and bounded (:func:`blocks`)."""
    return b"".join(blocks(path, root, limit))


def digest_source(path: Path, digest: Any, root: Path | None = None) -> None:
    """Feed ``path``'s bytes to ``digest`` (a hashlib object) block by block; a refused file feeds its refusal,
    so its key still changes when the reason does, and reading it says why (memory stays one block)."""
    try:
        for block in blocks(path, root):
            digest.update(block)
    except Refused as exc:
        digest.update(b"\0refused\0" + exc.reason.encode("utf-8", "replace"))
