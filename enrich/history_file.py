"""A version's ``history.parquet`` read act by act: the file-level reader under both the run that writes the
next history from the last one (:mod:`runs.act_history`) and the lookups that answer from it
(:mod:`lookup.history`).

The file is sorted by act (``runs.act_history`` writes it so, in row groups of 128 rows), so its footer's
statistics say which row groups hold an act: opening reads only the footer, and reading an act reads the one
or two row groups it is in (its version rows, then the texts of the parts asked for). Memory is the footer and
the last :data:`MAX_ACTS_CACHED` acts' version rows, whatever the history's size; a file in any other order
is read the same way, more slowly (more row groups span the act).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HISTORY = "history.parquet"  # in a version's folder

_Key = tuple[str, str]  # (language, unit)
_META = ["doc_id", "language", "unit", "version_date", "commit", "committed", "event", "text_hash"]
MAX_ACTS_CACHED = 256  # acts whose version rows (no text) are kept after a lookup read them


@dataclass(frozen=True)
class HistoryRow:
    language: str
    unit: str
    version_date: dt.date
    commit: str
    committed: dt.date
    event: str
    text_hash: str | None
    group: int  # where its text is: the row group, and the row in it
    at: int


class HistoryFile:
    """One version's history of acts, read act by act.

    The file is sorted by act (``runs.act_history`` writes it so, in row groups of 2 048 rows), so its footer's
    statistics say which row groups hold an act: opening reads only the footer, and a lookup reads the one or
    two row groups of the act it names (its version rows, then the texts of the parts it answers with). Memory
    is the footer and the last :data:`MAX_ACTS_CACHED` acts' version rows, whatever the history's size; a file
    in any other order is read the same way, more slowly (more row groups span the act)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = pq.ParquetFile(path)
        self._lock = threading.Lock()
        metadata = self.file.metadata
        column = self.file.schema_arrow.get_field_index("doc_id")
        self._spans: list[tuple[str | None, str | None]] = []
        for n in range(metadata.num_row_groups):
            stats = metadata.row_group(n).column(column).statistics
            known = stats is not None and stats.has_min_max
            self._spans.append((stats.min, stats.max) if known else (None, None))  # type: ignore[union-attr]
        self._acts: OrderedDict[str, dict[_Key, list[HistoryRow]]] = OrderedDict()

    @classmethod
    def open(cls, version_folder: Path) -> Self | None:
        path = version_folder / HISTORY
        return cls(path) if path.exists() and pq.ParquetFile(path).metadata.num_rows else None

    def rows_of(self, doc_id: str) -> dict[_Key, list[HistoryRow]]:
        """The act's version rows (no text) by (language, unit), oldest first."""
        return self._parts(doc_id)

    def _parts(self, doc_id: str) -> dict[_Key, list[HistoryRow]]:
        """The act's rows by part, each part's versions oldest first (read from its row groups once)."""
        with self._lock:
            if doc_id in self._acts:
                self._acts.move_to_end(doc_id)
                return self._acts[doc_id]
            parts: dict[_Key, list[HistoryRow]] = defaultdict(list)
            for group, (low, high) in enumerate(self._spans):
                if low is not None and high is not None and not low <= doc_id <= high:
                    continue
                table = self.file.read_row_group(group, columns=_META)
                hits = np.flatnonzero(pc.equal(table.column("doc_id"), doc_id).to_numpy(zero_copy_only=False))
                if not len(hits):
                    continue
                found = table.take(pa.array(hits))
                columns = [found.column(c).to_pylist() for c in _META[1:]]
                for n, at in enumerate(hits.tolist()):
                    language, unit, version, commit, committed, event, digest = (column[n] for column in columns)
                    parts[(language, unit)].append(
                        HistoryRow(language, unit, version, commit, committed, event, digest, group, at)
                    )
            for versions in parts.values():
                versions.sort(key=lambda r: (r.version_date, r.committed, r.group, r.at))
            self._acts[doc_id] = parts
            if len(self._acts) > MAX_ACTS_CACHED:
                self._acts.popitem(last=False)
            return parts

    def _texts(self, rows: list[HistoryRow]) -> dict[tuple[int, int], tuple[str | None, str | None]]:
        """(heading, text) of ``rows``, reading each row group they are in once."""
        out: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        by_group: dict[int, list[int]] = defaultdict(list)
        for row in rows:
            by_group[row.group].append(row.at)
        for group, ats in by_group.items():
            with self._lock:
                table = self.file.read_row_group(group, columns=["heading", "text"]).take(pa.array(ats))
            for at, heading, text in zip(
                ats, table.column("heading").to_pylist(), table.column("text").to_pylist(), strict=True
            ):
                out[(group, at)] = (heading, text)
        return out
