"""Everyday words → the law's wording: a curated, reviewed vocabulary (``lookup/refdata/everyday.jsonl``).

People ask «прогулял полдня могут уволить», the Code says «отсутствие работника на работе без уважительной
причины»; «каска» is «средства индивидуальной защиты», «колодец» is a «confined space». Each row names the
everyday words (a phrase counts when all its words are in the question, compared by Snowball stem, so
«уволили» and «уволить» are one) and the law's wording, in Russian and, where an English standard uses it,
in English, with an example question. The law's words are added to the lexical side of a plain-words
question (never the vector side, never an identifier), and ``--json`` shows them (``expanded``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from vectors.lexical import terms

VOCABULARY = Path(__file__).resolve().parent / "refdata" / "everyday.jsonl"


@dataclass(frozen=True)
class Entry:
    everyday: tuple[tuple[str, ...], ...]  # each phrase as its stems
    written: tuple[str, ...]  # each phrase as the row writes it
    law: str
    law_en: str
    example: str

    def matches(self, stems: set[str]) -> str | None:
        """The first phrase of this entry all of whose stems the question holds, as written in the row."""
        for phrase, written in zip(self.everyday, self.written, strict=True):
            if phrase and set(phrase) <= stems:
                return written
        return None


@functools.cache
def entries(path: Path = VOCABULARY) -> tuple[Entry, ...]:
    out = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not row.get("everyday") or not row.get("law") or not row.get("example"):
            raise ValueError(f"{path}:{number}: a row needs everyday words, the law's wording and an example")
        phrases = tuple(tuple(terms(p, "rus")) for p in row["everyday"])
        out.append(Entry(phrases, tuple(row["everyday"]), row["law"], row.get("law_en", ""), row["example"]))
    return tuple(out)


def matched(question: str) -> list[tuple[str, Entry]]:
    """(the everyday words found, as the row writes them; the row) for each row the question matches."""
    stems = set(terms(question, "rus"))
    if not stems:
        return []
    return [(hit, entry) for entry in entries() if (hit := entry.matches(stems))]


def expand(question: str) -> list[tuple[str, str]]:
    """(the everyday words found, the law's wording) for each vocabulary row the question matches."""
    return [(hit, " / ".join(w for w in (entry.law, entry.law_en) if w)) for hit, entry in matched(question)]


def expansion_terms(question: str) -> dict[str, float]:
    """The lexical terms the vocabulary adds to a question (the law's Russian words by the Russian stemmer,
    its English ones by the English), none that the question already has."""
    own = set(terms(question, "rus"))
    out: dict[str, float] = {}
    for _, entry in matched(question):
        for term in [*terms(entry.law, "rus"), *terms(entry.law_en, "eng")]:
            if term not in own:
                out[term] = 1.0
    return out
