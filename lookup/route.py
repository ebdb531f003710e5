"""One entry point for a question: identifiers → registry matches → filtered chunks → hint.

A lookup is a partition ahead of ranking, not one more ranked signal: when the query names documents,
only their chunks are candidates (and only the named articles' chunks, when it names articles); embedding
similarity ranks inside that partition. A query with no identifier falls back to plain vector search. A
number the registry does not hold is refused: no chunks are guessed for it.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from enrich.storage import read_parquet
from lookup.errors import LookupProblem
from lookup.fetch import Chunk, fetch_chunks_by_doc_ids, vector_search
from lookup.grammar import parse
from lookup.hint import hint
from lookup.identifier import Identifier
from lookup.lineage import Change, LineageIndex
from lookup.published import PublishedChunks
from lookup.registry_index import MAX_CANDIDATES, Match, RegistryIndex
from schemas.arrow import ENRICHED_CHUNK_SCHEMA
from schemas.published import check_home, published_dir, published_file, read_manifest
from vectors.embed import Embedder, make_embedder
from vectors.index import COLLECTION, find_collection, open_client
from vectors.repair import damaged_folder, rebuilt_copy


@dataclass
class RouteResult:
    query: str
    status: str
    identifiers: list[Identifier]
    matches: list[Match]
    chunks: list[Chunk]
    hint: str
    doc_ids: list[str] = field(default_factory=list)
    changed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # an amending act → what it changed

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "status": self.status,
            "identifiers": [i.as_dict() for i in self.identifiers],
            "matches": [m.as_dict() for m in self.matches],
            "doc_ids": self.doc_ids,
            "chunks": [c.as_dict() for c in self.chunks],
            "hint": self.hint,
            "changed": self.changed,
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
    """The registry indices, the Chroma collection and the embedder, opened once for many queries. The
    collection (and chromadb with it) is opened on the first fetch: a refusal never pays for it."""

    def __init__(
        self,
        registry: RegistryIndex,
        collection: Any,
        embedder: Embedder,
        published: Mapping[str, str] | None = None,
        lineage: LineageIndex | None = None,
        opener: Callable[[], Any] | None = None,
    ) -> None:
        self.registry, self.embedder = registry, embedder
        self.published = published
        self.lineage = lineage or LineageIndex()
        self._collection, self._opener = collection, opener

    @property
    def collection(self) -> Any:
        if self._collection is None and self._opener is not None:
            self._collection = self._opener()
        return self._collection

    @classmethod
    def open(
        cls,
        home: Path | str,
        chroma_url: str | None = None,
        embedder: str | Embedder = "hash",
        max_candidates: int = MAX_CANDIDATES,
    ) -> Lookup:
        """Open the published registry under ``home``; the index (embedded under HOME/chroma, or the Chroma
        server at ``chroma_url``) opens on the first fetch. ``max_candidates``: documents listed for an article
        named with no document. An index embedded by another embedder is refused here, from the manifest."""
        home = check_home(home, writable=False)
        registry = RegistryIndex.load(home)
        registry.max_candidates = max_candidates
        embed = make_embedder(embedder) if isinstance(embedder, str) else embedder
        folder = published_dir(home)
        if chroma_url is None and folder is not None:
            _same_embedder(read_manifest(folder).embedder, embed)
        opener = functools.partial(_open_collection, home, chroma_url, embed)
        return cls(registry, None, embed, published_chunks(home), LineageIndex.load(home), opener)

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
        """Resolve, fetch, rank and explain one question (:func:`clean_query` bounds it first)."""
        query = clean_query(query)
        identifiers = parse(query, limit=MAX_IDENTIFIERS + 1)
        capped = len(identifiers) > MAX_IDENTIFIERS
        identifiers = identifiers[:MAX_IDENTIFIERS] if not capped else parse(query, limit=MAX_IDENTIFIERS)
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
        chunks += self._replacements(matches, query, k_per_doc, vector)
        status = overall_status(matches)
        note = hint(matches, self.registry.docs, self.lineage)
        if capped:
            note += f"\n⚠ В вопросе больше {MAX_IDENTIFIERS} номеров документов: рассмотрены первые {MAX_IDENTIFIERS}."
        changed = {m.identifier.canonical: [c.as_dict() for c in self._changed_by(m)] for m in matches}
        return RouteResult(query, status, identifiers, matches, chunks, note, list(plan),
                           {k: v for k, v in changed.items() if v})  # fmt: skip

    def _replacements(self, matches: list[Match], query: str, k_per_doc: int, vector: Any) -> list[Chunk]:
        """Chunks of the acts that replaced a repealed act the question found, marked as such, after the rest."""
        docs = self.registry.docs
        out: list[Chunk] = []
        for m in matches:
            doc = docs.get(m.doc_ids[0]) if m.status == "exact" else None
            if doc is None or doc.status != "repealed" or doc.replaced_by not in docs:
                continue
            found = self._fetch([str(doc.replaced_by)], query, k_per_doc, (), (), vector)
            out += [dataclasses.replace(c, replaces=doc.doc_id) for c in found]
        return out

    def _changed_by(self, match: Match) -> list[Change]:
        ident = match.identifier
        if ident.kind not in ("law_number", "order") or not ident.number:
            return []
        return self.lineage.changed_by(ident.number)


def _open_collection(home: Path, chroma_url: str | None, embedder: Embedder) -> Any:
    """The published index's collection: the embedded one (a private copy on a read-only HOME, a rebuilt one
    when it is damaged) or the server's; refused when another embedder built it."""
    folder = readable_chroma(home / "chroma") if chroma_url is None else None
    if folder is not None and damaged_folder(folder) is not None:  # a rebuilt copy answers until a run repairs
        enriched = read_parquet(published_file(home, "enriched_chunks.parquet"), ENRICHED_CHUNK_SCHEMA, "chunks")
        return rebuilt_copy(home, embedder, enriched)
    collection = find_collection(open_client(folder, chroma_url))
    if collection is None:
        raise LookupProblem(f"no Chroma collection {COLLECTION!r} at {chroma_url or home / 'chroma'}")
    _same_embedder((collection.metadata or {}).get("zan_embedder"), embedder)
    return collection


def _same_embedder(built_by: str | None, embedder: Embedder) -> None:
    if built_by != embedder.id:
        raise LookupProblem(f"the index was embedded by {built_by!r}; this lookup embeds with {embedder.id!r}")


def readable_chroma(path: Path) -> Path:
    """The embedded index to open for reading. Chroma writes to its folder even to read, so on a read-only
    HOME (a mounted snapshot, a shared volume) lookups open a private copy made once per process."""
    if not path.is_dir() or os.access(path, os.W_OK):
        return path
    copy = Path(tempfile.mkdtemp(prefix="zan-chroma-ro-"))
    shutil.copytree(path, copy, dirs_exist_ok=True)
    atexit.register(shutil.rmtree, copy, True)  # removed when the process ends
    return copy


MAX_QUERY_CHARS = 2000  # a question, not a document: longer input is refused with this reason
MAX_IDENTIFIERS = 20  # identifiers resolved per question; the hint says when more were named
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class QueryTooLong(LookupProblem):
    """The question is over :data:`MAX_QUERY_CHARS`."""


def clean_query(query: str) -> str:
    """The question as text that is safe to parse: invalid bytes and lone surrogates (a shell passes them
    through ``surrogateescape``) become U+FFFD, control characters become spaces, and a question over
    :data:`MAX_QUERY_CHARS` is refused."""
    try:  # bytes a shell could not decode come back as they were, then each invalid one is one U+FFFD
        raw = query.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        raw = query.encode("utf-8", "surrogatepass")
    text = raw.decode("utf-8", "replace")
    text = _CONTROL.sub(" ", text)
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLong(f"the question is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    return text


def published_chunks(home: Path) -> PublishedChunks | None:
    """chunk_id → text_hash of the published version, read on demand (None for data written before versions
    existed)."""
    path = published_file(home, "enriched_chunks.parquet")
    if published_dir(home) is None or not path.exists():
        return None
    return PublishedChunks(path)


def route(query: str, home: Path = Path("data"), chroma_url: str | None = None, k_per_doc: int = 5) -> RouteResult:
    """Open the data under ``home`` and route one question (for many questions keep a :class:`Lookup`)."""
    return Lookup.open(home, chroma_url).route(query, k_per_doc)
