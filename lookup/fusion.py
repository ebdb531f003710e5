"""Plain-words questions: the vector and the lexical rankings fused, the question's language first.

- **Reciprocal-rank fusion** (Cormack et al. 2009): a chunk's fused score is the sum over the rankings that
  hold it of ``1 / (RRF_K + rank)``. Ranks, not scores, are fused: a cosine and a BM25 score are not on one
  scale, and either list alone misses what the other finds (measured in ``benchmarks/README.md``).
- **Language first**: where a document is published in the question's language (the Labour Code in Russian
  and Kazakh), its chunks in the other language follow all chunks in the question's language; documents in
  one language only are left where fusion put them, so a Kazakh question about a Russian-only act still
  gets that act.
- **The question's language** (:func:`question_language`): Kazakh letters say Kazakh; a Kazakh question
  typed without them («Демалыс отпуск канша кун болады?») is told by its Kazakh words and endings against
  Russian ones.

A lookup is a partition ahead of ranking: this orders candidates, it never adds a document to an answer
that named documents (:mod:`lookup.route`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 10  # measured on data/golden/semantic.jsonl against 30 and 60 (benchmarks/README.md)
_KAZAKH_LETTERS = re.compile("[әғқңөұүһі]", re.I)
_WORD = re.compile(r"[а-яё]+", re.I)


def _word_set(*lines: str) -> frozenset[str]:
    return frozenset(word for line in lines for word in line.split())


# Kazakh words as typed on a Russian keyboard (қ→к, ү→у, ә→а…): question words, particles, everyday nouns.
_KAZAKH_WORDS = _word_set(
    "канша кандай кай калай кашан кайда неше ма ме ба бе па пе бола болады болама болад бар жок бере береди",
    "берилед уакыт уакыты кун кундер жыл жылы ай айлык апта сагат сагаттан жумыс жумыстан жумыска жумысшы",
    "жумыскер демалыс демалысы жалакы шарт шарты туралы бойынша ушин жане деген керек кезде бастап басталады",
    "алады ала алама тиис мерзими мерзим сынак тунги жукти айел айелди шыгару шыгаруга еңбек енбек",
)
_KAZAKH_ENDINGS = ("дан", "ден", "тан", "тен", "нан", "нен", "нын", "нин", "дын", "дин", "тын", "тин", "лары",
                   "лери", "дары", "дери", "тары", "тери", "дагы", "деги", "тагы", "теги", "ыныз", "иниз")  # fmt: skip
_RUSSIAN_WORDS = _word_set(
    "и в во на по что как ли можно сколько какой какая какие каков когда кто где есть для при или ли не за из",
    "от до если это то чем обязан должен положено нужно надо",
)
_RUSSIAN_ENDINGS = ("ость", "ение", "ания", "ться", "ется", "ого", "его", "ому", "ему", "ыми", "ими", "ный", "ная")


def question_language(question: str) -> str:
    """``kaz`` or ``rus`` (a question with no Cyrillic word: ``eng``)."""
    if _KAZAKH_LETTERS.search(question):
        return "kaz"
    found = [w.lower() for w in _WORD.findall(question)]
    if not found:
        return "eng"
    kazakh = sum(w in _KAZAKH_WORDS or (len(w) > 5 and w.endswith(_KAZAKH_ENDINGS)) for w in found)
    russian = sum(w in _RUSSIAN_WORDS or (len(w) > 5 and w.endswith(_RUSSIAN_ENDINGS)) for w in found)
    return "kaz" if kazakh > russian else "rus"


@dataclass(frozen=True)
class Candidate:
    """One chunk a ranking found: its id, its document and language, and its rank (1-based) and score in
    each ranking that holds it (None where it does not)."""

    chunk_id: str
    doc_id: str
    language: str | None
    vector_rank: int | None = None
    vector_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None

    @property
    def fused(self) -> float:
        return sum(1.0 / (RRF_K + r) for r in (self.vector_rank, self.lexical_rank) if r is not None)


def fuse(vector: Sequence[Candidate], lexical: Sequence[Candidate]) -> list[Candidate]:
    """Both rankings as one, best fused score first (ties: chunk id). A chunk in both keeps both ranks."""
    merged: dict[str, Candidate] = {c.chunk_id: c for c in vector}
    for c in lexical:
        held = merged.get(c.chunk_id)
        merged[c.chunk_id] = c if held is None else Candidate(
            held.chunk_id, held.doc_id, held.language or c.language, held.vector_rank, held.vector_score,
            c.lexical_rank, c.lexical_score,
        )  # fmt: skip
    return sorted(merged.values(), key=lambda c: (-c.fused, c.chunk_id))


def language_first(ranked: list[Candidate], language: str, bilingual: set[str]) -> list[Candidate]:
    """``ranked`` with the chunks of a document published in ``language`` (``bilingual``: such documents)
    but written in another moved after every chunk in ``language``; the rest keep their order."""
    ahead = [c for c in ranked if not (c.doc_id in bilingual and c.language != language)]
    behind = [c for c in ranked if c.doc_id in bilingual and c.language != language]
    return ahead + behind
