"""Which index records a reader may see: chunk_id → text_hash of the published version, read on demand.

A run writes the index before it publishes, so the index can hold records of a version not yet published
(or not yet deleted); a reader keeps only the records whose text hash is the published one. The published
chunk ids used to be loaded whole when a lookup opened: at 1.1 M chunks a refusal, which fetches nothing,
took 3.7 s and 643 MB for it. The version's chunk file is written in chunk id order, in row groups of
8 192 rows, so the row group that can hold an id is found from the row groups' first ids (parquet's min
statistics) and only that group's two columns are read, the last :data:`GROUPS_KEPT` kept. A file not in
chunk id order (written before the streamed merge) is read whole on first use, as before.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow.parquet as pq

GROUPS_KEPT = 32  # row groups of (chunk_id, text_hash) kept in memory: ~1 MB each at 8 192 rows


class PublishedChunks(Mapping[str, str]):
    """The published version's chunk_id → text_hash, for the ids asked for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = pq.ParquetFile(path, pre_buffer=False)
        self._firsts = first_ids(self._file)  # None: not in chunk id order, read whole
        self._groups: OrderedDict[int, dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()  # one reader serves many threads (zan serve)

    def __getitem__(self, chunk_id: str) -> str:
        value = self._group(self._where(chunk_id)).get(chunk_id)
        if value is None:
            raise KeyError(chunk_id)
        return value

    def __iter__(self) -> Iterator[str]:
        for group in range(self._file.metadata.num_row_groups):
            yield from self._read(group)

    def __len__(self) -> int:
        return int(self._file.metadata.num_rows)

    def _where(self, chunk_id: str) -> int:
        """The row group that holds ``chunk_id`` if any does (-1: the whole file)."""
        if self._firsts is None:
            return -1
        return max(0, bisect.bisect_right(self._firsts, chunk_id) - 1)

    def _group(self, group: int) -> dict[str, str]:
        with self._lock:
            if group in self._groups:
                self._groups.move_to_end(group)
                return self._groups[group]
            rows = self._read(group)
            self._groups[group] = rows
            while len(self._groups) > GROUPS_KEPT:
                self._groups.popitem(last=False)
            return rows

    def _read(self, group: int) -> dict[str, str]:
        columns = ["chunk_id", "text_hash"]
        table = self._file.read(columns) if group < 0 else self._file.read_row_group(group, columns)
        return dict(zip(table.column("chunk_id").to_pylist(), table.column("text_hash").to_pylist(), strict=True))


def first_ids(file: pq.ParquetFile) -> list[str] | None:
    """Each row group's smallest chunk id, when the groups are in chunk id order (each group's ids all
    before the next group's), else None. Only the minima are trusted: a statistic may be a shortened value,
    and a shortened minimum is still a lower bound."""
    meta = file.metadata
    column = next((n for n in range(meta.num_columns) if meta.schema.column(n).path == "chunk_id"), None)
    if column is None or meta.num_row_groups == 0:
        return None
    bounds: list[tuple[str, str]] = []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        bounds.append((str(stats.min), str(stats.max)))
    in_order = all(low <= high for low, high in bounds)
    in_order = in_order and all(a[1] < b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    return [low for low, _ in bounds] if in_order else None
