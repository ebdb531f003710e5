"""``zan run``, ``zan versions``, ``zan rollback``, ``zan migrate``: build, publish and keep versions (:mod:`runs`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from cli.common import ChromaUrlOption, EmbedderOption, HomeOption, JsonOption, err, failing, print_json, progress
from cli.common import reporter as reporter_for


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
    embedder: EmbedderOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; write nothing.")] = False,
    force_reembed: Annotated[
        bool, typer.Option("--force-reembed", help="Embed the scope's texts again even if stored.")
    ] = False,
    allow_shrink: Annotated[
        bool,
        typer.Option(
            "--allow-shrink", help="Publish even if the run deletes over --max-shrink or repeals over --max-repeal."
        ),
    ] = False,
    max_shrink: Annotated[
        float,
        typer.Option("--max-shrink", min=0.0, max=1.0, help="Largest share of docs or chunks a run may delete."),
    ] = 0.10,
    max_repeal: Annotated[
        float,
        typer.Option(
            "--max-repeal",
            min=0.0,
            max=1.0,
            help="Largest share of a git source's acts a run may repeal by deleted folders (at most 50; one always).",
        ),
    ] = 0.05,
    keep: Annotated[int, typer.Option("--keep", min=1, help="Published versions to keep for rollback.")] = 5,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Processes that extract files and embed new texts (beside the index stage) at once.",
        ),
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run report as JSON on the last line.")] = False,
) -> None:
    """Extract, build the registry, enrich chunks and index what changed; publish a new version.

    Example: `zan run --source ../shared/corpus/adilet --source ../shared/corpus/zan --home /tmp/x --json`
    """
    from runs.pipeline import RunOptions, run
    from vectors.embedders import embedder_for

    options = RunOptions(
        only=tuple(only or ()),
        since=since.date() if since else None,
        dry_run=dry_run,
        force_reembed=force_reembed,
        allow_shrink=allow_shrink,
        max_shrink=max_shrink,
        max_repeal=max_repeal,
        keep_versions=keep,
    )
    with failing("run"), progress() as bar:
        info = run(
            list(source or []), home, chroma_url, embedder_for(home, embedder), reporter_for(bar), options, workers
        )
    if as_json:
        print_json(info.as_dict())
        return
    err().print(
        f"[green]{info.status.describe(info.version)}:[/green] {info.added} added, {info.text_changed} text "
        f"changed, {info.metadata_changed} metadata changed, {info.unchanged} unchanged, {info.deleted} deleted; "
        f"{info.embedded} embedded, {info.rejected} rejected → {home}"
    )
    err().print(f'query it: zan sql "SELECT doc_id, doc_type, law_zrk FROM registry" --home {home}')


def versions_command(home: HomeOption = Path("data"), as_json: JsonOption = False) -> None:
    """List the kept published versions, oldest first; the current one is marked.

    Example: `zan versions --home ./data`
    """
    import sys

    from schemas.published import current_version, list_versions

    with failing("versions"):
        current = current_version(home)
        rows = [{**m.as_dict(), "current": m.version == current} for m in list_versions(home)]
    if as_json:
        print_json(rows)
        return
    for row in rows:
        mark = "*" if row["current"] else " "
        sys.stdout.write(
            f"{mark} {row['version']}  {row['created']}  {row['documents']:>6} docs  {row['chunks']:>8} chunks  "
            f"run {row['run_id']}\n"
        )


def rollback_command(
    version: Annotated[str | None, typer.Argument(help="Version to republish (default: the one before).")] = None,
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON on the last line.")] = False,
) -> None:
    """Republish an earlier kept version: registry, chunks and index together, with no re-embedding.

    Example: `zan rollback v000003 --home ./data`
    """
    from runs.pipeline import rollback
    from vectors.embedders import embedder_for

    with failing("rollback"):
        info = rollback(home, version, chroma_url, embedder_for(home, embedder))
    if as_json:
        print_json(info.as_dict())
        return
    err().print(
        f"[green]{info.status.describe(info.version)}[/green]: {info.vector_writes} vector writes, "
        f"{info.deleted} deleted"
    )


def migrate_command(
    home: HomeOption = Path("data"),
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            help="The spec of the embedder an old version was embedded with, where its manifest does not say "
            "(not needed for the hash embedder).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Rewrite a data directory written by an older zan into the current on-disk format, once.

    Readers and runs refuse an older HOME with one line naming this command. Safe to run again: a HOME
    already in the current format is left as it is.

    Example: `zan migrate --home ./data`
    """
    from runs.migrate import migrate

    with failing("migrate"):
        done = migrate(home, embedder)
    if as_json:
        print_json(done.as_dict())
        return
    for step in done.steps:
        err().print(f"  {step}", highlight=False)
    if done.format_after is None:
        err().print(f"nothing published under {home}: nothing to migrate")
        return
    if not done.steps:
        err().print(f"[green]{home} is already format {done.format_after}[/green]: nothing to do")
        return
    err().print(f"[green]{home} migrated[/green]: format {done.format_before} → {done.format_after}")
