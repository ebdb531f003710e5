"""Cut documents as the registry stage receives them: chunks as ``CHUNK_SCHEMA`` tables (``runs.build.Cut``),
merged per registry entry in a stable chunk id order, and rows turned into tables by ``table_from_rows``."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from extractors.discover import extract_file
from runs.build import _duplicate, _entry_cut, cut_document
from schemas.arrow import SchemaError, conform
from schemas.parquet import table_from_rows
from tests.conftest import corpus_file


def test_rows_become_a_table_of_the_contract_or_an_error_naming_it() -> None:
    """``table_from_rows`` builds with the schema and checks only the nulls: what it gives is what the whole
    ``conform`` gives (columns, order, types, nullability), and a null where the contract forbids one, or a
    value of another type, is refused."""
    schema = pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("n", pa.int32()),
            pa.field("tags", pa.list_(pa.string())),
        ]
    )
    rows = [{"tags": ["a", None], "id": "x", "n": 1}, {"id": "y", "extra": 5}]  # keys out of order, one missing
    table = table_from_rows(rows, schema, "things")
    assert table.schema.equals(schema) and table.equals(conform(pa.Table.from_pylist(rows, schema=schema), schema, "t"))
    assert table.to_pylist() == [{"id": "x", "n": 1, "tags": ["a", None]}, {"id": "y", "n": None, "tags": None}]
    assert table_from_rows([], schema, "things").schema.equals(schema)
    with pytest.raises(SchemaError, match=r"things: column 'id' must not contain nulls"):
        table_from_rows([{"id": None}], schema, "things")
    with pytest.raises(SchemaError, match=r"things: column 'id' must not contain nulls"):
        table_from_rows([{"n": 2}], schema, "things")
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        table_from_rows([{"id": "z", "n": "two"}], schema, "things")


def test_an_entrys_chunks_are_sorted_stably_and_a_twice_read_chunk_is_named_with_both_files() -> None:
    """An entry's documents' chunk tables are merged in chunk id order, equal ids in the order of the
    documents (as Python's sort kept them when chunks were rows); two equal ids name the file that came first."""
    page = corpus_file("adilet/rus/K950001000_.html")  # the Constitution
    document = extract_file(page).document
    assert document is not None
    cut = cut_document(document)
    assert cut is not None and _duplicate(cut.chunks) is None
    copy = cut.chunks.set_column(
        cut.chunks.schema.get_field_index("source_file"),
        cut.chunks.schema.field("source_file"),
        pa.array(["copy.html"] * cut.chunks.num_rows),
    )

    def unread(source_file: str):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{source_file} was cut already")

    twice = _entry_cut(cut.doc_id, [document.header()] * 2, [cut, dataclasses.replace(cut, chunks=copy)], unread)
    rows = twice.chunks.to_pylist()
    expected = sorted([*cut.chunks.to_pylist(), *copy.to_pylist()], key=lambda c: c["chunk_id"])
    assert rows == expected and rows[0]["source_file"] == str(page) and rows[1]["source_file"] == "copy.html"
    first = rows[0]["chunk_id"]
    assert _duplicate(twice.chunks) == (f"chunk id {first!r} already comes from {page}", "copy.html")
