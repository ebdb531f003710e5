"""One published version, opened for reading: every part of an answer comes from the same version.

A run writes the index before it publishes and deletes old records after, and Chroma keeps one record per
chunk id: between those moments the index holds another version's text for some chunks. So a lookup that
names documents does not take its chunks from the index. It takes them from the version it resolved the
question on: the chunk rows from that version's ``enriched_chunks.parquet`` (found by the row groups' first
chunk ids: a document's chunks are contiguous, in chunk id order), their vectors from the vector store by
text hash (:mod:`vectors.store`; a text the store lacks is embedded on the spot), ranked locally; the text
is read only for the chunks returned. The registry, the lineage and the chunks of an answer therefore always
agree, an ``exact`` answer always has chunks, and a reader kept open across publishes refreshes when
``CURRENT`` moves (:class:`lookup.route.Lookup`).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lookup.errors import LookupProblem
from lookup.lineage import LineageIndex
from lookup.published import PublishedChunks, first_ids
from lookup.registry_index import MAX_CANDIDATES, RegistryIndex
from schemas.published import current_version, read_manifest, versions_dir
from vectors.bridge import Bridge
from vectors.documents import DocumentIndex
from vectors.lexical import LEXICAL, LexicalIndex
from vectors.texts import TextFile

COLUMNS = (
    "chunk_id",
    "doc_id",
    "language",
    "text_hash",
    "code_articles",
    "article_labels",
    "point_labels",
    "annex",
    "path",
)
DOCS_KEPT = 256  # documents whose chunk rows (no text) a long-lived reader keeps


@dataclass(frozen=True)
class Narrowing:
    """Which of a document's chunks a question asks for (empty: all of them)."""

    articles: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    points: tuple[str, ...] = ()
    in_annex: bool = False


class VersionChunks:
    """A version's enriched chunks, read by document: the rows lookups filter and rank on (no text), and the
    texts of the rows an answer returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.firsts = first_ids(self.file)  # None: no usable row group statistics: read whole
        meta = self.file.metadata
        self.starts = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        self._docs: OrderedDict[str, pa.Table] = OrderedDict()
        self._lock = threading.RLock()  # one reader serves many threads (zan serve): the cache and the file
        texts = TextFile.open(path.parent / LEXICAL)  # None: a version written before (texts from parquet)
        self.text_file = texts if texts is not None and texts.size == meta.num_rows else None

    def rows(self, doc_ids: Sequence[str], narrowing: Narrowing = Narrowing()) -> pa.Table:
        """The rows (:data:`COLUMNS`, plus ``_group`` and ``_row``: where each is in the file) of these
        documents' chunks that the narrowing keeps, in chunk id order."""
        tables = [self._doc(d) for d in dict.fromkeys(doc_ids)]
        table = pa.concat_tables(tables) if tables else self._empty()
        return narrow(table, narrowing)

    def at(self, positions: Sequence[int]) -> pa.Table:
        """The rows (:data:`COLUMNS`, ``_group``, ``_row``) at these positions of the file, in that order
        (what the lexical index calls its documents)."""
        if not positions:
            return self._empty()
        where = np.asarray(positions, dtype=np.int64)
        groups = np.searchsorted(self.starts, where, side="right") - 1
        parts, order = [], []
        for group in sorted(set(groups.tolist())):
            picked = np.flatnonzero(groups == group)
            inside = pa.array(where[picked] - self.starts[group], pa.int64())
            part = self.read_group(group, list(COLUMNS)).take(inside)
            part = part.append_column("_group", pa.repeat(pa.scalar(group, pa.int32()), part.num_rows))
            parts.append(part.append_column("_row", inside.cast(pa.int32())))
            order += picked.tolist()
        table = pa.concat_tables(parts)
        return table.take(pa.array(np.argsort(order), pa.int64()))

    def positions(self, rows: pa.Table) -> np.ndarray:
        """Each row's position in the file (the lexical index's document number)."""
        groups = rows.column("_group").to_numpy()
        return np.asarray(self.starts[groups] + rows.column("_row").to_numpy(), dtype=np.int64)

    def texts(self, rows: pa.Table) -> list[str]:
        """The text of each row of ``rows`` (as :meth:`rows` returned them): from the version's text file
        (:mod:`vectors.texts`), or, for a version without one, reading only their row groups."""
        if self.text_file is not None:
            return self.text_file.get(self.positions(rows))
        out: list[str] = [""] * rows.num_rows
        groups, positions = rows.column("_group").to_pylist(), rows.column("_row").to_pylist()
        for group in sorted(set(groups)):
            wanted = [n for n, g in enumerate(groups) if g == group]
            column = self.read_group(group, ["text"]).column("text")
            texts = column.take(pa.array([positions[n] for n in wanted], pa.int64())).to_pylist()
            for n, text in zip(wanted, texts, strict=True):
                out[n] = text or ""
        return out

    def _doc(self, doc_id: str) -> pa.Table:
        with self._lock:
            return self._doc_locked(doc_id)

    def _doc_locked(self, doc_id: str) -> pa.Table:
        if doc_id in self._docs:
            self._docs.move_to_end(doc_id)
            return self._docs[doc_id]
        low, high = doc_id + ":", doc_id + ";"  # every chunk id of the document: «<doc_id>:<path>:<n>»
        groups = (
            range(self.file.metadata.num_row_groups)
            if self.firsts is None
            else range(max(0, bisect.bisect_right(self.firsts, low) - 1), bisect.bisect_left(self.firsts, high))
        )
        parts = []
        for group in groups:
            table = self.read_group(group, list(COLUMNS))
            at = pc.equal(table.column("doc_id"), doc_id)
            positions = pa.array(np.flatnonzero(at.to_numpy(zero_copy_only=False)), pa.int64())
            part = table.take(positions)
            part = part.append_column("_group", pa.repeat(pa.scalar(group, pa.int32()), part.num_rows))
            parts.append(part.append_column("_row", positions.cast(pa.int32())))
        found = pa.concat_tables(parts) if parts else self._empty()
        self._docs[doc_id] = found
        while len(self._docs) > DOCS_KEPT:
            self._docs.popitem(last=False)
        return found

    def read_group(self, group: int, columns: list[str]) -> pa.Table:
        """Columns of one row group (a ``_group`` of :meth:`rows`; what a page shows of a few chunks)."""
        with self._lock:
            return self.file.read_row_group(group, columns=columns)

    def _empty(self) -> pa.Table:
        schema = self.file.schema_arrow
        fields = [schema.field(c) for c in COLUMNS] + [pa.field("_group", pa.int32()), pa.field("_row", pa.int32())]
        return pa.schema(fields).empty_table()


def narrow(table: pa.Table, narrowing: Narrowing) -> pa.Table:
    """The rows a narrowing keeps: any of the articles, any of the sections (structural paths), any of the
    пункты, and only an annex's chunks when ``in_annex`` (the same rules the index's ``where`` filter had)."""
    if not table.num_rows:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    if narrowing.articles:
        keep &= _has_any(table.column("article_labels"), narrowing.articles)
    if narrowing.sections:
        keep &= pc.is_in(table.column("path"), pa.array(narrowing.sections)).to_numpy(zero_copy_only=False)
    if narrowing.points:
        keep &= _has_any(table.column("point_labels"), narrowing.points)
    if narrowing.in_annex:
        keep &= pc.fill_null(pc.greater_equal(table.column("annex"), 1), False).to_numpy(zero_copy_only=False)
    return table if keep.all() else table.filter(pa.array(keep))


def _has_any(column: pa.ChunkedArray, values: Sequence[str]) -> np.ndarray:
    """Per list of ``column``: does it hold any of ``values``?"""
    lists = column.combine_chunks()
    flat = pc.list_flatten(lists)
    hits = pc.is_in(flat, value_set=pa.array(list(values), flat.type)).to_numpy(zero_copy_only=False)
    owners = pc.list_parent_indices(lists).to_numpy()
    return np.bincount(owners[hits], minlength=len(lists)) > 0


@dataclass
class Snapshot:
    """What one published version answers from (read once, when a reader opens it)."""

    home: Path
    version: str
    folder: Path
    embedder: str
    registry: RegistryIndex
    lineage: LineageIndex
    chunks: VersionChunks
    published: PublishedChunks
    lexical: LexicalIndex | None = None  # None: the word indexes do not hold this version's chunks (damage)
    bridge: Bridge | None = None  # the version's Kazakh↔Russian term table (vectors.bridge)
    documents: DocumentIndex | None = None  # its documents' cards and centroids (vectors.documents)
    views: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # derived once per version

    @classmethod
    def open(cls, home: Path, max_candidates: int = MAX_CANDIDATES) -> Snapshot:
        """The version ``CURRENT`` names now (read once: every file below comes from that folder)."""
        version = current_version(home)
        if version is None:
            raise LookupProblem(f"nothing published under {home}: run `zan run --home {home}` first")
        try:
            return cls._open(home, version, versions_dir(home) / version, max_candidates)
        except FileNotFoundError as exc:  # pruned between reading CURRENT and opening it: read CURRENT again
            if current_version(home) == version:
                raise LookupProblem(f"the published version {version} cannot be read: {exc}") from exc
            return cls.open(home, max_candidates)

    @classmethod
    def _open(cls, home: Path, version: str, folder: Path, max_candidates: int) -> Snapshot:
        registry = RegistryIndex.load_file(folder / "registry.parquet", home)
        registry.max_candidates = max_candidates
        chunks_path = folder / "enriched_chunks.parquet"
        chunks, published = VersionChunks(chunks_path), PublishedChunks(chunks_path)
        embedder = read_manifest(folder).embedder
        lexical = LexicalIndex.open(folder)
        if lexical is not None and lexical.size != chunks.file.metadata.num_rows:
            lexical = None  # not this version's chunks: answer without it rather than from another's rows
        bridge = Bridge.open(folder / LEXICAL) if lexical is not None else None
        documents = DocumentIndex.open(folder) if lexical is not None else None
        return cls(
            home,
            version,
            folder,
            embedder,
            registry,
            LineageIndex.load_file(folder / "lineage.parquet"),
            chunks,
            published,
            lexical,
            bridge,
            documents,
        )

    def bilingual(self, language: str) -> set[str]:
        """Documents published in ``language`` and in at least one other."""
        return {d for d, info in self.registry.docs.items() if language in info.languages and len(info.languages) > 1}

    def is_current(self) -> bool:
        return current_version(self.home) == self.version
