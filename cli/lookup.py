"""``zan lookup``, ``zan eval`` and ``zan tune``: the consumer side (:mod:`lookup`)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.common import ChromaUrlOption, EmbedderOption, HomeOption, KPerDocOption, failing, print_json


def lookup_command(
    query: Annotated[str, typer.Argument(help="A question that may name documents: «ст. 182 ТК РК», «приказ 211».")],
    home: HomeOption = Path("data"),
    k_per_doc: KPerDocOption = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    max_candidates: Annotated[
        int, typer.Option("--max-candidates", min=0, help="Documents listed for an article named with no document.")
    ] = 5,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="The text in force on this date, YYYY-MM-DD (acts read from git).")
    ] = None,
) -> None:
    """Resolve the identifiers in QUERY through the registry, fetch only their chunks, and print the hint.

    Example: `zan lookup --json "ст. 182 ТК РК" --home ./data`; `zan lookup "приказ МВД № 46" --as-of 2025-01-01`
    """
    from lookup.gate import use_gates
    from lookup.route import Lookup

    use_gates(False)  # one question: the grammar's gates would cost more to build than they save
    with failing("lookup"):
        date = _date(as_of)
        result = Lookup.open(home, chroma_url, embedder, max_candidates).route(query, k_per_doc=k_per_doc, as_of=date)
    if as_json:
        print_json(result.as_dict())
        return
    sys.stdout.write(f"status: {result.status}\n{result.hint}\n")
    for chunk in result.chunks:
        preview = " ".join(chunk.text.split())[:100]
        sys.stdout.write(f"  {chunk.score:6.3f}  {chunk.chunk_id:<32} {preview}\n")


def _date(text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(f"{text[:40]!r} is not a date: use YYYY-MM-DD", param_hint="--as-of") from None


def history_command(
    query: Annotated[str, typer.Argument(help="A question that names one act: «приказ МВД № 46», «V1500010325».")],
    home: HomeOption = Path("data"),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List an act's versions (from the git history a run read), and for each the parts it changed with a
    word diff.

    Example: `zan history "приказ МВД № 46" --home ./data`
    """
    from lookup.history import history_of
    from lookup.version import Snapshot
    from schemas.published import check_home

    with failing("history"):
        from lookup.grammar import parse

        snap = Snapshot.open(check_home(home, writable=False))
        matches = [m for m in snap.registry.resolve(parse(query)) if m.status == "exact"]
        doc_ids = list(dict.fromkeys(d for m in matches for d in m.doc_ids))
        history = history_of(snap)
        found = {d: [v.as_dict() for v in history.versions(d)] if history else [] for d in doc_ids}
    if as_json:
        print_json({"query": query, "version": snap.version, "documents": found})
        return
    if not doc_ids:
        sys.stdout.write("no act of the registry is named exactly by this question\n")
    for doc_id, versions in found.items():
        sys.stdout.write(
            f"{doc_id}: {len(versions)} versions" + ("" if versions else " (no history: not read from git)") + "\n"
        )
        for v in versions:
            sys.stdout.write(f"  {v['version_date']}  {v['commit'][:12]}  {len(v['changed'])} parts\n")
            for c in v["changed"][:20]:
                what = c.get("unit") or c.get("event")
                sys.stdout.write(f"    {what}: {(c.get('diff') or c.get('event') or '')[:160]}\n")


def eval_command(
    golden: Annotated[list[Path], typer.Argument(help="Golden queries, JSON Lines; one or several.")],
    home: HomeOption = Path("data"),
    k_per_doc: KPerDocOption = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    cv: Annotated[
        int, typer.Option("--cv", min=0, max=20, help="Also cross-validate the plain-words ranking by act, N folds.")
    ] = 0,
    methods: Annotated[
        bool, typer.Option("--methods", help="With --cv: each ranking method alone and together (held-out).")
    ] = False,
) -> None:
    """Score the lookup route against plain vector search: hit@1, hit@5, MRR per category, refusals; with
    --cv, the plain-words ranking's held-out figures (weights chosen on other acts) beside the model alone and
    BM25 alone, per language, style, kind of act and «answer in another language».

    Example: `zan eval data/golden/semantic_wide.jsonl data/golden/semantic.jsonl --cv 5 --home ./data`
    """
    from lookup.evaluate import evaluate, format_report, read_golden
    from lookup.route import Lookup

    with failing("eval"):
        lookup = Lookup.open(home, chroma_url, embedder)
        rows = [row for path in golden for row in read_golden(path)]
        report = evaluate(lookup, rows, k_per_doc)
        report["embedder"] = lookup.embedder_id
        if cv:
            from lookup import tuning

            questions = tuning.gather_all(lookup, rows)
            held_out = tuning.cross_validate(questions, cv)
            report["cross_validated"] = held_out.as_dict()
            if methods:
                ablation = tuning.ablation(questions, cv)
                report["methods"] = {name: r.as_dict()["methods"]["fused"] for name, r in ablation.items()}
    if as_json:
        print_json(report)
        return
    sys.stdout.write(f"embedder: {report['embedder']}\n" + format_report(report))
    if cv:
        sys.stdout.write("\n" + tuning.format_report(held_out))
        if methods:
            sys.stdout.write("\n" + tuning.format_ablation(ablation))


def tune_command(
    golden: Annotated[list[Path], typer.Argument(help="Golden plain-words questions, JSON Lines; several.")],
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    folds: Annotated[int, typer.Option("--cv", min=2, max=20, help="Folds of the cross-validation, by act.")] = 5,
    out: Annotated[Path | None, typer.Option("--out", help="Where to write; default: the shipped one.")] = None,
) -> None:
    """Choose the plain-words ranking's parameters for HOME's embedder: cross-validated by act for the
    held-out figures, then fit on every question; written under the embedder's family.

    Example: `zan tune data/golden/semantic_wide.jsonl data/golden/semantic.jsonl --home /tmp/e5`
    """
    from lookup import tuning
    from lookup.evaluate import read_golden
    from lookup.plain import RANKING
    from lookup.route import Lookup

    with failing("tune"):
        lookup = Lookup.open(home, chroma_url, embedder)
        rows = [row for path in golden for row in read_golden(path)]
        written = tuning.tune(lookup, rows, golden, folds, out or RANKING)
    print_json(written)
