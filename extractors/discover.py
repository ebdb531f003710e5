"""Walk source folders and dispatch each file to its extractor; failures become rejects, not crashes.

What is read is confined and bounded: a symlink whose target lies outside its source folder is not
followed, a FIFO, device or socket is never opened, a file over the size limit (``ZAN_MAX_FILE_MB``,
default 64) is not read; each is skipped with its reason, which becomes a reject. Every error one file
raises while it is read (parser, type, encoding, I/O) is that file's reject, never the run's failure.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from extractors.bounded import MAX_FILE_MB as MAX_FILE_MB
from extractors.bounded import max_file_bytes as max_file_bytes
from extractors.bounded import over_limit, read_source, refusal
from extractors.detect import SUFFIXES, extract
from extractors.model import Document, ExtractError
from schemas.errors import ZanError

_SKIP_NAMES = {"readme.md", "sources.md", "license.md"}


class SourceMissing(ZanError, FileNotFoundError):
    """A source folder given to a run does not exist (terminal: nothing would be read)."""


@dataclass(frozen=True)
class Extracted:
    """The outcome for one file: a document, or the reason it was rejected (and the error's class)."""

    source_file: str
    document: Document | None = None
    error: str | None = None
    error_class: str | None = None


@dataclass
class Scan:
    """The files to read under some sources, and those skipped with a reason."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def scan(sources: list[Path]) -> Scan:
    """Every source file under ``sources``, sorted so runs are deterministic, confined to each source."""
    out = Scan()
    for source in sources:
        if not source.exists():
            raise SourceMissing(f"source folder {source} does not exist")
        if source.is_file():
            out.files.append(source)
            continue
        root = source.resolve()
        for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
            dirnames.sort()
            linked = sorted(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))
            for name in linked:  # a folder linked in (an act's folder from elsewhere): never walked, said so
                reason = _linked_folder(Path(dirpath) / name, root)
                if reason:
                    out.skipped.append((str(Path(dirpath) / name), reason))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.suffix.lower() not in SUFFIXES or name.lower() in _SKIP_NAMES or _act_part(path):
                    continue
                reason = _unreadable(path, root)
                if reason:
                    out.skipped.append((str(path), reason))
                else:
                    out.files.append(path)
    out.files.sort()
    return out


def _act_part(path: Path) -> bool:
    """A part of a split kazakhstan-law act (``<act>/rus/an000.md``): read through the act's ``rus.md``."""
    return path.parent.name in ("rus", "kaz") and (path.parent.parent / "meta.yaml").is_file()


def source_files(sources: list[Path]) -> list[Path]:
    """Every readable source file under ``sources``, sorted (see :func:`scan` for the skipped ones)."""
    return scan(sources).files


def _linked_folder(path: Path, root: Path) -> str | None:
    """Why a symlinked folder under a source is not read (None for one that points inside the source: its files
    are read where they are)."""
    reason = refusal(path, root, "the source folder")
    return f"a linked folder: {reason}" if reason else None


def _unreadable(path: Path, root: Path) -> str | None:
    """Why ``path`` must not be read, or None."""
    if path.is_symlink():
        reason = refusal(path, root, "the source folder")
        if reason:
            return reason
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return "not a regular file (a directory link, FIFO, device or socket): never opened"
    return None


def extract_file(path: Path) -> Extracted:
    """Extract one file. Any failure is returned as a reason naming the file, never raised: one bad file
    is that file's reject (its error's class kept), and the run goes on."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > max_file_bytes():
            raise ExtractError(name, over_limit(size, max_file_bytes()))
        document = extract(path, read_source(path))
    except ExtractError as exc:
        return Extracted(name, error=exc.reason, error_class=type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - per-file isolation: a parser bug or odd input rejects this file only
        return Extracted(name, error=f"{type(exc).__name__}: {exc}", error_class=type(exc).__name__)
    return Extracted(name, document=document)
