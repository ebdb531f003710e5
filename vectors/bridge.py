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

Built beside the BM25 index (:func:`vectors.lexical.build_lexical`), streamed. Its cost is bounded whatever the
corpus: at most :data:`MAX_UNITS` units drawn by a hash of their key (the same draw from one version to the
next) and :data:`MAX_LINKS` word links, a few seconds; the real corpus (~700 pairs, 1.7 M links) is read whole.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import json
import re
import shutil
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vectors.lexical import kazakh_terms, terms, words

BRIDGE = "bridge.json"  # in a version's lexical folder
MIN_PAIRS = 3
KEEP = 2
ROUNDS = 5
NULL_WEIGHT = 1.0  # the empty word's share when a target word is explained
MIN_PROBABILITY = 0.1
MAX_UNITS = 5_000  # articles/sections drawn for alignment (the real corpus has ~700 pairs)
MAX_LINKS = 8_000_000  # (pair, source word, target word) links the EM holds: ~250 MB at most
MAX_UNIT_CHARS = 20_000  # an article's text kept for alignment; longer ones are cut (a code's longest: ~15 000)
_POINT = re.compile(r"(?m)^\s*(\d{1,3})\.\s")
LANGUAGES = ("kaz", "rus")


def _analysed(text: str, language: str) -> set[str]:
    return set(kazakh_terms(words(text)) if language == "kaz" else terms(text, language))


def _points(text: str) -> dict[str, str]:
    parts = _POINT.split(text)
    return {parts[n]: parts[n + 1] for n in range(1, len(parts) - 1, 2)}


def aligned_pairs(enriched: Path, limit: int = MAX_UNITS) -> Iterable[tuple[str, str]]:
    """(Kazakh text, Russian text) of each article or section an act states in both languages, пункт by
    пункт where both editions number the same пункты (:func:`drawn_units`, :func:`unit_pairs`)."""
    return unit_pairs(drawn_units(enriched, limit))


TEXT_ROWS = 8_192  # rows whose texts are decoded at once: one row group of a version's chunk file

Units = dict[tuple[str, str], dict[str, list[str]]]


def drawn_units(enriched: Path, limit: int = MAX_UNITS) -> Units:
    """The texts, by language, of at most ``limit`` of the articles or sections stated in both languages:
    those whose key hashes lowest, so the sample is spread over every act, the same from one version to the
    next, and a changed act moves it only where its own units were drawn. Two passes: the first reads no
    text, the second decodes only the drawn units' rows (memory follows ``limit``, not the corpus)."""
    reader = pq.ParquetFile(enriched, pre_buffer=False)
    ids: dict[tuple[str, str], int] = {}  # unit -> its number
    found_in: list[int] = []  # unit number -> a bit per language it is stated in
    unit_of: list[np.ndarray] = []  # each row's unit (-1: none), batch by batch
    for batch in reader.iter_batches(batch_size=65_536, columns=["doc_id", "language", "article_labels", "path"]):
        here = np.full(batch.num_rows, -1, np.int64)
        listed = zip(*(batch.column(c).to_pylist() for c in batch.column_names), strict=True)
        for row, (doc, language, labels, path) in enumerate(listed):
            label = _label(labels, path)
            if label is not None and language in LANGUAGES:
                unit = here[row] = ids.setdefault((doc, label), len(ids))
                if unit == len(found_in):
                    found_in.append(0)
                found_in[unit] |= 1 << LANGUAGES.index(language)
        unit_of.append(here)
    keys = list(ids)
    both = [key for key, found in zip(keys, found_in, strict=True) if found == (1 << len(LANGUAGES)) - 1]
    drawn = np.zeros(len(keys), bool)
    for key in heapq.nsmallest(limit, both, key=_draw):
        drawn[ids[key]] = True
    del ids, found_in, both
    units: Units = {}
    if not drawn.any():
        return units
    columns = ["language", "text"]
    row_units = np.concatenate(unit_of) if unit_of else np.zeros(0, np.int64)
    del unit_of
    start = 0
    # texts a row group at a time: a batch of many groups held every text of them at once (244 MB of Arrow
    # memory at 180 000 chunks), a group's are a few MB whatever the corpus
    for batch in reader.iter_batches(batch_size=TEXT_ROWS, columns=columns):
        rows_unit = row_units[start : start + batch.num_rows]
        start += batch.num_rows
        picked = np.flatnonzero((rows_unit >= 0) & drawn[np.maximum(rows_unit, 0)])
        if not len(picked):
            continue
        taken = batch.take(pa.array(picked))
        for unit, language, text in zip(
            rows_unit[picked].tolist(), *(taken.column(c).to_pylist() for c in columns), strict=True
        ):
            if language not in LANGUAGES or not text:
                continue
            held = units.setdefault(keys[unit], {}).setdefault(language, [])
            if sum(map(len, held)) < MAX_UNIT_CHARS:
                held.append(text)
    return units


def unit_pairs(units: Units) -> Iterable[tuple[str, str]]:
    """The aligned (Kazakh, Russian) pairs of :func:`drawn_units`, in the order the chunks are stored."""
    for by_language in units.values():
        if len(by_language) < 2:
            continue
        kaz, rus = "\n".join(by_language["kaz"]), "\n".join(by_language["rus"])
        kaz_points, rus_points = _points(kaz), _points(rus)
        if len(kaz_points) >= 2 and kaz_points.keys() == rus_points.keys():
            yield from ((kaz_points[n], rus_points[n]) for n in kaz_points)
        else:
            yield kaz, rus


def _label(labels: list[str] | None, path: str | None) -> str | None:
    return labels[0] if labels and len(labels) == 1 else _section(path)


def _draw(key: tuple[str, str]) -> bytes:
    return hashlib.blake2b("\0".join(key).encode(), digest_size=8).digest()


def _section(path: str | None) -> str | None:
    """A unit's language-free structural path (``kaz/annex1/ch2`` and ``annex1/ch2`` are one section)."""
    if not path:
        return None
    return path.removeprefix("kaz/").removeprefix("rus/") or None


def build_bridge(enriched: Path, out: Path, previous: Path | None = None) -> int:
    """Write the version's term table to ``out`` (JSON); returns the number of aligned pairs it was learned from.

    ``previous`` (the last version's table): when at most :data:`CARRY_SHARE` of the word links it was learned
    from changed since, it is kept as it is, with what it was learned from (:data:`BRIDGE_UNITS`, the digest
    of each unit's texts; :data:`BRIDGE_TERMS`, each unit's terms), instead of learned again: the model is a
    statistic of a corpus's links (:func:`_translation`), and learning it is most of an incremental run's word
    indexes. A link is a (Kazakh term, Russian term) pair of one unit: a unit that changed moves as many
    links as its term sets changed (a word added to one пункт of an article, a few in a hundred; an article
    rewritten, all of them; a unit drawn anew or no longer drawn, all of its links). The share is counted
    against what the table was *learned* from, not against the last version, so carried tables never drift
    further than that; past it, the table is learned again."""
    units = drawn_units(enriched)
    digests = {"\0".join(key): _digest(by_language) for key, by_language in units.items() if len(by_language) > 1}
    carried = _carried(previous, digests, units) if previous is not None else None
    if carried is not None:
        assert previous is not None
        shutil.copyfile(previous, out)
        shutil.copyfile(previous.with_name(BRIDGE_TERMS), out.with_name(BRIDGE_TERMS))
        out.with_name(BRIDGE_UNITS).write_text(json.dumps(carried, sort_keys=True), "utf-8")
        return int(carried["pairs"])
    pairs = _learn(unit_pairs(units), out)
    links = _save_terms(out.with_name(BRIDGE_TERMS), {key: _unit_terms(_unit(units, key)) for key in digests})
    learned = {"trained": digests, "pairs": pairs, "links": links, "carried": 0, "changed": 0, "moved": 0}
    out.with_name(BRIDGE_UNITS).write_text(json.dumps(learned, sort_keys=True), "utf-8")
    return pairs


BRIDGE_UNITS = "bridge.units.json"  # beside the table: a digest of each unit it was learned from
BRIDGE_TERMS = "bridge.terms.npz"  # beside the table: each unit's terms it was learned from, as 32-bit hashes
CARRY_SHARE = 0.02  # of the links the table was learned from


def _digest(by_language: dict[str, list[str]]) -> str:
    text = "\1".join("\0".join(by_language.get(language, ())) for language in LANGUAGES)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


UnitTerms = tuple[np.ndarray, np.ndarray]  # a unit's Kazakh and Russian terms: sorted unique uint32 hashes


def _unit_terms(by_language: dict[str, list[str]]) -> UnitTerms:
    """A unit's term sets, as the table's model analyses its texts (:func:`_analysed`), hashed."""
    kaz, rus = ("\n".join(by_language.get(language, ())) for language in LANGUAGES)
    return _hashed(_analysed(kaz, "kaz")), _hashed(_analysed(rus, "rus"))


def _hashed(terms: set[str]) -> np.ndarray:
    return np.unique(np.fromiter((zlib.crc32(t.encode("utf-8")) for t in terms), np.uint32, len(terms)))


def _links(terms: UnitTerms) -> int:
    return len(terms[0]) * len(terms[1])


def _moved(before: UnitTerms, after: UnitTerms) -> int:
    """Links one unit gained or lost: those of its term sets before and after that are not in both."""
    same = len(np.intersect1d(before[0], after[0], assume_unique=True))
    same *= len(np.intersect1d(before[1], after[1], assume_unique=True))
    return _links(before) + _links(after) - 2 * same


def _save_terms(path: Path, terms: dict[str, UnitTerms]) -> int:
    """Write each unit's term sets to ``path`` (npz: unit keys, then each language's offsets and hashes);
    returns the links they make."""
    keys = list(terms)
    arrays: dict[str, np.ndarray] = {"keys": np.array(keys, dtype=str)}
    for n, language in enumerate(LANGUAGES):
        sets = [terms[key][n] for key in keys]
        arrays[f"{language}_at"] = np.cumsum([0, *map(len, sets)], dtype=np.int64)
        arrays[language] = np.concatenate(sets) if sets else np.zeros(0, np.uint32)
    with path.open("wb") as handle:
        np.savez(handle, **cast(dict[str, Any], arrays))
    return sum(_links(t) for t in terms.values())


def _load_terms(path: Path, wanted: Iterable[str]) -> dict[str, UnitTerms]:
    """The term sets :func:`_save_terms` wrote of the units ``wanted`` (those it has)."""
    with np.load(path) as held:
        position = {str(key): n for n, key in enumerate(held["keys"].tolist())}
        at = {language: (held[f"{language}_at"], held[language]) for language in LANGUAGES}
    out: dict[str, UnitTerms] = {}
    for key in wanted:
        n = position.get(key)
        if n is not None:
            kaz, rus = (values[starts[n] : starts[n + 1]] for starts, values in (at[lang] for lang in LANGUAGES))
            out[key] = (kaz, rus)
    return out


def _unit(units: Units, key: str) -> dict[str, list[str]]:
    doc, label = key.split("\0", 1)
    return units[(doc, label)]


def _carried(previous: Path, digests: dict[str, str], units: Units) -> dict[str, Any] | None:
    """What :data:`BRIDGE_UNITS` says when ``previous`` is kept for ``units`` (digesting to ``digests``); None
    when it must be learned again (too many links moved, or a table from before its terms were kept)."""
    kept_units, kept_terms = previous.with_name(BRIDGE_UNITS), previous.with_name(BRIDGE_TERMS)
    if not previous.exists() or not kept_units.exists() or not kept_terms.exists():
        return None
    kept = json.loads(kept_units.read_text("utf-8"))
    trained: dict[str, str] = kept.get("trained") or {}
    links = int(kept.get("links") or 0)
    if not trained or not links:
        return None
    changed = [key for key, digest in digests.items() if trained.get(key) != digest]
    gone = [key for key in trained if key not in digests]
    before = _load_terms(kept_terms, [*changed, *gone])
    moved = sum(_links(before[key]) for key in gone if key in before)
    for key in changed:
        after = _unit_terms(_unit(units, key))
        moved += _moved(before[key], after) if key in before else _links(after)
        if moved > CARRY_SHARE * links:
            return None
    if moved > CARRY_SHARE * links:
        return None
    return {**kept, "carried": int(kept.get("carried", 0)) + 1, "changed": len(changed) + len(gone), "moved": moved}


def _learn(pairs: Iterable[tuple[str, str]], out: Path) -> int:
    """Learn the term table from aligned ``pairs`` and write it to ``out``; returns the pairs used."""
    import Stemmer

    stem = Stemmer.Stemmer("russian")
    kaz_sets: list[set[str]] = []
    rus_sets: list[set[str]] = []
    surface: dict[str, Counter[str]] = defaultdict(Counter)
    kaz_surface: dict[str, Counter[str]] = defaultdict(Counter)
    links = 0
    for kaz, rus in pairs:
        kaz_terms_here, rus_terms_here = _analysed(kaz, "kaz"), _analysed(rus, "rus")
        links += len(kaz_terms_here) * len(rus_terms_here)
        if links > MAX_LINKS:
            break
        kaz_sets.append(kaz_terms_here)
        rus_sets.append(rus_terms_here)
        for word in words(rus):
            surface[stem.stemWord(word)][word] += 1
        for word in words(kaz):
            kaz_surface[kazakh_terms([word])[0]][word] += 1
    table = {
        "kaz": _translation(kaz_sets, rus_sets),
        "rus": _translation(rus_sets, kaz_sets),
        "forms": {"rus": _forms(surface), "kaz": _forms(kaz_surface)},
        "pairs": len(kaz_sets),
    }
    out.write_text(json.dumps(table, ensure_ascii=False, sort_keys=True), "utf-8")
    return len(kaz_sets)


Table = dict[str, list[tuple[str, float]]]


def _translation(source: list[set[str]], target: list[set[str]], rounds: int = ROUNDS) -> Table:
    """IBM Model 1 (Brown et al. 1993): t(target | source) by expectation-maximisation over the aligned pairs,
    each target word explained by the source words of its pair (and none: the empty word). Where Dice counts
    what occurs together, the model lets a pair's frequent words explain each other away, so «жазатайым»
    goes to «несчастн», not to «работник», which is everywhere.

    Vectorised: every (pair, source word, target word) link is one entry of flat arrays, so a round is a few
    ``bincount`` calls (E: each link's share of its target word in its pair; M: the shares summed per word
    pair, normalised per source word). ``build_bridge`` caps the links at :data:`MAX_LINKS`."""
    import numpy as np

    source_ids: dict[str, int] = {}
    target_ids: dict[str, int] = {}
    frequency: Counter[str] = Counter()
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for mine, theirs in zip(source, target, strict=True):
        if not mine or not theirs:
            continue
        frequency.update(mine)
        es = np.fromiter((source_ids.setdefault(w, len(source_ids)) for w in sorted(mine)), np.int32)
        fs = np.fromiter((target_ids.setdefault(w, len(target_ids)) for w in sorted(theirs)), np.int32)
        pairs.append((es, fs))
    if not pairs:
        return {}
    # the links written straight into int32 arrays of their final size (no list of parts concatenated, which
    # held every link twice): the bridge's build was the run's peak (719 MB at 2 000 kazakhstan-law acts)
    size = sum(len(es) * len(fs) for es, fs in pairs)
    e, f, group = np.empty(size, np.int32), np.empty(size, np.int32), np.empty(size, np.int32)
    at = groups = 0  # one group per (pair, target word): the words that may explain it
    for es, fs in pairs:
        n = len(es) * len(fs)
        e[at : at + n] = np.repeat(es, len(fs))
        f[at : at + n] = np.tile(fs, len(es))
        group[at : at + n] = np.tile(np.arange(groups, groups + len(fs), dtype=np.int32), len(es))
        at, groups = at + n, groups + len(fs)
    del pairs
    pair_keys = e.astype(np.int64) * len(target_ids) + f
    del e, f
    keys, link_key = _unique_inverse(pair_keys)
    del pair_keys
    key_source, key_target = keys // len(target_ids), keys % len(target_ids)
    t = np.ones(len(keys))
    for _ in range(rounds):
        share = t[link_key]  # each link's weight, then (in place) its share of its target word in its pair
        share /= (np.bincount(group, share, minlength=groups) + NULL_WEIGHT)[group]
        counts = np.bincount(link_key, share, minlength=len(keys))
        del share
        t = counts / np.bincount(key_source, counts, minlength=len(source_ids))[key_source]
    source_words, target_words = list(source_ids), list(target_ids)
    table: Table = {}
    target_rank = np.empty(len(target_words), np.int64)
    target_rank[np.argsort(np.array(target_words, dtype=object))] = np.arange(len(target_words))
    order = np.lexsort((-target_rank[key_target], -t, key_source))  # by source word, best first, ties by word
    starts = np.searchsorted(key_source[order], np.arange(len(source_ids)))
    ends = np.append(starts[1:], len(order))
    for word_id, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        term = source_words[word_id]
        if frequency[term] < MIN_PAIRS:
            continue
        best = order[start : min(end, start + KEEP)]
        kept = [(target_words[key_target[k]], round(float(t[k]), 3)) for k in best if t[k] >= MIN_PROBABILITY]
        if kept:
            table[term] = kept
    return table


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` with the inverse as int32, in less memory (it kept a sorted
    copy, a permutation, a mask and an int64 inverse of every link at once)."""
    order = np.argsort(values, kind="stable")
    values = values[order]
    starts = np.empty(len(values), bool)
    starts[:1] = True
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    keys = values[starts]
    del values
    inverse = np.empty(len(order), np.int32)
    inverse[order] = np.cumsum(starts, dtype=np.int32) - 1
    return keys, inverse


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
