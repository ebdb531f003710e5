"""Embeddings kept by (embedder id, text hash), so text seen before is never embedded again.

One folder per embedder under ``HOME/vectors/``. Each run that embedded something adds parts; a part is two
NumPy files written atomically: ``<part>.keys.npy``, its text hashes sorted (fixed-width bytes), and
``<part>.f32.npy``, their vectors as one float32 matrix in the same order. Both are memory-mapped when read,
so finding the vectors of any set of hashes is a binary search per part and a gather of those rows: a
lookup ranks a large document's chunks from here in milliseconds, without reading any other vector. The
keys file is written last: a part whose keys file exists is whole.

Parts of the first layout (parquet, ``text_hash`` + ``vector``) are not read: ``zan migrate`` rewrites them
(:mod:`runs.migrate`). A chunk whose text moved to a new chunk id finds its vector here; a new embedder has an
empty folder, so changing the embedder re-embeds everything.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa

KEYS, VECTORS = ".keys.npy", ".f32.npy"


class _Part:
    """One part, memory-mapped: sorted keys and the vectors in the same order."""

    def __init__(self, keys_path: Path) -> None:
        self.keys, _ = _map_npy(keys_path)
        self.vectors, self._vector_map = _map_npy(_vectors_path(keys_path))

    def release(self) -> None:
        """Unmap the vector pages this process touched (the file and the OS's cache of it stay): a run
        gathers each block's vectors from every part, and the pages it read stayed resident in the process, so
        its memory grew with the store (the index stage at 112 000 chunks: 481 MB of mapped vector pages)."""
        if hasattr(mmap, "MADV_DONTNEED") and self._vector_map is not None:
            with contextlib.suppress(OSError):
                self._vector_map.madvise(mmap.MADV_DONTNEED)

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``wanted`` found here, their rows here); ``wanted`` sorted, of this part's dtype."""
        if not len(self.keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        rows = np.searchsorted(self.keys, wanted)
        inside = rows < len(self.keys)
        hit = np.zeros(len(wanted), dtype=bool)
        hit[inside] = self.keys[rows[inside]] == wanted[inside]
        return np.flatnonzero(hit), rows[hit]


def _map_npy(path: Path) -> tuple[np.ndarray, mmap.mmap | None]:
    """A ``.npy`` file as a read-only array over a mapping of it, and that mapping (None for an empty array,
    which has nothing to map)."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(handle)
        offset = handle.tell()
        if not int(np.prod(shape)):
            return np.load(path), None
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    array = np.ndarray(shape, dtype, buffer=mapping, offset=offset, order="F" if fortran else "C")
    return array, mapping


def _fixed_width(hashes: list[str]) -> np.ndarray:
    """``hashes`` as a NumPy bytes array (ASCII; text hashes are hex), converted in C where it can be."""
    try:
        return np.array(hashes, dtype=np.str_).astype(np.bytes_)
    except UnicodeEncodeError:
        return np.array([h.encode("ascii", "replace") for h in hashes])


def _vectors_path(keys_path: Path) -> Path:
    return keys_path.with_name(keys_path.name[: -len(KEYS)] + VECTORS)


class VectorStore:
    def __init__(self, home: Path, embedder_id: str) -> None:
        self.folder = home / "vectors" / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_id)
        self._parts: dict[Path, _Part] = {}

    @classmethod
    def at(cls, folder: Path) -> VectorStore:
        """The store in ``folder`` (one embedder's folder under ``HOME/vectors``: its name is already the
        embedder id made safe), whatever its embedder."""
        return cls(folder.parent.parent, folder.name)

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors among ``hashes`` (missing ones are simply absent), as float32 rows. Parts are
        searched newest first; a part written since the last call is found too."""
        wanted = sorted(set(hashes))
        out: dict[str, np.ndarray] = {}
        if not wanted:
            return out
        for part in self._mapped():
            if not wanted:
                break
            width = part.keys.dtype.itemsize
            fits = [h for h in wanted if len(h) <= width]
            if not fits:
                continue
            at, rows = part.find(np.array([h.encode("ascii", "replace") for h in fits], dtype=f"S{width}"))
            if len(at):
                block = np.asarray(part.vectors[np.sort(rows)], dtype=np.float32)  # one gather, in file order
                part.release()
                order = np.argsort(rows)
                for n, i in enumerate(at[order]):
                    out[fits[i]] = block[n]
                found = {fits[i] for i in at}
                wanted = [h for h in wanted if h not in found]
        return out

    def matrix(self, hashes: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of ``hashes`` in that order as one float32 matrix, and a mask of the rows found (a row
        not found is zeros). What ranking inside a document reads: one binary search per part and one gather
        from the memory-mapped part, no Python object per vector (a 5 000-chunk document: a few ms)."""
        if not hashes:
            return np.zeros((0, 0), np.float32), np.zeros(0, dtype=bool)
        encoded = _fixed_width(hashes)
        order = np.argsort(encoded, kind="stable")
        ordered = encoded[order]
        found = np.zeros(len(hashes), dtype=bool)
        hits: list[tuple[_Part, np.ndarray, np.ndarray]] = []  # (part, its rows, positions in ``hashes``)
        for part in self._mapped():
            width = part.keys.dtype.itemsize
            open_ = np.flatnonzero(~found[order] & (np.char.str_len(ordered) <= width))
            if not len(open_):
                continue
            at, rows = part.find(ordered[open_].astype(f"S{width}"))
            if len(at):
                positions = order[open_[at]]
                found[positions] = True
                hits.append((part, rows, positions))
        dim = hits[0][0].vectors.shape[1] if hits else 0
        if len(hits) == 1 and found.all():  # one part holds them all (the usual case): one gather, in order
            part, rows, positions = hits[0]
            in_order = np.empty(len(hashes), np.int64)
            in_order[positions] = rows
            return np.asarray(part.vectors[in_order], dtype=np.float32), found
        out = np.zeros((len(hashes), dim), np.float32)
        for part, rows, positions in hits:
            out[positions] = part.vectors[rows]
        return out, found

    def release(self) -> None:
        """Drop the vector pages this process has read from every part (:meth:`_Part.release`): a pass over
        the whole store (a run's centroids) calls it after each block, so its memory stays that of a block."""
        for part in self._parts.values():
            part.release()

    def hashes_among(self, hashes: list[str]) -> list[str]:
        """Which of ``hashes`` are stored now (keys only: no vector is read). A part written since the last
        call is found too: what the index stage asks while the embed stage beside it stores parts."""
        wanted = sorted(set(hashes))
        found: set[str] = set()
        for part in self._mapped():
            width = part.keys.dtype.itemsize
            fits = [h for h in wanted if len(h) <= width and h not in found]
            if fits:
                at, _ = part.find(np.array([h.encode("ascii", "replace") for h in fits], dtype=f"S{width}"))
                found.update(fits[i] for i in at)
        return sorted(found)

    def hashes(self) -> pa.Array:
        """Every stored text hash, as an Arrow string array (keys only; no vector is read)."""
        arrays = [pa.array(part.keys.astype(str), pa.string()) for part in self._mapped()]
        return pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())

    def put(self, run_id: str, vectors: dict[str, np.ndarray], part_rows: int = 200_000, block: int = 0) -> None:
        """Store ``vectors`` as float32 straight from numpy (no Python floats), one part per ``part_rows``
        vectors. A run that stores block by block numbers its blocks: each is its own part."""
        items = sorted(vectors.items())
        for n, start in enumerate(range(0, len(items), part_rows)):
            batch = items[start : start + part_rows]
            name = f"part-{run_id}{f'-b{block}' if block else ''}{f'-{n}' if n else ''}"
            keys = np.array([h.encode("ascii") for h, _ in batch])
            matrix = np.stack([np.asarray(v, dtype=np.float32).ravel() for _, v in batch])
            self.write_part(name, keys, matrix)

    def write_part(self, name: str, keys: np.ndarray, matrix: np.ndarray) -> None:
        """One part: ``keys`` (sorted fixed-width bytes) and their vectors in the same order, each file written
        atomically, the keys last (their presence marks a whole part)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for suffix, array in ((VECTORS, matrix), (KEYS, keys)):  # the keys last: their presence marks a whole part
            target = self.folder / f"{name}{suffix}"
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                np.save(handle, array)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)

    def _mapped(self) -> list[_Part]:
        """Every whole part, newest first, mapped once per store object."""
        paths = sorted(self.folder.glob(f"part-*{KEYS}"), reverse=True) if self.folder.exists() else []
        for path in paths:
            if path not in self._parts and _vectors_path(path).exists():
                self._parts[path] = _Part(path)
        return [self._parts[p] for p in paths if p in self._parts]
