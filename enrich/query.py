"""``zan sql``: DuckDB over the published version's parquet files (and the run reports), as views.

Read-only by construction: the connection is in memory, its views read only the published version's folder
and the run reports (``allowed_directories``), external access is then disabled and the configuration
locked, so the SQL cannot read other files (``read_blob('/etc/shadow')``), write any (``COPY … TO``), attach,
install or load extensions, or change settings (``SET threads = …``). One statement per call, and only a
query (``SELECT``, ``WITH``, ``EXPLAIN``); a time limit (``ZAN_SQL_TIMEOUT_S``, default 60 s) interrupts it,
and at most ``ZAN_SQL_MAX_ROWS`` (default 100 000) rows come back."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import duckdb

from schemas.errors import ZanError
from schemas.published import check_home, published_file

VIEWS = {
    "registry": "registry.parquet",
    "chunks": "enriched_chunks.parquet",
    "raw_chunks": "chunks.parquet",
    "rejects": "rejects.parquet",
    "lineage": "lineage.parquet",
}


class QueryError(ZanError):
    """Nothing published yet, or the SQL failed; the message says which."""


def create_parquet_view(con: duckdb.DuckDBPyConnection, view: str, path: Path) -> None:
    """``CREATE VIEW view AS SELECT * FROM read_parquet(path)``, with the path safely quoted."""
    quoted = str(path).replace("'", "''")
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{quoted}')")


MAX_SQL_CHARS = 100_000
QUERY_TYPES = ("SELECT", "EXPLAIN")


def connect(home: Path, sandbox: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per file of the *current* version, plus ``runs``
    (one row per run report: counts per change class, version, status, seconds…). With ``sandbox`` the
    connection can then read nothing but those files, and its settings are locked (``zan sql``)."""
    home = check_home(home, writable=False)
    con = duckdb.connect()
    found, folders = 0, set()
    for view, name in VIEWS.items():
        path = published_file(home, name)
        if path.exists():
            create_parquet_view(con, view, path)
            folders.add(path.resolve().parent)
            found += 1
    reports = home / "runs"
    if reports.is_dir() and any(reports.glob("*.json")):
        pattern = str(reports / "*.json").replace("'", "''")
        con.execute(f"CREATE VIEW runs AS SELECT * FROM read_json_auto('{pattern}', union_by_name = true)")
        folders.add(reports.resolve())
    if not found:
        con.close()
        raise QueryError(f"nothing published under {home}: run `zan run --home {home}` first")
    if sandbox:
        _lock_down(con, sorted(folders))
    return con


def _lock_down(con: duckdb.DuckDBPyConnection, folders: list[Path]) -> None:
    allowed = ", ".join("'" + (str(f) + "/").replace("'", "''") + "'" for f in folders)
    con.execute(f"SET allowed_directories = [{allowed}]")
    con.execute(f"SET memory_limit = '{os.environ.get('ZAN_SQL_MEMORY', '2GB')}'")
    con.execute(f"SET threads = {min(4, os.cpu_count() or 1)}")
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")


def check_query(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """One read-only statement, or :class:`QueryError` saying what is refused."""
    if len(query) > MAX_SQL_CHARS:
        raise QueryError(f"the SQL is {len(query)} characters long; the limit is {MAX_SQL_CHARS}")
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from exc
    if len(statements) != 1:
        raise QueryError(f"one statement per call, got {len(statements)}")
    kind = statements[0].type.name
    if kind not in QUERY_TYPES:
        raise QueryError(f"zan sql is read-only: {kind} statements are refused (only SELECT queries run)")


def run_sql(home: Path, query: str, fmt: str = "table", timeout_s: float | None = None) -> str:
    """Run one read-only ``query`` and render the result as a rich table, JSON array or CSV."""
    if fmt not in ("table", "json", "csv"):
        raise QueryError(f"unknown format {fmt!r}: use table, json or csv")
    timeout = timeout_s if timeout_s is not None else float(os.environ.get("ZAN_SQL_TIMEOUT_S", "60"))
    limit = int(os.environ.get("ZAN_SQL_MAX_ROWS", "100000"))
    with connect(home, sandbox=True) as con:
        check_query(con, query)
        timer = threading.Timer(timeout, con.interrupt)
        timer.start()
        try:
            result = con.execute(query)
            columns = [d[0] for d in result.description or []]
            rows = result.fetchmany(limit + 1)
        except duckdb.InterruptException as exc:
            raise QueryError(f"the query ran over {timeout:g} s and was stopped (ZAN_SQL_TIMEOUT_S)") from exc
        except duckdb.Error as exc:
            raise QueryError(str(exc)) from exc
        finally:
            timer.cancel()
    if len(rows) > limit:
        raise QueryError(f"more than {limit} rows: add a LIMIT or an aggregate (ZAN_SQL_MAX_ROWS)")
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
