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

import contextlib
import pickle
from collections.abc import Iterator, Mapping
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
    up first, and what their documents hold now, streamed to ``out`` for the next version (:func:`merge`).
    A context: ``out`` is whole when the block ends without error, absent otherwise.

    Memory: what is looked up is the cache's entries of this shard's files, kept as pickled bytes (unpickled
    at a hit); a shard of more than :data:`MAX_FILES` files (a full read, where the cache could help only a
    run of the same code) does not read it. What is written goes out :data:`ROWS` lines at a time."""

    def __init__(self, cache: Path | None, files: list[str], out: Path) -> None:
        self.known: dict[str, dict[str, bytes]] = {}
        self.out = out
        self._rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
        self._stack = contextlib.ExitStack()
        reader = _readable(cache) if len(files) <= MAX_FILES else None
        if reader is None:
            return
        try:
            for table in _rows(reader, pa.array(sorted(set(files)), pa.string())):
                for file, line, parsed in zip(*(table.column(c).to_pylist() for c in SCHEMA.names), strict=True):
                    self.known.setdefault(file, {})[line] = parsed
        except (OSError, pa.ArrowException):
            self.known = {}  # a damaged cache is no cache: every line is parsed

    def __enter__(self) -> NoteMemory:
        handle = self._stack.enter_context(atomic_writer(self.out))
        self._writer = self._stack.enter_context(pq.ParquetWriter(handle, _schema(), compression="zstd"))
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self._stack.__exit__(*exc)  # type: ignore[arg-type]
            return
        with self._stack:  # a last write that fails leaves no file behind, as a failing block does
            self._flush()

    def parser(self, document: Document) -> NoteParser:
        """A parser for ``document``'s notes that knows what its file's lines parsed to last time."""
        return NoteParser(_Unpickled(self.known.pop(document.source_file or "", {})))

    def remember(self, document: Document, parser: NoteParser) -> None:
        """What ``document``'s notes parsed to (its parser's lines), for the next version."""
        if not document.source_file:
            return
        for line, parsed in parser.lines().items():
            self._rows["source_file"].append(document.source_file)
            self._rows["line"].append(line)
            self._rows["parsed"].append(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
        if len(self._rows["line"]) >= ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._rows["line"]:
            self._writer.write_table(pa.table(self._rows, schema=_schema()))
            self._rows = {name: [] for name in SCHEMA.names}


MAX_FILES = 2_000  # a shard reading more files than this does not look its lines up


class _Unpickled(Mapping[str, ParsedNote]):
    """A file's cached lines, unpickled as they are looked up (a miss costs nothing)."""

    def __init__(self, held: dict[str, bytes]) -> None:
        self.held = held

    def __getitem__(self, line: str) -> ParsedNote:
        try:
            found: ParsedNote = pickle.loads(self.held[line])
        except (pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
            raise KeyError(line) from exc  # a damaged entry is a miss: the line is parsed
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.held)

    def __len__(self) -> int:
        return len(self.held)


def merge(previous: Path | None, fresh: list[Path], read: set[str], live: set[str], out: Path) -> None:
    """The version's cache at ``out``: the rows of ``fresh`` (what each extracting process's :class:`NoteMemory`
    wrote) and those of ``previous`` (the last version's cache) for the files ``live`` in the version that
    this run did not ``read``. Streamed a row group at a time. A last version's cache that fails to read part
    way gives what was read of it: every row is right on its own, a missing one only means a line is parsed."""
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
            with contextlib.suppress(OSError, pa.ArrowException):
                for table in _rows(reader, carried):
                    writer.write_table(table.replace_schema_metadata(schema.metadata))
