"""The vector store keeps float32 vectors by text hash, straight from numpy and back, in bounded parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vectors.store import VectorStore


def test_vectors_round_trip_as_float32_in_bounded_parts(tmp_path: Path) -> None:
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(7)
    vectors = {f"h{i}": rng.standard_normal(32).astype(np.float32) for i in range(2_500)}
    store.put("run-1", vectors, part_rows=1_000)
    assert len(list(store.folder.glob("part-*.parquet"))) == 3
    got = store.get([*vectors, "absent"])
    assert set(got) == set(vectors) and all(v.dtype == np.float32 for v in got.values())
    assert all(np.array_equal(got[h], vectors[h]) for h in vectors)
    assert store.get([]) == {} and VectorStore(tmp_path, "other").get(["h1"]) == {}
