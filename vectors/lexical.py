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


def _word_set(*lines: str) -> frozenset[str]:
    return frozenset(word for line in lines for word in line.split())


# Words that occur in almost every chunk or question and say nothing of its subject.
_STOP = _word_set(
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


def build_lexical(enriched: Path, out: Path, extras: Iterable[Callable[[Path, Path], object]] = ()) -> int:
    """The BM25 index of a version's chunks (``enriched``, in file order) and their texts by row
    (:mod:`vectors.texts`), and what each of ``extras`` writes beside them (``extra(enriched, folder)``: the
    documents' cards, the bridge: :func:`vectors.words.build_word_indexes`), written to ``out`` (replaced
    whole, via a temporary folder); returns the number of chunks. Built out of core (:mod:`vectors.bm25`):
    memory does not grow with the corpus. Each batch is
    analysed, mapped to term ids and counted whole (:func:`batch_terms`, :func:`term_ids`,
    :meth:`~vectors.bm25.Bm25Writer.add_batch`): the same index as chunk by chunk, in a third of the time."""
    from vectors.bm25 import Bm25Writer

    vocab: dict[str, int] = {}
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    texts = TextWriter(tmp)  # the same stream, kept for answers (vectors.texts)
    index = Bm25Writer(tmp)
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=BATCH, columns=["text", "language"]):
        chunk_texts = batch.column("text").to_pylist()
        flat, lengths = batch_terms(chunk_texts, batch.column("language").to_pylist())
        index.add_batch(term_ids(flat, vocab), lengths)
        for text in chunk_texts:
            texts.add(text or "")
    texts.close()
    if index.chunks:
        index.close(vocab)
    else:
        index.discard()
    for extra in extras:  # more indexes of the same version, published in the same folder
        extra(enriched, tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return index.chunks


class LexicalIndex:
    """One version's BM25 index, memory-mapped."""

    def __init__(self, folder: Path) -> None:
        import bm25s

        self.folder = folder
        self.retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        self.size = int(self.retriever.scores.get("num_docs", 0)) if self.retriever.scores else 0

    @classmethod
    def open(cls, version_folder: Path) -> LexicalIndex | None:
        """The version's index, or None for a version built before lexical indexes existed."""
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
