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

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vectors.store import VectorStore

if TYPE_CHECKING:
    from vectors.bm25 import PreviousRows

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


def build_cards(enriched: Path, out: Path, previous: Path | None = None) -> int:
    """The documents' card index under ``out`` (its doc ids in ``ids.json``); returns the number of documents.
    ``previous`` (the last version's cards): a card whose text did not change is not analysed again (its
    counted terms are copied, as :func:`vectors.lexical.build_lexical` does for chunks)."""
    from vectors.bm25 import Bm25Writer
    from vectors.lexical import query_terms, term_ids

    vocab: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)
    writer = Bm25Writer(out)
    counted, rows_by_card = _previous_cards(previous)
    ids: list[str] = []
    digests: list[str] = []
    for doc, card in cards(enriched):
        digest = hashlib.blake2b(card.encode("utf-8"), digest_size=16).hexdigest()
        ids.append(doc)
        digests.append(digest)
        row = rows_by_card.get((doc, digest))
        if counted is not None and row is not None:
            writer.add_rows(*counted.take(np.array([row]), vocab))
        else:
            writer.add(term_ids(query_terms(card), vocab))
    if writer.chunks:
        writer.close(vocab, keep_rows=True)
        (out / DIGESTS).write_text(json.dumps(digests), "utf-8")
    else:
        writer.discard()
    (out / IDS).write_text(json.dumps(ids), "utf-8")
    return len(ids)


def _previous_cards(folder: Path | None) -> tuple[PreviousRows | None, dict[tuple[str, str], int]]:
    """The last version's counted cards, and each card's row by (doc_id, digest of its text); (None, {}) where
    there are none to reuse."""
    from vectors.bm25 import PreviousRows

    rows = PreviousRows.open(folder)
    if folder is None or rows is None or not (folder / DIGESTS).exists():
        return None, {}
    ids, digests = json.loads((folder / IDS).read_text("utf-8")), json.loads((folder / DIGESTS).read_text("utf-8"))
    if len(ids) != len(digests) or len(ids) != rows.size:
        return None, {}
    return rows, {(doc, digest): n for n, (doc, digest) in enumerate(zip(ids, digests, strict=True))}


def build_centroids(
    enriched: Path, store: VectorStore, out: Path, block: int = 4_096, previous: Path | None = None
) -> int:
    """Each document's centroid (the mean of its chunks' stored vectors, normalised) to ``out``, replaced whole;
    returns the number of documents. Chunks whose vector is not stored (none, after an index stage) are left
    out of their document's mean.

    ``previous`` (the last version's centroids): a document whose chunk texts are those it had there (a digest of
    its ``text_hash`` column, in order; :data:`DIGESTS`) keeps its centroid, and only the others' vectors are
    read: after a commit that changed ten acts, ten means are taken, not every act's. A document some of whose
    vectors were missing is always taken again."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    digests = _doc_digests(reader, block)
    position = {doc: n for n, doc in enumerate(digests)}
    before, kept = _kept_centroids(previous, digests) if previous is not None else (None, {})
    sums: np.ndarray | None = None  # one float32 row a document, summed in place: no object per document
    found_any = np.zeros(len(position), bool)
    missing = np.zeros(len(position), bool)
    for batch in reader.iter_batches(batch_size=block, columns=["doc_id", "text_hash"]):
        docs = batch.column("doc_id").to_pylist()
        taken = [n for n, doc in enumerate(docs) if doc not in kept]
        if not taken:
            continue
        hashes = batch.column("text_hash").take(pa.array(taken)).to_pylist()
        matrix, found = store.matrix([str(h) for h in hashes])
        store.release()  # the block is copied out: its mapped pages need not stay in this process
        if not len(matrix) or not matrix.shape[1]:
            continue
        at = np.fromiter((position[docs[n]] for n in taken), np.int64, len(taken))
        missing[at[~found]] = True
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms == 0, 1, norms)
        if sums is None:
            sums = np.zeros((len(position), matrix.shape[1]), np.float32)
        _add_rows(sums, at[found], matrix[found])
        found_any[at[found]] = True
    dims = {m.shape[1] for m in (sums, before) if m is not None}
    if len(dims) > 1:
        return build_centroids(enriched, store, out, block)  # another model's vectors: nothing is kept
    ids = [doc for doc in digests if doc in kept or found_any[position[doc]]]
    if ids:  # written a block of rows at a time: no second matrix of every document beside the sums
        dim = dims.pop()
        with open(tmp / "vectors.npy", "wb") as handle:
            header = {
                "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                "fortran_order": False,
                "shape": (len(ids), dim),
            }
            np.lib.format.write_array_header_1_0(handle, header)
            for start in range(0, len(ids), block):
                part = np.empty((min(block, len(ids) - start), dim), np.float32)
                for n, doc in enumerate(ids[start : start + block]):
                    if doc in kept:
                        assert before is not None
                        part[n] = before[kept[doc]]
                    else:
                        assert sums is not None
                        row = sums[position[doc]]
                        part[n] = row / max(float(np.linalg.norm(row)), 1e-12)
                handle.write(part.tobytes())
    (tmp / IDS).write_text(json.dumps(ids), "utf-8")
    whole = [digests[doc] if doc in kept or not missing[position[doc]] else None for doc in ids]
    (tmp / DIGESTS).write_text(json.dumps(whole), "utf-8")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return len(ids)


def _add_rows(sums: np.ndarray, at: np.ndarray, rows: np.ndarray) -> None:
    """``sums[at[k]] += rows[k]`` for every k, repeated targets summed. A document's chunks are neighbours in
    the file, so each run of equal targets is one slice summed at once: for the 12 000 chunks a 1 % text edit
    rebuilds (1 024-d), 4 ms, where ``np.add.at`` took 0.13 s and ``np.add.reduceat`` along rows 0.10 s."""
    if not len(at):
        return
    if np.any(at[1:] < at[:-1]):  # not grouped (never in zan's files): grouped first, stably
        order = np.argsort(at, kind="stable")
        at, rows = at[order], rows[order]
    starts = np.flatnonzero(np.concatenate(([True], at[1:] != at[:-1]))).tolist()
    for start, stop in zip(starts, [*starts[1:], len(at)], strict=True):
        sums[at[start]] += rows[start:stop].sum(axis=0)


DIGESTS = "digests.json"  # beside a version's centroids: each document's digest of its chunk texts (or null)


def _doc_digests(reader: pq.ParquetFile, block: int) -> dict[str, str]:
    """Each document's digest of its chunks' ``text_hash`` values in file order, in the order first named."""
    running: dict[str, Any] = {}
    for batch in reader.iter_batches(batch_size=block, columns=["doc_id", "text_hash"]):
        for doc, digest in zip(batch.column("doc_id").to_pylist(), batch.column("text_hash").to_pylist(), strict=True):
            held = running.get(doc)
            if held is None:
                held = running[doc] = hashlib.blake2b(digest_size=16)
            held.update(f"{digest}\0".encode())
    return {doc: held.hexdigest() for doc, held in running.items()}


def _kept_centroids(previous: Path, digests: dict[str, str]) -> tuple[np.ndarray | None, dict[str, int]]:
    """The last version's centroids (memory-mapped) and the row there of each document whose digest is the same
    now (none where it kept no digests)."""
    if not all((previous / name).exists() for name in ("vectors.npy", IDS, DIGESTS)):
        return None, {}
    ids = json.loads((previous / IDS).read_text("utf-8"))
    before = json.loads((previous / DIGESTS).read_text("utf-8"))
    vectors = np.load(previous / "vectors.npy", mmap_mode="r")
    if len(before) != len(ids) or len(vectors) != len(ids):
        return None, {}
    kept = {
        doc: n
        for n, (doc, digest) in enumerate(zip(ids, before, strict=True))
        if digest is not None and digests.get(doc) == digest
    }
    return (vectors if kept else None), kept


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
