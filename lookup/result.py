"""What a lookup answers (:class:`RouteResult`, whose :meth:`~RouteResult.answer` is the typed answer every
surface gives: the CLI, ``/api/lookup``, MCP and the client), the one word for a whole answer
(:func:`overall_status`), and which chunks the matches let it fetch (:func:`fetch_plan`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zan_client import models as typed

from lookup.answer import chunk_of, identifier_of, match_of
from lookup.chunks import Chunk
from lookup.identifier import Identifier, LookupStatus
from lookup.registry_index import DocInfo, Match
from lookup.version import Narrowing


@dataclass
class RouteResult:
    query: str
    status: LookupStatus
    identifiers: list[Identifier]
    matches: list[Match]
    chunks: list[Chunk]
    hint: str
    doc_ids: list[str] = field(default_factory=list)
    changed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # an amending act → what it changed
    version: str | None = None  # the published version every part of the answer comes from
    expanded: list[dict[str, str]] = field(default_factory=list)  # words added to a plain-words question, and why
    as_of: str | None = None  # the date the text in force was asked for (``--as-of``)
    editions: list[dict[str, Any]] = field(default_factory=list)  # per named act: the version answered from
    described: dict[str, DocInfo] = field(default_factory=dict, repr=False)  # the matches' documents

    def answer(self) -> typed.LookupAnswer:
        """The typed answer every surface gives; ``described`` gives the candidates and the chunks' documents."""
        docs = self.described
        return typed.LookupAnswer(
            query=self.query,
            status=self.status,
            identifiers=[identifier_of(i) for i in self.identifiers],
            matches=[match_of(m, docs) for m in self.matches],
            doc_ids=self.doc_ids,
            chunks=[chunk_of(c, docs.get(c.doc_id)) for c in self.chunks],
            hint=self.hint,
            changed={k: [typed.Change.model_validate(c) for c in v] for k, v in self.changed.items()},
            version=self.version,
            expanded=[typed.Expansion.model_validate(e) for e in self.expanded],
            as_of=self.as_of,
            editions=[typed.Edition.model_validate(e) for e in self.editions],
        )

    def as_dict(self) -> dict[str, Any]:
        """The answer as JSON-ready data: `zan lookup --json` prints it, `/api/lookup` sends it."""
        return self.answer().model_dump(mode="json", by_alias=True)


def overall_status(matches: list[Match]) -> LookupStatus:
    """One word for the whole answer. ``no_identifier``: nothing to resolve; ``not_found``: nothing
    resolved (and no chunk is returned); ``partial``: some identifiers resolved, others did not (chunks come
    only from what resolved, and the hint says what is missing); else ``ambiguous`` if any is, else
    ``exact``. A partial answer is never reported as exact."""
    if not matches:
        return "no_identifier"
    statuses = {m.status for m in matches}
    if statuses == {"not_found"}:
        return "not_found"
    if "not_found" in statuses:
        return "partial"
    return "ambiguous" if "ambiguous" in statuses else "exact"


def fetch_plan(matches: list[Match]) -> dict[str, Narrowing]:
    """doc_id → the article labels, sections and пункты to restrict to (empty: the whole document). A named
    article narrows its document even when another identifier names the document as a whole
    («V2400035612 ст. 3»); a paragraph narrows a standard to its section (29 CFR 1910.146(c) → (c));
    a пункт narrows to the chunks that open it («п. 12 Правил приказа № 211»). Candidates of an article
    named with no document are not fetched: the hint asks which document is meant."""
    plan: dict[str, tuple[set[str], set[str], set[str], set[bool]]] = {}
    for match in matches:
        if match.candidates_only:  # an article no document was named for: listed in the hint, never fetched
            continue
        for doc_id in match.doc_ids:
            articles, sections, points, annex = plan.setdefault(doc_id, (set(), set(), set(), set()))
            articles.update(a for a in match.articles if a)
            sections.update(match.sections)
            points.update(p for p in match.points if p)
            annex.add(match.annex_only if match.points else True)
    return {
        d: Narrowing(tuple(sorted(a)), tuple(sorted(s)), tuple(sorted(p)), bool(p) and all(annex))
        for d, (a, s, p, annex) in plan.items()
    }
