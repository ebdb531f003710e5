"""The history table's external sort: new rows as sorted runs of bounded size (:func:`sorted_runs`), merged
with the previous history act by act (:func:`merge_sorted`), so memory is one act's rows and a few row groups
whatever the history's size (:mod:`runs.act_history` writes the rows)."""

from __future__ import annotations

import bisect
import os
import shutil
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import HISTORY_SCHEMA
from schemas.files import atomic_writer

SORT_KEY = ("doc_id", "language", "unit", "version_date", "committed", "commit")
GROUP_ROWS = 128  # ~0.5 MB of text a row group (~1 MB decoded): what an as-of lookup decodes for a part


def count_rows(path: Path | None) -> int:
    return pq.ParquetFile(path).metadata.num_rows if path is not None and path.exists() else 0


def link_or_copy(source: Path, target: Path) -> None:
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


RUN_ROWS = 16_384  # new rows sorted in memory at a time (~30 MB of text): each becomes one sorted run
RUN_BYTES = 16 << 20  # … or this much of them, texts included, whichever comes first (see sorted_runs)
CACHED_GROUPS = 8  # decoded row groups the merge keeps, all inputs together
GroupCache = OrderedDict[tuple[int, int], pa.Table]  # (input, row group) → its rows


def sorted_runs(fresh: Path, out: Path) -> list[Path]:
    """The new rows as sorted runs beside ``out``: read in file order until :data:`RUN_ROWS` rows or
    :data:`RUN_BYTES` of text, sorted by :data:`SORT_KEY` and written in row groups of :data:`GROUP_ROWS`, so that
    :func:`merge_sorted` reads every input in order (read in act order, the new rows' row groups were decoded once
    for each act in them). Bounded by bytes too: an act kept whole as one part makes rows of 100 KB, and 16 384
    of them sorted at once were the full run's peak at 20 000 acts (526 MB of Arrow memory). A run is held twice
    while it is sorted, and more on the way to its file: at 64 MB a run, this step's own peak was 345 MB (the
    582 MB of a 20 000-act history, 10 runs), at 16 MB 168 MB (38 runs), sorted and merged in the same time."""
    runs: list[Path] = []
    held: list[pa.RecordBatch] = []
    rows = size = 0

    def write() -> None:
        run = out.with_name(f"{out.name}.run-{len(runs):05d}")
        table = pa.Table.from_batches(held).sort_by([(k, "ascending") for k in SORT_KEY])
        pq.write_table(table, run, row_group_size=GROUP_ROWS, compression="zstd")
        runs.append(run)

    for batch in pq.ParquetFile(fresh, pre_buffer=False).iter_batches(batch_size=min(GROUP_ROWS, RUN_ROWS)):
        held.append(batch)
        rows += batch.num_rows
        size += batch.nbytes
        if rows >= RUN_ROWS or size >= RUN_BYTES:
            write()
            held, rows, size = [], 0, 0
    if held:
        write()
    return runs


def merge_sorted(inputs: list[Path], out: Path) -> None:
    """``inputs``, each sorted by :data:`SORT_KEY` (the previous history; the new rows' runs,
    :func:`sorted_runs`), merged into ``out`` act by act: each input's acts are found from its ``doc_id``
    column alone, then for each act in ``doc_id`` order its rows are read from every input that has it (the
    row groups that hold them) and sorted in memory; a stretch of acts that one input alone holds is copied
    as it is, row group by row group (after a commit that touched ten acts, nearly the whole previous history).
    Written in row groups of :data:`GROUP_ROWS`, with statistics on the key columns only (a text's min and max
    would swell the footer); renamed into place when complete. Memory is one act's rows and a few row groups
    an input, whatever the history's size (one DuckDB sort of every row with its text ran out of its memory
    limit at 20 000 acts)."""
    cache: GroupCache = OrderedDict()  # one for every input: see _Ranges._group
    sources = [_Ranges(path, n, cache) for n, path in enumerate(inputs)]
    acts = sorted({doc for source in sources for doc in source.spans})
    keys = ["doc_id", "language", "unit", "version_date"]
    with (
        atomic_writer(out) as handle,
        pq.ParquetWriter(handle, HISTORY_SCHEMA, compression="zstd", write_statistics=keys) as writer,
    ):
        pending = _Pending(writer)
        bulk: tuple[int, int, int] | None = None  # (input, start, stop): acts one sorted input alone holds, in a row
        for doc in acts:
            held = [(n, source.spans[doc]) for n, source in enumerate(sources) if doc in source.spans]
            if len(held) == 1 and len(held[0][1]) == 1:  # already in order: copied with its neighbours, unsorted
                [(n, [(start, stop)])] = held
                if bulk is not None and bulk[0] == n and bulk[2] == start:
                    bulk = (n, bulk[1], stop)
                    continue
                if bulk is not None:
                    pending.add_all(sources[bulk[0]].slices(bulk[1], bulk[2]))
                bulk = (n, start, stop)
                continue
            if bulk is not None:
                pending.add_all(sources[bulk[0]].slices(bulk[1], bulk[2]))
                bulk = None
            parts = [table for source in sources for table in source.rows(doc)]
            pending.add(pa.concat_tables(parts).sort_by([(k, "ascending") for k in SORT_KEY]))
        if bulk is not None:
            pending.add_all(sources[bulk[0]].slices(bulk[1], bulk[2]))
        pending.flush()


class _Pending:
    """Tables on their way to the writer, written in row groups of :data:`GROUP_ROWS` once there are enough."""

    def __init__(self, writer: pq.ParquetWriter) -> None:
        self.writer = writer
        self.tables: list[pa.Table] = []
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        self.tables.append(table)
        self.rows += table.num_rows
        if self.rows >= GROUP_ROWS * 8:
            self.flush()

    def add_all(self, tables: Iterator[pa.Table]) -> None:
        for table in tables:
            self.add(table)

    def flush(self) -> None:
        if self.tables:
            self.writer.write_table(pa.concat_tables(self.tables), row_group_size=GROUP_ROWS)
        self.tables, self.rows = [], 0


class _Ranges:
    """One input of :func:`merge_sorted`: where each act's rows are (``doc_id`` column only), read by row group."""

    def __init__(
        self, path: Path, number: int = 0, cache: OrderedDict[tuple[int, int], pa.Table] | None = None
    ) -> None:
        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.number = number
        metadata = self.file.metadata
        self.starts = [0]
        for n in range(metadata.num_row_groups):
            self.starts.append(self.starts[-1] + metadata.row_group(n).num_rows)
        self.spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        at = 0
        for batch in self.file.iter_batches(batch_size=65_536, columns=["doc_id"]):
            docs = batch.column("doc_id").to_pylist()
            for n, doc in enumerate(docs):
                spans = self.spans[doc]
                if spans and spans[-1][1] == at + n:
                    spans[-1] = (spans[-1][0], at + n + 1)
                else:
                    spans.append((at + n, at + n + 1))
            at += len(docs)
        self._cache: GroupCache = OrderedDict() if cache is None else cache

    def rows(self, doc: str) -> list[pa.Table]:
        """The act's rows in this input (its contiguous ranges, usually one)."""
        return [pa.concat_tables(list(self.slices(start, stop))) for start, stop in self.spans.get(doc, ())]

    def slices(self, start: int, stop: int) -> Iterator[pa.Table]:
        """Rows ``start``..``stop``-1, a row group's part at a time."""
        group = bisect.bisect_right(self.starts, start) - 1
        while start < stop:
            table = self._group(group)
            first = start - self.starts[group]
            take = min(stop, self.starts[group + 1]) - start
            yield table.slice(first, take).cast(HISTORY_SCHEMA)
            start += take
            group += 1

    def _group(self, group: int) -> pa.Table:
        """A decoded row group, from a cache of :data:`CACHED_GROUPS` shared by every input of the merge: acts
        are read in order, so only the inputs holding the current act need theirs (a cache an input kept
        :data:`CACHED_GROUPS` groups in every one of ~120 sorted runs at 20 000 acts: 526 MB of Arrow)."""
        key = (self.number, group)
        if key in self._cache:
            self._cache.move_to_end(key)
        else:
            self._cache[key] = self.file.read_row_group(group)
            if len(self._cache) > CACHED_GROUPS:
                self._cache.popitem(last=False)
        return self._cache[key]
