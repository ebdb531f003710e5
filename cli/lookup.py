"""``zan lookup``, ``zan eval`` and ``zan tune``: the consumer side (:mod:`lookup`)."""

from __future__ import annotations

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
) -> None:
    """Resolve the identifiers in QUERY through the registry, fetch only their chunks, and print the hint.

    Example: `zan lookup --json "ст. 182 ТК РК" --home ./data`
    """
    from lookup.gate import use_gates
    from lookup.route import Lookup

    use_gates(False)  # one question: the grammar's gates would cost more to build than they save
    with failing("lookup"):
        result = Lookup.open(home, chroma_url, embedder, max_candidates).route(query, k_per_doc=k_per_doc)
    if as_json:
        print_json(result.as_dict())
        return
    sys.stdout.write(f"status: {result.status}\n{result.hint}\n")
    for chunk in result.chunks:
        preview = " ".join(chunk.text.split())[:100]
        sys.stdout.write(f"  {chunk.score:6.3f}  {chunk.chunk_id:<32} {preview}\n")


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
