"""The one metadata rule (``enrich.metadata.metadata_columns``, column-wise in Arrow): every edge it names
(None, "", [] dropped, lists capped, dates as ISO text), the real corpus read by hand, and the keys an update
sends for random edits (exactly those whose value under the rule differs; None for one that became empty),
against a real collection with held rows and with rows read back from it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from enrich.chunking import LIST_CAP
from enrich.metadata import METADATA_FIELDS, chunk_metadata, meta_hash, meta_hashes, metadata_dicts, metadata_table
from schemas.arrow import ENRICHED_CHUNK_SCHEMA
from schemas.published import published_file
from vectors.index import changed_keys, open_client, update_table

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


def test_the_metadata_rule_on_every_edge() -> None:
    table = pa.Table.from_pylist(EDGES, SCHEMA)
    first, second, third, fourth = metadata_dicts(table)
    assert first == {"doc_id": "Z00000000001", "article_labels": ["Статья 1"], "date_approved": "2015-11-23"}
    assert len(second["code_articles"]) == LIST_CAP and second["annex"] == 0 and second["status"] == "active"
    assert third == {"doc_id": "Z00000000003", "article_labels": ["", "Статья 2"], "last_amended": "2024-01-05"}
    assert fourth["repealed_on"] == "2026-01-01" and fourth["text_hash"] == "cd"
    # one row, as Chroma returns a record (dates already text), gives the same metadata and hash
    assert chunk_metadata(first) == first and meta_hash(first) == meta_hashes(table)[0].as_py()
    assert meta_hash(fourth) == meta_hash({**fourth, "text_hash": "other"})  # the text's hash is not hashed


def test_records_read_back_are_hashed_together_as_each_alone() -> None:
    """The validate stage hashes the records it reads back in one table (``record_meta_hashes``): the hash of
    each is the one it has alone, whatever keys the others lack; records whose values cannot share a column
    (a key of another type: not zan's writing) are hashed one by one, not refused."""
    from enrich.metadata import record_meta_hashes

    records = metadata_dicts(pa.Table.from_pylist(EDGES, SCHEMA))
    records += [{}, {"doc_id": "Z1", "foreign_key": 3}]
    assert record_meta_hashes(records) == [meta_hash(r) for r in records]
    assert len(set(record_meta_hashes(records[:4]))) == 4
    odd = [*records, {"doc_id": "Z2", "annex": "not a number"}]  # annex is an int elsewhere
    assert record_meta_hashes(odd) == [meta_hash(r) for r in odd]


def test_the_metadata_rule_on_the_real_corpus(corpus_run) -> None:  # type: ignore[no-untyped-def]
    table = pq.read_table(published_file(corpus_run[1], "enriched_chunks.parquet"))
    assert meta_hashes(table).to_pylist() == table["meta_hash"].to_pylist()  # what the join stored
    assert table["meta_hash"].to_pylist() == _hash_row_by_row(table)
    assert all(v not in (None, "", []) for meta in metadata_dicts(table) for v in meta.values())
    # read by hand from adilet/rus/K1500000414.html: the Labour Code of 23.11.2015 № 414-V; article 100's
    # footnote names the amending law of 04.05.2020 № 321-VI
    by_id = {m["path"]: m for m in metadata_dicts(table) if m["doc_id"] == "k1500000414" and m["language"] == "rus"}
    assert all(m["date_approved"] == "2015-11-23" and m["law_zrk"] == "414-V" for m in by_id.values())
    assert by_id["art100"]["last_amended"] == "2020-05-04" and by_id["art100"]["amended_by"] == ["321-VI"]


def _hash_row_by_row(table: pa.Table) -> list[str]:
    """The hash's definition, one row at a time: blake2b-128 of the JSON (keys sorted, UTF-8 as is) of the
    row's metadata under the rule, its text hash left out."""
    metas = metadata_dicts(table)
    payloads = [json.dumps({k: v for k, v in m.items() if k != "text_hash"}, sort_keys=True, ensure_ascii=False)
                for m in metas]  # fmt: skip
    return [hashlib.blake2b(p.encode("utf-8"), digest_size=16).hexdigest() for p in payloads]


HOSTILE = [
    'a"b',
    "back\\slash",
    "line\nbreak",
    "tab\there",
    "\x01bell\x07",
    "cr\r\x0c\x08",
    "\x7f\u2028«»",
    "",
    "plain",
]


@pytest.mark.parametrize("seed", range(10))
def test_hashes_built_column_wise_are_the_row_by_row_hashes(seed: int) -> None:
    """The join hashes a batch's metadata column by column; a record read back from the index is hashed the
    same: each equals the row-by-row definition, with JSON's escapes, control characters, null list items,
    empty values and slices of a larger table."""
    rng = random.Random(seed)
    rows = []
    for n in range(60):
        row = _row(n)
        for name in rng.sample(list(METADATA_FIELDS), 8):
            kind = SCHEMA.field(name).type
            if pa.types.is_list(kind):
                item = (lambda: rng.randint(-3, 500)) if pa.types.is_integer(kind.value_type) else (
                    lambda: rng.choice([*HOSTILE, None]))  # fmt: skip
                row[name] = rng.choice([None, [], [item() for _ in range(rng.randint(1, LIST_CAP + 2))]])
            elif pa.types.is_date(kind):
                row[name] = rng.choice([None, dt.date(2020, 2, rng.randint(1, 28))])
            elif pa.types.is_integer(kind):
                row[name] = rng.choice([None, 0, 7, -1])
            else:
                row[name] = rng.choice([None, *HOSTILE])
        rows.append(row)
    table = pa.Table.from_pylist(rows, SCHEMA)
    assert meta_hashes(table).to_pylist() == _hash_row_by_row(table)
    part = table.slice(17, 30)  # list columns whose offsets do not start at 0
    assert meta_hashes(part).to_pylist() == _hash_row_by_row(part)
    records = metadata_dicts(table)  # as Chroma returns them: dicts, dates as text
    assert meta_hashes(metadata_table(records)).to_pylist() == _hash_row_by_row(table)


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
def test_an_update_sends_exactly_the_keys_whose_value_changed_for_random_edits(seed: int) -> None:
    rng = random.Random(seed)
    old_rows = [_edit(_row(n), rng) for n in range(40)]
    new_rows = [_edit(r, rng) for r in old_rows]
    old, new = pa.Table.from_pylist(old_rows, SCHEMA), pa.Table.from_pylist(new_rows, SCHEMA)
    expected = []
    for before, after in zip(metadata_dicts(old), metadata_dicts(new), strict=True):
        expected.append({k: after.get(k) for k in METADATA_FIELDS if before.get(k) != after.get(k)})
    assert changed_keys(old, new) == expected
    # what Chroma returns for the old records (dict rows, dates as text) compares the same way
    read_back = metadata_table(metadata_dicts(old), old.column("chunk_id").to_pylist())
    assert changed_keys(read_back, new) == expected


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
