"""The metadata every chunk carries into the vector index: which fields, in which shape, and its hash.

Chroma's rules (measured in DESIGN.md) shape it: no None values, no empty lists, lists capped in length,
dates as ISO strings. The hash covers every field but the text's own hash, so equal hashes mean no write:
the join computes it once per chunk (the ``meta_hash`` column) and the diff compares it with what the index
holds. The index does not store it: a reader recomputes it from the record's own metadata
(:func:`meta_hash` of what Chroma returns), so what is compared is what the index really holds, and a
metadata-only update sends one key less (measured: 20 000 updates of one changed key 1.2-1.4 s, of that key
and a stored hash 1.5-1.7 s).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from enrich.chunking import LIST_CAP

METADATA_FIELDS = (
    "doc_id",
    "adilet_id",
    "doc_type",
    "doc_title",
    "issuer",
    "order_number",
    "law_zrk",
    "code_articles",
    "article_labels",
    "intl_org",
    "intl_section",
    "date_approved",
    "jurisdiction",
    "language",
    "source_url",
    "status",
    "registration_number",
    "path",
    "section_label",
    "annex",
    "annex_articles",
    "point_labels",
    "last_amended",
    "amended_by",
    "repealed_by",
    "repealed_on",
    "text_hash",
)
HASHED_FIELDS = tuple(f for f in METADATA_FIELDS if f != "text_hash")


def chunk_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """Chroma metadata for one row (an enriched chunk, or what Chroma returned for a record): the rule of
    :func:`metadata_columns` applied to a one-row table."""
    return metadata_dicts(metadata_table([row]))[0]


def metadata_table(rows: list[Mapping[str, Any]], chunk_ids: list[str] | None = None) -> pa.Table:
    """Rows of metadata (dicts, each with any subset of the keys: Chroma's records) as one table of the
    metadata fields, plus ``chunk_id`` when given; a key no row has is a column of nulls."""
    columns = {name: pa.array([r.get(name) for r in rows]) for name in METADATA_FIELDS}
    if chunk_ids is not None:
        columns = {"chunk_id": pa.array(chunk_ids, pa.string()), **columns}
    return pa.table(columns)


def metadata_columns(table: pa.Table) -> dict[str, pa.Array]:
    """Each metadata field of ``table`` in the form Chroma stores it, column-wise: dates as ISO text, lists
    capped, and null wherever :func:`chunk_metadata` drops the key (None, "" and []). Fields the table lacks
    are absent (the key is dropped for every row)."""
    out: dict[str, pa.Array] = {}
    for name in METADATA_FIELDS:
        if name not in table.column_names or pa.types.is_null(table.column(name).type):
            continue  # absent, or null in every row: the key is dropped for every row
        column = table.column(name).combine_chunks()
        kind = column.type
        if pa.types.is_date(kind):
            column = pc.cast(column, pa.string())
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            column = pc.list_slice(column, 0, LIST_CAP)
            column = pc.if_else(pc.equal(pc.list_value_length(column), 0), pa.scalar(None, column.type), column)
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, kind), column)
        out[name] = column
    return out


def metadata_dicts(table: pa.Table) -> list[dict[str, Any]]:
    """:func:`chunk_metadata` of every row of ``table``, built column by column (no row dicts of the whole
    table: the text and the columns Chroma does not get are never turned into Python)."""
    columns = metadata_columns(table)
    if not columns:
        return [{} for _ in range(table.num_rows)]
    names = list(columns)
    values = [column.to_pylist() for column in columns.values()]
    return [{k: v for k, v in zip(names, row, strict=True) if v is not None} for row in zip(*values, strict=True)]


def meta_hash(row: Mapping[str, Any]) -> str:
    """Hash of the metadata a chunk carries in the index (its text hash excluded): equal hashes, no write.
    ``row`` is an enriched chunk row or the metadata Chroma returns for the record: the same hash when the
    index holds what the row says (keys zan does not own are not hashed)."""
    return meta_hashes(metadata_table([row]))[0].as_py()  # type: ignore[no-any-return]


def record_meta_hashes(records: list[Mapping[str, Any]]) -> list[str]:
    """:func:`meta_hash` of each of ``records`` (what Chroma returned), built as one table: a run's read-back
    of 2 000 records took 9 s one record at a time (a one-row table each). Records whose values cannot share
    a column (a key of another type in one of them: not zan's writing) are hashed one by one."""
    try:
        return [str(h) for h in meta_hashes(metadata_table(list(records))).to_pylist()]
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return [meta_hash(record) for record in records]


def meta_hashes(table: pa.Table) -> pa.Array:
    """:func:`meta_hash` of every row of ``table``. The JSON each row's hash is taken of is built column-wise in
    Arrow (:func:`_payloads`), the same text :func:`_json` makes of the row's metadata one row at a time
    (measured on the 12 000 chunks a 1 % text edit rebuilds: 0.24 → 0.12 s)."""
    hashed = table.select([name for name in HASHED_FIELDS if name in table.column_names])
    return pa.array([_hash(payload) for payload in _payloads(hashed)], pa.string())


def _json(meta: Mapping[str, Any]) -> str:
    """One row's metadata (a dict as :func:`metadata_dicts` makes it) as the JSON its hash is taken of."""
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, default=str)


def _hash(payload: str) -> str:
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=16).hexdigest()


# JSON's escapes (what ``json.dumps(..., ensure_ascii=False)`` writes for these characters), backslash first
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f"))
_ESCAPED = '[\\x00-\\x1f\\\\"]'  # a character JSON writes escaped
_OTHER_CONTROL = "[\\x00-\\x07\\x0b\\x0e-\\x1f]"  # written as \\u00XX: such a row is made by json.dumps


def _payloads(table: pa.Table) -> list[str]:
    """Each row's metadata (:func:`metadata_columns`) as the JSON :func:`_json` writes, built column by column:
    every present key as ``"key": value`` in sorted order, joined by ``, `` inside braces. A row this cannot
    write exactly as ``json.dumps`` does (a control character JSON writes as ``\\u00XX``, a null inside a list)
    is made by ``json.dumps`` of its own metadata; so is every row when a column has a type zan never writes."""
    parts: list[pa.Array] = []
    odd = np.zeros(table.num_rows, dtype=bool)
    for name, column in sorted(metadata_columns(table).items()):
        value, unsure = _json_values(column)
        if value is None:
            return [_json(meta) for meta in metadata_dicts(table)]
        odd |= unsure
        parts.append(pc.fill_null(pc.binary_join_element_wise(f'"{name}": ', value, ", ", ""), ""))
    if not parts:
        return ["{}"] * table.num_rows
    # each present key is followed by ", ", the last one's cut off (pyarrow 26's null_handling="skip" drops
    # the rows where every input is null instead of joining them to "")
    joined = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*parts, ""), 0, -2)
    payloads: list[str] = pc.binary_join_element_wise("{", joined, "}", "").to_pylist()
    if odd.any():
        rows = np.flatnonzero(odd)
        for row, meta in zip(rows.tolist(), metadata_dicts(table.take(pa.array(rows))), strict=True):
            payloads[row] = _json(meta)
    return payloads


def _json_values(column: pa.Array) -> tuple[pa.Array | None, np.ndarray]:
    """``column``'s values as JSON text (null where the key is absent) and the rows whose text may differ from
    what ``json.dumps`` writes; None for a type zan never writes (strings, integers and lists of them only)."""
    kind, rows = column.type, len(column)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        escaped, unsure = column, np.zeros(rows, dtype=bool)
        if pc.any(pc.match_substring_regex(column, _ESCAPED)).as_py():  # most columns have no such character
            for plain, written in _ESCAPES:
                escaped = pc.replace_substring(escaped, plain, written)
            control = pc.fill_null(pc.match_substring_regex(column, _OTHER_CONTROL), False)
            unsure = control.to_numpy(zero_copy_only=False)
        return pc.binary_join_element_wise('"', escaped, '"', ""), unsure
    if pa.types.is_integer(kind):
        return pc.cast(column, pa.string()), np.zeros(rows, dtype=bool)
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return None, np.ones(rows, dtype=bool)
    column = column.cast(pa.list_(kind.value_type))  # int32 offsets, however it came
    values, item_unsure = _json_values(column.values)
    if values is None:
        return None, np.ones(rows, dtype=bool)
    # a null item would make the row's whole list null: such a row, like one with an unsure item, is made apart
    first, last = column.offsets[0].as_py(), column.offsets[-1].as_py()
    flagged = (item_unsure | column.values.is_null().to_numpy(zero_copy_only=False))[first:last]
    unsure = np.zeros(rows, dtype=bool)
    unsure[pc.list_parent_indices(column).to_numpy()[flagged]] = True
    items = pa.ListArray.from_arrays(column.offsets, values, mask=column.is_null())
    return pc.binary_join_element_wise("[", pc.binary_join(items, ", "), "]", ""), unsure
