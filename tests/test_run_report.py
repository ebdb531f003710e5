"""The run report as one typed record (issue 46): each stage says what it read, wrote and rejected and its
seconds (``StageResult``), the report is built from them, written once, and read back through one reader by
the run history, the ``runs`` view of ``zan sql`` (typed columns) and ``zan serve``'s ``/runs/{run_id}``, whose
body is the template the report's own file is rendered with. A report on disk is untrusted: a wrong value
becomes its field's empty value, and what cannot be read is listed with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from enrich.query import connect
from lookup.run_history import RunHistory
from runs.pipeline import run
from schemas import run_report
from schemas.run_report import RunReport, StageResult, read_report
from serve.app import ServeConfig, create_app
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunReport]:
    """A home after one run of the bundled corpus with two workers (the embed and word-index stages beside
    the index stage), and that run's report."""
    home = tmp_path_factory.mktemp("report") / "home"
    info = run([SAMPLE], home, workers=2)
    return home, read_report(home / "runs" / f"{info.run_id}.json")


def test_each_stage_says_what_it_read_wrote_and_rejected(ran: tuple[Path, RunReport]) -> None:
    home, report = ran
    by = {s.stage: s for s in report.stages}
    assert [s.stage for s in report.stages][:3] == ["extract", "registry", "enrich"]
    assert {"embed", "lexical", "index", "validate", "publish"} <= set(by), list(by)
    assert by["extract"].read == report.files and by["extract"].units == "files → documents"
    assert by["extract"].rejected == sum(1 for r in report.rejects if r.stage == "extract")
    assert by["registry"].rejected == sum(1 for r in report.rejects if r.stage == "registry") > 0
    assert by["registry"].read == by["extract"].wrote and by["registry"].wrote == report.documents
    assert by["enrich"].wrote == report.chunks == by["publish"].read == by["validate"].read
    assert by["index"].wrote == report.vector_writes + report.metadata_writes > 0
    assert by["embed"].wrote == report.embedded and by["lexical"].wrote == report.chunks
    assert all(s.seconds >= 0 for s in report.stages) and by["registry"].seconds == report.seconds["registry"]
    on_disk = json.loads((home / "runs" / f"{report.run_id}.json").read_text("utf-8"))
    assert RunReport.from_dict(on_disk) == report and json.loads(report.to_json()) == on_disk
    assert on_disk["stages"][0] == StageResult(**on_disk["stages"][0]).as_dict()


def test_the_one_reader_types_every_field_and_says_what_it_cannot_read(
    ran: tuple[Path, RunReport], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, report = ran
    hostile = report.as_dict() | {
        "documents": "many",
        "classes": [1, 2],
        "seconds": {"index": "fast", "enrich": 2},
        "rejects": "none",
        "stages": [{"stage": 3, "read": "x", "unknown": 1}, "not a stage"],
        "status": "exploded",
        "extraction": {"parsers": {"adilet": "7"}, "gaps": None},
        "injected": "<script>",
    }
    got = RunReport.from_dict(hostile)
    assert (got.documents, got.classes, got.seconds, got.rejects) == (0, {}, {"index": 0.0, "enrich": 2.0}, [])
    assert got.stages == [StageResult("3")] and got.status == "exploded" and not hasattr(got, "injected")
    assert got.extraction["parsers"] == {"adilet": 7} and got.extraction["gaps"] == {}
    folder = tmp_path / "runs"
    folder.mkdir()
    names = {"20261201T000000000Z-aaaaaa": "[1, 2]", "20261202T000000000Z-bbbbbb": "{not json"}
    for name, text in names.items():
        (folder / f"{name}.json").write_text(text, "utf-8")
    (folder / "golden.json").write_text("{}", "utf-8")  # the golden check's file: not a run
    (folder / "20261203T000000000Z-cccccc.json").write_text(json.dumps(hostile | {"run_id": None}), "utf-8")
    runs = RunHistory(tmp_path).runs()
    assert [r.run_id for r in runs] == ["20261203T000000000Z-cccccc", *sorted(names, reverse=True)]
    assert [r.status for r in runs[1:]] == ["unreadable", "unreadable"]
    assert "does not parse" in str(runs[1].error) and "not a JSON object" in str(runs[2].error)
    monkeypatch.setattr(run_report, "MAX_REPORT_BYTES", 10)
    assert "over 10" in str(read_report(folder / "20261203T000000000Z-cccccc.json").error)


def test_the_runs_view_is_typed_and_reads_what_the_history_reads(ran: tuple[Path, RunReport], tmp_path: Path) -> None:
    source, report = ran
    home = tmp_path / "home"
    shutil.copytree(source, home)
    con = connect(home)
    types = con.execute(
        "SELECT typeof(documents), typeof(seconds), typeof(classes), typeof(stages), typeof(rejects) FROM runs"
    ).fetchone()
    assert types is not None and types[0] == "BIGINT" and types[1] == "MAP(VARCHAR, DOUBLE)", types
    assert types[2].startswith("STRUCT(added BIGINT") and types[3].startswith('STRUCT(stage VARCHAR, "read" BIGINT')
    stage = con.execute("SELECT stages[1].stage, stages[1].wrote, seconds['registry'] FROM runs").fetchone()
    assert stage == ("extract", report.stages[0].wrote, report.seconds["registry"])
    broken = report.as_dict() | {"run_id": "20991231T000000000Z-ffffff", "documents": "many", "seconds": [1]}
    (home / "runs" / "20991231T000000000Z-ffffff.json").write_text(json.dumps(broken), "utf-8")
    rows = connect(home).execute("SELECT run_id, documents, cardinality(seconds) FROM runs ORDER BY run_id").fetchall()
    assert rows == [(report.run_id, report.documents, len(report.seconds)), ("20991231T000000000Z-ffffff", 0, 0)]


def test_one_runs_page_is_the_body_of_its_report_file(ran: tuple[Path, RunReport]) -> None:
    home, report = ran
    written = (home / "runs" / f"{report.run_id}.html").read_text("utf-8")
    with TestClient(create_app(ServeConfig(home))) as client:
        listing = client.get("/runs").text
        page = client.get(f"/runs/{report.run_id}")
        missing = [client.get(f"/runs/{name}").status_code for name in ("golden", "..%2F..%2Fetc", "x" * 300)]
    assert f'href="/runs/{report.run_id}"' in listing
    assert page.status_code == 200 and missing == [404, 404, 404]
    start = written.index('<section class="run-report"')
    body = written[start : written.index("</section>", start)]
    assert body in page.text  # the same template, with the site's header and stylesheet around it
    assert 'id="stages"' in body and "files → documents" in body and body.count("<svg") == 2
