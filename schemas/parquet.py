"""Parquet files written atomically and validated against their contract."""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import check_not_null, conform
from schemas.files import atomic_writer

ROW_GROUP_SIZE = 122_880  # DESIGN.md: ~2x faster DuckDB joins than one big row group
STREAM_ROWS = 8_192  # rows per batch (and row group) of a table written as a stream: memory holds one batch


def table_from_rows(rows: list[dict[str, Any]], schema: pa.Schema, name: str) -> pa.Table:
    """Rows → a table that satisfies ``schema`` (raises SchemaError naming ``name`` otherwise). Built with the
    schema, the table already has its columns, in its order and of its types (a key a row lacks is null, one
    the schema lacks is not read, a value of another type raises), so only the nulls are checked: the whole
    :func:`~schemas.arrow.conform` cast ~2 ms a call, 0.25 s of the 120 documents a 1 % text edit cuts one
    by one (``runs.build.cut_document``)."""
    table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    return check_not_null(table, schema, name)


def write_parquet_atomic(table: pa.Table, path: Path, schema: pa.Schema, name: str) -> Path:
    """Validate ``table`` against ``schema``, write it beside ``path`` and rename into place.

    A reader sees either the previous file or the new one, never a half-written file.
    """
    table = conform(table, schema, name)
    with atomic_writer(path) as handle:
        pq.write_table(table, handle, compression="zstd", row_group_size=ROW_GROUP_SIZE)
    return path


def read_parquet(path: Path, schema: pa.Schema, name: str) -> pa.Table:
    """Read a published file and check it still satisfies its contract."""
    return conform(pq.read_table(path), schema, name)


def iter_parquet(path: Path, batch_size: int = STREAM_ROWS, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """A parquet file as tables of up to ``batch_size`` rows, in file order, one row group read at a time.

    ``pre_buffer`` is off: with pyarrow's default it prefetches and keeps every row group's column chunks,
    so a streamed read held memory in proportion to the file (48 MB at 112 000 enriched chunks against
    20 MB without it, the same at any size; ``benchmarks/README.md``)."""
    for batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=batch_size, columns=columns):
        yield pa.Table.from_batches([batch])


def write_parquet_stream(batches: Iterable[pa.Table | pa.RecordBatch], path: Path, schema: pa.Schema, name: str) -> int:
    """Write ``batches`` (each validated against ``schema``) as one parquet file, batch by batch, renamed into
    place when complete; returns the rows written. Memory holds a few batches (:class:`ParquetStream` gathers
    small ones into a row group), whatever the table's size."""
    with parquet_stream(path, schema, name) as stream:
        for batch in batches:
            stream.write(batch)
    return stream.rows


class ParquetStream:
    """One parquet file being written batch by batch (:func:`parquet_stream`). Batches are gathered up to
    :data:`STREAM_ROWS` rows and written as one row group: a merge of the rebuilt documents' chunks with the
    carried ones (:func:`merge_sorted`) yields a slice per run of documents, and one row group per slice
    (348 in a run that rebuilt 120 files of 576) cost most of the enrich stage's writing."""

    def __init__(self, writer: pq.ParquetWriter, schema: pa.Schema, name: str) -> None:
        self.writer, self.schema, self.name = writer, schema, name
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, batch: pa.Table | pa.RecordBatch) -> None:
        """Append ``batch`` (an empty one writes nothing); it is validated against the file's schema when its
        row group is written, at :data:`STREAM_ROWS` rows gathered or at the end of the file."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows:
            self._pending.append(table)
            self._pending_rows += table.num_rows
            self.rows += table.num_rows
            if self._pending_rows >= STREAM_ROWS:
                self._write(whole_groups=True)

    def flush(self) -> None:
        """Write all that is gathered (the file's last row group)."""
        self._write(whole_groups=False)

    def _write(self, whole_groups: bool) -> None:
        if not self._pending:
            return
        parts, first = self._pending, self._pending[0].schema
        if any(not part.schema.equals(first) for part in parts[1:]):  # slices of two files: one schema first
            parts = [conform(part, self.schema, self.name) for part in parts]
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        size = table.num_rows // STREAM_ROWS * STREAM_ROWS if whole_groups else table.num_rows
        rest = table.slice(size)
        self._pending, self._pending_rows = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
        self.writer.write_table(conform(table.slice(0, size), self.schema, self.name), row_group_size=STREAM_ROWS)


@contextlib.contextmanager
def parquet_stream(path: Path, schema: pa.Schema, name: str) -> Iterator[ParquetStream]:
    """A parquet file written a batch at a time while other work goes on (so two files can be written from
    one pass), renamed into place when the block ends without error; otherwise nothing is left at ``path``."""
    with atomic_writer(path) as handle, pq.ParquetWriter(handle, schema, compression="zstd") as writer:
        stream = ParquetStream(writer, schema, name)
        yield stream
        stream.flush()


def merge_sorted(a: Iterator[pa.Table], b: Iterator[pa.Table], key: str = "chunk_id") -> Iterator[pa.Table]:
    """Two streams of tables, each sorted by ``key``, as one sorted stream (slices of the inputs, in order)."""
    x, y = _Head(a, key), _Head(b, key)
    while x.table is not None and y.table is not None:
        if x.keys[x.at] > y.keys[y.at]:
            x, y = y, x
        stop = bisect.bisect_left(x.keys, y.keys[y.at], lo=x.at)  # x's rows before y's next one
        yield x.take(max(stop, x.at + 1))  # an equal key (never, documents are disjoint) still moves on
    for rest in (x, y):
        while rest.table is not None:
            yield rest.take(len(rest.keys))


class _Head:
    """The current table of a sorted stream, its keys, and how far it has been consumed."""

    def __init__(self, stream: Iterator[pa.Table], key: str) -> None:
        self.stream, self.key = stream, key
        self.table: pa.Table | None = None
        self.keys: list[str] = []
        self.at = 0
        self._next()

    def _next(self) -> None:
        self.table = next((t for t in self.stream if t.num_rows), None)
        self.keys = [str(k) for k in self.table.column(self.key).to_pylist()] if self.table is not None else []
        self.at = 0

    def take(self, stop: int) -> pa.Table:
        assert self.table is not None
        part = self.table.slice(self.at, stop - self.at)
        self.at = stop
        if self.at >= len(self.keys):
            self._next()
        return part
