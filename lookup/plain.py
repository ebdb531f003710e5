"""Plain-words questions over the whole law: what finds candidates, and the one ranking that orders them.

A question that names no document is answered from chunks found five ways, each a ranking of its own:

- ``vector``: the index's nearest chunks to the question (e5's «query: …»);
- ``lexical``: BM25 of the question's words (:mod:`vectors.lexical`);
- ``expanded``: BM25 of the words the question does not say but means — the law's wording for its everyday
  words (:mod:`lookup.vocabulary`) and, for a Kazakh question, the Russian terms the version's bilingual
  acts align with its words (:mod:`vectors.bridge`);
- ``pseudo``: the nearest chunks to the question pseudo-translated by that bridge (a Kazakh question about
  an act held only in Russian: the model reads «несчастных расследования инспектор» where it reads
  «жазатайым оқиға» poorly);
- ``crossed``: the nearest chunks to the question among the acts *not* published in its language. A
  multilingual model prefers its own language: a Kazakh question's Kazakh chunks outscore every Russian one
  by a few hundredths of cosine, so a Russian-only order never reaches the global top fifty. Asked apart,
  the model finds it, and its cosine raised by that preference (:attr:`RankParams.crossed`, chosen by
  cross-validation) places it in the one vector ranking beside the question's own language;
- ``documents``: acts ranked first, by their cards (title, kind, issuer, headings) and their centroids
  (:mod:`vectors.documents`), and the best chunks of the best acts taken beside the rest, so a four-chunk
  order is not drowned by a seven-hundred-chunk code.

:func:`gather` collects them once (:class:`Evidence`, independent of any weight); :func:`rank` fuses them by
weighted reciprocal rank (Cormack et al. 2009: ranks, not scores, since a cosine and a BM25 are not on one
scale) with the parameters of :class:`RankParams`, puts the question's language first inside an act published
in it and another (an act held in one language keeps its place: a Kazakh question gets the Russian rules
when there are no Kazakh ones), and keeps one act from filling the top five while another act's chunk scores
close. Every parameter is chosen by cross-validation split by act (:mod:`lookup.tuning`), per embedder
(``lookup/refdata/ranking.json``); evaluation re-ranks the same :class:`Evidence` under each candidate.

A lookup is a partition ahead of ranking: nothing here runs for a question that names documents.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.chunks import Chunk, QuestionVector, rank_in_version, row_chunk, vector_search
from lookup.fusion import question_language
from lookup.registry_index import DocInfo
from lookup.version import Narrowing, Snapshot
from lookup.vocabulary import expand, expansion_terms
from vectors.embed import Embedder
from vectors.index import Collection
from vectors.lexical import best_rows, query_terms

DEPTH = 50  # candidates each ranking gives
TOP_DOCUMENTS = 5  # acts the documents-first route takes chunks from
PER_DOCUMENT = 3  # chunks it takes from each
DOC_RRF_K = 10  # fusing an act's card rank and centroid rank into its one rank
SIGNALS = ("vector", "lexical", "expanded", "pseudo")
RANKING = Path(__file__).resolve().parent / "refdata" / "ranking.json"


@dataclass(frozen=True)
class RankParams:
    """The weights of :func:`rank`. Defaults are the plain fusion zan had before the methods (equal weights,
    k = 10, nothing else); the shipped values per embedder are in ``lookup/refdata/ranking.json``."""

    rrf_k: float = 10.0
    vector: float = 1.0
    lexical: float = 1.0
    expanded: float = 0.0
    pseudo: float = 0.0
    crossed: float = 0.0  # raise the cosine of an act held only in other languages by this much (0: a lookup
    # does not ask for them)
    documents: float = 0.0
    cap: int = 0  # at most this many chunks of one act in the top five (0: no cap) …
    close: float = 0.0  # … while another act's chunk scores at least this share of the one it would replace

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Ranking:
    """The weights a lookup ranks with: one :class:`RankParams` per question language where cross-validation
    found enough acts to choose them on (``rus``, ``kaz``, ``eng``), and ``params`` for any other. A Kazakh
    question leans on the bridge and on acts held in Russian, an English one on the model; one set of weights
    for all three was below the model alone on English questions (hashed n-grams, held out)."""

    params: RankParams = field(default_factory=RankParams)
    by_language: dict[str, RankParams] = field(default_factory=dict)

    def for_language(self, language: str | None) -> RankParams:
        return self.by_language.get(language or "", self.params)

    def replaced(self, **changes: Any) -> Ranking:
        """The same weights with ``changes`` applied to every language's (what a test or an ablation varies)."""
        return Ranking(
            dataclasses.replace(self.params, **changes),
            {lang: dataclasses.replace(p, **changes) for lang, p in self.by_language.items()},
        )

    def as_dict(self) -> dict[str, Any]:
        return {"params": self.params.as_dict(), "by_language": {k: p.as_dict() for k, p in self.by_language.items()}}

    @classmethod
    def shipped(cls, embedder_id: str) -> Ranking:
        """The weights chosen for this embedder's family (``hash``, ``e5``, anything else: ``default``)."""
        table = _shipped()
        chosen = table.get(embedder_family(embedder_id)) or table.get("default") or {}
        by_language = {lang: RankParams(**p) for lang, p in chosen.get("by_language", {}).items()}
        return cls(RankParams(**chosen.get("params", {})), by_language)


def embedder_family(embedder_id: str) -> str:
    """The family weights are chosen per: ``hash``, ``e5``, ``openai``, ``st`` (the id up to its first - or :)."""
    return embedder_id.split("-", 1)[0].split(":", 1)[0]


@functools.cache
def _shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RANKING.read_text("utf-8")) if RANKING.exists() else {}
    embedders: dict[str, Any] = data.get("embedders", {})
    return embedders


@dataclass(frozen=True)
class DocFilter:
    """What a plain-words search keeps: documents of this type, issuer (contained, case-folded), status, and
    chunks in this language. Empty fields keep everything."""

    doc_type: str | None = None
    issuer: str | None = None
    status: str | None = None
    language: str | None = None

    def __bool__(self) -> bool:
        return any((self.doc_type, self.issuer, self.status, self.language))

    def keeps(self, doc: DocInfo | None, language: str | None) -> bool:
        if doc is None:
            return not (self.doc_type or self.issuer or self.status) and self.language in (None, language)
        return (
            (not self.doc_type or doc.doc_type == self.doc_type)
            and (not self.issuer or self.issuer.casefold() in (doc.issuer or "").casefold())
            and (not self.status or doc.status == self.status)
            and (not self.language or language == self.language)
        )


@dataclass
class Feature:
    """One candidate chunk, and its score in each ranking that found it (None where none did)."""

    chunk_id: str
    doc_id: str
    language: str | None
    row: int | None = None  # its position in the version's chunk file, when a ranking over rows found it
    labels: tuple[str, ...] = ()  # its article labels
    base: Chunk | None = None  # the chunk as the index or the in-document ranking gave it
    vector: float | None = None
    lexical: float | None = None
    expanded: float | None = None
    pseudo: float | None = None
    crossed: float | None = None  # cosine, found among the acts not published in the question's language
    doc_rank: int | None = None  # its act's rank among acts (documents first)
    within: int | None = None  # its rank inside its act


@dataclass
class Evidence:
    """Everything :func:`rank` reads for one question, gathered once."""

    language: str
    bilingual: set[str]
    features: dict[str, Feature] = field(default_factory=dict)
    expanded: list[dict[str, str]] = field(default_factory=list)  # what was added to the question, and why
    pseudo: str | None = None

    def feature(self, chunk_id: str, doc_id: str, language: str | None) -> Feature:
        found = self.features.get(chunk_id)
        if found is None:
            found = self.features[chunk_id] = Feature(chunk_id, doc_id, language)
            self._ranked = None
        return found

    _ranked: tuple[list[Feature], dict[str, np.ndarray]] | None = field(default=None, init=False, repr=False)
    _tiebreak: np.ndarray | None = field(default=None, init=False, repr=False)
    _vector: dict[float, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _late: np.ndarray | None = field(default=None, init=False, repr=False)

    def ranked(self, crossed: float = 0.0) -> tuple[list[Feature], dict[str, np.ndarray]]:
        """The candidates, and each one's rank (1-based, 0: not held) in every ranking and in documents-first
        (its act's rank plus its rank inside it, less one): computed once, whatever the weights asked. With
        ``crossed`` > 0 the vector ranking holds the acts found in other languages too, their cosine raised by
        ``crossed`` (one ranking per offset, kept)."""
        if self._ranked is None:
            features = sorted(self.features.values(), key=lambda f: f.chunk_id)
            ranks = {signal: _ranks([getattr(f, signal) for f in features]) for signal in SIGNALS}
            ranks["documents"] = np.array(
                [f.doc_rank + f.within - 1 if f.doc_rank and f.within else 0 for f in features], dtype=float
            )
            self._ranked = (features, ranks)
            self._tiebreak = np.arange(len(features))
            self._vector = {}
            self._late = None
        features, ranks = self._ranked
        if crossed <= 0:
            return self._ranked
        if crossed not in self._vector:
            self._vector[crossed] = _ranks([_raised(f.vector, f.crossed, crossed) for f in features])
        return features, {**ranks, "vector": self._vector[crossed]}

    def other_edition(self) -> np.ndarray:
        """Per candidate: a chunk in another language of an act published in the question's language too."""
        features, _ = self.ranked()
        if self._late is None:
            self._late = np.array(
                [f.doc_id in self.bilingual and f.language != self.language for f in features], dtype=bool
            )
        return self._late

    def tiebreak(self) -> np.ndarray:
        """Equal scores in chunk id order."""
        self.ranked()
        assert self._tiebreak is not None
        return self._tiebreak


def _ranks(values: list[float | None]) -> np.ndarray:
    """1-based ranks, best (highest) first; 0 where a ranking did not hold the candidate."""
    scores = np.array([np.nan if v is None else v for v in values], dtype=float)
    held = np.flatnonzero(~np.isnan(scores))
    out = np.zeros(len(scores))
    out[held[np.argsort(-scores[held], kind="stable")]] = np.arange(1, len(held) + 1)
    return out


def _raised(vector: float | None, crossed: float | None, offset: float) -> float | None:
    """A candidate's cosine in the one vector ranking: its own, or, found among the acts held only in other
    languages, that cosine plus ``offset`` (the better of the two)."""
    if crossed is None:
        return vector
    return max(crossed + offset, vector) if vector is not None else crossed + offset


def gather(
    snap: Snapshot,
    query: str,
    embedder: Embedder,
    collection: Collection,
    matrix: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    depth: int = DEPTH,
    crossed: bool = True,
) -> Evidence:
    """Every ranking's candidates for ``query`` from the published version ``snap`` and the index; with
    ``crossed`` False, not the acts held in other languages (weights that give them no offset never read them,
    and asking is one more query, eight times deeper)."""
    language = question_language(query)
    evidence = Evidence(language, snap.bilingual(language))
    vector = QuestionVector(lambda: embedder.embed_queries([query])[0])
    for chunk in vector_search(
        query, depth, collection=collection, embedder=embedder, published=snap.published, query_vector=vector()
    ):
        found = evidence.feature(chunk.chunk_id, chunk.doc_id, chunk.language)
        found.vector, found.base = chunk.vector, chunk
    if crossed:
        _crossed(evidence, snap, query, vector, depth, collection, embedder)
    if snap.lexical is None:
        return evidence
    lexical = snap.lexical.scores(query)
    _from_rows(evidence, snap, best_rows(lexical, depth), "lexical")
    weights = expansion_terms(query)
    evidence.expanded = [{"from": hit, "to": law, "by": "vocabulary"} for hit, law in expand(query)]
    if snap.bridge is not None and language == "kaz":
        bridged = snap.bridge.expansion(query, language)
        for term, weight in bridged.items():
            weights[term] = max(weights.get(term, 0.0), weight)
        evidence.pseudo = snap.bridge.pseudo(query, language) or None
        if bridged:
            evidence.expanded.append({"from": query, "to": " ".join(list(bridged)[:20]), "by": "bridge"})
    if weights:
        _from_rows(evidence, snap, best_rows(snap.lexical.term_scores(weights), depth), "expanded")
    if evidence.pseudo:
        pseudo_vector = embedder.embed_queries([evidence.pseudo])[0]
        for chunk in vector_search(
            evidence.pseudo,
            depth,
            collection=collection,
            embedder=embedder,
            published=snap.published,
            query_vector=pseudo_vector,
        ):
            found = evidence.feature(chunk.chunk_id, chunk.doc_id, chunk.language)
            found.pseudo = chunk.vector
            found.base = found.base or chunk
    if snap.documents is not None:
        _documents_first(evidence, snap, query, list(weights), vector, matrix, embedder, lexical)
    return evidence


def _crossed(
    evidence: Evidence,
    snap: Snapshot,
    query: str,
    vector: QuestionVector,
    depth: int,
    collection: Collection,
    embedder: Embedder,
) -> None:
    """The nearest chunks among the acts that have no text in the question's language."""
    language = evidence.language
    docs = snap.registry.docs

    def elsewhere(chunk: Chunk) -> bool:
        info = docs.get(chunk.doc_id)
        return info is not None and language not in info.languages

    where = {"language": {"$ne": language}}
    for chunk in vector_search(
        query,
        depth,
        collection=collection,
        embedder=embedder,
        published=snap.published,
        query_vector=vector(),
        where=where,
        keep=elsewhere,
    ):
        found = evidence.feature(chunk.chunk_id, chunk.doc_id, chunk.language)
        found.crossed = chunk.vector
        found.base = found.base or chunk


def _from_rows(evidence: Evidence, snap: Snapshot, found: list[tuple[int, float]], signal: str) -> None:
    assert snap.chunks is not None
    if not found:
        return
    rows = snap.chunks.at([p for p, _ in found])
    columns = ("chunk_id", "doc_id", "language", "article_labels")
    for (position, score), chunk_id, doc_id, language, labels in zip(
        found, *(rows.column(c).to_pylist() for c in columns), strict=True
    ):
        feature = evidence.feature(str(chunk_id), str(doc_id), language)
        feature.row, feature.labels = position, tuple(labels or ())
        setattr(feature, signal, score)


def _documents_first(
    evidence: Evidence,
    snap: Snapshot,
    query: str,
    extra_terms: list[str],
    vector: QuestionVector,
    matrix: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    embedder: Embedder,
    lexical: np.ndarray,
) -> None:
    """Rank acts by card (BM25) and centroid (cosine), fused by rank; take the best chunks of the best acts."""
    assert snap.documents is not None and snap.chunks is not None
    cards = snap.documents.card_scores(query_terms(query) + extra_terms)
    centroids = snap.documents.centroid_scores(vector())
    fused: dict[str, float] = {}
    for by_doc in (cards, centroids):
        for n, doc in enumerate(sorted(by_doc, key=lambda d: (-by_doc[d], d)), 1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (DOC_RRF_K + n)
    best = sorted(fused, key=lambda d: (-fused[d], d))[:TOP_DOCUMENTS]
    if not best:
        return
    chunks = snap.chunks

    def scores(positions: np.ndarray) -> np.ndarray:
        return np.asarray(lexical[positions], np.float32)

    language = evidence.language if evidence.language in ("rus", "kaz") else None
    for rank_of_doc, doc in enumerate(best, 1):
        ranked = rank_in_version(
            chunks, [doc], Narrowing(), vector(), PER_DOCUMENT, matrix, embedder.embed_passages, scores, language
        )
        for within, chunk in enumerate(ranked, 1):
            feature = evidence.feature(chunk.chunk_id, chunk.doc_id, chunk.language)
            feature.doc_rank, feature.within = rank_of_doc, within
            feature.base = feature.base or chunk


def rank(evidence: Evidence, params: RankParams) -> list[tuple[Feature, float]]:
    """The candidates best first, with their fused scores (:class:`RankParams`): weighted reciprocal ranks,
    the question's language first in an act published in several, and the cap on one act in the top five."""
    features, _ = evidence.ranked(params.crossed)
    picked, score = order(evidence, params)
    return [(features[n], float(score[n])) for n in picked]


def order(evidence: Evidence, params: RankParams) -> tuple[list[int], np.ndarray]:
    """:func:`rank` as positions in ``evidence.ranked()``'s candidates, and every candidate's fused score: what
    tuning reads, a grid of parameter sets over the same candidates, without making a pair per candidate."""
    features, ranks = evidence.ranked(params.crossed)
    k = params.rrf_k
    score = np.zeros(len(features))
    for signal in (*SIGNALS, "documents"):
        weight = getattr(params, signal)
        if weight:
            held = ranks[signal] > 0
            score[held] += weight / (k + ranks[signal][held])
    picked = np.lexsort((evidence.tiebreak(), -score))
    picked = picked[score[picked] > 0]
    if evidence.language in ("rus", "kaz"):  # another language's text of an act published in the question's
        late = evidence.other_edition()[picked]
        if late.any():
            picked = np.concatenate([picked[~late], picked[late]])
    out = [int(n) for n in picked]
    if params.cap:
        out = _capped(out, [f.doc_id for f in features], score, params.cap, params.close)
    return out, score


def _capped(
    ordered: list[int], doc_of: list[str], score: np.ndarray, cap: int, close: float, top: int = 5
) -> list[int]:
    """At most ``cap`` chunks of one act in the first ``top``, when the next act's chunk scores at least
    ``close`` of the one it would replace; the chunks moved follow the first ``top``."""
    head: list[int] = []
    moved: list[int] = []
    held: dict[str, int] = {}
    for n, f in enumerate(ordered):
        if len(head) >= top:
            return head + moved + ordered[n:]
        if held.get(doc_of[f], 0) >= cap:
            rival = next((r for r in ordered[n + 1 : n + 30] if held.get(doc_of[r], 0) < cap), None)
            if rival is not None and score[rival] >= close * score[f]:
                moved.append(f)
                continue
        held[doc_of[f]] = held.get(doc_of[f], 0) + 1
        head.append(f)
    return head + moved


def found_by(f: Feature) -> str:
    """How a chunk was found, in the words of ``--json``: ``both`` (words and meaning), ``vector`` (meaning:
    the question or its translation), ``lexical`` (words: the question's or those added to it), ``document``
    (only as one of the best chunks of one of the best acts)."""
    meaning = f.vector is not None or f.pseudo is not None or f.crossed is not None
    words = f.lexical is not None or f.expanded is not None
    if meaning and words:
        return "both"
    if meaning:
        return "vector"
    if words:
        return "lexical"
    return "document"


def chunks(snap: Snapshot, ranked: list[tuple[Feature, float]], k: int) -> list[Chunk]:
    """The first ``k`` as answer chunks (texts read for the rows only the lexical rankings found)."""
    chosen = ranked[:k]
    from_rows = [f for f, _ in chosen if f.base is None and f.row is not None]
    texts: dict[str, tuple[dict[str, Any], str]] = {}
    if from_rows and snap.chunks is not None:
        rows = snap.chunks.at([f.row for f in from_rows if f.row is not None])
        for f, row, text in zip(from_rows, rows.to_pylist(), snap.chunks.texts(rows), strict=True):
            texts[f.chunk_id] = (row, text)
    out = []
    for f, score in chosen:
        how = found_by(f)
        if f.base is not None:
            out.append(
                dataclasses.replace(
                    f.base, score=score, found_by=how, vector=_cosine(f), lexical=f.lexical, fused=score
                )
            )
        elif f.chunk_id in texts:
            row, text = texts[f.chunk_id]
            out.append(row_chunk(row, text, score, how, vector=_cosine(f), lexical=f.lexical, fused=score))
    return out


def _cosine(f: Feature) -> float | None:
    """The cosine shown: the question's to the chunk, however the vector side found it."""
    return f.vector if f.vector is not None else f.crossed
