"""Walk source folders and dispatch each file to its extractor; failures become rejects, not crashes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from extractors.adilet import looks_like_adilet, parse_adilet_html
from extractors.markdown import parse_markdown_act
from extractors.model import Document, ExtractError
from extractors.standards import parse_ecfr_xml, parse_standard_html, parse_standard_pdf, parse_standard_text
from extractors.zan_portal import parse_zan_record

SUFFIXES = (".html", ".htm", ".json", ".xml", ".txt", ".pdf", ".md")
_SKIP_NAMES = {"readme.md", "sources.md", "license.md"}


@dataclass(frozen=True)
class Extracted:
    """The outcome for one file: a document, or the reason it was rejected."""

    source_file: str
    document: Document | None = None
    error: str | None = None


def _html(data: bytes, name: str) -> Document:
    text = _decode(data, name)
    return parse_adilet_html(text, name) if looks_like_adilet(text) else parse_standard_html(text, name)


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractError(name, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


_PARSERS: dict[str, Callable[[bytes, str], Document]] = {
    ".html": _html,
    ".htm": _html,
    ".json": parse_zan_record,
    ".xml": parse_ecfr_xml,
    ".txt": lambda data, name: parse_standard_text(_decode(data, name), name),
    ".pdf": parse_standard_pdf,
    ".md": lambda data, name: parse_markdown_act(_decode(data, name), name),
}


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
        document = _PARSERS[path.suffix.lower()](path.read_bytes(), name)
    except ExtractError as exc:
        return Extracted(name, error=exc.reason)
    except (OSError, ValueError, RecursionError) as exc:  # unexpected bad input must not stop the run
        return Extracted(name, error=f"{type(exc).__name__}: {exc}")
    return Extracted(name, document=document)


def extract_all(files: list[Path]) -> Iterator[Extracted]:
    for path in files:
        yield extract_file(path)
