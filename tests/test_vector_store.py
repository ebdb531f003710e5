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


def test_vectors_come_back_from_whichever_part_holds_them_and_a_new_part_is_seen(tmp_path: Path) -> None:
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(7)
    first = {f"a{n}": rng.standard_normal(8).astype(np.float32) for n in range(30)}
    store.put("run1", first, block=1)
    assert set(store.get(["a3", "zz"])) == {"a3"}  # the store has now read the hashes of its one part
    second = {f"b{n}": rng.standard_normal(8).astype(np.float32) for n in range(30)}
    store.put("run1", second, block=2)  # a part written after the first read is found too
    got = store.get(["a0", "b29", "b7", "missing"])
    assert set(got) == {"a0", "b29", "b7"}
    for key in got:
        assert np.array_equal(got[key], (first | second)[key]) and got[key].dtype == np.float32
