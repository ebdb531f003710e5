"""``zan sql``: DuckDB over the published version's parquet files (and the run reports), as views."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import duckdb

from enrich.versions import published_file

VIEWS = {
    "registry": "registry.parquet",
    "chunks": "enriched_chunks.parquet",
    "raw_chunks": "chunks.parquet",
    "rejects": "rejects.parquet",
}


class QueryError(RuntimeError):
    """Nothing published yet, or the SQL failed; the message says which."""


def create_parquet_view(con: duckdb.DuckDBPyConnection, view: str, path: Path) -> None:
    """``CREATE VIEW view AS SELECT * FROM read_parquet(path)``, with the path safely quoted."""
    quoted = str(path).replace("'", "''")
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{quoted}')")


def connect(home: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per file of the *current* version, plus ``runs``
    (one row per run report: counts per change class, version, status, seconds…)."""
    con = duckdb.connect()
    found = 0
    for view, name in VIEWS.items():
        path = published_file(home, name)
        if path.exists():
            create_parquet_view(con, view, path)
            found += 1
    reports = home / "runs"
    if reports.is_dir() and any(reports.glob("*.json")):
        pattern = str(reports / "*.json").replace("'", "''")
        con.execute(f"CREATE VIEW runs AS SELECT * FROM read_json_auto('{pattern}', union_by_name = true)")
    if not found:
        con.close()
        raise QueryError(f"nothing published under {home}: run `zan run --home {home}` first")
    return con


def run_sql(home: Path, query: str, fmt: str = "table") -> str:
    """Run ``query`` and render the result as a rich table, JSON lines array or CSV."""
    if fmt not in ("table", "json", "csv"):
        raise QueryError(f"unknown format {fmt!r}: use table, json or csv")
    with connect(home) as con:
        try:
            result = con.execute(query)
            columns = [d[0] for d in result.description or []]
            rows = result.fetchall()
        except duckdb.Error as exc:
            raise QueryError(str(exc)) from exc
    return {"table": _table, "json": _json, "csv": _csv}[fmt](columns, rows)


def _plain(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _json(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    records = [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    return json.dumps(records, ensure_ascii=False) + "\n"


def _csv(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows(
        [[json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, list) else _plain(v) for v in row] for row in rows]
    )
    return out.getvalue()


def _table(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*("" if v is None else str(_plain(v)) for v in row))
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    console.print(table)
    console.print(f"{len(rows)} row(s)")
    return str(console.file.getvalue())  # type: ignore[attr-defined]
