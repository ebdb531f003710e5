"""Published versions of the parquet outputs, and the one pointer that says which is current.

Layout under the data directory (``--home``)::

    versions/v000007/{registry,chunks,enriched_chunks,rejects}.parquet, manifest.json, report.{json,html}
    CURRENT            one line: the published version's name (replaced atomically with os.replace)
    .lease             the one run or rollback allowed at a time (see ``enrich.stages``)

A run builds ``versions/.tmp-<run_id>/`` and renames it to its version name; publishing is the atomic
replacement of ``CURRENT``. Readers resolve every file through ``CURRENT``, so they see one whole version
or the previous one, never a mix. Older versions are kept for rollback (the last N, configurable).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from extractors.files import atomic_write

OUTPUTS = ("registry.parquet", "chunks.parquet", "enriched_chunks.parquet", "rejects.parquet")
KEEP_VERSIONS = 5
_NAME = re.compile(r"^v(\d{6})$")


class VersionError(RuntimeError):
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def versions_dir(home: Path) -> Path:
    return home / "versions"


def current_version(home: Path) -> str | None:
    pointer = home / "CURRENT"
    if not pointer.exists():
        return None
    name = pointer.read_text("utf-8").strip()
    return name if _NAME.match(name) and (versions_dir(home) / name).is_dir() else None


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
    names = sorted(p.name for p in folder.iterdir() if _NAME.match(p.name) and (p / "manifest.json").exists())
    return [read_manifest(folder / n) for n in names]


def next_version(home: Path) -> str:
    folder = versions_dir(home)
    numbers = [int(m.group(1)) for p in folder.glob("v*") if (m := _NAME.match(p.name))] if folder.exists() else []
    return f"v{max(numbers, default=0) + 1:06d}"


def staging_dir(home: Path, run_id: str) -> Path:
    path = versions_dir(home) / f".tmp-{run_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_manifest(folder: Path, manifest: Manifest) -> None:
    write_text_atomic(folder / "manifest.json", json.dumps(manifest.as_dict(), ensure_ascii=False, indent=1))


def seal(home: Path, staging: Path, manifest: Manifest) -> Path:
    """Write the manifest and move the staged folder to its version name (not yet current)."""
    write_manifest(staging, manifest)
    target = versions_dir(home) / manifest.version
    staging.replace(target)
    return target


def set_current(home: Path, version: str) -> None:
    """The publish step: one atomic replacement of the CURRENT pointer."""
    if not (versions_dir(home) / version).is_dir():
        raise VersionError(f"version {version} does not exist under {versions_dir(home)}")
    write_text_atomic(home / "CURRENT", version + "\n")
    for legacy in OUTPUTS:  # files of the pre-versions layout would only mislead a reader now
        (home / legacy).unlink(missing_ok=True)


def prune(home: Path, keep: int = KEEP_VERSIONS) -> list[str]:
    """Delete all but the ``keep`` newest versions (never the current one) and leftover staging folders."""
    current = current_version(home)
    names = [m.version for m in list_versions(home)]
    doomed = [n for n in names[: max(0, len(names) - keep)] if n != current]
    for name in doomed:
        shutil.rmtree(versions_dir(home) / name, ignore_errors=True)
    return doomed


def clear_staging(home: Path) -> None:
    """Remove folders left by runs that were killed (only called while holding the lock)."""
    folder = versions_dir(home)
    if folder.exists():
        for leftover in folder.glob(".tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
