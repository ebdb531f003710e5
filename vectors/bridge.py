"""A Kazakh↔Russian bridge learned from the corpus itself, rebuilt with every version.

Most acts here are published in Russian only, so a Kazakh question («Жазатайым оқиға туралы инспекцияға қашан
хабарлау керек?») shares no word with the Russian rules that answer it, and a small multilingual model
barely carries the meaning across. The acts the corpus holds in both languages (the Labour Code; later every
act of the kazakhstan-law corpus) say the same thing article by article, пункт by пункт: aligned, they give
a term table.

- **Alignment**: an act's article (or section) in one language is paired with the same label in the other;
  where both editions number the same пункты, пункт with пункт (smaller pairs, sharper counts).
- **Translation**: IBM Model 1 over the pairs' term sets (a Kazakh term: the lexical index's own analysis,
  folded and cut to five letters; a Russian one: its Snowball stem), :data:`ROUNDS` rounds of EM; a term
  needs :data:`MIN_PAIRS` pairs, and its best :data:`KEEP` counterparts at :data:`MIN_PROBABILITY` or more
  are kept. Measured against the Dice coefficient of co-occurrence on the golden sets held out by act (the
  model: Kazakh hit@1 0.56 against 0.48–0.50, MRR 0.66 against 0.61–0.63; ``README.md``). The same in the other
  direction.
- **Surface forms**: each stem's most frequent word in the aligned texts, so a question can be
  pseudo-translated into words an embedding model reads («жазатайым оқиға» → «несчастных расследования»).

Built beside the BM25 index (:func:`vectors.lexical.build_lexical`), streamed; memory is the aligned pairs'
term sets, capped at :data:`MAX_PAIRS`.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from vectors.lexical import kazakh_terms, terms, words

BRIDGE = "bridge.json"  # in a version's lexical folder
MIN_PAIRS = 3
KEEP = 2
ROUNDS = 5
NULL_WEIGHT = 1.0  # the empty word's share when a target word is explained
MIN_PROBABILITY = 0.1
MAX_PAIRS = 200_000
MAX_UNIT_CHARS = 20_000  # an article's text kept for alignment; longer ones are cut (a code's longest: ~15 000)
_POINT = re.compile(r"(?m)^\s*(\d{1,3})\.\s")
LANGUAGES = ("kaz", "rus")


def _analysed(text: str, language: str) -> set[str]:
    return set(kazakh_terms(words(text)) if language == "kaz" else terms(text, language))


def _points(text: str) -> dict[str, str]:
    parts = _POINT.split(text)
    return {parts[n]: parts[n + 1] for n in range(1, len(parts) - 1, 2)}


def aligned_pairs(enriched: Path) -> Iterable[tuple[str, str]]:
    """(Kazakh text, Russian text) of each article or section an act states in both languages, пункт by
    пункт where both editions number the same пункты."""
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    languages: dict[str, set[str]] = defaultdict(set)
    for batch in reader.iter_batches(batch_size=65_536, columns=["doc_id", "language"]):
        for doc, language in zip(batch.column("doc_id").to_pylist(), batch.column("language").to_pylist(), strict=True):
            languages[doc].add(language)
    both = {d for d, found in languages.items() if set(LANGUAGES) <= found}
    units: dict[tuple[str, str], dict[str, list[str]]] = {}
    columns = ["doc_id", "language", "article_labels", "path", "text"]
    for batch in reader.iter_batches(batch_size=4_096, columns=columns):
        rows = zip(*(batch.column(c).to_pylist() for c in columns), strict=True)
        for doc, language, labels, path, text in rows:
            if doc not in both or language not in LANGUAGES or not text:
                continue
            label = labels[0] if labels and len(labels) == 1 else _section(path)
            if label is None:
                continue
            held = units.setdefault((doc, label), {}).setdefault(language, [])
            if sum(map(len, held)) < MAX_UNIT_CHARS:
                held.append(text)
    for by_language in units.values():
        if len(by_language) < 2:
            continue
        kaz, rus = "\n".join(by_language["kaz"]), "\n".join(by_language["rus"])
        kaz_points, rus_points = _points(kaz), _points(rus)
        if len(kaz_points) >= 2 and kaz_points.keys() == rus_points.keys():
            yield from ((kaz_points[n], rus_points[n]) for n in kaz_points)
        else:
            yield kaz, rus


def _section(path: str | None) -> str | None:
    """A unit's language-free structural path (``kaz/annex1/ch2`` and ``annex1/ch2`` are one section)."""
    if not path:
        return None
    return path.removeprefix("kaz/").removeprefix("rus/") or None


def build_bridge(enriched: Path, out: Path) -> int:
    """Write the version's term table to ``out`` (JSON); returns the number of aligned pairs it was learned from."""
    import Stemmer

    stem = Stemmer.Stemmer("russian")
    kaz_sets: list[set[str]] = []
    rus_sets: list[set[str]] = []
    surface: dict[str, Counter[str]] = defaultdict(Counter)
    kaz_surface: dict[str, Counter[str]] = defaultdict(Counter)
    for kaz, rus in aligned_pairs(enriched):
        kaz_sets.append(_analysed(kaz, "kaz"))
        rus_sets.append(_analysed(rus, "rus"))
        for word in words(rus):
            surface[stem.stemWord(word)][word] += 1
        for word in words(kaz):
            kaz_surface[kazakh_terms([word])[0]][word] += 1
        if len(kaz_sets) >= MAX_PAIRS:
            break
    table = {"kaz": _translation(kaz_sets, rus_sets), "rus": _translation(rus_sets, kaz_sets),
             "forms": {"rus": _forms(surface), "kaz": _forms(kaz_surface)}, "pairs": len(kaz_sets)}  # fmt: skip
    out.write_text(json.dumps(table, ensure_ascii=False, sort_keys=True), "utf-8")
    return len(kaz_sets)


Table = dict[str, list[tuple[str, float]]]


def _translation(source: list[set[str]], target: list[set[str]], rounds: int = ROUNDS) -> Table:
    """IBM Model 1 (Brown et al. 1993): t(target | source) by expectation-maximisation over the aligned pairs,
    each target word explained by the source words of its pair (and none: the empty word). Where Dice counts
    what occurs together, the model lets a pair's frequent words explain each other away, so «жазатайым»
    goes to «несчастн», not to «работник», which is everywhere."""
    frequency: Counter[str] = Counter()
    for mine in source:
        frequency.update(mine)
    t: dict[str, dict[str, float]] = defaultdict(dict)
    for mine, theirs in zip(source, target, strict=True):
        for term in mine:
            row = t[term]
            for other in theirs:
                row[other] = 1.0
    for _ in range(rounds):
        counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for mine, theirs in zip(source, target, strict=True):
            words_here = list(mine)
            for other in theirs:
                weights = [t[term].get(other, 0.0) for term in words_here]
                total = sum(weights) + NULL_WEIGHT
                for term, weight in zip(words_here, weights, strict=True):
                    if weight:
                        counts[term][other] += weight / total
        t = defaultdict(dict)
        for term, row in counts.items():
            norm = sum(row.values())
            t[term] = {other: n / norm for other, n in row.items()}
    table = {}
    for term, row in t.items():
        if frequency[term] < MIN_PAIRS:
            continue
        best = sorted(((p, other) for other, p in row.items()), reverse=True)[:KEEP]
        kept = [(other, round(p, 3)) for p, other in best if p >= MIN_PROBABILITY]
        if kept:
            table[term] = kept
    return table


def _forms(surface: dict[str, Counter[str]]) -> dict[str, str]:
    return {term: counts.most_common(1)[0][0] for term, counts in surface.items()}


@dataclass(frozen=True)
class Bridge:
    """A version's term table, read once."""

    table: dict[str, dict[str, list[tuple[str, float]]]]
    forms: dict[str, dict[str, str]]

    @classmethod
    def open(cls, lexical_folder: Path) -> Bridge | None:
        path = lexical_folder / BRIDGE
        if not path.exists():
            return None
        data = json.loads(path.read_text("utf-8"))
        table = {lang: {t: [(o, float(d)) for o, d in kept] for t, kept in data[lang].items()} for lang in LANGUAGES}
        return cls(table, data["forms"])

    def expansion(self, question: str, language: str) -> dict[str, float]:
        """The other language's terms for a ``language`` question's words, each with its best probability."""
        found = words(question)
        mine = kazakh_terms(found) if language == "kaz" else list(_stemmed(tuple(found)))
        out: dict[str, float] = {}
        for term in dict.fromkeys(mine):
            for other, probability in self.table.get(language, {}).get(term, ()):
                out[other] = max(out.get(other, 0.0), probability)
        return out

    def pseudo(self, question: str, language: str) -> str:
        """The question in the other language's words, word by word (each word's best counterpart): crude,
        but a multilingual model reads it, where it reads a Kazakh question about Russian text poorly."""
        found = words(question)
        mine = kazakh_terms(found) if language == "kaz" else list(_stemmed(tuple(found)))
        other = "rus" if language == "kaz" else "kaz"
        out = []
        for term in mine:
            kept = self.table.get(language, {}).get(term)
            if kept:
                out.append(self.forms.get(other, {}).get(kept[0][0], kept[0][0]))
        return " ".join(dict.fromkeys(out))


@functools.lru_cache(maxsize=1024)
def _stemmed(found: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(terms(" ".join(found), "rus"))
