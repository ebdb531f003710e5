"""The published version, as every reader sees it, and the data directory (HOME) it lives in.

Layout under the data directory (``--home``)::

    versions/v000007/{registry,chunks,enriched_chunks,rejects}.parquet, manifest.json, report.{json,html}
    CURRENT            one line: the published version's name (replaced atomically by ``runs.versions``)

Readers (``zan sql``, lookups, the audit, enrich-collection) resolve every file through ``CURRENT``, so they
see one whole version or the previous one, never a mix. HOME is checked before anything touches it: an
empty path, a file, a device (``/dev/null``) or a path under ``/proc``, ``/sys`` or ``/dev`` is refused up
front with one line saying why, never as a traceback halfway through a run.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schemas.errors import ZanError

COLLECTION = "zan_chunks"  # the index's Chroma collection, beside the version's files
OUTPUTS = ("registry.parquet", "chunks.parquet", "enriched_chunks.parquet", "rejects.parquet", "lineage.parquet")
KEEP_VERSIONS = 5
VERSION_NAME = re.compile(r"^v(\d{6})$")


class VersionError(ZanError):
    """No such version, nothing published, or another run holds the data directory."""


@dataclass
class Manifest:
    """What a version is: written into its folder as manifest.json."""

    version: str
    run_id: str
    created: str
    documents: int
    chunks: int
    embedder: str
    sources: list[str] = field(default_factory=list)
    parent: str | None = None
    file_keys: dict[str, str] = field(default_factory=dict)  # source file → content hash : code fingerprint
    embedder_spec: str | None = None  # how to make the embedder again (``e5``, ``openai:…``); None before 0.2
    source_commits: dict[str, str] = field(default_factory=dict)  # a git source → the commit the version read

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def versions_dir(home: Path) -> Path:
    return home / "versions"


def current_version(home: Path) -> str | None:
    pointer = home / "CURRENT"
    if not pointer.exists():
        return None
    name = pointer.read_text("utf-8").strip()
    return name if VERSION_NAME.match(name) and (versions_dir(home) / name).is_dir() else None


def published_dir(home: Path) -> Path | None:
    """The folder of the current version, or None when nothing is published."""
    name = current_version(home)
    return versions_dir(home) / name if name else None


def published_file(home: Path, name: str) -> Path:
    """A published output (``registry.parquet``…) of the current version; falls back to the pre-versions
    layout (files directly under ``home``) so data written by older zan stays readable."""
    folder = published_dir(home)
    return folder / name if folder else home / name


def read_manifest(folder: Path) -> Manifest:
    data = json.loads((folder / "manifest.json").read_text("utf-8"))
    return Manifest(**data)


def list_versions(home: Path) -> list[Manifest]:
    """Every kept version, oldest first."""
    folder = versions_dir(home)
    if not folder.exists():
        return []
    names = sorted(p.name for p in folder.iterdir() if VERSION_NAME.match(p.name) and (p / "manifest.json").exists())
    return [read_manifest(folder / n) for n in names]


_SYSTEM = ("/proc", "/sys", "/dev")


class HomeError(ZanError, ValueError):
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
            raise HomeError(
                f"nothing published under {path} (no registry.parquet: the folder does not exist); "
                f"run `zan run --home {path}` first"
            )
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
