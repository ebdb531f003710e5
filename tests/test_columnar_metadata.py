"""Chunk metadata built column-wise in Arrow (what the index writes) must equal the row-wise rules
(``chunk_metadata``, ``changed_metadata``) exactly: for the real corpus's chunks, for every edge the rules
name (None, "", [], lists over the cap, dates), and for random edits of a held version."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from enrich.chunking import LIST_CAP
from enrich.metadata import METADATA_FIELDS, chunk_metadata, meta_hash, meta_hashes, metadata_dicts
from schemas.arrow import ENRICHED_CHUNK_SCHEMA
from schemas.published import published_file
from vectors.index import changed_keys, changed_metadata, open_client, update_table

SCHEMA = pa.schema([ENRICHED_CHUNK_SCHEMA.field(name) for name in ("chunk_id", *METADATA_FIELDS)])


def _row(n: int, **values: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(SCHEMA.names)
    return row | {"chunk_id": f"Z00000000{n:03d}:{n}", "doc_id": f"Z00000000{n:03d}"} | values


EDGES = [
    _row(1, doc_title="", code_articles=[], article_labels=["Статья 1"], date_approved=dt.date(2015, 11, 23)),
    _row(2, doc_title="Трудовой кодекс", code_articles=list(range(LIST_CAP + 7)), annex=0, status="active"),
    _row(3, article_labels=["", "Статья 2"], point_labels=[], last_amended=dt.date(2024, 1, 5), issuer=None),
    _row(4, amended_by=["Z2400000001"], repealed_on=dt.date(2026, 1, 1), text_hash="cd"),
]


def test_metadata_dicts_equal_chunk_metadata_on_every_edge() -> None:
    table = pa.Table.from_pylist(EDGES, SCHEMA)
    assert metadata_dicts(table) == [chunk_metadata(r) for r in table.to_pylist()]
    assert meta_hashes(table).to_pylist() == [meta_hash(r) for r in table.to_pylist()]
    first, second = metadata_dicts(table)[:2]
    assert "doc_title" not in first and "code_articles" not in first and first["date_approved"] == "2015-11-23"
    assert len(second["code_articles"]) == LIST_CAP and second["annex"] == 0


def test_metadata_dicts_equal_chunk_metadata_on_the_real_corpus(corpus_run) -> None:  # type: ignore[no-untyped-def]
    table = pq.read_table(published_file(corpus_run[1], "enriched_chunks.parquet"))
    assert metadata_dicts(table) == [chunk_metadata(r) for r in table.to_pylist()]
    assert meta_hashes(table).to_pylist() == [meta_hash(r) for r in table.to_pylist()] == table["meta_hash"].to_pylist()
    # read by hand from adilet/rus/K1500000414.html: the Labour Code of 23.11.2015 № 414-V; article 100's
    # footnote names the amending law of 04.05.2020 № 321-VI
    by_id = {m["path"]: m for m in metadata_dicts(table) if m["doc_id"] == "k1500000414" and m["language"] == "rus"}
    assert all(m["date_approved"] == "2015-11-23" and m["law_zrk"] == "414-V" for m in by_id.values())
    assert by_id["art100"]["last_amended"] == "2020-05-04" and by_id["art100"]["amended_by"] == ["321-VI"]


def _edit(row: dict[str, object], rng: random.Random) -> dict[str, object]:
    """A random edit of a few fields: set, emptied, nulled, a list grown or shrunk, a date moved."""
    out = dict(row)
    for name in rng.sample(list(METADATA_FIELDS), rng.randint(0, 4)):
        kind = SCHEMA.field(name).type
        if pa.types.is_list(kind):
            item = (lambda k: k) if pa.types.is_integer(kind.value_type) else (lambda k: f"п. {k}")
            out[name] = rng.choice([None, [], [item(k) for k in range(rng.randint(1, 4))], [item(1)]])
        elif pa.types.is_date(kind):
            out[name] = rng.choice([None, dt.date(2020, 1, rng.randint(1, 3))])
        elif pa.types.is_integer(kind):
            out[name] = rng.choice([None, 0, 1])
        else:
            out[name] = rng.choice([None, "", "a", "b"])
    return out


@pytest.mark.parametrize("seed", range(25))
def test_changed_keys_equal_the_row_rules_for_random_edits(seed: int) -> None:
    rng = random.Random(seed)
    old_rows = [_edit(_row(n), rng) for n in range(40)]
    new_rows = [_edit(r, rng) for r in old_rows]
    old, new = pa.Table.from_pylist(old_rows, SCHEMA), pa.Table.from_pylist(new_rows, SCHEMA)
    expected = [changed_metadata(chunk_metadata(o), n) for o, n in zip(old.to_pylist(), new.to_pylist(), strict=True)]
    assert changed_keys(old, new) == expected


def test_changed_keys_refuse_rows_that_do_not_line_up() -> None:
    table = pa.Table.from_pylist(EDGES, SCHEMA)
    with pytest.raises(ValueError, match="same chunks in the same order"):
        changed_keys(table, table.take([1, 0, 2, 3]))


def test_update_sends_only_changed_keys_and_leaves_other_keys_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real embedded collection: the held rows say what it holds; an emptied key is deleted, a changed one
    rewritten, a key another tool wrote stays, and nothing of the vector or the text moves."""
    old = pa.Table.from_pylist(EDGES, SCHEMA)
    rows = old.to_pylist()
    rows[0] |= {"doc_title": "Новое название"}
    rows[1] |= {"status": None, "code_articles": [1, 2]}
    new = pa.Table.from_pylist(rows, SCHEMA)
    collection = open_client(tmp_path / "chroma").create_collection("edits", embedding_function=None)
    ids = old.column("chunk_id").to_pylist()
    collection.add(ids=ids, embeddings=[[float(k), 1.0] for k in range(4)], documents=["t"] * 4,
                   metadatas=[m | {"other_tool": k} for k, m in enumerate(metadata_dicts(old))])  # fmt: skip
    assert update_table(collection, new, held=old) == 2  # rows 2 and 3 did not change: not sent
    got = collection.get(ids=ids, include=["metadatas", "embeddings", "documents"])
    by_id = dict(zip(got["ids"], got["metadatas"], strict=True))
    assert by_id[ids[0]]["doc_title"] == "Новое название" and by_id[ids[0]]["other_tool"] == 0
    assert "status" not in by_id[ids[1]] and by_id[ids[1]]["code_articles"] == [1, 2]
    assert by_id[ids[3]] == metadata_dicts(old)[3] | {"other_tool": 3}
    assert got["documents"] == ["t"] * 4
    # the same update with nothing held reads the index back and arrives at the same metadata
    again = open_client(tmp_path / "chroma2").create_collection("edits", embedding_function=None)
    again.add(ids=ids, embeddings=[[float(k), 1.0] for k in range(4)], documents=["t"] * 4,
              metadatas=[m | {"other_tool": k} for k, m in enumerate(metadata_dicts(old))])  # fmt: skip
    update_table(again, new)
    read = again.get(ids=ids, include=["metadatas"])
    assert dict(zip(read["ids"], read["metadatas"], strict=True)) == by_id
