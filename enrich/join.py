"""Join registry identifier fields onto every chunk, batch by batch, in the chunks' own order.

Every chunk ends with a doc_id that exists in the registry, or it becomes a reject: an orphan chunk in the
index could never be reached by a lookup and would silently answer a vector search.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from enrich.metadata import meta_hashes
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, REGISTRY_FIELDS_ON_CHUNK
from schemas.parquet import STREAM_ROWS, iter_parquet, write_parquet_stream


def join_files(registry: pa.Table, chunks: Path, out: Path) -> pa.Table:
    """The same join streamed and order-preserving: each batch of the chunks parquet at ``chunks`` gets its
    document's registry fields by position (the registry, one row per document, is small) and is written to
    ``out`` (``ENRICHED_CHUNK_SCHEMA``) in the chunks' own order. Returns the orphans (chunk_id, doc_id,
    source_file), in chunk order."""
    fields = registry.select(list(REGISTRY_FIELDS_ON_CHUNK))
    position = {doc_id: n for n, doc_id in enumerate(registry.column("doc_id").to_pylist())}
    orphans: list[pa.Table] = []

    def joined() -> Iterator[pa.Table]:
        for table in iter_parquet(chunks, STREAM_ROWS):
            rows = [position.get(d) for d in table.column("doc_id").to_pylist()]
            known = pa.array([r is not None for r in rows])
            if not pc.all(known).as_py():
                orphans.append(table.filter(pc.invert(known)).select(["chunk_id", "doc_id", "source_file"]))
                table, rows = table.filter(known), [r for r in rows if r is not None]
            extra = fields.take(pa.array(rows, pa.int64()))
            for name in REGISTRY_FIELDS_ON_CHUNK:
                table = table.append_column(extra.schema.field(name), extra.column(name))
            yield table.append_column("meta_hash", meta_hashes(table))

    write_parquet_stream(joined(), out, ENRICHED_CHUNK_SCHEMA, "enriched_chunks")
    empty = pa.schema([pa.field(n, pa.string()) for n in ("chunk_id", "doc_id", "source_file")]).empty_table()
    return pa.concat_tables([empty, *(t.cast(empty.schema) for t in orphans)])
