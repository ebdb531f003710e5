"""``zan lookup`` and ``zan eval``: the consumer side (:mod:`lookup`)."""

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
    golden: Annotated[Path, typer.Argument(help="Golden queries, JSON Lines (data/golden/golden.jsonl).")],
    home: HomeOption = Path("data"),
    k_per_doc: KPerDocOption = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Score the lookup route against plain vector search: hit@1, hit@5, MRR per category, refusals.

    Example: `zan eval data/golden/golden.jsonl --home ./data`
    """
    from lookup.evaluate import evaluate, format_report, read_golden
    from lookup.route import Lookup

    with failing("eval"):
        report = evaluate(Lookup.open(home, chroma_url, embedder), read_golden(golden), k_per_doc)
    if as_json:
        print_json(report)
    else:
        sys.stdout.write(format_report(report))
