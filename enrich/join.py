"""Join registry identifier fields onto every chunk (DuckDB over parquet).

Every chunk ends with a doc_id that exists in the registry, or it becomes a reject: an orphan chunk in the
index could never be reached by a lookup and would silently answer a vector search.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from enrich.metadata import meta_hash
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
