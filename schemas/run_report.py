"""What a run did, as typed records: :class:`RunInfo` (``zan run --json``, the Airflow tasks' return), one
:class:`StageResult` per stage (what it read, wrote and rejected, its seconds), and the :class:`RunReport`
built from them (``HOME/runs/<run_id>.json`` and ``.html``, a copy in the version's folder).

The report is written by ``runs.report`` and read back here only (:func:`read_report`): the run history
(``lookup.run_history``: ``zan serve``'s ``/runs`` and ``/api/runs``, the MCP server) and the ``runs`` view of
``zan sql`` (:func:`runs_table`, with the typed :data:`RUNS_SCHEMA`) get the same record. A report is
untrusted once on disk: over :data:`MAX_REPORT_BYTES`, not JSON or not an object is refused with the reason,
and every field is converted to its type (a wrong value becomes the field's empty value). Its HTML page and
``zan serve``'s ``/runs/{run_id}`` page render the same template (``schemas/templates/run_report_body.html``).
"""

from __future__ import annotations

import json
import re
import typing
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from schemas.changes import CLASSES, RunStatus

MAX_REPORT_BYTES = 32 * 1024 * 1024
RUN_ID = re.compile(r"^\d{8}T\d{9}Z-[0-9a-f]{6}$")  # ``runs.state.new_run_id``: sortable by start, random tail
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class StageResult:
    """What one stage did: returned by the stage, kept in the run's state, listed in its report."""

    stage: str
    read: int = 0  # what it took in (``units`` says what: files, documents, chunks…)
    wrote: int = 0  # what it produced
    rejected: int = 0
    seconds: float = 0.0
    units: str = ""  # «files → documents»

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunInfo:
    """What a run did; ``zan run --json`` prints it and Airflow tasks return it."""

    run_id: str
    status: RunStatus = RunStatus.RUNNING
    version: str | None = None
    scope: str = "full"
    documents: int = 0
    chunks: int = 0
    rejected: int = 0
    indexed: int = 0
    files: int = 0
    added: int = 0
    text_changed: int = 0
    metadata_changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    embedded: int = 0
    vector_writes: int = 0
    metadata_writes: int = 0
    home: str = ""
    chroma: str = ""
    embedder: str = ""
    error: str | None = None
    repairs: list[str] = field(default_factory=list)  # what the run found broken and fixed (a damaged index)
    repealed: int = 0  # acts a git source deleted since the last version: kept, marked repealed
    sources: list[str] = field(default_factory=list)  # what the run says of its git sources (commits, rewrites)
    seconds: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        """The record of ``data`` (a state file's, or a report's), each field converted to its type."""
        return cls(**_converted(cls, data))


@dataclass(frozen=True)
class RejectLine:
    """One reject as the report lists it (the ``rejects`` table has every column)."""

    stage: str = ""
    source_file: str | None = None
    doc_id: str | None = None
    reason: str = ""


@dataclass
class RunReport(RunInfo):
    """A run's report: its :class:`RunInfo`, its stages, what changed per change class, document type and
    source folder, identifier coverage, documents added/removed/changed, rejects, the extraction's audit."""

    started: str | None = None
    finished: str | None = None
    previous_version: str | None = None
    classes: dict[str, int] = field(default_factory=dict)
    by_doc_type: dict[str, dict[str, int]] = field(default_factory=dict)
    by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    coverage: dict[str, dict[str, float]] = field(default_factory=dict)
    documents_diff: dict[str, list[str]] = field(default_factory=dict)
    rejects: list[RejectLine] = field(default_factory=list)
    extraction: dict[str, Any] = field(default_factory=dict)  # enrich.audit's summary (:data:`EXTRACTION`)
    stages: list[StageResult] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any], rejects: int | None = None) -> RunReport:
        """The report ``data`` holds, typed; at most ``rejects`` reject lines (all when None)."""
        report = cls(**_converted(cls, data))
        if rejects is not None:
            report.rejects = report.rejects[: max(0, rejects)]
        return report

    @classmethod
    def of(cls, info: RunInfo, **sections: Any) -> RunReport:
        """The report of the run ``info`` says, with these sections."""
        return cls(**{f.name: getattr(info, f.name) for f in fields(RunInfo)}, **sections)

    @classmethod
    def unreadable(cls, run_id: str, why: str) -> RunReport:
        """A report that could not be read, listed with the reason (status ``unreadable``)."""
        return cls(run_id=run_id, status=UNREADABLE, error=why, classes=dict.fromkeys(CLASSES, 0))

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, indent=1, default=str)

    def html(self) -> str:
        """The report as a self-contained page (the same body ``zan serve`` shows at ``/runs/{run_id}``)."""
        page: str = templates().get_template("run_report.html").render(report=self, view=report_view(self))
        return page


UNREADABLE: Any = "unreadable"  # a status no run ends with: the history lists a report it could not read

# extraction: the audit's summary (``runs.report.extraction_summary``), each part's type
EXTRACTION: dict[str, Any] = {
    "parsers": dict[str, int],
    "unexplained_heading_lines": int,
    "gaps": dict[str, int],
    "missing_fields": dict[str, list[str]],
    "notices": dict[str, list[str]],
    "conflicts": list[dict[str, str | None]],
}


def read_report(path: Path, rejects: int | None = None) -> RunReport:
    """The report at ``path`` (the one reader of run reports), or a :meth:`RunReport.unreadable` one that says
    why it could not be read."""
    try:
        size = path.stat().st_size
        if size > MAX_REPORT_BYTES:
            return RunReport.unreadable(path.stem, f"report is {size} bytes, over {MAX_REPORT_BYTES}")
        data = json.loads(path.read_text("utf-8"))
    except OSError as exc:
        return RunReport.unreadable(path.stem, f"cannot be read: {exc.strerror or exc}")
    except ValueError as exc:
        return RunReport.unreadable(path.stem, f"report does not parse: {exc}")
    if not isinstance(data, dict):
        return RunReport.unreadable(path.stem, "report is not a JSON object")
    return RunReport.from_dict(data | {"run_id": data.get("run_id") or path.stem}, rejects)


def report_paths(home: Path) -> list[Path]:
    """The run reports under ``HOME/runs``, newest first: only files named by a run id (``golden.json``, which
    the DAG's golden check keeps beside them, is not one)."""
    folder = home / "runs"
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.glob("*.json") if RUN_ID.match(p.stem)), reverse=True)


# --- the runs view of zan sql ---------------------------------------------------------------------------


def runs_schema() -> Any:
    """The ``runs`` view's Arrow schema: every :class:`RunReport` field, typed (pyarrow imported on use)."""
    import pyarrow as pa

    counts = pa.struct([pa.field(c, pa.int64()) for c in CLASSES])
    arrow = {
        str: pa.string(),
        int: pa.int64(),
        float: pa.float64(),
        list[str]: pa.list_(pa.string()),
        dict[str, float]: pa.map_(pa.string(), pa.float64()),
        dict[str, str]: pa.map_(pa.string(), pa.string()),
        dict[str, int]: counts,
        dict[str, dict[str, int]]: pa.map_(pa.string(), counts),
        dict[str, dict[str, float]]: pa.map_(pa.string(), pa.map_(pa.string(), pa.float64())),
        dict[str, list[str]]: pa.map_(pa.string(), pa.list_(pa.string())),
        list[RejectLine]: pa.list_(_struct(RejectLine)),
        list[StageResult]: pa.list_(_struct(StageResult)),
        dict[str, Any]: pa.string(),  # the extraction's audit: JSON text (json_extract reads it)
    }
    return pa.schema([pa.field(name, arrow[_plain(kind)]) for name, kind in _types(RunReport).items()])


def _struct(cls: type) -> Any:
    """A record class's fields as an Arrow struct (str, int and float fields)."""
    import pyarrow as pa

    scalar = {str: pa.string(), int: pa.int64(), float: pa.float64()}
    return pa.struct([(name, scalar[_plain(kind)]) for name, kind in _types(cls).items()])


def runs_table(reports: list[RunReport]) -> Any:
    """``reports`` as one Arrow table of :func:`runs_schema` (the ``runs`` view)."""
    import pyarrow as pa

    schema = runs_schema()
    rows = []
    for report in reports:
        row = report.as_dict()
        row["status"] = str(report.status)
        row["classes"] = {c: report.classes.get(c, 0) for c in CLASSES}
        for name in ("by_doc_type", "by_source"):
            row[name] = [(k, {c: v.get(c, 0) for c in CLASSES}) for k, v in getattr(report, name).items()]
        for name in ("seconds", "outputs", "documents_diff"):
            row[name] = list(row[name].items())
        row["coverage"] = [(k, list(v.items())) for k, v in report.coverage.items()]
        row["extraction"] = json.dumps(report.extraction, ensure_ascii=False) if report.extraction else None
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


# --- the page ---------------------------------------------------------------------------------------------


@cache
def templates() -> Any:
    """The Jinja2 environment of the report's templates (autoescaped); ``zan serve`` adds this folder to its
    own loader, so both render the same body."""
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)


def report_view(report: RunReport) -> dict[str, Any]:
    """What the report's template shows beyond the record: its summary lines and charts."""
    from schemas.charts import stacked_bars

    by_type = report.by_doc_type
    changes = {str(c): [by_type[t].get(c, 0) for t in by_type] for c in CLASSES}
    summary = [
        ("status", report.status),
        ("version", report.version),
        ("previous version", report.previous_version),
        ("scope", report.scope),
        ("documents", report.documents),
        ("chunks", report.chunks),
        ("texts embedded", report.embedded),
        ("vector writes", report.vector_writes),
        ("metadata-only writes", report.metadata_writes),
        ("rejected", report.rejected),
        ("error", report.error),
    ]
    return {
        "summary": [(k, "" if v is None else v) for k, v in summary],
        "classes": [str(c) for c in CLASSES],
        "coverage_types": list(report.coverage),
        "coverage_fields": list(dict.fromkeys(f for v in report.coverage.values() for f in v)),
        "charts": [
            stacked_bars("Chunks by change class, per document type", list(by_type), changes),
            stacked_bars(
                "Seconds per stage", list(report.seconds), {"seconds": list(report.seconds.values())}, unit=" s"
            ),
        ],
    }


# --- conversion -------------------------------------------------------------------------------------------


@cache
def _types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _plain(kind: Any) -> Any:
    """``X | None`` as ``X``; ``RunStatus`` as ``str``."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) in (typing.Union, type(int | None)) and len(args) == 1:
        kind = args[0]
    return str if kind is RunStatus else kind


def _converted(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data``'s values for ``cls``'s fields, each converted to the field's type (unknown keys dropped)."""
    out: dict[str, Any] = {}
    for name, kind in _types(cls).items():
        if name in data:
            out[name] = _convert(kind, data[name], name)
    return out


def _convert(kind: Any, value: Any, name: str = "") -> Any:  # noqa: PLR0911 - one branch per type
    optional = type(None) in typing.get_args(kind)
    if value is None and optional:
        return None
    kind = _plain(kind) if name != "status" else RunStatus
    if kind is RunStatus:
        return RunStatus(value) if value in set(RunStatus) else (UNREADABLE if value == UNREADABLE else str(value))
    if name == "extraction":
        return {k: _convert(t, value.get(k)) for k, t in EXTRACTION.items()} if isinstance(value, dict) else {}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind in (int, float):
        try:
            return kind(value or 0)
        except (TypeError, ValueError):
            return kind(0)
    if kind is str:
        return "" if value is None else str(value)
    if origin is list:
        items = value if isinstance(value, list) else []
        if args[0] in (RejectLine, StageResult):
            return [args[0](**_converted(args[0], v)) for v in items if isinstance(v, dict)]
        return [_convert(args[0], v) for v in items]
    if origin is dict:
        pairs = value.items() if isinstance(value, dict) else ()
        return {str(k): _convert(args[1], v) for k, v in pairs}
    return value
