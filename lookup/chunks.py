"""Chunks of known documents, filtered by metadata and ranked by embedding only inside them.

A question that names documents is answered from the published version it was resolved on
(:mod:`lookup.version`): the documents' chunk rows from the version's chunk file, narrowed to the named
articles, sections or пункты, ranked by cosine against their stored vectors (:mod:`vectors.store`), the text
read for the chunks returned. The index is not asked: it may hold another version's text for a chunk while a
run writes. A question with no identifier is a plain nearest-neighbour search of the index
(:func:`vector_search`), which keeps only records of the published version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from enrich.chunking import LIST_CAP
from lookup.fusion import RRF_K
from lookup.version import Narrowing, VersionChunks
from vectors.embed import Embedder
from vectors.index import Collection


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    code_articles: list[int]
    article_labels: list[str]
    text: str
    score: float
    point_labels: tuple[str, ...] = ()
    annex: int | None = None
    replaces: str | None = None  # the repealed document this chunk's (current) act replaced
    language: str | None = None
    vector: float | None = None  # cosine to the question, when the vector ranking held the chunk
    lexical: float | None = None  # BM25, when the lexical ranking held it
    fused: float | None = None  # reciprocal-rank fusion of the two (``score`` is this when present)
    found_by: str = "vector"  # identifier (a resolved document), vector, lexical or both (plain words)


def doc_filter(
    doc_ids: Sequence[str],
    articles: Sequence[str] | None = None,
    sections: Sequence[str] | None = None,
    points: Sequence[str] | None = None,
    in_annex: bool = False,
) -> dict[str, Any]:
    """A Chroma ``where`` for these documents (and article labels, and structural paths). ``$contains`` is
    the only operator that tests list membership; ``$in`` or equality on a list field silently match
    nothing (DESIGN.md). ``path`` is a plain string, so ``$in`` is right there."""
    clauses: list[dict[str, Any]] = [
        {"doc_id": doc_ids[0]} if len(doc_ids) == 1 else {"doc_id": {"$in": list(doc_ids)}}
    ]
    if articles:
        labels = [{"article_labels": {"$contains": a}} for a in dict.fromkeys(articles)]
        clauses.append(labels[0] if len(labels) == 1 else {"$or": labels})
    if sections:
        clauses.append({"path": {"$in": list(dict.fromkeys(sections))}})
    if points:
        marks = [{"point_labels": {"$contains": p}} for p in dict.fromkeys(points)]
        clauses.append(marks[0] if len(marks) == 1 else {"$or": marks})
    if in_annex:
        clauses.append({"annex": {"$gte": 1}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class QuestionVector:
    """The question's vector, asked of the model on first use and kept: the fetches of one question share one
    model call, and a fetch with nothing to choose (:func:`rank_in_version`) makes none."""

    def __init__(self, compute: Callable[[], np.ndarray]) -> None:
        self._compute = compute
        self._vector: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self._vector is None:
            self._vector = np.asarray(self._compute(), dtype=np.float32)
        return self._vector


def rank_in_version(
    chunks: VersionChunks,
    doc_ids: Sequence[str],
    narrowing: Narrowing,
    query_vector: np.ndarray | QuestionVector | None,
    k_per_doc: int,
    vectors: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    embed: Callable[[list[str]], np.ndarray],
    lexical: Callable[[np.ndarray], np.ndarray] | None = None,
    language: str | None = None,
) -> list[Chunk]:
    """The ``k_per_doc`` chunks of each document that answer the question best, best first overall, from one
    version's rows: by cosine to the question (stored vectors, :meth:`VectorStore.matrix`; a text with none
    is embedded), fused with BM25 when ``lexical(positions)`` gives the rows' scores, and the question's
    ``language`` first in a document published in several. Ranked in NumPy over the rows; Python objects are
    made for the chosen few only. Without ``query_vector`` (a question that only names documents) no vector
    is read or computed: BM25 alone orders the rows, then chunk order (``vector`` and ``fused`` are None). A
    :class:`QuestionVector` is asked for only when there is something to choose: when no document has more
    than ``k_per_doc`` rows (an article of a few chunks), every row is answered, ordered as without a vector.
    The model's 15–30 ms on a CPU would only reorder them."""
    rows = chunks.rows(doc_ids, narrowing)
    if not rows.num_rows:
        return []
    if isinstance(query_vector, QuestionVector):
        per_doc = pc.value_counts(rows.column("doc_id")).field("counts")
        query_vector = query_vector() if pc.max(per_doc).as_py() > k_per_doc else None
    if query_vector is None:
        words = lexical(chunks.positions(rows)) if lexical is not None else None
        key = np.asarray(words, np.float64) if words is not None else np.zeros(rows.num_rows)
        return _chosen(chunks, rows, key, None, words, k_per_doc, language)
    hashes = [str(h) for h in rows.column("text_hash").to_pylist()]
    matrix, found = vectors(hashes)
    if not found.all():
        missing = np.flatnonzero(~found)
        fresh = np.asarray(embed(chunks.texts(rows.take(pa.array(missing, pa.int64())))), dtype=np.float32)
        if matrix.shape[1] != fresh.shape[1]:
            matrix = np.zeros((len(hashes), fresh.shape[1]), np.float32)
            found = np.zeros(len(hashes), dtype=bool)
            missing = np.arange(len(hashes))
            fresh = np.asarray(embed(chunks.texts(rows)), dtype=np.float32)
        matrix[missing] = fresh
    cosine = _cosine(matrix, query_vector)
    bm25 = lexical(chunks.positions(rows)) if lexical is not None else None
    return _chosen(chunks, rows, _fused(cosine, bm25), cosine, bm25, k_per_doc, language)


def _chosen(
    chunks: VersionChunks,
    rows: pa.Table,
    fused: np.ndarray,
    cosine: np.ndarray | None,
    bm25: np.ndarray | None,
    k_per_doc: int,
    language: str | None,
) -> list[Chunk]:
    """The ``k_per_doc`` best rows of each document by ``fused`` (ties in chunk id order), the question's
    language first, as chunks."""
    docs = pc.dictionary_encode(rows.column("doc_id")).combine_chunks()
    doc_codes = docs.indices.to_numpy(zero_copy_only=False)
    id_rank = np.empty(rows.num_rows, np.int64)
    id_rank[pc.sort_indices(rows.column("chunk_id")).to_numpy()] = np.arange(rows.num_rows)
    order = np.lexsort((id_rank, -fused))  # best first; equal scores in chunk id order
    if language is not None:  # the question's language first, document by document
        spoken = rows.column("language").to_numpy(zero_copy_only=False) == language
        speaks = np.zeros(len(docs.dictionary), dtype=bool)
        speaks[doc_codes[spoken]] = True
        later = speaks[doc_codes[order]] & ~spoken[order]
        order = np.concatenate([order[~later], order[later]])
    best = _first_per_doc(order, doc_codes, k_per_doc)
    chosen = rows.take(pa.array(best, pa.int64()))
    texts = chunks.texts(chosen)
    out = []
    for n, row, text in zip(best, chosen.to_pylist(), texts, strict=True):
        scores = {
            "vector": float(cosine[n]) if cosine is not None else None,
            "lexical": float(bm25[n]) if bm25 is not None else None,
            "fused": float(fused[n]) if bm25 is not None and cosine is not None else None,
        }
        out.append(row_chunk(row, text, float(fused[n]), "identifier", **scores))
    return out


def _first_per_doc(order: np.ndarray, doc_codes: np.ndarray, k: int) -> list[int]:
    """The first ``k`` rows of each document in ``order`` (kept in that order)."""
    seen = np.zeros(int(doc_codes.max()) + 1 if len(doc_codes) else 0, np.int64)
    best = []
    wanted = len(seen) * k
    for n in order.tolist():
        code = doc_codes[n]
        if seen[code] < k:
            seen[code] += 1
            best.append(n)
            if len(best) == wanted:
                break
    return best


def _fused(cosine: np.ndarray, bm25: np.ndarray | None) -> np.ndarray:
    """Reciprocal-rank fusion of the cosine and BM25 orders of the same rows (cosine alone without BM25; a
    row with no lexical match takes no lexical rank)."""
    if bm25 is None:
        return cosine
    fused = 1.0 / (RRF_K + 1 + _ranks(-cosine))
    matched = bm25 > 0
    fused[matched] += 1.0 / (RRF_K + 1 + _ranks(-bm25[matched]))
    return fused


def _ranks(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[np.argsort(values, kind="stable")] = np.arange(len(values))
    return ranks


def row_chunk(row: dict[str, Any], text: str, score: float, found_by: str = "identifier", **scores: Any) -> Chunk:
    """A chunk from a version row, shaped as the index's metadata would give it (lists capped, no empties)."""
    return Chunk(
        chunk_id=str(row["chunk_id"]),
        doc_id=str(row["doc_id"]),
        code_articles=[int(a) for a in (row["code_articles"] or [])[:LIST_CAP]],
        article_labels=[str(a) for a in (row["article_labels"] or [])[:LIST_CAP]],
        text=text,
        score=score,
        point_labels=tuple(str(p) for p in (row["point_labels"] or [])[:LIST_CAP]),
        annex=int(row["annex"]) if row["annex"] is not None else None,
        language=row.get("language"),
        found_by=found_by,
        **scores,
    )


def vector_search(
    query: str,
    k: int,
    *,
    collection: Collection,
    embedder: Embedder,
    published: Mapping[str, str] | None = None,
    query_vector: np.ndarray | None = None,
    where: dict[str, Any] | None = None,
    keep: Callable[[Chunk], bool] | None = None,
) -> list[Chunk]:
    """Plain nearest-neighbour search over the whole collection: the model alone (the eval's baseline), and
    the vector ranking of a plain-words question (``query_vector``: the question's, when already embedded).
    ``where`` narrows the search in the index; ``keep`` drops found chunks afterwards (the index is asked four
    times deeper then)."""
    vector = embedder.embed_queries([query])[0] if query_vector is None else query_vector
    got = collection.query(
        query_embeddings=[vector.tolist()],
        n_results=k * (8 if keep is not None else 2),
        where=where,
        include=["documents", "metadatas", "distances"],
    )
    found = [
        _chunk(chunk_id, meta, text, 1.0 - float(distance))
        for chunk_id, meta, text, distance in zip(
            got["ids"][0], got["metadatas"][0], got["documents"][0], got["distances"][0], strict=True
        )
        if published is None or published.get(chunk_id) == (meta or {}).get("text_hash")
    ]
    return [c for c in found if keep(c)][:k] if keep is not None else found[:k]


def _published_only(got: dict[str, Any], published: Mapping[str, str] | None) -> dict[str, Any]:
    if published is None:
        return got
    keep = [
        n
        for n, (i, m) in enumerate(zip(got["ids"], got["metadatas"], strict=True))
        if published.get(i) == (m or {}).get("text_hash")
    ]
    if len(keep) == len(got["ids"]):
        return got
    return {key: [got[key][n] for n in keep] for key in ("ids", "embeddings", "documents", "metadatas")}


def _cosine(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    query = np.asarray(query, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors)) * (float(np.linalg.norm(query)) or 1.0)
    return np.asarray(vectors @ query / np.where(norms == 0, 1.0, norms))


def _chunk(chunk_id: str, meta: Any, text: str | None, score: float) -> Chunk:
    meta = meta or {}
    return Chunk(
        chunk_id=chunk_id,
        doc_id=str(meta.get("doc_id", "")),
        code_articles=[int(a) for a in meta.get("code_articles") or []],
        article_labels=[str(a) for a in meta.get("article_labels") or []],
        text=text or "",
        score=score,
        point_labels=tuple(str(p) for p in meta.get("point_labels") or []),
        annex=int(meta["annex"]) if meta.get("annex") is not None else None,
        language=meta.get("language"),
        vector=score,
    )
