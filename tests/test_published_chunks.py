"""The published chunk ids a reader may see are read on demand, a row group at a time (not loaded whole
when a lookup opens): the answers must equal the whole table's, for ids inside, between and outside the
row groups, for a file not in chunk id order, and for the real corpus's published version."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lookup.published import GROUPS_KEPT, PublishedChunks
from lookup.version import Snapshot
from schemas.published import published_file


def _file(tmp_path: Path, ids: list[str], row_group_size: int) -> Path:
    path = tmp_path / "enriched_chunks.parquet"
    table = pa.table({"chunk_id": ids, "text_hash": [f"h-{i}" for i in ids], "text": ["…"] * len(ids)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_every_id_is_found_in_its_row_group_and_no_other_id_is(tmp_path: Path) -> None:
    ids = sorted(f"v{d:010d}:p{p}:0" for d in range(0, 400, 3) for p in range(1, 8))
    published = PublishedChunks(_file(tmp_path, ids, row_group_size=50))
    assert published._firsts is not None and len(published._firsts) == -(-len(ids) // 50)
    assert all(published.get(i) == f"h-{i}" for i in ids)
    absent = ["", "a", "v0000000001:p1:0", ids[0][:-1], ids[49] + "x", ids[-1] + "0", "zzz"]
    assert all(published.get(i) is None and i not in published for i in absent)
    assert len(published) == len(ids) and list(published) == ids
    assert len(published._groups) <= GROUPS_KEPT


def test_a_file_not_in_chunk_id_order_is_read_whole_and_answers_the_same(tmp_path: Path) -> None:
    ids = [f"k{n:04d}:art{n}:0" for n in range(300)]
    random.Random(3).shuffle(ids)
    published = PublishedChunks(_file(tmp_path, ids, row_group_size=40))
    assert published._firsts is None
    assert all(published[i] == f"h-{i}" for i in ids) and published.get("k9999:art1:0") is None


def test_the_real_corpus_version_answers_as_the_whole_table(corpus_run) -> None:  # type: ignore[no-untyped-def]
    home = corpus_run[1]
    table = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash"])
    whole = dict(zip(table["chunk_id"].to_pylist(), table["text_hash"].to_pylist(), strict=True))
    published = Snapshot.open(home).published
    assert published is not None and dict(published) == whole
    # read by hand: article 156 of the Labour Code (K1500000414) is published
    assert published.get("k1500000414:art156:0") == whole["k1500000414:art156:0"]
