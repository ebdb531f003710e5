"""The ``zan`` command: a thin layer over the library. Each command opens resources, calls one library
function and turns library errors into a clean message and exit code."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from enrich.embed import make_embedder
from enrich.pipeline import DEFAULT_SAMPLE, RunError, run
from enrich.query import QueryError, run_sql
from lookup.errors import LookupProblem

app = typer.Typer(
    name="zan",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    help="Identifier-aware document ETL for legal and safety retrieval.\n\nExample: `zan run --home ./data`",
)
err = Console(stderr=True)

HomeOption = Annotated[
    Path, typer.Option("--home", help="Data directory (parquet files and embedded Chroma).", envvar="ZAN_HOME")
]


@app.command("run")
def run_command(
    source: Annotated[
        list[Path] | None,
        typer.Option("--source", help="Source folder or file; repeatable. Default: the bundled corpus data/sample."),
    ] = None,
    home: HomeOption = Path("data"),
    chroma_url: Annotated[
        str | None,
        typer.Option(
            "--chroma-url",
            help="Chroma server URL (`chroma run`); default: embedded Chroma under HOME/chroma.",
            envvar="ZAN_CHROMA_URL",
        ),
    ] = None,
    embedder: Annotated[
        str,
        typer.Option(
            "--embedder",
            help="`hash` (offline default) or `st:/path/to/local/model` (e.g. bge-m3).",
            envvar="ZAN_EMBEDDER",
        ),
    ] = "hash",
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON on the last line.")] = False,
) -> None:
    """Extract documents, build the registry, enrich chunks and index them in Chroma.

    Example: `zan run --source ../shared/corpus/adilet --source ../shared/corpus/zan --home /tmp/x --json`
    """
    sources = source or [DEFAULT_SAMPLE]
    try:
        with _progress() as bar:
            tasks: dict[str, TaskID] = {}

            def report(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            info = run(sources, home, chroma_url=chroma_url, embedder=make_embedder(embedder), progress=report)
    except (RunError, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]zan run failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    summary = info.as_dict()
    if as_json:
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
        return
    err.print(
        f"[green]done[/green] {info.documents} documents, {info.chunks} chunks, {info.indexed} indexed, "
        f"{info.rejected} rejected → {home}"
    )
    err.print(f'query it: zan sql "SELECT doc_id, doc_type, law_zrk FROM registry" --home {home}')


@app.command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL over the views registry, chunks, raw_chunks, rejects.")],
    home: HomeOption = Path("data"),
    fmt: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
) -> None:
    """Query the published parquet files with DuckDB.

    Example: `zan sql "SELECT chunk_id FROM chunks WHERE list_contains(code_articles, 156)" --home ./data`
    """
    try:
        output = run_sql(home, query, fmt)
    except QueryError as exc:
        err.print(f"[red]zan sql failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    sys.stdout.write(output)


ChromaUrlOption = Annotated[
    str | None,
    typer.Option(
        "--chroma-url", help="Chroma server URL; default: embedded Chroma under HOME/chroma.", envvar="ZAN_CHROMA_URL"
    ),
]
EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder", help="The embedder the index was built with (`hash` or `st:/path`).", envvar="ZAN_EMBEDDER"
    ),
]


@app.command("lookup")
def lookup_command(
    query: Annotated[str, typer.Argument(help="A question that may name documents: «ст. 182 ТК РК», «приказ 211».")],
    home: HomeOption = Path("data"),
    k_per_doc: Annotated[int, typer.Option("--k-per-doc", min=1, help="Chunks per matched document.")] = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = "hash",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Resolve the identifiers in QUERY through the registry, fetch only their chunks, and print the hint.

    Example: `zan lookup --json "ст. 182 ТК РК" --home ./data`
    """
    from lookup.route import Lookup

    try:
        result = Lookup.open(home, chroma_url, embedder).route(query, k_per_doc=k_per_doc)
    except (LookupProblem, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]zan lookup failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        sys.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False) + "\n")
        return
    sys.stdout.write(f"status: {result.status}\n{result.hint}\n")
    for chunk in result.chunks:
        preview = " ".join(chunk.text.split())[:100]
        sys.stdout.write(f"  {chunk.score:6.3f}  {chunk.chunk_id:<32} {preview}\n")


@app.command("eval")
def eval_command(
    golden: Annotated[Path, typer.Argument(help="Golden queries, JSON Lines (data/golden/golden.jsonl).")],
    home: HomeOption = Path("data"),
    k_per_doc: Annotated[int, typer.Option("--k-per-doc", min=1, help="Chunks per matched document.")] = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = "hash",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Score the lookup route against plain vector search: hit@1, hit@5, MRR per category, refusals.

    Example: `zan eval data/golden/golden.jsonl --home ./data`
    """
    from lookup.evaluate import GoldenError, evaluate, format_report, read_golden
    from lookup.route import Lookup

    try:
        report = evaluate(Lookup.open(home, chroma_url, embedder), read_golden(golden), k_per_doc)
    except (GoldenError, LookupProblem, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]zan eval failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n" if as_json else format_report(report))


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=not err.is_terminal,
    )


if __name__ == "__main__":
    app()
