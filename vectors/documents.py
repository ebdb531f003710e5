"""Documents as units of retrieval: each act's card (for BM25) and its centroid vector.

A question that names no document is answered from chunks; but a short order of four chunks is easily
drowned by a long code of seven hundred, however well it fits. Ranking *acts* first (by what they are about:
title, kind, issuer and the headings of their parts) and then their best chunks beside the global ranking
gives the order its chance (:mod:`lookup.plain`).

- **Cards** (:func:`build_cards`): per document, its title, kind, issuer and the distinct headings of its
  chunks (capped at :data:`CARD_CHARS`), analysed as a question is (every language's analysis), in a BM25
  index of their own (``lexical/docs/``, the same out-of-core writer as the chunks'). Built beside the chunk
  index from the same stream (chunk ids, hence documents, come in order).
- **Centroids** (:func:`build_centroids`): the mean of a document's chunk vectors, normalised, one float32 row
  a document (``docvectors/``), read memory-mapped. Built after the index stage, when every chunk's vector is
  stored; streamed a block at a time.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from vectors.store import VectorStore

DOC_CARDS = "docs"  # inside a version's lexical folder
CENTROIDS = "docvectors"  # inside a version
IDS = "ids.json"
CARD_CHARS = 4_000
KIND_WORDS = {  # a document's kind in the words a question uses for it
    "code": "кодекс кодексі code",
    "law": "закон заң law",
    "constitution": "конституция конституциясы constitution",
    "order": "приказ бұйрық правила қағидалары order rules",
    "resolution": "постановление қаулы resolution",
    "decree": "указ жарлық decree",
    "decision": "решение шешім decision",
    "ruling": "постановление суда ruling",
    "standard": "стандарт регламент standard",
}


def cards(enriched: Path) -> Iterator[tuple[str, str]]:
    """(doc_id, card text) for every document of a version's chunks, in file order."""
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    columns = ["doc_id", "doc_title", "doc_type", "issuer", "heading"]
    current: str | None = None
    parts: list[str] = []
    seen: set[str] = set()
    size = 0
    for batch in reader.iter_batches(batch_size=4_096, columns=columns):
        for doc, title, kind, issuer, heading in zip(*(batch.column(c).to_pylist() for c in columns), strict=True):
            if doc != current:
                if current is not None:
                    yield current, "\n".join(parts)
                current, seen, size = doc, set(), 0
                parts = [title or "", KIND_WORDS.get(kind or "", kind or ""), issuer or ""]
            if heading and heading not in seen and size < CARD_CHARS:
                seen.add(heading)
                parts.append(heading)
                size += len(heading)
    if current is not None:
        yield current, "\n".join(parts)


def build_cards(enriched: Path, out: Path) -> int:
    """The documents' card index under ``out`` (its doc ids in ``ids.json``); returns the number of documents."""
    from vectors.bm25 import Bm25Writer
    from vectors.lexical import query_terms, term_ids

    vocab: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)
    writer = Bm25Writer(out)
    ids: list[str] = []
    for doc, card in cards(enriched):
        ids.append(doc)
        writer.add(term_ids(query_terms(card), vocab))
    if writer.chunks:
        writer.close(vocab)
    else:
        writer.discard()
    (out / IDS).write_text(json.dumps(ids), "utf-8")
    return len(ids)


def build_centroids(enriched: Path, store: VectorStore, out: Path, block: int = 20_000) -> int:
    """Each document's centroid (the mean of its chunks' stored vectors, normalised) to ``out``, replaced whole;
    returns the number of documents. Chunks whose vector is not stored (none, after an index stage) are left
    out of their document's mean."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ids: list[str] = []
    sums: list[np.ndarray] = []
    index: dict[str, int] = {}
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=block, columns=["doc_id", "text_hash"]):
        docs = batch.column("doc_id").to_pylist()
        matrix, found = store.matrix([str(h) for h in batch.column("text_hash").to_pylist()])
        if not len(matrix) or not matrix.shape[1]:
            continue
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit = np.where(norms > 0, matrix / np.where(norms == 0, 1, norms), 0).astype(np.float32)
        for doc, row, ok in zip(docs, unit, found, strict=True):
            if not ok:
                continue
            if doc not in index:
                index[doc] = len(ids)
                ids.append(doc)
                sums.append(np.zeros(unit.shape[1], np.float64))
            sums[index[doc]] += row
    if sums:
        centroids = np.stack(sums).astype(np.float32)
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
        np.save(tmp / "vectors.npy", centroids)
    (tmp / IDS).write_text(json.dumps(ids), "utf-8")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return len(ids)


class DocumentIndex:
    """A version's document cards (BM25) and centroids, read once per version."""

    def __init__(self, cards_folder: Path | None, centroids_folder: Path | None) -> None:
        self.card_ids: list[str] = []
        self.cards = None
        if cards_folder is not None and (cards_folder / "params.index.json").exists():
            import bm25s

            self.cards = bm25s.BM25.load(str(cards_folder), mmap=True, show_progress=False)
            self.card_ids = json.loads((cards_folder / IDS).read_text("utf-8"))
        self.centroid_ids: list[str] = []
        self.centroids: np.ndarray | None = None
        if centroids_folder is not None and (centroids_folder / "vectors.npy").exists():
            self.centroids = np.load(centroids_folder / "vectors.npy", mmap_mode="r")
            self.centroid_ids = json.loads((centroids_folder / IDS).read_text("utf-8"))

    @classmethod
    def open(cls, version_folder: Path) -> DocumentIndex:
        from vectors.lexical import LEXICAL

        return cls(version_folder / LEXICAL / DOC_CARDS, version_folder / CENTROIDS)

    def card_scores(self, query: list[str]) -> dict[str, float]:
        """BM25 of every document's card for these terms (documents with a positive score only)."""
        if self.cards is None:
            return {}
        known = [t for t in dict.fromkeys(query) if t in self.cards.vocab_dict]
        if not known:
            return {}
        scores = np.asarray(self.cards.get_scores(known), np.float32)
        return {self.card_ids[n]: float(scores[n]) for n in np.flatnonzero(scores > 0)}

    def centroid_scores(self, vector: np.ndarray) -> dict[str, float]:
        """Cosine of the question's vector to every document's centroid."""
        if self.centroids is None or not len(self.centroid_ids) or self.centroids.shape[1] != len(vector):
            return {}
        query = np.asarray(vector, np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        scores = np.asarray(self.centroids @ query)
        return dict(zip(self.centroid_ids, scores.tolist(), strict=True))
