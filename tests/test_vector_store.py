"""The vector store keeps float32 vectors by text hash, straight from numpy and back, in bounded parts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from vectors.store import VectorStore


def test_vectors_round_trip_as_float32_in_bounded_parts(tmp_path: Path) -> None:
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(7)
    vectors = {f"h{i}": rng.standard_normal(32).astype(np.float32) for i in range(2_500)}
    store.put("run-1", vectors, part_rows=1_000)
    assert len(list(store.folder.glob("part-*.keys.npy"))) == len(list(store.folder.glob("part-*.f32.npy"))) == 3
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


def test_a_half_written_part_is_not_read(tmp_path: Path) -> None:
    store = VectorStore(tmp_path, "hash-ngram-test")
    store.put("whole", {"a" * 32: np.ones(4, np.float32)})
    store.folder.joinpath("part-half.f32.npy").write_bytes(b"\x93NUMPY")  # its keys file never came
    assert set(store.get(["a" * 32])) == {"a" * 32} and store.hashes().to_pylist() == ["a" * 32]


def test_a_matrix_of_vectors_comes_back_in_the_order_asked_with_what_was_missing(tmp_path: Path) -> None:
    """``matrix`` (what ranking inside a document reads) gives the same vectors as ``get``, row by row in
    the order of the hashes asked (repeats too), from one part or several, zeros and False where none."""
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(3)
    first = {f"{n:032x}": rng.standard_normal(16).astype(np.float32) for n in range(40)}
    store.put("run1", first)
    asked = [f"{n:032x}" for n in (7, 3, 3, 39, 0)] + ["f" * 32]
    matrix, found = store.matrix(asked)
    assert matrix.dtype == np.float32 and matrix.shape == (6, 16)
    assert found.tolist() == [True] * 5 + [False] and not matrix[5].any()
    assert all(np.array_equal(matrix[n], first[h]) for n, h in enumerate(asked[:5]))
    second = {f"{n:032x}": rng.standard_normal(16).astype(np.float32) for n in range(100, 140)}
    store.put("run2", second, block=2)
    both = first | second
    asked = [f"{n:032x}" for n in (120, 5, 139, 7, 100)]
    matrix, found = store.matrix(asked)
    assert found.all() and all(np.array_equal(matrix[n], both[h]) for n, h in enumerate(asked))
    assert store.matrix([])[0].shape[0] == 0 and not VectorStore(tmp_path, "other").matrix(asked)[1].any()


def _resident_kb(path: Path) -> int:
    """This process's resident KB of its mappings of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):  # a mapping's first line: address, perms, ..., its file
            inside = len(head) >= 6 and head[-1] == str(path)
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


def test_a_gather_leaves_no_vector_pages_resident_so_a_run_does_not_grow_with_the_store(tmp_path: Path) -> None:
    """A run gathers each block's vectors from every part; the pages it read used to stay mapped in the
    process, so its memory grew with the store (the index stage at 112 000 chunks peaked at 592 MB, 481 of
    them vector pages). After a gather the part's pages are unmapped; the vectors come back the same."""
    if not Path("/proc/self/smaps").exists():
        pytest.skip("needs Linux's /proc/self/smaps to see resident pages")
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(3)
    vectors = {f"h{i:05d}": rng.standard_normal(384).astype(np.float32) for i in range(4_000)}  # a 6 MB part
    store.put("run-1", vectors)
    (part,) = store.folder.glob("part-*.f32.npy")
    for _ in range(2):
        got = store.get(list(vectors))
        assert all(np.array_equal(got[h], vectors[h]) for h in vectors)
        assert _resident_kb(part) < 256, "the part's pages stayed mapped after the gather"
    matrix, found = store.matrix(list(vectors))  # ranking inside a document keeps its mapping (a server's reads)
    assert found.all() and np.array_equal(matrix[17], vectors["h00017"])


def test_a_run_s_centroids_read_every_vector_and_keep_none_of_their_pages(tmp_path: Path) -> None:
    """The documents' centroids are a pass over every stored vector of the version: their pages used to stay
    mapped, so the index stage of a full run grew with the store (at 100 000 chunks its peak was 740 MB, 414
    once released). After the pass the part's pages are unmapped; the means are those of the vectors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vectors.documents import build_centroids

    if not Path("/proc/self/smaps").exists():
        pytest.skip("needs Linux's /proc/self/smaps to see resident pages")
    store = VectorStore(tmp_path, "hash-ngram-test")
    rng = np.random.default_rng(5)
    vectors = {f"h{i:05d}": rng.standard_normal(384).astype(np.float32) for i in range(4_000)}
    store.put("run-1", vectors)
    (part,) = store.folder.glob("part-*.f32.npy")
    hashes = sorted(vectors)
    enriched = tmp_path / "enriched.parquet"
    pq.write_table(pa.table({"doc_id": [f"d{i // 400}" for i in range(len(hashes))], "text_hash": hashes}), enriched)
    assert build_centroids(enriched, store, tmp_path / "centroids", block=500) == 10
    assert _resident_kb(part) < 256, "the part's pages stayed mapped after the centroids"
    first = np.stack([vectors[h] / np.linalg.norm(vectors[h]) for h in hashes[:400]]).sum(0)
    saved = np.load(tmp_path / "centroids" / "vectors.npy")
    assert np.allclose(saved[0], first / np.linalg.norm(first), atol=1e-5)
