"""Extracted documents kept on disk between a run's stages, one at a time in memory.

``extract`` appends each document to its shard's file as it is read (an internal format, written and read by
the same code within one run): the document's header (:meth:`extractors.model.Document.header`, a few hundred
bytes) as a pickle, then two length-prefixed pickles: the whole document, and what the extracting process
already cut of it for the registry stage (``runs.build.cut_document``: its chunks, note rows, amendments,
repeal; empty when nothing). ``registry`` first reads the headers alone, skipping the rest, to group documents into
registry entries, then loads each entry's cuts, and its documents only where it must, by offset. Memory holds
one document's text, not the corpus's.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from extractors.model import Document

_SIZE = 8  # bytes of a frame's length


class DocumentWriter:
    """Appends documents to an open binary file, each with what ``cut`` makes of it (nothing without one, or
    when it returns None); remembers nothing but the count."""

    def __init__(self, handle: BinaryIO, cut: Callable[[Document], object] | None = None) -> None:
        self.handle, self.cut, self.count = handle, cut, 0

    def __call__(self, document: Document) -> None:
        pickle.dump(document.header(), self.handle, protocol=pickle.HIGHEST_PROTOCOL)
        made = self.cut(document) if self.cut else None
        for blob in (
            pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL),
            b"" if made is None else pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL),
        ):
            self.handle.write(len(blob).to_bytes(_SIZE, "little"))
            self.handle.write(blob)
        self.count += 1


@dataclass(frozen=True)
class Stored:
    """Where one document is: its file, the whole document's byte offset, its cut's (None when none)."""

    path: Path
    offset: int
    cut: int | None = None


def headers(path: Path) -> Iterator[tuple[Document, Stored]]:
    """Each document's header and where to load it (and its cut) from, reading the file once."""
    with open(path, "rb") as handle:
        while True:
            try:
                header: Document = pickle.load(handle)
            except EOFError:
                return
            offsets = []
            for _ in range(2):  # the document, its cut
                size = int.from_bytes(handle.read(_SIZE), "little")
                offsets.append(handle.tell() if size else None)
                handle.seek(size, 1)
            document, cut = offsets
            assert document is not None  # a pickled document is never empty
            yield header, Stored(path, document, cut)


class DocumentStore:
    """Documents by source file: headers in memory, texts loaded on demand."""

    def __init__(self) -> None:
        self.headers: dict[str, Document] = {}
        self.where: dict[str, Stored] = {}

    def add_file(self, path: Path) -> None:
        for header, stored in headers(path):
            self.headers[header.source_file] = header
            self.where[header.source_file] = stored

    def __len__(self) -> int:
        return len(self.headers)

    def __contains__(self, source_file: object) -> bool:
        return source_file in self.headers

    def load(self, source_file: str) -> Document:
        """The whole document read from ``source_file``."""
        stored = self.where[source_file]
        with open(stored.path, "rb") as handle:
            handle.seek(stored.offset)
            document: Document = pickle.load(handle)
        return document

    def cut(self, source_file: str) -> Any:
        """What the extracting process cut of the document read from ``source_file`` (None when nothing)."""
        stored = self.where[source_file]
        if stored.cut is None:
            return None
        with open(stored.path, "rb") as handle:
            handle.seek(stored.cut)
            return pickle.load(handle)
