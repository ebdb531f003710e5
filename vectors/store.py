"""Embeddings kept by (embedder id, text hash), so text seen before is never embedded again.

One folder per embedder under ``HOME/vectors/``; each run that embedded something adds one parquet part
(``text_hash``, ``vector``) written atomically. Lookups read only the hashes asked for (pyarrow dataset
filter), so an unchanged re-run never opens the store at all. A chunk whose text moved to a new chunk id
finds its vector here; a new embedder has an empty folder, so changing the embedder re-embeds everything.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from enrich.storage import write_parquet_atomic

VECTOR_SCHEMA = pa.schema(
    [pa.field("text_hash", pa.string(), nullable=False), pa.field("vector", pa.list_(pa.float32()))]
)


class VectorStore:
    def __init__(self, home: Path, embedder_id: str) -> None:
        self.folder = home / "vectors" / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_id)

    def get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors among ``hashes`` (missing ones are simply absent)."""
        parts = sorted(self.folder.glob("part-*.parquet")) if self.folder.exists() else []
        if not hashes or not parts:
            return {}
        table = ds.dataset(parts, schema=VECTOR_SCHEMA).to_table(filter=pc.field("text_hash").isin(hashes))
        if table.num_rows == 0:
            return {}
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        offsets = column.offsets.to_numpy()
        return {  # float32 views of one array: no Python floats on the way (memory stays flat)
            text_hash: flat[offsets[i] : offsets[i + 1]]
            for i, text_hash in enumerate(table.column("text_hash").to_pylist())
        }

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
