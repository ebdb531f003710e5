"""Extracted documents kept on disk between a run's stages, one at a time in memory.

``extract`` appends each document to its shard's file as it is read (a stream of pickles: an internal format,
written and read by the same code within one run). ``registry`` first reads only their headers
(:meth:`extractors.model.Document.header`) to group documents into registry entries, then loads each
entry's documents again, by offset, to build its row and chunks. Memory holds one document's text, not the
corpus's.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from extractors.model import Document


class DocumentWriter:
    """Appends documents to an open binary file; remembers nothing but the count."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.count = handle, 0

    def __call__(self, document: Document) -> None:
        pickle.dump(document, self.handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.count += 1


@dataclass(frozen=True)
class Stored:
    """Where one document is: its file and byte offset."""

    path: Path
    offset: int


def headers(path: Path) -> Iterator[tuple[Document, Stored]]:
    """Each document's header and where to load it from, reading the file once."""
    with open(path, "rb") as handle:
        while True:
            offset = handle.tell()
            try:
                document = pickle.load(handle)
            except EOFError:
                return
            yield document.header(), Stored(path, offset)


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
