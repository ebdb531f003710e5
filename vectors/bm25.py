"""A BM25 index built out of core, in the files ``bm25s`` reads (memory-mapped) — the same arrays its own
``BM25.index`` makes, without holding them.

``bm25s`` builds the whole score matrix in memory: three arrays of one entry per (chunk, distinct term)
pair, then a sorted copy of each (~2 KB a chunk at the corpus's ~100 distinct terms a chunk: a run's peak
grew 2.2× from 14k to 146k chunks, ``benchmarks/README.md``). Here:

1. :meth:`Bm25Writer.add` takes a chunk's term ids, keeps its length and appends its distinct terms and their
   counts to two spill files (8 bytes a pair, on disk); document frequencies are counted as it goes.
2. :meth:`Bm25Writer.close` writes the CSC matrix (one column per term, chunks ascending in it) column block
   by column block: each block of at most :data:`BLOCK` entries is filled from one streamed pass over the
   spill files and appended to ``data``/``indices``. Memory is the block, two numbers a chunk (its length
   and where its pairs start) and one a term, whatever the corpus size.

Scores follow ``bm25s``'s default ("lucene": idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, term part
``tf / (k1 (1 - b + b dl / avgdl) + tf)``, k1 1.5, b 0.75), in its precisions; ``tests/test_plain_words.py``
checks the files against ``bm25s``'s own build, array for array.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import BinaryIO

import numpy as np

K1, B = 1.5, 0.75
BLOCK = 1_000_000  # entries per written column block: 8 bytes each (score + chunk row), ~8 MB
READ = 262_144  # spill entries read at a time (~40 bytes each of temporaries)
# Kept with a version (``close(vocab, keep_rows=True)``): each chunk's distinct term ids and their counts, and
# where each chunk's start plus its length in tokens, so the next version reuses a chunk whose text did not
# change instead of analysing it again (:class:`PreviousRows`, :func:`vectors.lexical.build_lexical`).
ROWS_TERMS, ROWS_COUNTS, ROWS_INDEX = "rows.terms.bin", "rows.counts.bin", "rows.index.npy"


def _write_npy(path: Path, dtype: np.dtype, length: int) -> BinaryIO:
    """An ``.npy`` file of ``length`` items opened for its body to be appended in order."""
    f = path.open("wb")
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (length,)}
    np.lib.format.write_array_header_1_0(f, header)
    return f


class Bm25Writer:
    """Collects chunks' term ids in row order, then writes the index to ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._terms = (folder / ".spill.terms").open("wb")
        self._counts = (folder / ".spill.counts").open("wb")
        self._lengths: list[np.ndarray] = []  # chunk lengths (tokens), int32, a block at a time
        self._pending: list[int] = []
        self._distinct: list[np.ndarray] = []
        self._pending_distinct: list[int] = []
        self._df = np.zeros(1024, np.int64)
        self.chunks = 0

    def add(self, ids: np.ndarray) -> None:
        """One chunk's term ids (vocabulary positions), in row order."""
        self.add_batch(ids, np.array([len(ids)], np.int64))

    def add_batch(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """The term ids of ``len(lengths)`` chunks, back to back in row order (``lengths``: each one's count).
        Each chunk's distinct terms (ascending) and their counts come from one sort of the batch's (chunk,
        term) pairs: what :meth:`add` of each chunk would append, without a NumPy call per chunk."""
        n = len(lengths)
        if not n:
            return
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, counts = np.unique((rows << 32) | ids.astype(np.int64, copy=False), return_counts=True)
        self.add_rows(pairs & 0xFFFFFFFF, counts, np.bincount(pairs >> 32, minlength=n), lengths)

    def add_rows(self, terms: np.ndarray, counts: np.ndarray, distinct: np.ndarray, lengths: np.ndarray) -> None:
        """Chunks already counted (another version's, :meth:`PreviousRows.take`): their distinct term ids and
        counts back to back in row order, each chunk's number of distinct terms and its length in tokens."""
        if not len(lengths):
            return
        terms = np.asarray(terms, np.int32)
        if len(terms) and int(terms.max()) >= len(self._df):
            self._df = np.concatenate([self._df, np.zeros(max(len(self._df), int(terms.max()) + 1), np.int64)])
        self._df += np.bincount(terms, minlength=len(self._df))
        self._terms.write(terms.tobytes())
        self._counts.write(np.asarray(counts, np.int32).tobytes())
        self._pending.extend(np.asarray(lengths, np.int64).tolist())
        self._pending_distinct.extend(np.asarray(distinct, np.int64).tolist())
        self.chunks += len(lengths)
        if len(self._pending) >= 65_536:
            self._flush_lengths()

    def _flush_lengths(self) -> None:
        self._lengths.append(np.asarray(self._pending, np.int32))
        self._distinct.append(np.asarray(self._pending_distinct, np.int32))
        self._pending, self._pending_distinct = [], []

    def discard(self) -> None:
        """No index (no chunks): the spill files go."""
        for f in (self._terms, self._counts):
            f.close()
            Path(f.name).unlink()

    def close(self, vocab: dict[str, int], keep_rows: bool = False) -> None:
        """Writes ``data``/``indices``/``indptr``, the vocabulary and the parameters; the spill files are removed,
        or with ``keep_rows`` kept as the version's rows (:data:`ROWS_TERMS`...) for the next version to reuse."""
        import bm25s

        self._flush_lengths()
        self._terms.close()
        self._counts.close()
        lengths = np.concatenate(self._lengths)
        distinct = np.concatenate(self._distinct)
        self._lengths = self._distinct = []
        n_docs, n_vocab = len(lengths), len(vocab)
        df = self._df[:n_vocab]
        avg = float(lengths.sum(dtype=np.int64)) / n_docs if n_docs else 0.0
        idf = np.zeros(n_vocab, np.float32)
        present = df > 0
        idf[present] = np.log(1 + (n_docs - df[present] + 0.5) / (df[present] + 0.5))  # as bm25s: log(1 + x)
        indptr = np.zeros(n_vocab + 1, np.int64)
        np.cumsum(df, out=indptr[1:])
        nnz = int(indptr[-1])
        # the term part's denominator per chunk, as bm25s computes it (float64)
        norm = K1 * ((1 - B) + B * lengths.astype(np.float64) / avg) if n_docs else np.zeros(0)
        starts = np.zeros(n_docs + 1, np.int64)  # where each chunk's pairs start in the spill files
        np.cumsum(distinct, out=starts[1:])
        del distinct
        data = _write_npy(self.folder / "data.csc.index.npy", np.dtype(np.float32), nnz)
        indices = _write_npy(self.folder / "indices.csc.index.npy", np.dtype(np.int32), nnz)
        try:
            start = 0
            while start < n_vocab:
                stop = int(np.searchsorted(indptr, indptr[start] + BLOCK, side="right")) - 1
                stop = min(max(stop, start + 1), n_vocab)  # one term's column larger than a block is one block
                self._block(start, stop, indptr, idf, norm, starts, data, indices)
                start = stop
        finally:
            data.close()
            indices.close()
        np.save(self.folder / "indptr.csc.index.npy", indptr)
        if keep_rows:
            np.save(self.folder / ROWS_INDEX, np.concatenate([starts, lengths.astype(np.int64)]))
            (self.folder / ".spill.terms").rename(self.folder / ROWS_TERMS)
            (self.folder / ".spill.counts").rename(self.folder / ROWS_COUNTS)
        else:
            (self.folder / ".spill.terms").unlink()
            (self.folder / ".spill.counts").unlink()
        # bm25s appends the empty token past the matrix's columns (its stand-in for a query of unknown words)
        saved = vocab if "" in vocab else {**vocab, "": n_vocab}
        (self.folder / "vocab.index.json").write_text(json.dumps(saved, ensure_ascii=False), "utf-8")
        params = {
            "k1": K1,
            "b": B,
            "delta": 0.5,
            "method": "lucene",
            "idf_method": "lucene",
            "dtype": "float32",
            "int_dtype": "int32",
            "num_docs": n_docs,
            "version": bm25s.__version__,
            "backend": "numpy",
        }
        (self.folder / "params.index.json").write_text(json.dumps(params, indent=4), "utf-8")

    def _block(
        self,
        start: int,
        stop: int,
        indptr: np.ndarray,
        idf: np.ndarray,
        norm: np.ndarray,
        starts: np.ndarray,
        data: BinaryIO,
        indices: BinaryIO,
    ) -> None:
        """Columns ``start``..``stop``-1 from one pass over the spill files, appended to the two bodies."""
        base = int(indptr[start])
        size = int(indptr[stop]) - base
        out_scores = np.empty(size, np.float32)
        out_rows = np.empty(size, np.int32)
        cursor = indptr[start:stop] - base  # next free slot per column of the block
        at = 0
        with (self.folder / ".spill.terms").open("rb") as terms_file, (self.folder / ".spill.counts").open("rb") as cf:
            while True:
                terms = np.fromfile(terms_file, np.int32, READ)
                if not len(terms):
                    break
                counts = np.fromfile(cf, np.int32, len(terms))
                keep = np.flatnonzero((terms >= start) & (terms < stop))
                positions, at = keep + at, at + len(terms)
                if not len(keep):
                    continue
                rows = (np.searchsorted(starts, positions, side="right") - 1).astype(np.int32)
                cols, tf = terms[keep] - start, counts[keep].astype(np.float32)
                tfc = tf / (norm[rows] + tf)
                scores = (idf[cols + start] * tfc).astype(np.float32)
                order = np.argsort(cols, kind="stable")  # rows stay ascending inside a column
                cols, rows, scores = cols[order], rows[order], scores[order]
                first = np.r_[0, np.flatnonzero(np.diff(cols)) + 1]  # where each column's run starts
                run = np.arange(len(cols)) - np.repeat(first, np.diff(np.r_[first, len(cols)]))
                slots = cursor[cols] + run
                out_scores[slots] = scores
                out_rows[slots] = rows
                np.add.at(cursor, cols[first], np.diff(np.r_[first, len(cols)]))
        data.write(out_scores.tobytes())
        indices.write(out_rows.tobytes())


class PreviousRows:
    """Another version's counted chunks (kept by ``close(vocab, keep_rows=True)``), memory-mapped: what
    :meth:`take` gives a chunk is what analysing and counting its text again would, in this writer's ids."""

    def __init__(self, folder: Path) -> None:
        index = np.load(folder / ROWS_INDEX, mmap_mode="r")
        self.size = (len(index) - 1) // 2
        self.starts, self.lengths = np.asarray(index[: self.size + 1]), np.asarray(index[self.size + 1 :])
        total = int(self.starts[-1])
        self.terms = np.memmap(folder / ROWS_TERMS, np.int32, "r") if total else np.zeros(0, np.int32)
        self.counts = np.memmap(folder / ROWS_COUNTS, np.int32, "r") if total else np.zeros(0, np.int32)
        saved: dict[str, int] = json.loads((folder / "vocab.index.json").read_text("utf-8"))
        self.words = [""] * len(saved)
        for word, at in saved.items():
            self.words[at] = word
        self._mapped = np.full(len(self.words), -1, np.int64)  # previous id -> the writer's id, as needed

    @classmethod
    def open(cls, folder: Path | None) -> PreviousRows | None:
        """The rows kept under ``folder``, or None where there are none (no folder, or a version built
        before rows were kept)."""
        if folder is None or not all((folder / n).exists() for n in (ROWS_INDEX, ROWS_TERMS, ROWS_COUNTS)):
            return None
        return cls(folder)

    def take(self, rows: np.ndarray, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``rows``' (terms, counts, distinct per row, length per row), terms as positions in ``vocab`` (new
        words get the next ones): the arguments of :meth:`Bm25Writer.add_rows`."""
        rows = np.asarray(rows, np.int64)
        first, last = self.starts[rows], self.starts[rows + 1]
        distinct = last - first
        offsets = np.repeat(first - np.cumsum(np.r_[0, distinct[:-1]]), distinct)
        at = offsets + np.arange(int(distinct.sum()))
        old = np.asarray(self.terms[at], np.int64)
        missing = np.unique(old[self._mapped[old] < 0])
        for word_id in missing.tolist():
            self._mapped[word_id] = vocab.setdefault(self.words[word_id], len(vocab))
        return self._mapped[old], np.asarray(self.counts[at]), distinct, self.lengths[rows]
