"""Golden-set evaluation: hit@1, hit@5 and MRR per category, for the lookup route and for plain vector search.

A golden row (JSON Lines) names the query, its category and what a right answer is::

    {"id": "A01", "category": "A_direct_number", "query": "Приказ МТСЗН №211",
     "doc_ids": ["v2400035612"], "articles": [], "expect_status": "exact"}

A chunk is relevant when its doc_id is one of ``doc_ids`` and, when ``articles`` is given, it carries one of
those article labels. Abstention rows have no ``doc_ids``: a refusal (``"expect_status": "not_found"``) or a
question back (``"ambiguous"``, an article named with no document); the lookup is right when its status is
the expected one and it returns no chunks; plain vector search cannot abstain, so it scores 0 there.

``wrong_document`` counts rows that name a document yet get, among their top chunks, a chunk of a document
the row does not expect (any chunk at all for an abstention row): the answer after a refusal that zan must
never give.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup.chunks import Chunk
from lookup.route import Lookup
from schemas.errors import ZanError

CUTOFFS = (1, 5, 10)  # hit@k; MRR is MRR@10 (a first hit past 10 counts 0)


class GoldenError(ZanError, ValueError):
    """A golden file line that cannot be read; names the file, the line and the reason."""


@dataclass(frozen=True)
class GoldenRow:
    id: str
    category: str
    query: str
    doc_ids: tuple[str, ...]
    articles: tuple[str, ...]
    expect_status: str | None
    hint_has: tuple[str, ...] = ()  # lineage rows: words the hint must carry («последнее изменение: …»)
    language: str | None = None  # plain-words rows: the question's language (rus, kaz) and style
    style: str | None = None  # plain, colloquial, typo, translit (Kazakh typed without Kazakh letters)
    changed: tuple[str, ...] = ()  # an amending act's row: articles its notes say it changed
    sections: tuple[str, ...] = ()  # "doc_id:path": a structural part of that document (annex1/ch2, sec7.1)
    answer: str | None = None  # the answer's words as read in the text (the wide set records them)

    @property
    def checks_lineage(self) -> bool:
        return bool(self.hint_has or self.changed)

    def lineage_ok(self, hint: str, changed: dict[str, list[dict[str, Any]]]) -> bool:
        said = {c["article"] for changes in changed.values() for c in changes}
        return all(h in hint for h in self.hint_has) and set(self.changed) <= said

    @property
    def abstains(self) -> bool:
        return not self.doc_ids and self.expect_status in ("not_found", "ambiguous")

    def relevant(self, chunk: Chunk) -> bool:
        """A chunk of one of ``doc_ids`` that is (one of) what the row names for that document: an article
        (``articles``: a plain label, for every document, or ``doc_id:label`` for one), or a part
        (``sections``: ``doc_id:path``, the part or any part under it); any chunk of a document the row names
        nothing of."""
        if chunk.doc_id not in self.doc_ids:
            return False
        articles = {a.split(":", 1)[-1] for a in self.articles if ":" not in a or a.startswith(chunk.doc_id + ":")}
        sections = [s.split(":", 1)[1] for s in self.sections if s.startswith(chunk.doc_id + ":")]
        if not articles and not sections:
            return not self.articles and not self.sections or not self._names_part_of(chunk.doc_id)
        if articles & set(chunk.article_labels):
            return True
        path = chunk.chunk_id.split(":", 1)[1].rsplit(":", 1)[0] if chunk.chunk_id.count(":") >= 2 else ""
        return any(path == s or path.startswith(s + "/") for s in sections)

    def _names_part_of(self, doc_id: str) -> bool:
        return any(":" not in a or a.startswith(doc_id + ":") for a in self.articles) or any(
            s.startswith(doc_id + ":") for s in self.sections
        )


def read_golden(path: Path) -> list[GoldenRow]:
    rows = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            rows.append(
                GoldenRow(
                    id=str(data["id"]),
                    category=str(data["category"]),
                    query=str(data["query"]),
                    doc_ids=tuple(data.get("doc_ids") or ()),
                    articles=tuple(str(a) for a in data.get("articles") or ()),
                    expect_status=data.get("expect_status"),
                    hint_has=tuple(str(h) for h in data.get("hint_has") or ()),
                    changed=tuple(str(a) for a in data.get("changed") or ()),
                    language=data.get("language"),
                    style=data.get("style"),
                    sections=tuple(str(x) for x in data.get("sections") or ()),
                    answer=data.get("answer"),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise GoldenError(f"{path}:{number}: {exc}") from exc
    if not rows:
        raise GoldenError(f"{path}: no golden rows")
    return rows


def rank_of_first_hit(row: GoldenRow, chunks: list[Chunk]) -> int | None:
    return next((n for n, chunk in enumerate(chunks, 1) if row.relevant(chunk)), None)


@dataclass
class Tally:
    """Counts for one route and category. Ranked rows (a relevant chunk exists) feed hit@k and MRR;
    refusal rows feed ``refused`` (the share refused). A metric with no rows is None, not 0."""

    n: int = 0
    ranked: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CUTOFFS, 0))
    reciprocal: float = 0.0
    refusals: int = 0
    refused: int = 0

    def add_ranked(self, rank: int | None) -> None:
        self.n += 1
        self.ranked += 1
        for k in CUTOFFS:
            self.hits[k] += int(rank is not None and rank <= k)
        self.reciprocal += 1.0 / rank if rank and rank <= max(CUTOFFS) else 0.0

    def add_refusal(self, refused: bool) -> None:
        self.n += 1
        self.refusals += 1
        self.refused += int(refused)

    def as_dict(self) -> dict[str, Any]:
        def share(count: float, total: int) -> float | None:
            return round(count / total, 4) if total else None

        out: dict[str, Any] = {"n": self.n}
        out |= {f"hit@{k}": share(self.hits[k], self.ranked) for k in CUTOFFS}
        return out | {"mrr": share(self.reciprocal, self.ranked), "refused": share(self.refused, self.refusals)}


def evaluate(lookup: Lookup, rows: list[GoldenRow], k_per_doc: int = 5) -> dict[str, Any]:
    """Per category and overall, for ``lookup`` (the route: fused for plain words), ``vector`` (plain vector
    search, the "before") and ``lexical`` (BM25 alone); plain-words rows also per language and per style."""
    tallies: dict[str, dict[str, Tally]] = {
        "lookup": defaultdict(Tally),
        "vector": defaultdict(Tally),
        "lexical": defaultdict(Tally),
    }
    failures: list[dict[str, Any]] = []
    wrong: list[str] = []
    lineage = {"n": 0, "passed": 0}
    for row in rows:
        routed = lookup.route(row.query, k_per_doc=k_per_doc)
        plain = lookup.vector_search(row.query, k=max(CUTOFFS) * 2)
        if row.checks_lineage:
            ok = row.lineage_ok(routed.hint, routed.changed)
            lineage["n"], lineage["passed"] = lineage["n"] + 1, lineage["passed"] + int(ok)
            if not ok:
                failures.append({"id": row.id, "query": row.query, "status": routed.status, "rank": "lineage"})
        categories = (row.category, "ALL")
        if row.expect_status != "no_identifier" and any(
            c.doc_id not in row.doc_ids for c in routed.chunks[: max(CUTOFFS)]
        ):
            wrong.append(row.id)
        if row.abstains:
            abstained = routed.status == row.expect_status and not routed.chunks
            for category in categories:
                tallies["lookup"][category].add_refusal(abstained)
                tallies["vector"][category].add_refusal(False)  # plain search always answers something
                tallies["lexical"][category].add_refusal(False)
            if not abstained:
                failures.append({"id": row.id, "query": row.query, "status": routed.status, "rank": None})
            continue
        rank, plain_rank = rank_of_first_hit(row, routed.chunks), rank_of_first_hit(row, plain)
        lexical_rank = rank_of_first_hit(row, lookup.lexical_search(row.query, k=max(CUTOFFS)))
        groups = [
            *categories,
            *(f"{key}={value}" for key, value in (("language", row.language), ("style", row.style)) if value),
        ]
        for category in groups:
            tallies["lookup"][category].add_ranked(rank)
            tallies["vector"][category].add_ranked(plain_rank)
            tallies["lexical"][category].add_ranked(lexical_rank)
        status_ok = row.expect_status in (None, routed.status)
        if rank is None or rank > max(CUTOFFS) or not status_ok:
            failures.append({"id": row.id, "query": row.query, "status": routed.status, "rank": rank})
    return {
        "rows": len(rows),
        "lookup": {c: t.as_dict() for c, t in sorted(tallies["lookup"].items())},
        "vector": {c: t.as_dict() for c, t in sorted(tallies["vector"].items())},
        "lexical": {c: t.as_dict() for c, t in sorted(tallies["lexical"].items())},
        "lineage": lineage,
        "wrong_document": len(wrong),
        "wrong_document_rows": wrong,
        "failures": failures,
    }


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table: one line per category (and per language and style of plain-words rows), the route
    (fused for plain words) beside vector-only and lexical-only search."""
    methods = ("lookup", "vector", "lexical")
    head = f"{'category':<22} {'n':>3}"
    for method in methods:
        head += f"  {method + ' h@1':>11} {'h@5':>5} {'h@10':>5} {'MRR':>5}"
    lines = [head + f"  {'refused':>7}"]
    for category, got in report["lookup"].items():
        row = f"{category:<22} {got['n']:>3}"
        for method in methods:
            cells = report.get(method, {}).get(category, {})
            values = [_cell(cells.get(k)) for k in ("hit@1", "hit@5", "hit@10", "mrr")]
            row += f"  {values[0]:>11} {values[1]:>5} {values[2]:>5} {values[3]:>5}"
        lines.append(row + f"  {_cell(got['refused']):>7}")
    lines.append(f"wrong-document answers: {report.get('wrong_document', 0)}")
    if report.get("lineage", {}).get("n"):
        lines.append(
            f"lineage checks (edition, repeal, what an act changed): {report['lineage']['passed']}/"
            f"{report['lineage']['n']}"
        )
    if report["failures"]:
        lines.append(f"lookup misses: {len(report['failures'])}")
        lines += [f"  {f['id']} {f['query']!r}: status {f['status']}, rank {f['rank']}" for f in report["failures"]]
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


TOLERANCE = 0.005  # a share that moved by less than this is the same figure (rounding), not a drop


def headline(report: dict[str, Any]) -> dict[str, Any]:
    """What a scheduled check compares from one evaluation to the next: the route's hit@5 and refusals over
    all rows, the wrong-document answers and the lineage checks passed."""
    overall = report["lookup"].get("ALL", {})
    return {
        "rows": report["rows"],
        "hit@5": overall.get("hit@5"),
        "refused": overall.get("refused"),
        "wrong_document": report["wrong_document"],
        "lineage_passed": report["lineage"]["passed"],
    }


def dropped(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """How ``now`` (a :func:`headline`) is worse than ``before``: a share lower by more than :data:`TOLERANCE`,
    more wrong documents, fewer lineage checks passed. Rows added or removed make the figures incomparable:
    nothing is said then."""
    if before.get("rows") != now.get("rows"):
        return []
    shares = [k for k in ("hit@5", "refused") if before.get(k) is not None and now.get(k) is not None]
    out = [f"{k} {before[k]:.3f} -> {now[k]:.3f}" for k in shares if now[k] < before[k] - TOLERANCE]
    out += [
        f"{key} {before[key]} -> {now[key]}"
        for key, worse in (("wrong_document", 1), ("lineage_passed", -1))
        if (now[key] - before[key]) * worse > 0
    ]
    return out


class GoldenDropped(ZanError):
    """The published version answers the golden set worse than the last check did (terminal: no retry helps)."""


def check(lookup: Lookup, golden: Path, kept: Path) -> dict[str, Any]:
    """Answer ``golden`` from ``lookup``'s published version and compare with the last check kept in ``kept``
    (:func:`headline`, :func:`dropped`): a drop raises :class:`GoldenDropped` and the baseline stays the last
    good one; else the new figures become the baseline (written atomically) and are returned."""
    from schemas.files import atomic_write

    now = headline(evaluate(lookup, read_golden(golden))) | {"version": lookup.snapshot().version}
    before: dict[str, Any] = json.loads(kept.read_text("utf-8")) if kept.exists() else {}
    drops = dropped(before, now) if before else []
    if drops:
        raise GoldenDropped(
            f"the golden set {golden.name} dropped from version {before.get('version')} to "
            f"{now['version']}: {'; '.join(drops)}"
        )
    kept.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(kept, json.dumps(now, sort_keys=True).encode("utf-8"))
    return now
