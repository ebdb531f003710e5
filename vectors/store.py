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
from vectors.embed import Embedder

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
        found: dict[str, np.ndarray] = {}
        for text_hash, vector in zip(
            table.column("text_hash").to_pylist(), table.column("vector").to_pylist(), strict=True
        ):
            found[text_hash] = np.asarray(vector, dtype=np.float32)
        return found

    def put(self, run_id: str, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        table = pa.table(
            {"text_hash": list(vectors), "vector": [v.astype(np.float32).tolist() for v in vectors.values()]},
            schema=VECTOR_SCHEMA,
        )
        write_parquet_atomic(table, self.folder / f"part-{run_id}.parquet", VECTOR_SCHEMA, "vectors")


def vectors_for(
    texts: dict[str, str], store: VectorStore, embedder: Embedder, run_id: str, force: bool = False
) -> tuple[dict[str, np.ndarray], int]:
    """Vectors for ``{text_hash: text}``: from the store, embedding only what it lacks (or all, forced).

    Returns the vectors and how many texts were sent to the embedder. New vectors are stored first, so a
    run killed after embedding does not embed them again.
    """
    known = {} if force else store.get(list(texts))
    missing = [h for h in texts if h not in known]
    fresh: dict[str, np.ndarray] = {}
    for start in range(0, len(missing), 256):
        batch = missing[start : start + 256]
        for text_hash, vector in zip(batch, embedder.embed([texts[h] for h in batch]), strict=True):
            fresh[text_hash] = vector
    store.put(run_id, fresh)
    return known | fresh, len(missing)
