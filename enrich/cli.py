"""The ``zan`` command: a thin layer over the library. Each command opens resources, calls one library
function and turns library errors into a clean message and exit code."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from enrich.adopt import AdoptError, enrich_collection
from enrich.build import RunError
from enrich.embed import make_embedder
from enrich.home import HomeError
from enrich.pipeline import RunOptions, rollback, run
from enrich.query import QueryError, run_sql
from enrich.versions import VersionError, current_version, list_versions
from lookup.errors import LookupProblem

app = typer.Typer(
    name="zan",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    help="Identifier-aware document ETL for legal and safety retrieval.\n\nExample: `zan run --home ./data`",
)
err = Console(stderr=True)


def _home(raw: str) -> Path:
    """``--home ""`` is an error, never the current directory."""
    if not str(raw).strip():
        raise typer.BadParameter("is empty: give the data directory (default ./data)")
    return Path(raw)


HomeOption = Annotated[
    Path,
    typer.Option("--home", help="Data directory (parquet files and embedded Chroma).", envvar="ZAN_HOME", parser=_home),
]


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


@app.command("run")
def run_command(
    source: Annotated[
        list[Path] | None,
        typer.Option(
            "--source",
            help="Source folder or file; repeatable. Scopes the run to the documents there (others untouched). "
            "Default: the sources the published version recorded (the bundled data/sample the first time).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Rebuild only this doc_id (repeatable); others untouched.")
    ] = None,
    since: Annotated[
        dt.datetime | None,
        typer.Option("--since", formats=["%Y-%m-%d"], help="Only source files modified on or after DATE."),
    ] = None,
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = "hash",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; write nothing.")] = False,
    force_reembed: Annotated[
        bool, typer.Option("--force-reembed", help="Embed the scope's texts again even if stored.")
    ] = False,
    allow_shrink: Annotated[
        bool, typer.Option("--allow-shrink", help="Publish even if the run deletes more than --max-shrink.")
    ] = False,
    max_shrink: Annotated[
        float,
        typer.Option("--max-shrink", min=0.0, max=1.0, help="Largest share of docs or chunks a run may delete."),
    ] = 0.10,
    keep: Annotated[int, typer.Option("--keep", min=1, help="Published versions to keep for rollback.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run report as JSON on the last line.")] = False,
) -> None:
    """Extract, build the registry, enrich chunks and index what changed; publish a new version.

    Example: `zan run --source ../shared/corpus/adilet --source ../shared/corpus/zan --home /tmp/x --json`
    """
    sources = list(source or [])
    options = RunOptions(
        only=tuple(only or ()),
        since=since.date() if since else None,
        dry_run=dry_run,
        force_reembed=force_reembed,
        allow_shrink=allow_shrink,
        max_shrink=max_shrink,
        keep_versions=keep,
    )
    try:
        with _progress() as bar:
            info = run(sources, home, chroma_url, make_embedder(embedder), _reporter(bar), options)
    except (RunError, VersionError, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]zan run failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    summary = info.as_dict()
    if as_json:
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
        return
    verb = "would change" if dry_run else f"published {info.version}:"
    err.print(
        f"[green]{verb}[/green] {info.added} added, {info.text_changed} text changed, "
        f"{info.metadata_changed} metadata changed, {info.unchanged} unchanged, {info.deleted} deleted; "
        f"{info.embedded} embedded, {info.rejected} rejected → {home}"
    )
    err.print(f'query it: zan sql "SELECT doc_id, doc_type, law_zrk FROM registry" --home {home}')


@app.command("versions")
def versions_command(
    home: HomeOption = Path("data"),
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """List the kept published versions, oldest first; the current one is marked.

    Example: `zan versions --home ./data`
    """
    current = current_version(home)
    rows = [{**m.as_dict(), "current": m.version == current} for m in list_versions(home)]
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return
    for row in rows:
        mark = "*" if row["current"] else " "
        sys.stdout.write(
            f"{mark} {row['version']}  {row['created']}  {row['documents']:>6} docs  {row['chunks']:>8} chunks  "
            f"run {row['run_id']}\n"
        )


@app.command("rollback")
def rollback_command(
    version: Annotated[str | None, typer.Argument(help="Version to republish (default: the one before).")] = None,
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = "hash",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON on the last line.")] = False,
) -> None:
    """Republish an earlier kept version: registry, chunks and index together, with no re-embedding.

    Example: `zan rollback v000003 --home ./data`
    """
    try:
        info = rollback(home, version, chroma_url, make_embedder(embedder))
    except (RunError, VersionError, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]zan rollback failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        sys.stdout.write(json.dumps(info.as_dict(), ensure_ascii=False) + "\n")
        return
    err.print(f"[green]published {info.version}[/green]: {info.vector_writes} vector writes, {info.deleted} deleted")


@app.command("enrich-collection")
def enrich_collection_command(
    collection: Annotated[str, typer.Option("--collection", help="Name of the Chroma collection to enrich.")],
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be updated; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Add the registry's identifier fields to a collection indexed by another tool (metadata-only updates).

    Example: `zan enrich-collection --collection lumi_docs --chroma-url http://127.0.0.1:8000 --home ./data`
    """
    try:
        info = enrich_collection(home, collection, chroma_url, dry_run)
    except AdoptError as exc:
        err.print(f"[red]zan enrich-collection failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        sys.stdout.write(json.dumps(info.as_dict(), ensure_ascii=False) + "\n")
        return
    err.print(
        f"{info.records} records: {info.matched} matched ({info.updated} updated, {info.unchanged} already "
        f"enriched), {info.unmatched} unmatched {info.unmatched_sources[:3]}"
    )


def _reporter(bar: Progress) -> Callable[[str, int, int], None]:
    tasks: dict[str, TaskID] = {}

    def report(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return report


@app.command("fetch")
def fetch_command(
    landing: Annotated[Path, typer.Option("--landing", help="Landing zone folder (re-extract reads LANDING/adilet).")],
    adilet_id: Annotated[
        list[str] | None, typer.Option("--id", help="Adilet id to fetch (repeatable), e.g. V2400035612.")
    ] = None,
    rss: Annotated[str | None, typer.Option("--rss", help="RSS index URL listing new and changed acts.")] = None,
    base_url: Annotated[str, typer.Option("--base-url", help="Site root.")] = "https://adilet.zan.kz",
    min_interval: Annotated[float, typer.Option("--min-interval", help="Seconds between requests.")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Fetch adilet.zan.kz pages (rus, kaz and /info) politely into a content-addressed landing zone.

    Example: `zan fetch --landing ./landing --id V2400035612 --id K1500000414 && zan run --source ./landing/adilet`
    """
    from extractors.fetch import fetch_into_landing

    summary = fetch_into_landing(landing, adilet_id or [], rss, base_url, min_interval=min_interval)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), ensure_ascii=False) + "\n")
    else:
        err.print(
            f"{summary.requested} acts: {summary.landed} pages ({summary.changed} new or changed, "
            f"{summary.not_modified} not modified), {len(summary.missing)} missing, {len(summary.failed)} failed"
        )
    if summary.requested and not summary.landed:
        raise typer.Exit(1)


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
    except (QueryError, HomeError) as exc:
        err.print(f"[red]zan sql failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    sys.stdout.write(output)


KPerDocOption = Annotated[int, typer.Option("--k-per-doc", min=1, help="Chunks per matched document.")]


@app.command("lookup")
def lookup_command(
    query: Annotated[str, typer.Argument(help="A question that may name documents: «ст. 182 ТК РК», «приказ 211».")],
    home: HomeOption = Path("data"),
    k_per_doc: KPerDocOption = 5,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = "hash",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    max_candidates: Annotated[
        int, typer.Option("--max-candidates", min=0, help="Documents listed for an article named with no document.")
    ] = 5,
) -> None:
    """Resolve the identifiers in QUERY through the registry, fetch only their chunks, and print the hint.

    Example: `zan lookup --json "ст. 182 ТК РК" --home ./data`
    """
    from lookup.route import Lookup

    try:
        result = Lookup.open(home, chroma_url, embedder, max_candidates).route(query, k_per_doc=k_per_doc)
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
    k_per_doc: KPerDocOption = 5,
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


@app.command("audit")
def audit_command(
    home: HomeOption = Path("data"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the audit as one JSON object.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when a file was rejected or a heading line is unexplained.")
    ] = False,
) -> None:
    """Show how each published document was read: the parser and why, article-like lines in the source
    against articles extracted, identifier fields missing; and every rejected file with its reason.

    Example: `zan audit --home ./data --strict`
    """
    from enrich.audit import audit_home, format_audit

    try:
        audit = audit_home(home)
    except (OSError, ValueError) as exc:
        err.print(f"[red]zan audit failed:[/red] {exc}")
        raise typer.Exit(1) from exc
    sys.stdout.write(json.dumps(audit.as_dict(), ensure_ascii=False) + "\n" if as_json else format_audit(audit))
    if strict and (audit.gaps or audit.as_dict()["files_rejected"]):
        raise typer.Exit(1)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=not err.is_terminal,
    )


def main() -> None:
    """The ``zan`` entry point: a command that fails prints one line naming the cause (``--debug`` or
    ``ZAN_DEBUG=1`` shows the traceback instead)."""
    debug = "--debug" in sys.argv or os.environ.get("ZAN_DEBUG") == "1"
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")
    try:
        app()
    except KeyboardInterrupt:
        err.print("zan: interrupted")
        raise SystemExit(130) from None
    except Exception as exc:
        if debug:
            raise
        err.print(f"[red]zan failed:[/red] {type(exc).__name__}: {exc} (--debug shows where)", highlight=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
