"""What a run carries between its stages: options, counts, the published version it starts from, and its
state on disk (``HOME/work/<run_id>/state.json``), so each stage can run in its own process (an Airflow
task) and pass only a path to the next one."""

from __future__ import annotations

import datetime as dt
import functools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from runs.versions import staging_dir
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA
from schemas.changes import RunStatus as RunStatus
from schemas.files import atomic_writer
from schemas.parquet import read_parquet
from schemas.published import KEEP_VERSIONS, Manifest, published_dir, read_manifest, versions_dir
from schemas.run_report import RunInfo as RunInfo
from schemas.run_report import StageResult as StageResult

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class Stage(StrEnum):
    """The last stage a run's state file records as done (:mod:`runs.stages`)."""

    PLANNED = "planned"
    REGISTRY = "registry"
    ENRICHED = "enriched"
    INDEXED = "indexed"
    VALIDATED = "validated"
    PUBLISHED = "published"
    REPORTED = "reported"


@dataclass(frozen=True)
class RunOptions:
    only: tuple[str, ...] = ()  # doc_ids to rebuild
    since: dt.date | None = None  # source files modified on or after this date
    dry_run: bool = False
    force_reembed: bool = False
    allow_shrink: bool = False
    max_shrink: float = 0.10
    max_repeal: float = 0.05  # share of a git source's acts one run may repeal by deleting their folders …
    max_repeal_acts: int = 50  # … and at most this many (one act is always allowed: a plain upstream repeal)
    keep_versions: int = KEEP_VERSIONS

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["only"], data["since"] = list(self.only), self.since.isoformat() if self.since else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunOptions:
        since = dt.date.fromisoformat(data["since"]) if data.get("since") else None
        return cls(**{**data, "only": tuple(data.get("only") or ()), "since": since})


@dataclass
class Published:
    """A published version (the one a run starts from): its manifest and registry in memory; its chunk tables
    read when first asked for (a run at scale asks only for ids and hashes, :meth:`keys`)."""

    version: str
    manifest: Manifest
    registry: pa.Table
    rejects: pa.Table
    folder: Path

    @classmethod
    def load(cls, home: Path, version: str | None = None) -> Published | None:
        """The current version (or ``version``), or None when nothing is published. A run's stages in one
        process read the same version several times: its tables are read once (versions never change;
        the key includes the files' mtimes, so a folder replaced under the same name is read again)."""
        folder = versions_dir(home) / version if version else published_dir(home)
        if folder is None:
            return None
        stamp = tuple((folder / n).stat().st_mtime_ns for n in ("manifest.json", *_TABLES))
        return _load_published(str(folder), stamp)

    @functools.cached_property
    def enriched(self) -> pa.Table:
        return read_parquet(self.folder / "enriched_chunks.parquet", ENRICHED_CHUNK_SCHEMA, "enriched_chunks")

    def keys(self, columns: tuple[str, ...] = ("chunk_id", "doc_id", "text_hash", "meta_hash")) -> pa.Table:
        """Only these columns of the enriched chunks (no text)."""
        return pq.read_table(self.folder / "enriched_chunks.parquet", columns=list(columns))

    @property
    def chunk_count(self) -> int:
        return int(pq.ParquetFile(self.folder / "enriched_chunks.parquet").metadata.num_rows)

    def doc_files(self) -> dict[str, list[str]]:
        """doc_id → the source files it was built from."""
        if not hasattr(self, "_doc_files"):
            ids, files = self.registry.column("doc_id").to_pylist(), self.registry.column("source_files").to_pylist()
            self._doc_files = {d: list(f or []) for d, f in zip(ids, files, strict=True)}
        return self._doc_files

    def file_owners(self) -> dict[str, set[str]]:
        """source file → the doc_ids built from it."""
        if not hasattr(self, "_owners"):
            owners: dict[str, set[str]] = {}
            for doc_id, files in self.doc_files().items():
                for f in files:
                    owners.setdefault(f, set()).add(doc_id)
            self._owners = owners
        return self._owners

    def registry_rows(self) -> dict[str, dict[str, Any]]:
        return {r["doc_id"]: r for r in self.registry.to_pylist()}


_TABLES = ("registry.parquet", "chunks.parquet", "enriched_chunks.parquet", "rejects.parquet")


@functools.lru_cache(maxsize=4)
def _load_published(folder_name: str, stamp: tuple[int, ...]) -> Published:
    folder = Path(folder_name)
    return Published(
        version=folder.name,
        manifest=read_manifest(folder),
        registry=read_parquet(folder / "registry.parquet", REGISTRY_SCHEMA, "registry"),
        rejects=read_parquet(folder / "rejects.parquet", REJECT_SCHEMA, "rejects"),
        folder=folder,
    )


@dataclass
class RunState:
    """Everything a later stage needs from an earlier one; saved as JSON beside the run's work files."""

    run_id: str
    home: str
    options: dict[str, Any]
    chroma_url: str | None
    embedder_spec: str
    embedder_id: str
    previous: str | None
    scope: dict[str, Any]
    keys: dict[str, str]
    reused: list[str]
    shards: list[list[str]]
    started: str
    stage: Stage = Stage.PLANNED
    same: bool = False  # the run rebuilt exactly the published version
    rebuilt: list[str] = field(default_factory=list)
    file_keys: dict[str, str] = field(default_factory=dict)
    target: str | None = None  # a rollback: the kept version to republish (its tables are the run's)
    embedding: list[str] = field(default_factory=list)  # the embed stage's shards (``state#n``), once planned
    source_commits: dict[str, str] = field(default_factory=dict)  # each git source → the commit this run reads
    repealed: dict[str, str] = field(default_factory=dict)  # acts deleted from a git source → when (ISO date)
    to_embed: int = 0  # the texts they hold
    info: dict[str, Any] = field(default_factory=dict)
    stages: list[dict[str, Any]] = field(default_factory=list)  # what each stage did (StageResult), in order

    @property
    def work(self) -> Path:
        return work_dir(Path(self.home), self.run_id)

    @property
    def path(self) -> Path:
        return self.work / "state.json"

    @property
    def run_options(self) -> RunOptions:
        return RunOptions.from_json(self.options)

    def save(self) -> Path:
        # the fields as they are (JSON values already): ``asdict`` deep-copies every file key first, a third of
        # a save's time in a 20 000-file scope, and a run saves its state after every stage. Written a field at a
        # time: the whole state as one string (20 MB at 20 000 acts) was the registry stage's last peak
        with atomic_writer(self.path) as handle:
            handle.write(b"{")
            for n, f in enumerate(fields(self)):
                handle.write(f"{', ' if n else ''}{json.dumps(f.name)}: ".encode())
                handle.write(json.dumps(getattr(self, f.name), ensure_ascii=False, default=str).encode())
            handle.write(b"}")
        return self.path

    @classmethod
    def load(cls, path: Path | str) -> RunState:
        state = cls(**json.loads(Path(path).read_text("utf-8")))
        state.stage = Stage(state.stage)
        return state

    def tables_folder(self) -> Path:
        """Where the run's version's tables are: staged, the published version's when identical, or a
        rollback's target version."""
        home = Path(self.home)
        if self.target:
            return versions_dir(home) / self.target
        return versions_dir(home) / self.previous if self.same and self.previous else staging_dir(home, self.run_id)

    def columns(self, table: str, columns: list[str]) -> pa.Table:
        """Only ``columns`` of one of the version's tables (ids and hashes: no text is read)."""
        return pq.read_table(self.tables_folder() / f"{table}.parquet", columns=columns)

    def run_info(self) -> RunInfo:
        return RunInfo.from_dict(self.info)

    def update(self, info: RunInfo, stage: Stage | None = None, *done: StageResult) -> None:
        """Record ``info`` (and the stage reached, and what ``done`` stages did) in the state file."""
        self.info = info.as_dict()
        if stage:
            self.stage = stage
        again = {d.stage for d in done}  # a stage run again (an Airflow retry) replaces what it said before
        self.stages = [s for s in self.stages if s["stage"] not in again] + [d.as_dict() for d in done]
        self.save()

    def stage_results(self) -> list[StageResult]:
        return [StageResult(**d) for d in self.stages]


def as_state(state: RunState | Path | str) -> RunState:
    """A stage's state: the run's own object when its caller holds one (a run in one process loads its state
    once), else read from the state file (an Airflow task, a stage in a process of its own)."""
    return state if isinstance(state, RunState) else RunState.load(state)


def work_dir(home: Path, run_id: str) -> Path:
    return home / "work" / run_id


def new_run_id() -> str:
    """Sortable by start time (milliseconds), unique by its random tail."""
    now = dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%dT%H%M%S}{now.microsecond // 1000:03d}Z-{uuid.uuid4().hex[:6]}"


class timed:
    """Adds a stage's wall seconds to ``info.seconds``."""

    def __init__(self, info: RunInfo, stage: str) -> None:
        self.info, self.stage = info, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.info.seconds[self.stage] = round(
            self.info.seconds.get(self.stage, 0) + time.perf_counter() - self.start, 3
        )
