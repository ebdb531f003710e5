"""What both retrievers make of an answer: one record per chunk with the metadata a chain filters and cites on."""

from __future__ import annotations

from typing import Any

from zan_client.models import Chunk, LookupAnswer

REFUSED = frozenset({"not_found"})  # the registry holds no such document: nothing may be guessed for it


def passages(answer: LookupAnswer, k: int | None) -> list[tuple[str, dict[str, Any], float]]:
    """(text, metadata, score) per chunk of the answer, at most ``k``; none for a refusal."""
    if answer.status in REFUSED:
        return []
    chunks = answer.chunks if k is None else answer.chunks[:k]
    return [(c.text, metadata(answer, c), c.score) for c in chunks]


def metadata(answer: LookupAnswer, chunk: Chunk) -> dict[str, Any]:
    return {
        "doc_id": chunk.doc_id,
        "chunk_id": chunk.chunk_id,
        "article": chunk.article_labels[0] if chunk.article_labels else None,
        "article_labels": list(chunk.article_labels),
        "points": list(chunk.point_labels),
        "title": chunk.doc_title,
        "ref": chunk.ref,
        "status": chunk.doc_status,
        "language": chunk.language,
        "score": chunk.score,
        "found_by": chunk.found_by,
        "version": answer.version,
        "lookup_status": answer.status,
        "hint": answer.hint,
    }


def refusal(answer: LookupAnswer) -> dict[str, Any]:
    """Why nothing came back: the answer's status, hint and the identifiers that did not resolve."""
    return {
        "lookup_status": answer.status,
        "hint": answer.hint,
        "version": answer.version,
        "not_found": [m.raw for m in answer.matches if m.status == "not_found"],
    }
