"""``zan sql``: DuckDB over the published version's tables (and the run reports), as views.

Read-only by construction, not by inspection alone:

- DuckDB never opens a file. Each view is an Arrow dataset over one published parquet file (read-only by
  nature), and the run reports are loaded into an Arrow table first; then external access is disabled and
  the configuration locked, with no allowed directory at all. So no statement can read another file
  (``read_blob('/etc/shadow')``) or write one (``COPY … TO``), attach, install or load extensions, or
  change settings, even one that slipped past the statement check.
- Exactly one plain ``SELECT`` per call (``WITH``, ``FROM``-first, ``SUMMARIZE``, ``DESCRIBE`` are
  SELECTs); ``EXPLAIN`` and anything else that wraps another statement is refused.
- Output is bounded twice: rows (``ZAN_SQL_MAX_ROWS``, 100 000) and bytes (``ZAN_SQL_MAX_BYTES``, 32 MB),
  counted on the Arrow batches as they stream out of DuckDB, so a query of huge values stops early instead
  of being held whole; one deadline (``ZAN_SQL_TIMEOUT_S``, 60 s) covers running, fetching and rendering.
- Control characters in values (terminal escapes, bidi overrides) are escaped in every format.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

from schemas.errors import ZanError
from schemas.published import check_home, published_dir
from schemas.run_report import read_report, report_paths, runs_table

VIEWS = {
    "registry": "registry.parquet",
    "chunks": "enriched_chunks.parquet",
    "raw_chunks": "chunks.parquet",
    "rejects": "rejects.parquet",
    "lineage": "lineage.parquet",
}
MAX_SQL_CHARS = 100_000
QUERY_TYPES = ("SELECT",)
BATCH_ROWS = 256  # rows fetched at a time: a batch's bytes are known before it becomes Python values


class QueryError(ZanError):
    """Nothing published yet, or the SQL failed or was refused; the message says which."""


def connect(home: Path, sandbox: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table of the *current* version, plus ``runs`` (one
    row per run report: counts per change class, version, status, seconds…). The views read Arrow datasets,
    never paths; with ``sandbox`` DuckDB's own file access is then switched off and its settings locked."""
    home = check_home(home, writable=False)
    folder = published_dir(home)
    if folder is None:
        raise QueryError(f"nothing published under {home}: run `zan run --home {home}` first")
    con = duckdb.connect()
    for view, name in VIEWS.items():
        if (folder / name).exists():
            con.register(view, ds.dataset(folder / name, format="parquet"))
    runs = run_reports(home)
    if runs is not None:
        con.register("runs", runs)
    if sandbox:
        _lock_down(con)
    return con


def run_reports(home: Path) -> pa.Table | None:
    """Every run report under ``HOME/runs``, read by their one reader, as one typed Arrow table
    (:func:`schemas.run_report.runs_table`), oldest first; None when there is none."""
    paths = report_paths(home)
    return runs_table([read_report(p) for p in reversed(paths)]) if paths else None


def _lock_down(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"SET memory_limit = '{os.environ.get('ZAN_SQL_MEMORY', '2GB')}'")
    con.execute(f"SET threads = {min(4, os.cpu_count() or 1)}")
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")


def check_query(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """One plain SELECT, or :class:`QueryError` saying what is refused."""
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
        raise QueryError(f"zan sql is read-only: {kind} statements are refused (only one plain SELECT runs)")


class _Deadline:
    """Interrupts the connection when the time is up, and tells the renderer to stop."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seconds: float) -> None:
        self.seconds, self.end = seconds, time.monotonic() + seconds
        self.timer = threading.Timer(seconds, con.interrupt)

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise QueryError(f"the query ran over {self.seconds:g} s and was stopped (ZAN_SQL_TIMEOUT_S)")


def run_sql(home: Path, query: str, fmt: str = "table", timeout_s: float | None = None) -> str:
    """Run one read-only ``query`` and render the result as a rich table, JSON array or CSV."""
    if fmt not in ("table", "json", "csv"):
        raise QueryError(f"unknown format {fmt!r}: use table, json or csv")
    timeout = timeout_s if timeout_s is not None else float(os.environ.get("ZAN_SQL_TIMEOUT_S", "60"))
    with connect(home, sandbox=True) as con:
        check_query(con, query)
        deadline = _Deadline(con, timeout)
        deadline.timer.start()
        try:
            columns, rows = _fetch(con, query, deadline)
            return {"table": _table, "json": _json, "csv": _csv}[fmt](columns, rows, deadline)
        except duckdb.InterruptException as exc:
            deadline.check()
            raise QueryError(f"the query was interrupted: {exc}") from exc
        except duckdb.Error as exc:
            raise QueryError(str(exc)) from exc
        finally:
            deadline.timer.cancel()


def _fetch(con: duckdb.DuckDBPyConnection, query: str, deadline: _Deadline) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The result's columns and rows, streamed in Arrow batches and bounded in rows and bytes."""
    max_rows = int(os.environ.get("ZAN_SQL_MAX_ROWS", "100000"))
    max_bytes = int(os.environ.get("ZAN_SQL_MAX_BYTES", str(32 * 1024 * 1024)))
    reader = con.sql(query).to_arrow_reader(BATCH_ROWS)
    columns = list(reader.schema.names)
    rows: list[tuple[Any, ...]] = []
    size = 0
    for batch in reader:
        deadline.check()
        size += batch.nbytes
        if size > max_bytes:
            raise QueryError(
                f"the result is over {max_bytes:,} bytes: select fewer or shorter columns, or add a "
                f"LIMIT (ZAN_SQL_MAX_BYTES)"
            )
        rows += zip(*(column.to_pylist() for column in batch.columns), strict=True)
        if len(rows) > max_rows:
            raise QueryError(f"more than {max_rows} rows: add a LIMIT or an aggregate (ZAN_SQL_MAX_ROWS)")
    return columns, rows


# C0 and C1 controls (a terminal's escape sequences start with ESC or CSI), DEL, and the invisible marks that
# reorder or hide text (bidi embeddings, overrides and isolates): shown as escapes, never sent raw.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(text: str) -> str:
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _plain(value: Any) -> Any:
    """A JSON-ready value: dates as ISO text, nested lists and structs kept, other scalars as text."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, decimal.Decimal | uuid.UUID | dt.timedelta):
        return str(value)
    return str(value)


def _checked(rows: list[tuple[Any, ...]], deadline: _Deadline) -> Iterator[tuple[Any, ...]]:
    for n, row in enumerate(rows):
        if n % 512 == 0:
            deadline.check()
        yield row


def _json(columns: list[str], rows: list[tuple[Any, ...]], deadline: _Deadline) -> str:
    records = [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in _checked(rows, deadline)]
    # json.dumps escapes C0 controls itself; the rest of the unsafe marks can only be inside strings: written
    # as JSON's own \\u escapes, a JSON reader gets the original characters back and a terminal sees none
    text = json.dumps(records, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _cell(value: Any) -> str:
    """One value as escaped text for a table or CSV cell (lists and structs as JSON)."""
    plain = _plain(value)
    if isinstance(plain, list | dict):
        return _escape(json.dumps(plain, ensure_ascii=False))
    return "" if plain is None else _escape(str(plain))


def _csv(columns: list[str], rows: list[tuple[Any, ...]], deadline: _Deadline) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_escape(c) for c in columns])
    for row in _checked(rows, deadline):
        writer.writerow([_cell(v) if v is not None else "" for v in row])
    return out.getvalue()


def _table(columns: list[str], rows: list[tuple[Any, ...]], deadline: _Deadline) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(*(escape(_escape(c)) for c in columns), show_lines=False)
    for row in _checked(rows, deadline):
        table.add_row(*(escape(_cell(v)) for v in row))
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    console.print(table)
    console.print(f"{len(rows)} row(s)")
    deadline.check()
    return str(console.file.getvalue())  # type: ignore[attr-defined]
