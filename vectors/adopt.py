"""``zan enrich-collection``: add the registry's identifier fields to a Chroma collection built by another
tool, by metadata-only updates (no re-extract, no re-embedding; vectors untouched).

Each record is matched to a registry row through the source it names in its metadata (a file name or a
URL under one of ``SOURCE_KEYS``): the file's name or stem as the registry recorded it, an adilet id inside
the name or URL (``…/rus/docs/V2400035612``), or the registry's source_url. A record whose text opens with
an article heading («Статья 156.», «156-бап.») also gets ``code_articles`` and ``article_labels``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from enrich.metadata import chunk_metadata
from extractors.structure import match_article
from schemas.arrow import REGISTRY_FIELDS_ON_CHUNK, REGISTRY_SCHEMA
from schemas.errors import ZanError
from schemas.identifiers import ADILET_ID, canonical_adilet_id, fold_lookalikes
from schemas.parquet import read_parquet
from schemas.published import published_file
from vectors.index import BATCH, Collection, find_collection, open_client

SOURCE_KEYS = ("source_file", "source", "file", "filename", "file_name", "file_path", "path", "url", "source_url")
_ADILET_ID = re.compile(rf"(?<![A-Za-z0-9])({ADILET_ID})(?![A-Za-z0-9])", re.I)


class AdoptError(ZanError):
    """The collection or the registry is missing."""


@dataclass
class AdoptInfo:
    collection: str
    records: int = 0
    matched: int = 0
    updated: int = 0
    unchanged: int = 0
    unmatched: int = 0
    unmatched_sources: list[str] = field(default_factory=list)  # the first few, to fix the mapping

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_keys(value: str) -> list[str]:
    """Keys a source spelling can match on: adilet ids inside it, the file name, the stem, the whole value."""
    name = PurePosixPath(value.replace("\\", "/").split("?")[0].rstrip("/")).name
    ids = [canonical_adilet_id(m) for m in _ADILET_ID.findall(fold_lookalikes(value))]
    stem = name.rsplit(".", 1)[0]
    return [*(f"adilet:{i}" for i in ids), f"name:{name.lower()}", f"stem:{stem.lower()}", f"value:{value}"]


def registry_keys(row: dict[str, Any]) -> list[str]:
    keys = []
    if row["adilet_id"]:
        keys.append(f"adilet:{canonical_adilet_id(row['adilet_id'])}")
    for source in row["source_files"] or []:
        name = Path(source).name
        keys += [f"name:{name.lower()}", f"stem:{name.rsplit('.', 1)[0].lower()}"]
    if row["source_url"]:
        keys.append(f"value:{row['source_url']}")
    return keys


def enrich_collection(home: Path, name: str, chroma_url: str | None = None, dry_run: bool = False) -> AdoptInfo:
    """Update every matched record's metadata with its document's identifier fields; returns counts."""
    path = published_file(home, "registry.parquet")
    if not path.exists():
        raise AdoptError(f"{path}: no registry published (run `zan run --home {home}` first)")
    rows = read_parquet(path, REGISTRY_SCHEMA, "registry").to_pylist()
    by_key: dict[str, dict[str, Any]] = {}
    for row in rows:
        for key in registry_keys(row):
            by_key.setdefault(key, row)
    client = open_client(home / "chroma", chroma_url)
    collection = find_collection(client, name)
    if collection is None:
        raise AdoptError(f"no Chroma collection {name!r} at {chroma_url or home / 'chroma'}")
    info = AdoptInfo(collection=name)
    offset = 0
    while True:
        page = collection.get(include=["metadatas", "documents"], limit=BATCH, offset=offset)
        _adopt_page(collection, page, by_key, info, dry_run)
        if len(page["ids"]) < BATCH:
            return info
        offset += len(page["ids"])


def _adopt_page(
    collection: Collection, page: dict[str, Any], by_key: dict[str, dict[str, Any]], info: AdoptInfo, dry_run: bool
) -> None:
    ids, metas = [], []
    for record_id, meta, text in zip(page["ids"], page["metadatas"], page["documents"], strict=True):
        meta = dict(meta or {})
        info.records += 1
        source = next((str(meta[k]) for k in SOURCE_KEYS if meta.get(k)), None)
        row = next((by_key[k] for k in source_keys(source) if k in by_key), None) if source else None
        if row is None:
            info.unmatched += 1
            if len(info.unmatched_sources) < 10:
                info.unmatched_sources.append(source or f"{record_id} (no source key)")
            continue
        info.matched += 1
        wanted = {**meta, **identifier_metadata(row, text or "")}
        if wanted == meta:
            info.unchanged += 1
            continue
        ids.append(record_id)
        metas.append(wanted)
    info.updated += len(ids)
    if ids and not dry_run:
        collection.update(ids=ids, metadatas=metas)


def identifier_metadata(row: dict[str, Any], text: str) -> dict[str, Any]:
    """The registry's identifier fields for a record (Chroma rules: no empty values), plus the article
    its text opens with."""
    # source_url is left out: the record's own source spelling stays as its tool wrote it
    fields = {name: row.get(name) for name in ("doc_id", *REGISTRY_FIELDS_ON_CHUNK) if name != "source_url"}
    first_line = text.strip().splitlines()[0] if text.strip() else ""
    article = match_article(first_line)
    if article:
        label = article[0]
        fields["article_labels"] = [label]
        fields["code_articles"] = [int(label)] if label.isdigit() else []
    return chunk_metadata(fields)
