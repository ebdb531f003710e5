"""Markdown exports of codes and laws (kzlaws layout, e.g. the Kazakh Labour Code) → :class:`Document`.

The file opens with a table of contents («МАЗМҰНЫ» / «СОДЕРЖАНИЕ») that lists every heading before the
body repeats them as ``#### 156-бап. …``; a table of contents is not an article, so everything before the
first level-1 heading that follows it is skipped. Identity comes from curated reference data by title.
"""

from __future__ import annotations

import re

from extractors.model import Document, ExtractError
from extractors.reference import code_by_title
from extractors.structure import Line, build_units, is_editorial_note
from schemas.identifiers import normalize_space

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TOC = re.compile(r"^(МАЗМҰНЫ|СОДЕРЖАНИЕ|ОГЛАВЛЕНИЕ)$", re.I)
_KAZAKH = re.compile(r"[ӘәҒғҚқҢңӨөҰұҮүҺһІі]")


def parse_markdown_act(text: str, source_file: str) -> Document:
    """Parse one markdown act; raises :class:`ExtractError` when its title matches no known act."""
    lines = text.splitlines()
    title, start = _title_and_body_start(lines)
    if title is None:
        raise ExtractError(source_file, "no level-1 '# ' title heading")
    reference = code_by_title(title)
    if reference is None:
        raise ExtractError(source_file, f"title {title!r} matches no act in the curated reference data")
    language = "kaz" if _KAZAKH.search(text[:20000]) else "rus"
    requisites = reference.requisites(language)
    requisites.language = language
    requisites.doc_title = title
    units = build_units(_lines(lines[start:]))
    return Document(requisites=requisites, units=units, source_file=source_file, language=language)


def _title_and_body_start(lines: list[str]) -> tuple[str | None, int]:
    in_toc = False
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if not m:
            continue
        text = normalize_space(m.group(2))
        if _TOC.match(text):
            in_toc = True
        elif len(m.group(1)) == 1:
            return text, i + 1
        elif not in_toc:
            return None, 0
    return None, 0


def _lines(lines: list[str]) -> list[Line]:
    out = []
    for raw in lines:
        m = _HEADING.match(raw)
        text = normalize_space(m.group(2) if m else raw)
        out.append(Line(text, heading=bool(m), note=is_editorial_note(text) and not m))
    return out
