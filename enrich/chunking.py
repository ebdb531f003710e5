"""Documents → article-aware chunks with structural ids (``<doc_id>:<path>:<n>``).

A chunk never spans two units, so it never mixes two articles; ``code_articles`` lists the article the
chunk *is* (from its heading), never the ones its text cites. Long units split at paragraph boundaries,
and every piece repeats the unit heading so it embeds with its context.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from enrich.lineage import ParseNote, chunk_lineage
from extractors.model import Document, Unit
from schemas.identifiers import article_number, slug

MAX_CHARS = 1500
LIST_CAP = 1000  # Chroma corrupts a collection for good on lists over 5 461 elements; stay far below


def text_hash(text: str) -> str:
    """Content hash of the embedded text (hex, 128 bits)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def unit_paths(document: Document) -> list[str]:
    """One structural path per unit, unique within the document and stable across runs: ``art156``,
    ``ch2``, ``secc``, and inside the n-th annex ``annex1`` (its head), ``annex1/art5``, ``annex1/ch2``."""
    home = document.language if document.requisites.doc_type == "standard" else "rus"
    prefix = "" if document.language == home else f"{document.language}/"
    paths, seen = [], Counter[str]()
    ordinals = Counter[str]()
    for unit in document.units:
        path = _unit_path(unit, ordinals)
        seen[path] += 1
        paths.append(prefix + (path if seen[path] == 1 else f"{path}@{seen[path]}"))
    return paths


def _unit_path(unit: Unit, ordinals: Counter[str]) -> str:
    if unit.kind == "annex":
        return f"annex{unit.annex}"
    scope = f"annex{unit.annex}/" if unit.annex else ""
    if unit.kind == "article" and unit.label:
        return f"{scope}art{unit.label}"
    if unit.kind == "section" and unit.label:
        return f"{scope}sec{slug(unit.label) or unit.label}"
    if unit.kind == "chapter" and unit.label:
        return f"{scope}ch{unit.label}"
    if unit.kind == "preamble":
        return f"{scope}pre"
    ordinals[scope + unit.kind] += 1
    return f"{scope}{unit.kind}{ordinals[scope + unit.kind]}"


def split_text(paragraphs: list[str], max_chars: int = MAX_CHARS) -> list[list[str]]:
    """Group paragraphs into pieces of at most ``max_chars``; a longer paragraph splits at sentences."""
    return [[text for text, _ in piece] for piece in split_points(paragraphs, [None] * len(paragraphs), max_chars)]


def split_points(
    paragraphs: list[str], points: list[str | None], max_chars: int = MAX_CHARS
) -> list[list[tuple[str, str | None]]]:
    """Like :func:`split_text`, keeping with each piece of text the пункт label its paragraph opens (only
    the first piece of a split paragraph opens it)."""
    pieces: list[list[tuple[str, str | None]]] = [[]]
    size = 0
    for paragraph, point in zip(paragraphs, points, strict=True):
        for n, sentence in enumerate(_sentences(paragraph, max_chars)):
            if pieces[-1] and size + len(sentence) > max_chars:
                pieces.append([])
                size = 0
            pieces[-1].append((sentence, point if n == 0 else None))
            size += len(sentence) + 1
    return pieces


def _sentences(paragraph: str, max_chars: int) -> Iterator[str]:
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    current = ""
    for sentence in re.split(r"(?<=[.;!?])\s+", paragraph):
        if len(sentence) > max_chars:  # no sentence boundary at all: hard split, linear in its length
            cut = len(sentence) - len(sentence) % max_chars or len(sentence) - max_chars
            if current:
                yield current
                current = ""
            yield from (sentence[i : i + max_chars] for i in range(0, cut, max_chars))
            sentence = sentence[cut:]
        if current and len(current) + len(sentence) + 1 > max_chars:
            yield current
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        yield current


def _chunk_text(heading: str | None, piece: list[str]) -> str:
    """The heading, then the paragraphs; a paragraph that already starts with the heading keeps it once."""
    if not heading or (piece and piece[0].startswith(heading)):
        return "\n".join(piece)
    return "\n".join([heading, *piece])


def chunk_document(
    doc_id: str, document: Document, max_chars: int = MAX_CHARS, parse: ParseNote | None = None
) -> list[dict[str, Any]]:
    """Chunk rows (``CHUNK_SCHEMA`` columns) for one document. ``parse``: how its note lines are parsed (a
    :class:`enrich.lineage.NoteParser`, which its lineage rows then share: ``runs.build.cut_document``)."""
    rows = []
    pending: list[str] = []  # notes of a unit with no text (an act-level «Сноска. Утратил силу …»): the next chunk's
    for unit, path in zip(document.units, unit_paths(document), strict=True):
        article = unit.label if unit.kind == "article" and unit.label else None
        labels = [article] if article and not unit.annex else []  # an annex's articles are not the act's
        numbers = [n for n in (article_number(label) for label in labels) if n is not None]
        points: list[str | None] = list(unit.points)
        if len(points) != len(unit.paragraphs):  # a unit built without points (old pickles, hand-made units)
            points = [None] * len(unit.paragraphs)
        lineage = chunk_lineage(unit.notes, parse)
        for seq, piece in enumerate(split_points(unit.paragraphs, points, max_chars) if unit.paragraphs else [[]]):
            text = _chunk_text(unit.heading, [t for t, _ in piece])
            if not text.strip():
                pending += unit.notes if seq == 0 else []
                continue
            notes = [*pending, *unit.notes] if seq == 0 else pending
            pending = []
            rows.append(
                {
                    "chunk_id": f"{doc_id}:{path}:{seq}",
                    "doc_id": doc_id,
                    "language": document.language,
                    "path": path,
                    "seq": seq,
                    "heading": unit.heading,
                    "section_path": unit.section_path[:LIST_CAP],
                    "code_articles": numbers,
                    "article_labels": labels,
                    "section_label": unit.label if unit.kind == "section" else None,
                    "annex": unit.annex or None,
                    "annex_articles": [article] if article and unit.annex else [],
                    "point_labels": list(dict.fromkeys(p for _, p in piece if p))[:LIST_CAP],
                    "text": text,
                    "notes": "\n".join(notes) if notes else None,
                    **lineage,
                    "text_hash": text_hash(text),
                    "source_file": document.source_file,
                }
            )
    if pending and rows:  # notes after the last text: the last chunk's
        rows[-1]["notes"] = "\n".join(filter(None, [rows[-1]["notes"], *pending]))
    return rows
