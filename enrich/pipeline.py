"""The main job: extract → registry → chunks → enrich → index → publish.

Every stage writes parquet into a run's staging folder; only when the index is written are the files
renamed into the data directory, so a failed run leaves the previously published files as they were.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from enrich.chunking import chunk_document
from enrich.embed import Embedder, HashingEmbedder
from enrich.index import open_client, write_index
from enrich.join import enrich_chunks
from enrich.registry import IdentityError, build_registry, doc_id_for, registry_row
from enrich.storage import table_from_rows, write_parquet_atomic
from extractors.discover import extract_file, source_files
from extractors.model import Document
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA

DEFAULT_SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
PUBLISHED = ("registry.parquet", "chunks.parquet", "enriched_chunks.parquet", "rejects.parquet")


class RunError(RuntimeError):
    """The run cannot publish anything (no source, no document); nothing published was touched."""


@dataclass
class RunInfo:
    """What a run made; printed by ``zan run --json`` and returned to Airflow tasks."""

    run_id: str
    documents: int = 0
    chunks: int = 0
    rejected: int = 0
    indexed: int = 0
    deleted: int = 0
    files: int = 0
    home: str = ""
    chroma: str = ""
    embedder: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _noop(stage: str, done: int, total: int) -> None:
    return None


def run(
    sources: list[Path],
    home: Path,
    chroma_url: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress = _noop,
) -> RunInfo:
    """Run the main job over ``sources`` into ``home``; returns counts. Bad files become rejects."""
    embedder = embedder or HashingEmbedder()
    info = RunInfo(run_id=_run_id(), home=str(home), embedder=embedder.id, chroma=chroma_url or str(home / "chroma"))
    staging = home / ".staging" / info.run_id
    staging.mkdir(parents=True, exist_ok=True)
    try:
        _run_stages(sources, home, staging, chroma_url, embedder, progress, info)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info


def _run_stages(
    sources: list[Path],
    home: Path,
    staging: Path,
    chroma_url: str | None,
    embedder: Embedder,
    progress: Progress,
    info: RunInfo,
) -> None:
    rejects: list[dict[str, Any]] = []
    with _timed(info, "extract"):
        documents = _extract(sources, info, rejects, progress)
    with _timed(info, "registry"):
        registry, chunks = _registry_and_chunks(documents, info, rejects)
        write_parquet_atomic(registry, staging / "registry.parquet", REGISTRY_SCHEMA, "registry")
        write_parquet_atomic(chunks, staging / "chunks.parquet", CHUNK_SCHEMA, "chunks")
    with _timed(info, "enrich"):
        joined = enrich_chunks(staging / "registry.parquet", staging / "chunks.parquet")
        rejects += [
            _reject(
                info,
                "enrich",
                r["source_file"],
                r["doc_id"],
                f"doc_id {r['doc_id']!r} is not in the registry",
                r["chunk_id"],
            )
            for r in joined.orphans.to_pylist()
        ]
        write_parquet_atomic(
            joined.enriched, staging / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks"
        )
    with _timed(info, "index"):
        client = open_client(home / "chroma", chroma_url)
        done = [0]

        def step(n: int) -> None:
            done[0] += n
            progress("index", done[0], joined.enriched.num_rows)

        result = write_index(joined.enriched, client, embedder, progress=step)
        info.indexed, info.deleted = result.indexed, result.deleted
    with _timed(info, "publish"):
        write_parquet_atomic(
            table_from_rows(rejects, REJECT_SCHEMA, "rejects"), staging / "rejects.parquet", REJECT_SCHEMA, "rejects"
        )
        _publish(staging, home, info)
    info.documents, info.chunks, info.rejected = registry.num_rows, joined.enriched.num_rows, len(rejects)


def _extract(sources: list[Path], info: RunInfo, rejects: list[dict[str, Any]], progress: Progress) -> list[Document]:
    files = source_files(sources)
    if not files:
        raise RunError(f"no source files under {', '.join(map(str, sources))}")
    info.files = len(files)
    documents = []
    for n, path in enumerate(files, start=1):
        outcome = extract_file(path)
        if outcome.document:
            documents.append(outcome.document)
        else:
            rejects.append(_reject(info, "extract", outcome.source_file, None, outcome.error or "unknown error"))
        progress("extract", n, len(files))
    if not documents:
        reasons = "; ".join(f"{r['source_file']}: {r['reason']}" for r in rejects[:5])
        raise RunError(f"no documents could be extracted from {len(files)} file(s): {reasons}")
    return documents


def _registry_and_chunks(
    documents: list[Document], info: RunInfo, rejects: list[dict[str, Any]]
) -> tuple[pa.Table, pa.Table]:
    usable = []
    for document in documents:
        try:
            doc_id_for(document.requisites)
            usable.append(document)
        except IdentityError as exc:
            rejects.append(_reject(info, "registry", document.source_file, None, str(exc)))
    entries = build_registry(usable)
    rows = [registry_row(e) for e in sorted(entries.values(), key=lambda e: e.doc_id)]
    chunk_rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for entry in entries.values():
        for document in entry.documents:
            chunks = chunk_document(entry.doc_id, document)
            clash = next((c["chunk_id"] for c in chunks if c["chunk_id"] in seen), None)
            if clash:  # the same edition of one act read twice (e.g. a page saved in two folders)
                rejects.append(
                    _reject(
                        info,
                        "chunk",
                        document.source_file,
                        entry.doc_id,
                        f"chunk id {clash!r} already comes from {seen[clash]}",
                    )
                )
                continue
            seen.update((c["chunk_id"], document.source_file) for c in chunks)
            chunk_rows += chunks
    chunk_rows.sort(key=lambda c: c["chunk_id"])
    return (table_from_rows(rows, REGISTRY_SCHEMA, "registry"), table_from_rows(chunk_rows, CHUNK_SCHEMA, "chunks"))


def _publish(staging: Path, home: Path, info: RunInfo) -> None:
    for name in PUBLISHED:
        target = home / name
        (staging / name).replace(target)
        info.outputs[name.removesuffix(".parquet")] = str(target)


def _reject(
    info: RunInfo, stage: str, source_file: str | None, doc_id: str | None, reason: str, chunk_id: str | None = None
) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "stage": stage,
        "source_file": source_file,
        "doc_id": doc_id,
        "chunk_id": chunk_id,
        "reason": reason,
    }


def _run_id() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


class _timed:
    def __init__(self, info: RunInfo, stage: str) -> None:
        self.info, self.stage = info, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.info.seconds[self.stage] = round(time.perf_counter() - self.start, 3)
