"""The published version, as every reader sees it, and the data directory (HOME) it lives in.

Layout under the data directory (``--home``)::

    versions/v000007/{registry,chunks,enriched_chunks,rejects}.parquet, manifest.json, report.{json,html}
    CURRENT            one line: the published version's name (replaced atomically by ``runs.versions``)

Each manifest says which on-disk format wrote it (``format_version``, :data:`FORMAT_VERSION`). Readers and
runs know only the current format: a HOME written by an older zan is refused with one line that names
``zan migrate``, which rewrites it once (``runs.migrate``).

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
# The on-disk format: 2 = every version under versions/ with its word indexes (``lexical/``), vectors as
# memory-mapped NumPy parts. 1 = anything older (files directly under HOME, parquet vector parts, versions
# without word indexes): ``zan migrate`` rewrites it. A manifest without the field is format 1.
FORMAT_VERSION = 2
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
    format_version: int = 1  # the on-disk format that wrote it; a run writes FORMAT_VERSION

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
    """A published output (``registry.parquet``…) of the current version, or :class:`VersionError` when
    nothing is published."""
    folder = published_dir(home)
    if folder is None:
        raise VersionError(f"nothing published under {home}: run `zan run --home {home}` first")
    return folder / name


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


class FormatError(HomeError):
    """HOME was written by an older zan: ``zan migrate`` rewrites it once."""


def home_format(home: Path) -> int | None:
    """The on-disk format of what ``home`` holds: None when it holds nothing published, else the current
    version's ``format_version`` (1 for published files directly under HOME, the layout before versions)."""
    folder = published_dir(home)
    if folder is not None:
        return read_manifest(folder).format_version
    return 1 if (home / "registry.parquet").exists() else None


def check_format(home: Path, found: int | None = None) -> None:
    """:class:`FormatError` unless what ``home`` holds is in the current format (or nothing is there).
    ``found``: the format a caller has read already (its manifest's), else read here."""
    found = home_format(home) if found is None else found
    if found is not None and found < FORMAT_VERSION:
        raise FormatError(
            f"HOME {home} was written by an older zan (format {found}; this zan reads format {FORMAT_VERSION}): "
            f"run `zan migrate --home {home}` once"
        )
    if found is not None and found > FORMAT_VERSION:
        raise FormatError(
            f"HOME {home} was written by a newer zan (format {found}; this zan reads format {FORMAT_VERSION}): "
            "upgrade zan to read it"
        )


def check_home(home: Path | str, writable: bool, migrating: bool = False) -> Path:
    """``home`` as a Path, or :class:`HomeError`. ``writable``: a run will create and write it. What HOME
    holds must be in the current format (:func:`check_format`), except for ``zan migrate`` (``migrating``)."""
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
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HomeError(f"HOME {path} cannot be created: {exc.strerror or exc}") from exc
        if not os.access(path, os.W_OK | os.X_OK):
            raise HomeError(f"HOME {path} is not writable (a run writes its versions there; lookups can read it)")
    if not migrating:
        check_format(path)
    return path
