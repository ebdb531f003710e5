"""One entry point for a question: identifiers → registry matches → filtered chunks → hint.

A lookup is a partition ahead of ranking, not one more ranked signal: when the query names documents,
only their chunks are candidates (and only the named articles' chunks, when it names articles); embedding
similarity ranks inside that partition. A query with no identifier falls back to plain vector search. A
number the registry does not hold is refused: no chunks are guessed for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from enrich.embed import Embedder, make_embedder
from enrich.index import COLLECTION, open_client
from enrich.versions import published_dir, published_file
from lookup.errors import LookupProblem
from lookup.fetch import Chunk, fetch_chunks_by_doc_ids, vector_search
from lookup.grammar import Identifier, parse
from lookup.hint import hint
from lookup.registry_index import MAX_CANDIDATES, Match, RegistryIndex


@dataclass
class RouteResult:
    query: str
    status: str
    identifiers: list[Identifier]
    matches: list[Match]
    chunks: list[Chunk]
    hint: str
    doc_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "status": self.status,
            "identifiers": [i.as_dict() for i in self.identifiers],
            "matches": [m.as_dict() for m in self.matches],
            "doc_ids": self.doc_ids,
            "chunks": [c.as_dict() for c in self.chunks],
            "hint": self.hint,
        }


def overall_status(matches: list[Match]) -> str:
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


Narrowing = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]  # articles, sections, пункты, annex


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
        d: (tuple(sorted(a)), tuple(sorted(s)), tuple(sorted(p)), bool(p) and all(annex))
        for d, (a, s, p, annex) in plan.items()
    }


class Lookup:
    """The registry indices, the Chroma collection and the embedder, opened once for many queries."""

    def __init__(
        self, registry: RegistryIndex, collection: Any, embedder: Embedder, published: dict[str, str] | None = None
    ) -> None:
        self.registry, self.collection, self.embedder = registry, collection, embedder
        self.published = published

    @classmethod
    def open(
        cls,
        home: Path | str,
        chroma_url: str | None = None,
        embedder: str | Embedder = "hash",
        max_candidates: int = MAX_CANDIDATES,
    ) -> Lookup:
        """Open the published registry and index under ``home`` (or the Chroma server at ``chroma_url``).
        ``max_candidates``: documents listed for an article named with no document."""
        home = Path(home)
        registry = RegistryIndex.load(home)
        registry.max_candidates = max_candidates
        embed = make_embedder(embedder) if isinstance(embedder, str) else embedder
        client = open_client(home / "chroma", chroma_url)
        try:
            collection = client.get_collection(COLLECTION, embedding_function=None)
        except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
            raise LookupProblem(f"no Chroma collection {COLLECTION!r} at {chroma_url or home / 'chroma'}") from exc
        built_by = (collection.metadata or {}).get("zan_embedder")
        if built_by != embed.id:
            raise LookupProblem(f"the index was embedded by {built_by!r}; this lookup embeds with {embed.id!r}")
        return cls(registry, collection, embed, published_chunks(home))

    def fetch_chunks_by_doc_ids(
        self, doc_ids: list[str], query: str, k_per_doc: int = 5, articles: list[str] | None = None
    ) -> list[Chunk]:
        return self._fetch(doc_ids, query, k_per_doc, tuple(articles or ()), (), None)

    def _fetch(
        self, docs: list[str], query: str, k_per_doc: int, articles: tuple[str, ...], sections: tuple[str, ...],
        vector: Any, points: tuple[str, ...] = (), in_annex: bool = False,
    ) -> list[Chunk]:  # fmt: skip
        return fetch_chunks_by_doc_ids(
            docs, query, k_per_doc, articles, collection=self.collection, embedder=self.embedder,
            query_vector=vector, published=self.published, sections=sections, points=points, in_annex=in_annex,
        )  # fmt: skip

    def vector_search(self, query: str, k: int = 10) -> list[Chunk]:
        return vector_search(query, k, collection=self.collection, embedder=self.embedder, published=self.published)

    def route(self, query: str, k_per_doc: int = 5, k: int = 10) -> RouteResult:
        """Resolve, fetch, rank and explain one question."""
        identifiers = parse(query)
        if not identifiers:
            nearest = self.vector_search(query, k)
            return RouteResult(query, "no_identifier", [], [], nearest, hint([], self.registry.docs))
        matches = self.registry.resolve(identifiers)
        plan = fetch_plan(matches)
        vector = self.embedder.embed([query])[0]
        chunks: list[Chunk] = []
        for narrowing in dict.fromkeys(plan.values()):
            articles, sections, points, in_annex = narrowing
            docs = [d for d, n in plan.items() if n == narrowing]
            found = self._fetch(docs, query, k_per_doc, articles, sections, vector, points, in_annex)
            if not found and (sections or points):  # not chunked on its own: the whole document ranks
                found = self._fetch(docs, query, k_per_doc, articles, (), vector)
            chunks += found
        chunks.sort(key=lambda c: (-c.score, c.chunk_id))
        status = overall_status(matches)
        return RouteResult(query, status, identifiers, matches, chunks, hint(matches, self.registry.docs), list(plan))


def published_chunks(home: Path) -> dict[str, str] | None:
    """chunk_id → text_hash of the published version (None for data written before versions existed)."""
    path = published_file(home, "enriched_chunks.parquet")
    if published_dir(home) is None or not path.exists():
        return None
    table = pq.read_table(path, columns=["chunk_id", "text_hash"])
    return dict(zip(table.column("chunk_id").to_pylist(), table.column("text_hash").to_pylist(), strict=True))


def route(query: str, home: Path = Path("data"), chroma_url: str | None = None, k_per_doc: int = 5) -> RouteResult:
    """Open the data under ``home`` and route one question (for many questions keep a :class:`Lookup`)."""
    return Lookup.open(home, chroma_url).route(query, k_per_doc)
