"""Choosing the plain-words ranking's parameters honestly: cross-validation split by act.

The ranking's weights (:class:`lookup.plain.RankParams`) were once chosen on the questions that reported
them, about one act: on questions written by someone else, about other acts, the fusion fell below the model
alone. Here every parameter is chosen on some acts and reported on the others:

1. each golden question's candidates are gathered once (:func:`lookup.plain.gather`): re-ranking them under
   a parameter set costs a sort, not a model call;
2. questions are grouped by the act they are about (their first ``doc_ids``), and the acts dealt into
   ``folds`` folds of about equal size (largest act first, each to the smallest fold);
3. for each fold, the grid's best parameters on the other folds' questions (found in the top five, then the
   reciprocal rank, averaged per act; ties: the simpler, fewer methods on) rank that fold's questions: the
   held-out figures. Weights are chosen per question language (:class:`lookup.plain.Ranking`) where the
   training questions in that language are about at least :data:`MIN_ACTS` acts, else on all of them;
4. the weights shipped (``lookup/refdata/ranking.json``, per embedder family) are chosen the same way on every
   question, with the held-out figures beside them.

Beside the fused ranking, every report shows the model alone (the index's nearest chunks) and BM25 alone on
the same questions, per language, style, kind of act (code, law, order/rules, standard) and «answer only in
another language».
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.chunks import Chunk
from lookup.evaluate import CUTOFFS, GoldenRow, Tally
from lookup.plain import RANKING, Evidence, Feature, Ranking, RankParams, embedder_family, order
from lookup.route import Lookup

# The grid: the vector weight is fixed (only ratios matter); 0 switches a method off. rrf_k = 30 was in the grid
# until 2026-12-05 and never chosen in any fold (e5 and hashed n-grams), so it left. The vector side switched
# off was tried for hashed n-grams (held out 0.79 against 0.74) and not kept: it lost a plain-words row of
# data/golden/golden.jsonl («техника безопасности при эксплуатации электроустановок», the title of its act).
GRID: dict[str, Sequence[float]] = {
    "rrf_k": (10.0,),
    "lexical": (0.25, 0.5, 1.0, 2.0, 4.0),
    "expanded": (0.0, 0.5, 1.0),
    "pseudo": (0.0, 0.5, 1.0),
    "crossed": (0.0, 0.02, 0.04, 0.06),
    "documents": (0.0, 0.5, 1.0, 2.0),
    "cap": (0, 2, 3),
}
CLOSE = (0.8, 0.9)  # with the cap on: how close another act's chunk must score to take a place
METHODS = {  # what each method switches on (the rest of the grid stays as is)
    "bridge and vocabulary (expanded)": "expanded",
    "pseudo-translation": "pseudo",
    "acts in another language (crossed)": "crossed",
    "documents first": "documents",
    "diversity (cap)": "cap",
}
# A language chooses its own weights only when its training questions are about this many acts: fewer, and the
# choice fits those acts (measured: per-language weights lifted the hashed n-grams' English questions from 0.74
# to 0.79 held out, all from 0.74 to 0.76; e5 at parity, 0.88).
MIN_ACTS = 3
KINDS = {"code": "code", "law": "law", "constitution": "law", "standard": "standard"}  # anything else: order/rules


def kind_of(doc_type: str | None) -> str:
    return KINDS.get(doc_type or "", "order/rules")


@dataclass
class Question:
    """A golden row with its gathered candidates and what it is grouped by."""

    row: GoldenRow
    evidence: Evidence
    act: str
    groups: list[str]


def gather_all(lookup: Lookup, rows: Iterable[GoldenRow]) -> list[Question]:
    """Each plain-words row's candidates (rows that expect an identifier answer are not ranked here)."""
    snap = lookup.snapshot()
    docs = snap.registry.docs
    out = []
    for row in rows:
        if row.expect_status not in (None, "no_identifier") or not row.doc_ids:
            continue
        evidence = lookup.evidence(snap, row.query, every=True)
        first = docs.get(row.doc_ids[0])
        languages = set().union(*(set(docs[d].languages) for d in row.doc_ids if d in docs))
        groups = ["ALL", f"set={row.category}", f"language={row.language or evidence.language}"]
        groups += [f"style={row.style}"] if row.style else []
        groups.append(f"kind={kind_of(first.doc_type if first else None)}")
        if (row.language or evidence.language) not in languages:
            groups.append("answer in another language")
        out.append(Question(row, evidence, row.doc_ids[0], groups))
    return out


def first_hit(row: GoldenRow, ranked: Sequence[Feature]) -> int | None:
    for n, feature in enumerate(ranked[: max(CUTOFFS)], 1):
        if row.relevant(_as_chunk(feature)):
            return n
    return None


def _as_chunk(f: Feature) -> Chunk:
    """What relevance reads of a candidate: its id, document and article labels."""
    return f.base if f.base is not None else Chunk(f.chunk_id, f.doc_id, [], list(f.labels), "", 0.0)


def grid(methods: Iterable[str] | None = None) -> list[RankParams]:
    """Every parameter set of the grid; with ``methods`` (fields of :data:`METHODS`), only those methods on."""
    keys = list(GRID)
    out = []
    for values in itertools.product(*(GRID[k] for k in keys)):
        chosen = dict(zip(keys, values, strict=True))
        if methods is not None and any(chosen[m] for m in METHODS.values() if m not in methods):
            continue
        for close in CLOSE if chosen["cap"] else (0.0,):
            out.append(RankParams(vector=1.0, close=close, **chosen))  # type: ignore[arg-type]
    return out


def _objective(hit: int | None) -> float:
    """A question's worth to the choice: found in the top five (what a chatbot shows) counts most, and a
    higher place breaks ties (reciprocal rank)."""
    return (1.0 if hit is not None and hit <= 5 else 0.0) + 0.5 * (1.0 / hit if hit else 0.0)


def hits(questions: Sequence[Question], candidates: Sequence[RankParams]) -> np.ndarray:
    """The first hit's rank (0: none in the first ten) of every question under every candidate: the one
    costly step (a ranking per pair); choosing per fold is then sums over this matrix."""
    out = np.zeros((len(candidates), len(questions)), np.int16)
    depth = max(CUTOFFS)
    for m, q in enumerate(questions):
        features, _ = q.evidence.ranked()
        relevant = np.array([q.row.relevant(_as_chunk(f)) for f in features], dtype=bool)
        if not relevant.any():
            continue
        for n, params in enumerate(candidates):
            found = np.flatnonzero(relevant[order(q.evidence, params)[0][:depth]])
            out[n, m] = found[0] + 1 if len(found) else 0
    return out


def _worth(found: np.ndarray) -> np.ndarray:
    reciprocal = np.where(found > 0, 1.0 / np.maximum(found, 1), 0.0)
    return ((found > 0) & (found <= 5)).astype(float) + 0.5 * reciprocal


def objective(questions: Sequence[Question], found: np.ndarray, among: Sequence[int]) -> np.ndarray:
    """Each candidate's worth over the questions ``among``, averaged per act first (:func:`_objective`): the
    law is many acts, and a code with a hundred questions must not choose the weights for orders with three."""
    acts: dict[str, list[int]] = {}
    for m in among:
        acts.setdefault(questions[m].act, []).append(m)
    worth = _worth(found)
    return np.asarray(np.mean([worth[:, members].mean(axis=1) for members in acts.values()], axis=0))


def best(
    questions: Sequence[Question], candidates: Sequence[RankParams], found: np.ndarray, among: Sequence[int]
) -> int:
    """The index of the candidate worth most on ``among``; ties: fewer methods on, grid order."""
    scores = objective(questions, found, among)
    simplicity = np.array([_simplicity(p) for p in candidates])
    order = np.lexsort((np.arange(len(candidates)), -simplicity, -np.round(scores, 9)))
    return int(order[0])


def choose(
    questions: Sequence[Question], candidates: Sequence[RankParams], found: np.ndarray, among: Sequence[int]
) -> tuple[int, dict[str, int]]:
    """The best candidate on ``among``, and per question language the best on that language's questions where
    they are about at least :data:`MIN_ACTS` acts (indices into ``candidates``)."""
    by_language: dict[str, list[int]] = {}
    for n in among:
        by_language.setdefault(questions[n].evidence.language, []).append(n)
    chosen = {
        language: best(questions, candidates, found, members)
        for language, members in sorted(by_language.items())
        if len({questions[n].act for n in members}) >= MIN_ACTS
    }
    return best(questions, candidates, found, among), chosen


def ranking(candidates: Sequence[RankParams], chosen: tuple[int, dict[str, int]]) -> Ranking:
    overall, by_language = chosen
    return Ranking(candidates[overall], {language: candidates[n] for language, n in by_language.items()})


def _simplicity(p: RankParams) -> int:
    return -sum(bool(getattr(p, m)) for m in METHODS.values())


def folds(questions: Sequence[Question], count: int) -> list[list[int]]:
    """Question indices in ``count`` folds, whole acts each (largest act first, into the smallest fold)."""
    by_act: dict[str, list[int]] = {}
    for n, q in enumerate(questions):
        by_act.setdefault(q.act, []).append(n)
    out: list[list[int]] = [[] for _ in range(max(2, count))]
    for act in sorted(by_act, key=lambda a: (-len(by_act[a]), a)):
        min(out, key=len).extend(by_act[act])
    return [f for f in out if f]


@dataclass
class Report:
    """Held-out figures per group for the fused ranking (cross-validated), the model alone and BM25 alone."""

    tallies: dict[str, dict[str, Tally]] = field(default_factory=dict)
    chosen: list[dict[str, Any]] = field(default_factory=list)  # each fold's parameters

    def add(self, method: str, question: Question, hit: int | None) -> None:
        for group in question.groups:
            self.tallies.setdefault(method, {}).setdefault(group, Tally()).add_ranked(hit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "methods": {m: {g: t.as_dict() for g, t in sorted(gs.items())} for m, gs in self.tallies.items()},
            "folds": self.chosen,
        }


def alone(question: Question, signal: str) -> int | None:
    """The first hit of one ranking on its own (``vector``: the model alone; ``lexical``: BM25 alone)."""
    held = [f for f in question.evidence.features.values() if getattr(f, signal) is not None]
    held.sort(key=lambda f: (-float(getattr(f, signal)), f.chunk_id))
    return first_hit(question.row, held)


def cross_validate(
    questions: Sequence[Question], count: int = 5, methods: Iterable[str] | None = None, found: np.ndarray | None = None
) -> Report:
    """Held-out figures: each fold ranked with the weights best on the others (:func:`folds`, :func:`choose`);
    ``found``: :func:`hits` of the grid, when already computed."""
    candidates = grid(methods)
    found = hits(questions, candidates) if found is None else found
    report = Report()
    for fold in folds(questions, count):
        held_out = set(fold)
        train = [n for n in range(len(questions)) if n not in held_out]
        overall, by_language = chosen = choose(questions, candidates, found, train)
        acts = sorted({questions[n].act for n in fold})
        report.chosen.append({"acts": acts, "questions": len(fold), **ranking(candidates, chosen).as_dict()})
        for n in fold:
            q = questions[n]
            report.add("fused", q, int(found[by_language.get(q.evidence.language, overall), n]) or None)
            report.add("model alone", q, alone(q, "vector"))
            report.add("BM25 alone", q, alone(q, "lexical"))
    return report


def ablation(questions: Sequence[Question], count: int = 5) -> dict[str, Report]:
    """Held-out figures of the plain fusion, each method alone on top of it, and all together."""
    out = {"vectors + BM25": cross_validate(questions, count, methods=())}
    for name, field_name in METHODS.items():
        out[f"+ {name}"] = cross_validate(questions, count, methods=(field_name,))
    out["all methods"] = cross_validate(questions, count)
    return out


def format_report(report: Report, title: str = "held-out (cross-validated by act)") -> str:
    methods = ("fused", "model alone", "BM25 alone")
    groups = sorted(report.tallies.get("fused", {}), key=lambda g: (g != "ALL", g))
    head = f"{title}\n{'group':<30} {'n':>4}" + "".join(f"  {m[:11]:>11} h@5 {'MRR':>5}" for m in methods)
    lines = [head]
    for group in groups:
        line = f"{group:<30} {report.tallies['fused'][group].n:>4}"
        for m in methods:
            got = report.tallies[m][group].as_dict()
            line += f"  {got['hit@1']:>11.2f} {got['hit@5']:.2f} {got['mrr']:>5.2f}"
        lines.append(line)
    lines.append("(each cell: hit@1, hit@5, MRR@10)")
    return "\n".join(lines) + "\n"


def format_ablation(reports: dict[str, Report]) -> str:
    groups = [
        "ALL",
        "language=kaz",
        "answer in another language",
        "style=colloquial",
        "kind=order/rules",
        "kind=law",
        "kind=standard",
        "kind=code",
    ]
    lines = [f"{'method (held-out hit@5)':<36}" + "".join(f" {g.split('=')[-1][:12]:>12}" for g in groups)]
    for name, report in reports.items():
        tallies = report.tallies["fused"]
        lines.append(
            f"{name:<36}"
            + "".join(f" {tallies[g].as_dict()['hit@5']:>12.2f}" if g in tallies else f" {'-':>12}" for g in groups)
        )
    any_report = next(iter(reports.values()))
    for label, method in (("model alone", "model alone"), ("BM25 alone", "BM25 alone")):
        tallies = any_report.tallies[method]
        lines.append(
            f"{label:<36}"
            + "".join(f" {tallies[g].as_dict()['hit@5']:>12.2f}" if g in tallies else f" {'-':>12}" for g in groups)
        )
    return "\n".join(lines) + "\n"


def tune(
    lookup: Lookup, rows: Iterable[GoldenRow], golden: Sequence[Path], count: int = 5, out: Path = RANKING
) -> dict[str, Any]:
    """Cross-validate, fit on every question, and write the weights for this embedder's family to ``out``
    (other families' entries kept), with the held-out figures and where they came from."""
    questions = gather_all(lookup, rows)
    candidates = grid()
    found = hits(questions, candidates)
    report = cross_validate(questions, count, found=found)
    chosen = ranking(candidates, choose(questions, candidates, found, range(len(questions))))
    family = embedder_family(lookup.embedder_id)
    data: dict[str, Any] = json.loads(out.read_text("utf-8")) if out.exists() else {}
    data.setdefault("embedders", {})[family] = {
        **chosen.as_dict(),
        "chosen": dt.date.today().isoformat(),
        "embedder": lookup.embedder_id,
        "golden": [str(p) for p in golden],
        "questions": len(questions),
        "held_out": {g: t.as_dict() for g, t in report.tallies["fused"].items()},
    }
    data["note"] = "written by `zan tune`: parameters fit on every question; held_out: cross-validated by act"
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", "utf-8")
    written: dict[str, Any] = data["embedders"][family]
    return written
