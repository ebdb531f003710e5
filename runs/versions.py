"""Writing versions: staging, sealing, the one pointer that says which is current, pruning.

The layout and the readers are in :mod:`schemas.published`; ``.lease`` (one run or rollback at a time)
is :mod:`runs.lease`.

A run builds ``versions/.tmp-<run_id>/`` and renames it to its version name; publishing is the atomic
replacement of ``CURRENT``. Readers resolve every file through ``CURRENT``, so they see one whole version
or the previous one, never a mix. Older versions are kept for rollback (the last N, configurable).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from schemas.files import atomic_write
from schemas.published import (
    KEEP_VERSIONS,
    VERSION_NAME,
    Manifest,
    VersionError,
    current_version,
    list_versions,
    versions_dir,
)


def next_version(home: Path) -> str:
    folder = versions_dir(home)
    if not folder.exists():
        return "v000001"
    numbers = [int(m.group(1)) for p in folder.glob("v*") if (m := VERSION_NAME.match(p.name))]
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
