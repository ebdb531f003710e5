"""Embeddings kept by (embedder id, text hash), so text seen before is never embedded again.

One folder per embedder under ``HOME/vectors/``; each run that embedded something adds one parquet part
(``text_hash``, ``vector``) written atomically. A lookup reads the vectors of only the parts that hold a
hash asked for, one part at a time, and an unchanged re-run never opens the store at all. A chunk whose
text moved to a new chunk id finds its vector here; a new embedder has an empty folder, so changing the
embedder re-embeds everything.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from enrich.storage import write_parquet_atomic

VECTOR_SCHEMA = pa.schema(
    [pa.field("text_hash", pa.string(), nullable=False), pa.field("vector", pa.list_(pa.float32()))]
)


class VectorStore:
    def __init__(self, home: Path, embedder_id: str) -> None:
        self.folder = home / "vectors" / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_id)
        self._hashes: dict[Path, pa.Array] = {}

    def get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors among ``hashes`` (missing ones are simply absent). Parts are read one at a time,
        and only those that hold one of the hashes (the store keeps each part's hashes, read on first use);
        a dataset scan over all parts read several parts' vectors ahead at once, so its memory grew with the
        store (``benchmarks/README.md``)."""
        wanted = set(hashes)
        out: dict[str, np.ndarray] = {}
        if not wanted:
            return out
        asked = pa.array(sorted(wanted), pa.string())
        for part, stored in self._parts():
            if not wanted or not pc.any(pc.is_in(stored, value_set=asked)).as_py():
                continue
            table = pq.read_table(part, schema=VECTOR_SCHEMA)
            table = table.filter(pc.is_in(table.column("text_hash"), value_set=asked))
            column = table.column("vector").combine_chunks()
            flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            offsets = column.offsets.to_numpy()
            for i, text_hash in enumerate(table.column("text_hash").to_pylist()):
                if text_hash in wanted:  # float32 views of one array: no Python floats on the way
                    out[text_hash] = flat[offsets[i] : offsets[i + 1]]
                    wanted.discard(text_hash)
        return out

    def _parts(self) -> list[tuple[Path, pa.Array]]:
        """Each part with its text hashes (one string column; vectors are read only when a part is needed)."""
        parts = sorted(self.folder.glob("part-*.parquet")) if self.folder.exists() else []
        for part in parts:
            if part not in self._hashes:
                self._hashes[part] = pq.read_table(part, columns=["text_hash"]).column(0).combine_chunks()
        return [(part, self._hashes[part]) for part in parts]

    def hashes(self) -> pa.Array:
        """Every stored text hash, as an Arrow array (one string column read; no vector is loaded)."""
        parts = sorted(self.folder.glob("part-*.parquet")) if self.folder.exists() else []
        if not parts:
            return pa.array([], pa.string())
        return ds.dataset(parts, schema=VECTOR_SCHEMA).to_table(columns=["text_hash"]).column(0).combine_chunks()

    def put(self, run_id: str, vectors: dict[str, np.ndarray], part_rows: int = 200_000, block: int = 0) -> None:
        """Store ``vectors`` as float32 straight from numpy (no Python floats), one parquet part per
        ``part_rows`` vectors (list offsets stay far inside int32, and no part is huge). A run that stores
        block by block numbers its blocks: each is its own part."""
        items = list(vectors.items())
        for n, start in enumerate(range(0, len(items), part_rows)):
            batch = items[start : start + part_rows]
            arrays = [np.asarray(v, dtype=np.float32).ravel() for _, v in batch]
            offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
            np.cumsum([len(a) for a in arrays], out=offsets[1:])
            flat = pa.array(np.concatenate(arrays), type=pa.float32())
            column = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat)
            table = pa.table({"text_hash": [h for h, _ in batch], "vector": column}, schema=VECTOR_SCHEMA)
            name = f"part-{run_id}{f'-b{block}' if block else ''}{f'-{n}' if n else ''}.parquet"
            write_parquet_atomic(table, self.folder / name, VECTOR_SCHEMA, "vectors")
