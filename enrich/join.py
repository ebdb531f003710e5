"""Join registry identifier fields onto every chunk (DuckDB over parquet).

Every chunk ends with a doc_id that exists in the registry, or it becomes a reject: an orphan chunk in the
index could never be reached by a lookup and would silently answer a vector search.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from enrich.metadata import meta_hash
from enrich.storage import STREAM_ROWS, write_parquet_stream
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, REGISTRY_FIELDS_ON_CHUNK, conform


@dataclass(frozen=True)
class JoinResult:
    enriched: pa.Table
    orphans: pa.Table  # chunk_id, doc_id, source_file of chunks whose doc_id is not in the registry


def enrich_tables(registry: pa.Table, chunks: pa.Table) -> JoinResult:
    """The same join over in-memory Arrow tables (a run joins only the documents it rebuilt)."""
    with duckdb.connect() as con:
        con.register("chunks", chunks)
        con.register("registry", registry)
        return _join(con)


def join_files(registry: pa.Table, chunks: Path, out: Path, memory_limit: str = "512MB") -> pa.Table:
    """The same join streamed: the chunks parquet at ``chunks`` joined with ``registry`` into ``out``
    (``ENRICHED_CHUNK_SCHEMA``, in no particular order), batch by batch with DuckDB under ``memory_limit``;
    returns the orphans (chunk_id, doc_id, source_file)."""
    with duckdb.connect(config={"memory_limit": memory_limit}) as con:
        con.register("registry", registry)
        con.read_parquet(str(chunks)).create_view("chunks")
        chunk_cols = ", ".join(f"c.{name}" for name in CHUNK_SCHEMA.names)
        reg_cols = ", ".join(f"r.{name}" for name in REGISTRY_FIELDS_ON_CHUNK)
        query = f"SELECT {chunk_cols}, {reg_cols} FROM chunks c JOIN registry r USING (doc_id)"
        reader = con.sql(query).to_arrow_reader(STREAM_ROWS)
        write_parquet_stream(_hashed(reader), out, ENRICHED_CHUNK_SCHEMA, "enriched_chunks")
        return con.sql(
            "SELECT chunk_id, doc_id, source_file FROM chunks ANTI JOIN registry USING (doc_id) ORDER BY chunk_id"
        ).to_arrow_table()


def _hashed(batches: pa.RecordBatchReader) -> Iterator[pa.Table]:
    for batch in batches:
        hashes = pa.array([meta_hash(row) for row in batch.to_pylist()], pa.string())
        yield pa.Table.from_batches([batch]).append_column("meta_hash", hashes)


def _join(con: duckdb.DuckDBPyConnection) -> JoinResult:
    chunk_cols = ", ".join(f"c.{name}" for name in CHUNK_SCHEMA.names)
    reg_cols = ", ".join(f"r.{name}" for name in REGISTRY_FIELDS_ON_CHUNK)
    enriched = con.sql(
        f"SELECT {chunk_cols}, {reg_cols} FROM chunks c JOIN registry r USING (doc_id) ORDER BY c.chunk_id"
    ).to_arrow_table()
    orphans = con.sql(
        "SELECT chunk_id, doc_id, source_file FROM chunks ANTI JOIN registry USING (doc_id) ORDER BY chunk_id"
    ).to_arrow_table()
    hashes = pa.array([meta_hash(row) for row in enriched.to_pylist()], pa.string())
    enriched = enriched.append_column("meta_hash", hashes)
    return JoinResult(conform(enriched, ENRICHED_CHUNK_SCHEMA, "enriched_chunks"), orphans)
