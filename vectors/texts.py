"""A version's chunk texts by row, for answers: each text compressed on its own, read by position.

An answer shows five chunks out of a version's many. Reading them from ``enriched_chunks.parquet`` costs a
whole row group's text column (8 192 texts, decompressed and decoded: ~24 ms) for each row group the five
fall in, so a fetch inside one document was slower than Chroma's own filtered query. Here row ``i`` of the
version's chunk file is ``data[offsets[i]:offsets[i + 1]]``, a zstd frame of its UTF-8 text: five texts are
five slices of a memory-mapped file.

- ``texts.zst``: the frames back to back; ``texts.index.npy``: ``offsets`` (n + 1, int64) then each text's
  UTF-8 length (n), one int64 array of 2n + 1 values.
- Written beside the BM25 index (:mod:`vectors.lexical`), from the same stream of the version's texts, and
  published with it; a version without it is read from parquet as before.
"""

from __future__ import annotations

import os
from array import array
from pathlib import Path

import numpy as np
import pyarrow as pa

DATA = "texts.zst"
INDEX = "texts.index.npy"
_CODEC = pa.Codec("zstd", compression_level=3)


class TextWriter:
    """Appends texts in row order to ``folder`` (written under temporary names, renamed by :meth:`close`)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._data = open(folder / f".{DATA}.tmp", "wb")  # noqa: SIM115 - closed by close()
        self._offsets = array("q", [0])
        self._sizes = array("q")

    def add(self, text: str) -> None:
        raw = text.encode("utf-8")
        frame = _CODEC.compress(raw, asbytes=True) if raw else b""
        self._data.write(frame)
        self._offsets.append(self._offsets[-1] + len(frame))
        self._sizes.append(len(raw))

    def add_frames(self, source: TextFile, rows: np.ndarray) -> None:
        """``source``'s texts of ``rows``, as they are stored there (compressed once, copied as bytes)."""
        for row in np.asarray(rows, np.int64).tolist():
            start, end = int(source.offsets[row]), int(source.offsets[row + 1])
            self._data.write(source.data[start:end].tobytes())
            self._offsets.append(self._offsets[-1] + end - start)
            self._sizes.append(int(source.lengths[row]))

    def close(self) -> int:
        """Finish both files; returns the texts written."""
        self._data.close()
        index = np.concatenate([np.frombuffer(self._offsets, np.int64), np.frombuffer(self._sizes, np.int64)])
        with open(self.folder / f".{INDEX}.tmp", "wb") as handle:
            np.save(handle, index)
        os.replace(self.folder / f".{DATA}.tmp", self.folder / DATA)
        os.replace(self.folder / f".{INDEX}.tmp", self.folder / INDEX)
        return len(self._sizes)


class TextFile:
    """A version's texts by row, memory-mapped."""

    def __init__(self, folder: Path) -> None:
        index = np.load(folder / INDEX, mmap_mode="r")
        self.size = (len(index) - 1) // 2
        self.offsets, self.lengths = index[: self.size + 1], index[self.size + 1 :]
        self.data = np.memmap(folder / DATA, dtype=np.uint8, mode="r") if self.offsets[-1] else np.zeros(0, np.uint8)

    @classmethod
    def open(cls, folder: Path) -> TextFile | None:
        """The texts under ``folder``, or None where they were never written (an older version)."""
        return cls(folder) if (folder / INDEX).exists() and (folder / DATA).exists() else None

    def get(self, rows: list[int] | np.ndarray) -> list[str]:
        """The texts of these rows, in that order."""
        out = []
        for row in rows:
            start, end, length = int(self.offsets[row]), int(self.offsets[row + 1]), int(self.lengths[row])
            if not length:
                out.append("")
                continue
            raw = _CODEC.decompress(self.data[start:end].tobytes(), decompressed_size=length, asbytes=True)
            out.append(raw.decode("utf-8"))
        return out
