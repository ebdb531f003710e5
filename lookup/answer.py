"""The parts of a routed question as the typed answer every surface gives (:mod:`zan_client.models`).

`zan lookup --json`, `GET /api/lookup`, the MCP tools and the Python client all read one model
(:meth:`lookup.result.RouteResult.answer` builds it); the lookup keeps its own dataclasses for ranking, and
this module is where they become the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from zan_client.models import Candidate, Chunk, Identifier, Match

if TYPE_CHECKING:
    from lookup.chunks import Chunk as RankedChunk
    from lookup.identifier import Identifier as ParsedIdentifier
    from lookup.registry_index import DocInfo
    from lookup.registry_index import Match as Resolved


def identifier_of(ident: ParsedIdentifier) -> Identifier:
    return Identifier(kind=ident.kind, raw=ident.raw, canonical=ident.canonical, span=ident.span, binding=ident.binding)


def match_of(match: Resolved, docs: Mapping[str, DocInfo]) -> Match:
    return Match(
        identifier=match.identifier.canonical,
        raw=match.identifier.raw,
        kind=match.identifier.kind,
        status=match.status,
        doc_ids=list(match.doc_ids),
        articles=list(match.articles),
        sections=list(match.sections),
        near=list(match.near),
        reason=match.reason,
        points=list(match.points),
        binding=match.identifier.binding,
        candidates=[candidate_of(docs[d]) for d in match.doc_ids if d in docs],
    )


def candidate_of(doc: DocInfo) -> Candidate:
    number = doc.order_number or doc.law_zrk or doc.intl_section or doc.registration_number
    return Candidate(
        doc_id=doc.doc_id,
        ref=doc.ref,
        title=doc.doc_title,
        doc_type=doc.doc_type,
        issuer=doc.issuer,
        number=number,
        date_approved=doc.date_approved.isoformat() if doc.date_approved else None,
        status=doc.status,
    )


def chunk_of(chunk: RankedChunk, doc: DocInfo | None = None) -> Chunk:
    """The chunk, with its document's title, citation and status when the answer describes it."""
    return Chunk(
        doc_title=doc.doc_title if doc else None,
        ref=doc.ref if doc else None,
        doc_status=doc.status if doc else None,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        code_articles=chunk.code_articles,
        article_labels=chunk.article_labels,
        point_labels=list(chunk.point_labels),
        annex=chunk.annex,
        text=chunk.text,
        score=round(chunk.score, 6),
        language=chunk.language,
        vector=_rounded(chunk.vector),
        lexical=_rounded(chunk.lexical),
        fused=_rounded(chunk.fused),
        found_by=chunk.found_by,
        replaces=chunk.replaces,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
