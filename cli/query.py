"""``zan sql`` and ``zan audit``: read the published version (:mod:`enrich.query`, :mod:`enrich.audit`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.common import HomeOption, failing, print_json


def sql_command(
    query: Annotated[str, typer.Argument(help="SQL over the views registry, chunks, raw_chunks, rejects, runs.")],
    home: HomeOption = Path("data"),
    fmt: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
) -> None:
    """Query the published parquet files with DuckDB (read-only: one SELECT over the published files).

    Example: `zan sql "SELECT chunk_id FROM chunks WHERE list_contains(code_articles, 156)" --home ./data`
    """
    from enrich.query import run_sql

    with failing("sql"):
        output = run_sql(home, query, fmt)
    sys.stdout.write(output)


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

    with failing("audit"):
        audit = audit_home(home)
    if as_json:
        print_json(audit.as_dict())
    else:
        sys.stdout.write(format_audit(audit))
    if strict and (audit.gaps or audit.as_dict()["files_rejected"]):
        raise typer.Exit(1)
