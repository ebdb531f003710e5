"""Walk source folders and dispatch each file to its extractor; failures become rejects, not crashes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extractors.detect import SUFFIXES, extract
from extractors.model import Document, ExtractError

_SKIP_NAMES = {"readme.md", "sources.md", "license.md"}


@dataclass(frozen=True)
class Extracted:
    """The outcome for one file: a document, or the reason it was rejected."""

    source_file: str
    document: Document | None = None
    error: str | None = None


def source_files(sources: list[Path]) -> list[Path]:
    """Every readable source file under ``sources``, sorted, so runs are deterministic."""
    files: list[Path] = []
    for source in sources:
        if not source.exists():
            raise FileNotFoundError(f"source folder {source} does not exist")
        found = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        files += [p for p in found if p.suffix.lower() in SUFFIXES and p.name.lower() not in _SKIP_NAMES]
    return files


def extract_file(path: Path) -> Extracted:
    """Extract one file. Any parse failure is returned as a reason naming the file, never raised."""
    name = str(path)
    try:
        document = extract(path, path.read_bytes())
    except ExtractError as exc:
        return Extracted(name, error=exc.reason)
    except (OSError, ValueError, RecursionError) as exc:  # unexpected bad input must not stop the run
        return Extracted(name, error=f"{type(exc).__name__}: {exc}")
    return Extracted(name, document=document)
