"""Note lines parsed by an earlier version, kept so a file read again does not parse them again.

An edited act is read again whole, yet most of its editorial notes («Сноска. Статья 15 с изменением,
внесенным Законом РК от …») did not change; parsing them is half of what an extracting process spends cutting
a document (:func:`runs.build.cut_document`). A note line's relations are a function of the line and the
code that parses it, so each version keeps, per source file, the lines its documents' notes held and what
they parsed to (``cache/notes.parquet`` in the version's folder, stamped with the code fingerprint): the next
run's extracting processes read the entries of their own files only (memory follows the shard, not the
corpus), look each line up before parsing it, and write what their documents held; the enrich stage keeps the
last version's entries of the files it did not read again and are still in the version. A cache from other
code is not read; a missing or unreadable one only means every line is parsed, as before.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from enrich.lineage import NoteParser, ParsedNote
from extractors.model import Document
from runs.scope import code_fingerprint
from schemas.files import atomic_writer

NOTE_CACHE = "cache/notes.parquet"  # in a version's folder (a folder of its own: not one of its tables)
SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line", pa.string(), nullable=False),
        pa.field("parsed", pa.binary(), nullable=False),  # pickle of (relations, how many the line states)
    ],
    metadata={"fingerprint": ""},
)
ROWS = 8_192


def _schema() -> pa.Schema:
    return SCHEMA.with_metadata({"fingerprint": code_fingerprint()})


def _readable(path: Path | None) -> pq.ParquetFile | None:
    """The cache at ``path`` when it exists and was written by this code, else None."""
    if path is None or not path.exists():
        return None
    try:
        reader = pq.ParquetFile(path)
    except (OSError, pa.ArrowException):
        return None
    stamp = (reader.schema_arrow.metadata or {}).get(b"fingerprint", b"").decode()
    return reader if stamp == code_fingerprint() else None


def _rows(reader: pq.ParquetFile, files: pa.Array | None) -> Iterator[pa.Table]:
    """The cache's rows (of ``files`` only, when given), a row group at a time."""
    for batch in reader.iter_batches(batch_size=ROWS):
        table = pa.Table.from_batches([batch])
        if files is not None:
            table = table.filter(pc.is_in(table.column("source_file"), value_set=files))
        if table.num_rows:
            yield table


class NoteMemory:
    """The note lines of the files one extracting process reads: what the last version parsed of them, looked
    up first, and what their documents hold now, written for the next version (:meth:`write`)."""

    def __init__(self, cache: Path | None, files: Iterable[str]) -> None:
        self.known: dict[str, dict[str, ParsedNote]] = {}
        self.held: dict[str, dict[str, ParsedNote]] = {}
        reader = _readable(cache)
        if reader is None:
            return
        try:
            for table in _rows(reader, pa.array(sorted(set(files)), pa.string())):
                for file, line, parsed in zip(*(table.column(c).to_pylist() for c in SCHEMA.names), strict=True):
                    self.known.setdefault(file, {})[line] = pickle.loads(parsed)
        except (OSError, pa.ArrowException, pickle.UnpicklingError, EOFError):
            self.known = {}  # a damaged cache is no cache: every line is parsed

    def parser(self, document: Document) -> NoteParser:
        """A parser for ``document``'s notes that knows what its file's lines parsed to last time."""
        return NoteParser(self.known.get(document.source_file or ""))

    def remember(self, document: Document, parser: NoteParser) -> None:
        """What ``document``'s notes parsed to (its parser's lines), for the next version."""
        if document.source_file:
            self.held.setdefault(document.source_file, {}).update(parser.lines())

    def write(self, path: Path) -> None:
        """This process's files' lines to ``path`` (a cache file of its own, merged by :func:`merge`)."""
        rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
        for file, lines in self.held.items():
            for line, parsed in lines.items():
                rows["source_file"].append(file)
                rows["line"].append(line)
                rows["parsed"].append(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
        with atomic_writer(path) as handle:
            pq.write_table(pa.table(rows, schema=_schema()), handle, compression="zstd")


def merge(previous: Path | None, fresh: list[Path], read: set[str], live: set[str], out: Path) -> None:
    """The version's cache at ``out``: the rows of ``fresh`` (each extracting process's :meth:`NoteMemory.write`)
    and those of ``previous`` (the last version's cache) for the files ``live`` in the version that this run
    did not ``read``. Streamed a row group at a time."""
    schema = _schema()
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(out) as handle, pq.ParquetWriter(handle, schema, compression="zstd") as writer:
        for path in fresh:
            reader = _readable(path)
            for table in _rows(reader, None) if reader is not None else ():
                writer.write_table(table.replace_schema_metadata(schema.metadata))
        reader = _readable(previous)
        if reader is not None:
            carried = pa.array(sorted(live - read), pa.string())
            for table in _rows(reader, carried):
                writer.write_table(table.replace_schema_metadata(schema.metadata))
