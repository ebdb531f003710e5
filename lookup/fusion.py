"""The question's language, and the reciprocal-rank constant of the ranking inside named documents.

- **The question's language** (:func:`question_language`): Kazakh letters say Kazakh; a Kazakh question
  typed without them («Демалыс отпуск канша кун болады?») is told by its Kazakh words and endings against
  Russian ones.
- :data:`RRF_K`: reciprocal-rank fusion of cosine and BM25 inside the documents a question names
  (:func:`lookup.chunks.rank_in_version`). A plain-words question is ranked by :mod:`lookup.plain`, whose
  weights are chosen per embedder by cross-validation.
"""

from __future__ import annotations

import re

from vectors.lexical import word_set

RRF_K = 10  # measured on data/golden/semantic.jsonl against 30 and 60 (benchmarks/README.md)
_KAZAKH_LETTERS = re.compile("[әғқңөұүһі]", re.I)
_WORD = re.compile(r"[а-яё]+", re.I)


# Kazakh words as typed on a Russian keyboard (қ→к, ү→у, ә→а…): question words, particles, everyday nouns.
_KAZAKH_WORDS = word_set(
    "канша кандай кай калай кашан кайда неше ма ме ба бе па пе бола болады болама болад бар жок бере береди",
    "берилед уакыт уакыты кун кундер жыл жылы ай айлык апта сагат сагаттан жумыс жумыстан жумыска жумысшы",
    "жумыскер демалыс демалысы жалакы шарт шарты туралы бойынша ушин жане деген керек кезде бастап басталады",
    "алады ала алама тиис мерзими мерзим сынак тунги жукти айел айелди шыгару шыгаруга еңбек енбек",
)
_KAZAKH_ENDINGS = (
    "дан",
    "ден",
    "тан",
    "тен",
    "нан",
    "нен",
    "нын",
    "нин",
    "дын",
    "дин",
    "тын",
    "тин",
    "лары",
    "лери",
    "дары",
    "дери",
    "тары",
    "тери",
    "дагы",
    "деги",
    "тагы",
    "теги",
    "ыныз",
    "иниз",
)
_RUSSIAN_WORDS = word_set(
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
