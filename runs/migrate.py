"""``zan migrate``: rewrite a HOME written by an older zan into the current on-disk format
(:data:`schemas.published.FORMAT_VERSION`) once, so that every reader knows that format only.

What format 1 may hold, and what becomes of it. Each step is idempotent, so a migrate that was stopped is run
again; the manifests are stamped last (the current version's after the others), so a HOME is never called
current while a step is left:

- published files directly under HOME (the layout before versions): moved into ``versions/v000001`` with a
  manifest, and ``CURRENT`` written once the folder is whole;
- vector parts of the first layout (parquet: ``text_hash`` + ``vector``): rewritten as memory-mapped NumPy
  parts (:meth:`vectors.store.VectorStore.write_part`), each parquet removed once its part is whole;
- kept versions without word indexes (``lexical/``) or document centroids (``docvectors/``): built from their
  enriched chunks and the stored vectors;
- manifests without the spec of their embedder: given it (``hash`` for the hash embedder, else the
  ``--embedder`` named, which must make the same embedder);
- every kept version's manifest: ``format_version`` = FORMAT_VERSION.

It holds the run lease throughout: no run, rollback or other migrate writes HOME meanwhile.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from runs import lease
from runs.versions import set_current, write_manifest
from schemas.arrow import REJECT_SCHEMA
from schemas.errors import ZanError
from schemas.published import (
    FORMAT_VERSION,
    OUTPUTS,
    Manifest,
    check_home,
    current_version,
    home_format,
    list_versions,
    versions_dir,
)
from vectors.documents import CENTROIDS, build_centroids
from vectors.embed import EmbedderError
from vectors.embedders import make_embedder
from vectors.lexical import LEXICAL
from vectors.store import VectorStore
from vectors.words import build_word_indexes

FIRST_LAYOUT = pa.schema(  # a vector part as format 1 wrote it
    [pa.field("text_hash", pa.string(), nullable=False), pa.field("vector", pa.list_(pa.float32()))]
)
_REPORTS = ("report.json", "report.html")


class MigrateError(ZanError):
    """HOME cannot be migrated as it is; the message says why and what to give."""


@dataclass
class Migrated:
    """What ``zan migrate`` did (``--json`` prints it)."""

    home: str
    format_before: int | None  # None: nothing was published
    format_after: int | None
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def migrate(home: Path | str, embedder: str | None = None) -> Migrated:
    """Rewrite ``home`` into the current format (nothing to do when it is already; a newer format is refused).
    ``embedder``: the spec of the embedder an old version was embedded with, where its manifest does not say
    and it is not the hash embedder."""
    home = check_home(home, writable=True, migrating=True)
    before = home_format(home)
    done = Migrated(str(home), before, before)
    if before is not None and before > FORMAT_VERSION:
        raise MigrateError(f"HOME {home} is format {before}, newer than this zan's {FORMAT_VERSION}: upgrade zan")
    run_id = "migrate-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    with lease.held(home, run_id):
        if before == 1 and current_version(home) is None:
            done.steps.append(_into_a_version(home, embedder))
        done.steps += _vector_parts(home)
        current = current_version(home)
        for manifest in sorted(list_versions(home), key=lambda m: m.version == current):  # the current one last
            done.steps += _version(home, manifest, embedder)
    done.format_after = home_format(home)
    return done


def _into_a_version(home: Path, embedder: str | None) -> str:
    """The published files directly under HOME, moved into ``versions/v000001``; CURRENT names it last."""
    name = "v000001"
    folder = versions_dir(home) / name
    folder.mkdir(parents=True, exist_ok=True)
    for file in (*OUTPUTS, *_REPORTS):
        if (home / file).exists():
            (home / file).replace(folder / file)
    if not (folder / "rejects.parquet").exists():
        pq.write_table(REJECT_SCHEMA.empty_table(), folder / "rejects.parquet")
    spec = embedder or "hash"
    manifest = Manifest(
        version=name,
        run_id="migrated",
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        documents=pq.ParquetFile(folder / "registry.parquet").metadata.num_rows,
        chunks=pq.ParquetFile(folder / "enriched_chunks.parquet").metadata.num_rows,
        embedder=make_embedder(spec).bind(home),
        embedder_spec=spec,
    )
    write_manifest(folder, manifest)
    set_current(home, name)
    return f"moved the files published directly under HOME into versions/{name} (embedder {spec})"


def _vector_parts(home: Path) -> list[str]:
    """Every parquet vector part under ``HOME/vectors/``, rewritten as a memory-mapped part of its store."""
    steps = []
    for part in sorted((home / "vectors").glob("*/part-*.parquet")):
        table = pq.read_table(part, schema=FIRST_LAYOUT).sort_by("text_hash")
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        keys = np.array([h.encode("ascii") for h in table.column("text_hash").to_pylist()])
        store = VectorStore.at(part.parent)
        store.write_part(part.name.removesuffix(".parquet"), keys, flat.reshape(table.num_rows, -1))
        part.unlink()
        steps.append(f"vectors/{part.parent.name}/{part.name}: {table.num_rows} vectors rewritten as NumPy parts")
    return steps


def _version(home: Path, manifest: Manifest, embedder: str | None) -> list[str]:
    """One kept version brought to the current format; its manifest stamped last."""
    if manifest.format_version >= FORMAT_VERSION:
        return []
    folder = versions_dir(home) / manifest.version
    steps = []
    if not (folder / LEXICAL).is_dir():
        build_word_indexes(folder / "enriched_chunks.parquet", folder / LEXICAL)
        steps.append(f"{manifest.version}: word indexes built")
    if not (folder / CENTROIDS).is_dir():  # from the stored vectors (their parts rewritten first)
        build_centroids(folder / "enriched_chunks.parquet", VectorStore(home, manifest.embedder), folder / CENTROIDS)
        steps.append(f"{manifest.version}: document centroids built")
    if not manifest.embedder_spec:
        manifest.embedder_spec = _spec_of(home, manifest, embedder)
        steps.append(f"{manifest.version}: embedder spec recorded ({manifest.embedder_spec})")
    manifest.format_version = FORMAT_VERSION
    write_manifest(folder, manifest)
    steps.append(f"{manifest.version}: format {FORMAT_VERSION}")
    return steps


def _spec_of(home: Path, manifest: Manifest, embedder: str | None) -> str:
    """How to make the embedder again of a version that recorded its id only."""
    if manifest.embedder.startswith("hash-"):
        return "hash"
    if embedder is None:
        raise MigrateError(
            f"{manifest.version} was embedded by {manifest.embedder!r} and does not say how to make it: "
            "give --embedder with its spec (e5, st:PATH, openai:URL…)"
        )
    try:
        made = make_embedder(embedder).bind(home)
    except EmbedderError as exc:
        raise MigrateError(f"--embedder {embedder!r}: {exc}") from exc
    if made != manifest.embedder:
        raise MigrateError(
            f"--embedder {embedder!r} makes {made!r}, but {manifest.version} was embedded by {manifest.embedder!r}"
        )
    return embedder
