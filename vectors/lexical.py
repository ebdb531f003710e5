"""The lexical half of retrieval: BM25 over chunk text, one index per published version.

Words carry what embeddings blur («беременн…», «вахт…», «сверхурочн…»), so a question without an identifier
is answered by fusing this ranking with the vector one (:mod:`lookup.fusion`).

- Analysis per language: a chunk's words are lower-cased, stop words dropped, and stemmed by its language:
  Russian and English by Snowball (PyStemmer); Kazakh, which Snowball lacks, has its Kazakh letters folded
  to the Russian ones a keyboard without them types (қ→к, ү→у, ә→а…) and is cut to its first
  :data:`KAZAKH_PREFIX` letters (an agglutinative word keeps its root up front; measured against a suffix
  stripper and against none in ``benchmarks/README.md``). A question's words are analysed all three ways
  (the union of the terms), so a Kazakh question typed in Russian letters still meets the Kazakh text.
- Built by a run from the staged version's chunks, streamed in batches (token ids, not strings, are held:
  four bytes a token), saved with the version under ``lexical/`` and published with it, atomically.
- Read memory-mapped (``bm25s``): opening it reads the vocabulary, not the corpus. Document ``i`` of the
  index is row ``i`` of the version's ``enriched_chunks.parquet``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vectors.texts import TextWriter

LEXICAL = "lexical"  # the folder in a version
KAZAKH_PREFIX = 5
_WORD = re.compile(r"[0-9a-zа-яёәғқңөұүһі]+(?:-[0-9a-zа-яёәғқңөұүһі]+)*")
_KAZAKH_FOLD = str.maketrans("әғқңөұүһі", "агкноуухи")


def word_set(*lines: str) -> frozenset[str]:
    """The words of ``lines`` (a list written as lines of space-separated words)."""
    return frozenset(word for line in lines for word in line.split())


# Words that occur in almost every chunk or question and say nothing of its subject.
_STOP = word_set(
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот",
    "от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять",
    "уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб",
    "без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь этом",
    "один почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой хоть",
    "после над больше тот через эти нас про всего них какая много разве три эту моя впрочем хорошо свою этой",
    "перед иногда лучше чуть том нельзя такой им более всегда конечно всю между сколько каков какова каково",
    "какие ли ма ме ба бе па пе және мен бен пен де да та те үшін бойынша осы бұл ол сол қандай қанша канша",
    "кандай the a an of to in and or for on by is are be with as at that this from it its",
)


@functools.cache
def _stemmer(language: str) -> object:
    import Stemmer

    return Stemmer.Stemmer(language)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def kazakh_terms(found: list[str], prefix: int = KAZAKH_PREFIX) -> list[str]:
    return [w.translate(_KAZAKH_FOLD)[:prefix] for w in found]


def terms(text: str, language: str | None) -> list[str]:
    """A chunk's terms, analysed by its language (``rus``, ``kaz``, ``eng``; anything else as Russian)."""
    found = words(text)
    if language == "kaz":
        return kazakh_terms(found)
    return list(_stemmer("english" if language == "eng" else "russian").stemWords(found))  # type: ignore[attr-defined]


def query_terms(text: str) -> list[str]:
    """A question's terms: every word analysed as Russian, Kazakh and English (deduplicated, in order)."""
    found = words(text)
    analysed = [*terms(text, "rus"), *kazakh_terms(found), *terms(text, "eng")]
    return list(dict.fromkeys(analysed))


BATCH = 4_096


def batch_terms(texts: list[str | None], languages: list[str | None]) -> tuple[list[str], np.ndarray]:
    """The terms of a batch of chunks, as :func:`terms` gives each, flattened in row order, and each chunk's
    count. The Snowball stemmer is called once per language for the whole batch (it was once per chunk), and a
    Kazakh word is folded once per batch."""
    found = [words(text or "") for text in texts]
    out: list[list[str]] = [[] for _ in found]
    by_stemmer: dict[str, list[int]] = {}
    kazakh: dict[str, str] = {}  # each distinct Kazakh word folded once
    for row, language in enumerate(languages):
        if language == "kaz":
            out[row] = [kazakh.get(w) or kazakh.setdefault(w, kazakh_terms([w])[0]) for w in found[row]]
        else:
            by_stemmer.setdefault("english" if language == "eng" else "russian", []).append(row)
    for name, rows in by_stemmer.items():
        stemmed = iter(_stemmer(name).stemWords([w for row in rows for w in found[row]]))  # type: ignore[attr-defined]
        for row in rows:
            out[row] = [next(stemmed) for _ in found[row]]
    return [t for row in out for t in row], np.fromiter((len(row) for row in out), np.int64, len(out))


def term_ids(flat: list[str], vocab: dict[str, int]) -> np.ndarray:
    """Vocabulary positions of ``flat`` (new terms get the next ones, in the order they first occur): Arrow
    finds the batch's distinct terms, so Python touches each distinct term once, not every token."""
    if not flat:
        return np.zeros(0, np.int32)
    encoded = pa.array(flat, pa.string()).dictionary_encode()
    distinct = encoded.dictionary.to_pylist()  # in order of first occurrence
    mapping = np.fromiter((vocab.setdefault(t, len(vocab)) for t in distinct), np.int32, len(distinct))
    return np.asarray(mapping[encoded.indices.to_numpy(zero_copy_only=False)], np.int32)


def build_lexical(
    enriched: Path,
    out: Path,
    extras: Iterable[Callable[[Path, Path], object]] = (),
    previous: Path | None = None,
) -> int:
    """The BM25 index of a version's chunks (``enriched``, in file order) and their texts by row
    (:mod:`vectors.texts`), and what each of ``extras`` writes beside them (``extra(enriched, folder)``: the
    documents' cards, the bridge: :func:`vectors.words.build_word_indexes`), written to ``out`` (replaced
    whole, via a temporary folder); returns the number of chunks. Built out of core (:mod:`vectors.bm25`):
    memory does not grow with the corpus. Each batch is
    analysed, mapped to term ids and counted whole (:func:`batch_terms`, :func:`term_ids`,
    :meth:`~vectors.bm25.Bm25Writer.add_batch`): the same index as chunk by chunk, in a third of the time.

    ``previous`` (the last version's lexical folder): a chunk whose text and language it already holds is not
    analysed again; its counted terms (:class:`~vectors.bm25.PreviousRows`) and its compressed text are copied,
    so the build's cost follows what changed. Every score is the one a build from scratch gives (the
    vocabulary's order may differ, no number does: ``tests/test_lexical_reuse.py``)."""
    from vectors.bm25 import Bm25Writer

    vocab: dict[str, int] = {}
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    texts = TextWriter(tmp)  # the same stream, kept for answers (vectors.texts)
    index = Bm25Writer(tmp)
    before = _Before.open(previous) if previous is not None else None
    keys: list[np.ndarray] = []
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=BATCH, columns=["text", "language", "text_hash"]):
        languages = batch.column("language").to_pylist()
        batch_keys = row_keys(batch.column("text_hash").to_pylist(), languages)
        keys.append(batch_keys)
        found = before.find(batch_keys) if before is not None else np.full(len(languages), -1, np.int64)
        for start, stop, reused in _runs(found >= 0):
            if reused:
                assert before is not None
                index.add_rows(*before.rows.take(found[start:stop], vocab))
                texts.add_frames(before.texts, found[start:stop])
                continue
            chunk_texts = batch.column("text").slice(start, stop - start).to_pylist()
            flat, lengths = batch_terms(chunk_texts, languages[start:stop])
            index.add_batch(term_ids(flat, vocab), lengths)
            for text in chunk_texts:
                texts.add(text or "")
    texts.close()
    if index.chunks:
        index.close(vocab, keep_rows=True)
        np.save(tmp / ROW_KEYS, np.concatenate(keys))
    else:
        index.discard()
    for extra in extras:  # more indexes of the same version, published in the same folder
        extra(enriched, tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return index.chunks


ROW_KEYS = "rows.keys.npy"  # each row's (text hash, language) as 64 bits, in row order


def row_keys(hashes: list[str | None], languages: list[str | None]) -> np.ndarray:
    """What decides a chunk's terms, as one number a row: its text's hash (``text_hash``) and its language."""
    return np.fromiter(
        (
            int(h[:15], 16) ^ (_LANGUAGE_BITS.get(lang or "", 7) << 60) if h else -1
            for h, lang in zip(hashes, languages, strict=True)
        ),
        np.int64,
        len(hashes),
    )


_LANGUAGE_BITS = {"rus": 1, "kaz": 2, "eng": 3}


def _runs(mask: np.ndarray) -> Iterable[tuple[int, int, bool]]:
    """(start, stop, value) of each run of equal values in ``mask``."""
    if not len(mask):
        return
    edges = np.flatnonzero(np.diff(mask.astype(np.int8))) + 1
    bounds = [0, *edges.tolist(), len(mask)]
    for start, stop in zip(bounds, bounds[1:], strict=False):
        yield start, stop, bool(mask[start])


class _Before:
    """The last version's lexical folder as :func:`build_lexical` reuses it: its rows by key."""

    def __init__(self, folder: Path) -> None:
        from vectors.bm25 import PreviousRows
        from vectors.texts import TextFile

        rows, text_file = PreviousRows.open(folder), TextFile.open(folder)
        assert rows is not None and text_file is not None
        self.rows, self.texts = rows, text_file
        keys = np.load(folder / ROW_KEYS)
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]

    @classmethod
    def open(cls, folder: Path) -> _Before | None:
        from vectors.bm25 import ROWS_COUNTS, ROWS_INDEX, ROWS_TERMS
        from vectors.texts import DATA, INDEX

        needed = (ROW_KEYS, ROWS_INDEX, ROWS_TERMS, ROWS_COUNTS, DATA, INDEX, "vocab.index.json")
        return cls(folder) if all((folder / name).exists() for name in needed) else None

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row in the last version, or -1."""
        at = np.searchsorted(self.sorted, keys)
        at[at >= len(self.sorted)] = 0
        hit = (self.sorted[at] == keys) & (keys >= 0) if len(self.sorted) else np.zeros(len(keys), bool)
        return np.where(hit, self.order[at] if len(self.sorted) else -1, -1)


class LexicalIndex:
    """One version's BM25 index, memory-mapped."""

    def __init__(self, folder: Path) -> None:
        import bm25s

        self.folder = folder
        self.retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        self.size = int(self.retriever.scores.get("num_docs", 0)) if self.retriever.scores else 0

    @classmethod
    def open(cls, version_folder: Path) -> LexicalIndex | None:
        """The version's index, or None when its folder lacks one (every version of the current format has one)."""
        folder = version_folder / LEXICAL
        return cls(folder) if (folder / "params.index.json").exists() else None

    def scores(self, question: str) -> np.ndarray:
        """BM25 of every chunk of the version (row order) for the question's terms."""
        known = [t for t in query_terms(question) if t in self.retriever.vocab_dict]
        if not known or not self.size:
            return np.zeros(self.size, np.float32)
        return np.asarray(self.retriever.get_scores(known), dtype=np.float32)

    def term_scores(self, weighted: dict[str, float]) -> np.ndarray:
        """BM25 of every chunk for already analysed terms, each term's part times its weight (terms of one
        weight are scored together: a few calls, not one a term)."""
        out = np.zeros(self.size, np.float32)
        groups: dict[float, list[str]] = {}
        for term, weight in weighted.items():
            if term in self.retriever.vocab_dict and weight > 0:
                groups.setdefault(round(weight, 2), []).append(term)
        for weight, group in groups.items():
            out += weight * np.asarray(self.retriever.get_scores(group), dtype=np.float32)
        return out

    def top(self, question: str, k: int, rows: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """The ``k`` best rows (restricted to ``rows`` when given) with a positive score, best first."""
        return best_rows(self.scores(question), k, rows)


def best_rows(scores: np.ndarray, k: int, rows: Iterable[int] | None = None) -> list[tuple[int, float]]:
    """The ``k`` best rows of ``scores`` (restricted to ``rows`` when given) with a positive score, best first."""
    if rows is not None:
        wanted = np.fromiter(rows, dtype=np.int64)
        picked = scores[wanted]
        order = np.argsort(-picked, kind="stable")[:k]
        return [(int(wanted[i]), float(picked[i])) for i in order if picked[i] > 0]
    k = min(k, len(scores))
    if not k:
        return []
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(int(i), float(scores[i])) for i in best if scores[i] > 0]
