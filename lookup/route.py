"""One entry point for a question: identifiers → registry matches → filtered chunks → hint.

A lookup is a partition ahead of ranking, not one more ranked signal: when the query names documents,
only their chunks are candidates (and only the named articles' chunks, when it names articles); embedding
similarity ranks inside that partition. A query with no identifier falls back to plain vector search. A
number the registry does not hold is refused: no chunks are guessed for it.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime as dt
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lookup.chunks import Chunk, QuestionVector, rank_in_version, row_chunk, vector_search
from lookup.errors import BadQuestion, LookupProblem
from lookup.fusion import question_language
from lookup.grammar import parse
from lookup.hint import hint, plain_words_hint, vector_method
from lookup.history import history_of, past_texts
from lookup.identifier import Identifier
from lookup.lineage import Change, LineageIndex
from lookup.plain import DEPTH, DocFilter, Evidence, Ranking, gather, rank
from lookup.plain import chunks as plain_chunks
from lookup.registry_index import MAX_CANDIDATES, DocInfo, Match, RegistryIndex
from lookup.result import RouteResult as RouteResult
from lookup.result import fetch_plan, overall_status
from lookup.version import Narrowing, Snapshot
from schemas.limits import MAX_IDENTIFIERS, MAX_QUERY_CHARS
from schemas.published import check_home, published_file
from schemas.text import clean_text
from vectors.embed import Embedder
from vectors.embedders import embedder_for
from vectors.index import COLLECTION, Collection, find_collection, open_client
from vectors.repair import damaged_folder, rebuilt_copy
from vectors.store import VectorStore


class Lookup:
    """Answers questions from one published version at a time, opened once for many questions.

    Each question is answered from the version published when it was asked (:class:`Snapshot`): its
    registry, lineage and chunks, never a mix. A reader kept open refreshes when ``CURRENT`` moves (one small
    file read per question tells), so it never answers from a pruned or superseded version. The Chroma
    collection (and chromadb with it) is opened only for a question with no identifier: a lookup by number
    never touches the index."""

    def __init__(
        self, home: Path, embedder: Embedder, chroma_url: str | None = None, max_candidates: int = MAX_CANDIDATES
    ) -> None:
        self.home, self.embedder, self.chroma_url = home, embedder, chroma_url
        self.embedder_id = embedder.bind(home)
        self.max_candidates = max_candidates
        self.store = VectorStore(home, self.embedder_id)
        self.ranking = Ranking.shipped(self.embedder_id)  # the plain-words ranking's weights, per question language
        self._lock = threading.Lock()
        self._snapshot = self._checked(Snapshot.open(home, max_candidates))
        self._collection: Collection | None = None
        self._collection_lock = threading.Lock()  # one opening of the index, however many questions ask at once

    @classmethod
    def open(
        cls,
        home: Path | str,
        chroma_url: str | None = None,
        embedder: str | Embedder | None = None,
        max_candidates: int = MAX_CANDIDATES,
    ) -> Lookup:
        """Open the version published under ``home``; the index (embedded under HOME/chroma, or the Chroma
        server at ``chroma_url``) opens on the first question without an identifier. ``embedder``: the
        published version's unless given (a spec or an embedder); a version embedded by another one is
        refused, naming both. ``max_candidates``: documents listed for an article named with no document."""
        home = check_home(home, writable=False)
        embed = embedder_for(home, embedder) if embedder is None or isinstance(embedder, str) else embedder
        return cls(home, embed, chroma_url, max_candidates)

    def snapshot(self) -> Snapshot:
        """The version to answer from: the one held, or the newly published one when ``CURRENT`` moved."""
        self.refresh()
        return self._snapshot

    def held(self) -> Snapshot:
        """The version held now, without looking at ``CURRENT`` (a server answers from it while
        :meth:`refresh` opens the next one in the background)."""
        return self._snapshot

    def refresh(self) -> bool:
        """Open the version ``CURRENT`` names if it is not the one held, then swap it in (one assignment:
        a question asked meanwhile is answered whole from the version it started on). The opening happens
        outside the lock, so questions never wait for it. True when the version changed."""
        if self._snapshot.is_current():
            return False
        fresh = self._checked(Snapshot.open(self.home, self.max_candidates))
        with self._lock:
            changed = fresh.version != self._snapshot.version
            self._snapshot = fresh
        return changed

    def _checked(self, snapshot: Snapshot) -> Snapshot:
        if snapshot.embedder is not None:
            _same_embedder(snapshot.embedder, self.embedder_id, f"version {snapshot.version}")
        return snapshot

    @property
    def registry(self) -> RegistryIndex:
        return self.snapshot().registry

    @property
    def lineage(self) -> LineageIndex:
        return self.snapshot().lineage

    @property
    def collection(self) -> Collection:
        """The index's collection, opened on first use, once: questions arriving together wait for the one
        opening (Chroma's embedded client is not safe to create from several threads at once)."""
        if self._collection is None:
            with self._collection_lock:
                if self._collection is None:
                    self._collection = _open_collection(self.home, self.chroma_url, self.embedder, self.embedder_id)
        return self._collection

    def warm(self) -> None:
        """Open now what a first plain-words question would open: the index's collection and the embedder
        (a model loads its weights on first use). A server calls it before it answers anything, so the first
        burst of questions finds every reader open."""
        if self.chroma_url is not None or (self.home / "chroma").is_dir():
            _ = self.collection
        self.embedder.embed_queries(["warm"])

    def fetch_chunks_by_doc_ids(
        self, doc_ids: list[str], query: str, k_per_doc: int = 5, articles: list[str] | None = None
    ) -> list[Chunk]:
        vector = self.embedder.embed_queries([query])[0]
        return self._fetch(self.snapshot(), doc_ids, vector, k_per_doc, Narrowing(tuple(articles or ())))

    def _fetch(
        self,
        snap: Snapshot,
        docs: list[str],
        vector: np.ndarray | QuestionVector | None,
        k_per_doc: int,
        narrowing: Narrowing,
        query: str = "",
    ) -> list[Chunk]:
        lexical = _row_scores(snap, query) if query else None
        language = question_language(query) if query else None
        return rank_in_version(
            snap.chunks,
            docs,
            narrowing,
            vector,
            k_per_doc,
            self.store.matrix,
            self.embedder.embed_passages,
            lexical,
            language,
        )

    def evidence(self, snap: Snapshot, query: str, depth: int = DEPTH, every: bool = False) -> Evidence:
        """The plain-words rankings' candidates for ``query`` (:func:`lookup.plain.gather`): those its
        language's weights read, or ``every`` one (what tuning re-ranks under every weight)."""
        crossed = every or self.ranking.for_language(question_language(query)).crossed > 0
        return gather(snap, query, self.embedder, self.collection, self.store.matrix, depth, crossed)

    def plain_words(self, snap: Snapshot, query: str, k: int) -> tuple[list[Chunk], Evidence]:
        """A question with no identifier: its candidates from every ranking, fused with the weights chosen for
        this embedder and the question's language (:mod:`lookup.plain`). Without a lexical index (a version
        built before them): the nearest chunks alone."""
        evidence = self.evidence(snap, query)
        return plain_chunks(snap, rank(evidence, self.ranking.for_language(evidence.language)), k), evidence

    def resolve(self, query: str, snapshot: Snapshot | None = None) -> RouteResult:
        """The question's identifiers resolved through the registry, no chunk fetched: where reading a
        document, an article or an act's history starts. ``doc_ids``: what each resolved to (an article named
        with no document resolves to none: the hint asks which)."""
        query = clean_query(query)
        snap = snapshot or self.snapshot()
        identifiers = parse(query, limit=MAX_IDENTIFIERS)
        matches = _described(snap.registry.resolve(identifiers), identifiers) if identifiers else []
        note = hint(matches, snap.registry.docs, snap.lineage)
        return RouteResult(
            query,
            overall_status(matches),
            identifiers,
            matches,
            [],
            note,
            list(fetch_plan(matches)),
            version=snap.version,
            described=_described_docs(snap, matches, []),
        )

    def search(self, query: str, k: int = 10, where: DocFilter | None = None) -> RouteResult:
        """Plain words only, whatever numbers the question holds, kept to the documents ``where`` allows: the
        ranking's candidates are filtered before the top ``k`` is taken, and a filter that leaves fewer than
        ``k`` gathers again eight times deeper, so a narrow filter is not answered from a shallow list."""
        query = clean_query(query)
        snap = self.snapshot()
        where = where or DocFilter()
        docs = snap.registry.docs
        depth = DEPTH
        while True:
            evidence = self.evidence(snap, query, depth)
            params = self.ranking.for_language(evidence.language)
            ranked = [(f, s) for f, s in rank(evidence, params) if where.keeps(docs.get(f.doc_id), f.language)]
            if len(ranked) >= k or not where or depth > DEPTH:
                break
            depth *= 8
        found = plain_chunks(snap, ranked, k)
        note = plain_words_hint(found, docs, vector_method(self.embedder.spec), evidence.language)
        return RouteResult(
            query,
            "no_identifier",
            [],
            [],
            found,
            note,
            version=snap.version,
            expanded=evidence.expanded,
            described=_described_docs(snap, [], found),
        )

    def vector_search(self, query: str, k: int = 10) -> list[Chunk]:
        snap = self.snapshot()
        return vector_search(query, k, collection=self.collection, embedder=self.embedder, published=snap.published)

    def lexical_search(self, query: str, k: int = 10) -> list[Chunk]:
        """BM25 alone over the published version (the evaluation's lexical column); empty without an index."""
        snap = self.snapshot()
        if snap.lexical is None:
            return []
        found = snap.lexical.top(clean_query(query), k)
        rows = snap.chunks.at([p for p, _ in found])
        texts = snap.chunks.texts(rows)
        return [
            row_chunk(row, text, score, "lexical", lexical=score)
            for row, text, (_, score) in zip(rows.to_pylist(), texts, found, strict=True)
        ]

    def route(
        self,
        query: str,
        k_per_doc: int = 5,
        k: int = 10,
        snapshot: Snapshot | None = None,
        as_of: dt.date | None = None,
    ) -> RouteResult:
        """Resolve, fetch, rank and explain one question (:func:`clean_query` bounds it first), all from the
        version published when it was asked (or from ``snapshot``); the answer names that version. With
        ``as_of``, the acts the question names answer with their text in force on that date, where the
        version holds their history (:func:`lookup.history`)."""
        query = clean_query(query)
        snap = snapshot or self.snapshot()
        try:
            result = self._route(snap, query, k_per_doc, k, from_history=as_of is not None)
            if as_of is None or not result.matches:
                return result
            chunks, editions, notes = past_texts(snap, fetch_plan(result.matches), result.chunks, as_of, k_per_doc)
            return dataclasses.replace(
                result, chunks=chunks, editions=editions, as_of=as_of.isoformat(), hint="\n".join([result.hint, *notes])
            )
        except FileNotFoundError:  # the version was pruned under a long question: answer from the current one
            if snapshot is not None:
                self.refresh()
            return self._route(self.snapshot(), query, k_per_doc, k)

    def _route(self, snap: Snapshot, query: str, k_per_doc: int, k: int, from_history: bool = False) -> RouteResult:
        """One question's answer from ``snap``; ``from_history``: the acts the version's history holds are not
        fetched (an as-of answer replaces their chunks with their past texts)."""
        identifiers = parse(query, limit=MAX_IDENTIFIERS + 1)
        capped = len(identifiers) > MAX_IDENTIFIERS
        identifiers = identifiers[:MAX_IDENTIFIERS] if not capped else parse(query, limit=MAX_IDENTIFIERS)
        matches = _described(snap.registry.resolve(identifiers), identifiers) if identifiers else []
        if not matches:  # no identifier, or only a description («закон о том, что …»): plain words
            nearest, evidence = self.plain_words(snap, query, k)
            note = plain_words_hint(nearest, snap.registry.docs, vector_method(self.embedder.spec), evidence.language)
            return RouteResult(
                query,
                "no_identifier",
                identifiers,
                [],
                nearest,
                note,
                version=snap.version,
                expanded=evidence.expanded,
                described=_described_docs(snap, [], nearest),
            )
        plan = fetch_plan(matches)
        asked = residual(query, identifiers)  # what the question asks of the documents it names, if anything
        # a question that only names documents («ст. 182 ТК РК») has nothing to compare chunks with: they are
        # ranked without the model (BM25 of its words, then chunk order), which spares a model call per lookup;
        # one with words asks the model once, and only when a fetch has more chunks than it answers
        vector: QuestionVector | None = None
        if asked != query:
            vector = QuestionVector(lambda: self.embedder.embed_queries([asked])[0])
        chunks: list[Chunk] = []
        held = history_of(snap) if from_history else None
        for narrowing in dict.fromkeys(plan.values()):
            docs = [d for d, n in plan.items() if n == narrowing and not (held is not None and held.has(d))]
            if not docs:
                continue
            found = self._fetch(snap, docs, vector, k_per_doc, narrowing, asked)
            if not found and (narrowing.sections or narrowing.points):  # not chunked on its own: the whole doc
                found = self._fetch(snap, docs, vector, k_per_doc, Narrowing(narrowing.articles), asked)
            chunks += found
        chunks.sort(key=lambda c: (-c.score, c.chunk_id))
        chunks += self._replacements(snap, matches, k_per_doc, vector, asked)
        status = overall_status(matches)
        note = hint(matches, snap.registry.docs, snap.lineage)
        if capped:
            note += f"\n⚠ В вопросе больше {MAX_IDENTIFIERS} номеров документов: рассмотрены первые {MAX_IDENTIFIERS}."
        changed = {m.identifier.canonical: [c.as_dict() for c in _changed_by(snap.lineage, m)] for m in matches}
        return RouteResult(
            query,
            status,
            identifiers,
            matches,
            chunks,
            note,
            list(plan),
            {k: v for k, v in changed.items() if v},
            snap.version,
            described=_described_docs(snap, matches, chunks),
        )

    def _replacements(
        self, snap: Snapshot, matches: list[Match], k_per_doc: int, vector: QuestionVector | None, query: str
    ) -> list[Chunk]:
        """Chunks of the acts that replaced a repealed act the question found, marked as such, after the rest."""
        docs = snap.registry.docs
        out: list[Chunk] = []
        for m in matches:
            doc = docs.get(m.doc_ids[0]) if m.status == "exact" else None
            if doc is None or doc.status != "repealed" or doc.replaced_by not in docs:
                continue
            found = self._fetch(snap, [str(doc.replaced_by)], vector, k_per_doc, Narrowing(), query)
            out += [dataclasses.replace(c, replaces=doc.doc_id) for c in found]
        return out


def _described_docs(snap: Snapshot, matches: list[Match], chunks: list[Chunk]) -> dict[str, DocInfo]:
    """The registry rows an answer describes: each match's documents (its candidates) and each chunk's."""
    docs = snap.registry.docs
    wanted = dict.fromkeys([d for m in matches for d in m.doc_ids] + [c.doc_id for c in chunks])
    return {d: docs[d] for d in wanted if d in docs}


def _described(matches: list[Match], identifiers: list[Identifier]) -> list[Match]:
    """The matches without the titles the registry does not hold that may not name an act at all, and
    without what is bound to them: an unquoted title nothing is bound to («закон о защите прав работников …»
    may describe a law rather than name one), and a Kazakh title (the registry keeps most acts' titles in
    Russian only: refusing would deny an act it has). A description must not become a refusal; a quoted
    Russian title, or an unquoted one an article is bound to, is still refused when absent."""
    bound = {i.bound_to for i in identifiers if i.bound_to is not None}

    def described(n: int, m: Match) -> bool:
        ident = m.identifier
        if ident.kind != "title" or m.doc_ids:
            return False
        return question_language(ident.raw) == "kaz" or (bool(ident.title_words) and n not in bound)

    dropped = {n for n, m in enumerate(matches) if described(n, m)}
    return [m for n, m in enumerate(matches) if n not in dropped and m.identifier.bound_to not in dropped]


def residual(query: str, identifiers: list[Identifier]) -> str:
    """The question without its identifiers' words, for ranking inside the documents they name («закон о
    противодействии коррупции: что такое конфликт интересов» ranks by «что такое конфликт интересов»); the
    whole question when nothing else is left («ст. 156 ТК РК»)."""
    kept, at = [], 0
    for ident in sorted(identifiers, key=lambda i: i.span):
        kept.append(query[at : ident.span[0]])
        at = max(at, ident.span[1])
    kept.append(query[at:])
    rest = " ".join(" ".join(kept).split())
    return rest if len(re.findall(r"\w{3,}", rest)) >= 1 else query  # the question itself: nothing else asked


def _row_scores(snap: Snapshot, query: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """BM25 of the version's rows at given positions, for ranking inside named documents (None: no index)."""
    if snap.lexical is None:
        return None
    scores = snap.lexical.scores(query)
    return lambda positions: scores[positions]


def _changed_by(lineage: LineageIndex, match: Match) -> list[Change]:
    ident = match.identifier
    if ident.kind not in ("law_number", "order") or not ident.number:
        return []
    return lineage.changed_by(ident.number)


def _open_collection(home: Path, chroma_url: str | None, embedder: Embedder, embedder_id: str) -> Collection:
    """The published index's collection: the embedded one (a private copy on a read-only HOME, a rebuilt one
    when it is damaged) or the server's; refused when another embedder built it."""
    folder = readable_chroma(home / "chroma") if chroma_url is None else None
    if folder is not None and damaged_folder(folder) is not None:  # a rebuilt copy answers until a run repairs
        return rebuilt_copy(home, embedder, published_file(home, "enriched_chunks.parquet"))
    collection = find_collection(open_client(folder, chroma_url))
    if collection is None:
        raise LookupProblem(f"no Chroma collection {COLLECTION!r} at {chroma_url or home / 'chroma'}")
    _same_embedder((collection.metadata or {}).get("zan_embedder"), embedder_id)
    return collection


def _same_embedder(built_by: str | None, embedder_id: str, what: str = "the index") -> None:
    if built_by != embedder_id:
        raise LookupProblem(f"{what} was embedded by {built_by!r}; this lookup embeds with {embedder_id!r}")


def readable_chroma(path: Path) -> Path:
    """The embedded index to open for reading. Chroma writes to its folder even to read, so on a read-only
    HOME (a mounted snapshot, a shared volume) lookups open a private copy made once per process."""
    if not path.is_dir() or os.access(path, os.W_OK):
        return path
    copy = Path(tempfile.mkdtemp(prefix="zan-chroma-ro-"))
    shutil.copytree(path, copy, dirs_exist_ok=True)
    atexit.register(shutil.rmtree, copy, True)  # removed when the process ends
    return copy


class QueryTooLong(BadQuestion):
    """The question is over :data:`MAX_QUERY_CHARS`."""


def clean_query(query: str) -> str:
    """The question as text that is safe to parse: invalid bytes and lone surrogates (a shell passes them
    through ``surrogateescape``) become U+FFFD, then the one input normaliser files go through too
    (:func:`schemas.text.clean_text`: NFC, invisible characters removed, control characters as spaces, digits
    of any script as ASCII); a question over :data:`MAX_QUERY_CHARS` is refused."""
    try:  # bytes a shell could not decode come back as they were, then each invalid one is one U+FFFD
        raw = query.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        raw = query.encode("utf-8", "surrogatepass")
    text = clean_text(raw.decode("utf-8", "replace"))
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLong(f"the question is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    return text


def route(query: str, home: Path = Path("data"), chroma_url: str | None = None, k_per_doc: int = 5) -> RouteResult:
    """Open the data under ``home`` and route one question (for many questions keep a :class:`Lookup`)."""
    return Lookup.open(home, chroma_url).route(query, k_per_doc)
