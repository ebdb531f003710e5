"""The Airflow DAGs against a real Airflow 3.3 in-process (SQLite metadata DB set up by conftest) and a real
``chroma run`` server: the three kinds of DAG test (import, parse hygiene, structure) and ``dag.test()`` end
to end on the bundled corpus, plus ``airflow dags test`` as the README tells it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow.parquet as pq
import pytest

from enrich.query import connect
from schemas.published import current_version, published_file
from tests.conftest import ROOT, SAMPLE, chroma_server, corpus_file
from vectors.index import COLLECTION, open_client

pytestmark = pytest.mark.airflow  # every test here runs Airflow (left out of make test-fast)

DAGS = ROOT / "dags"
STAGES = ["plan", "extract", "registry", "enrich", "plan_embed", "embed", "index", "validate", "publish", "report",
          "finish"]  # fmt: skip


@pytest.fixture(scope="module")
def metadata_db() -> None:
    from airflow.utils import db

    db.initdb()


def parsed() -> Any:
    """The DAG folder parsed afresh, as a worker would. The shared task module reads its settings when it is
    imported, the assets' URIs among them (from ZAN_HOME), and Airflow binds an asset's name to one URI: every
    test parses before it points ZAN_HOME at its own folder (the tasks read it again when they run), so the
    assets keep one URI in the tests' metadata database as they do in a deployment."""
    from airflow.dag_processing.dagbag import DagBag

    sys.modules.pop("zan_tasks", None)
    return DagBag(dag_folder=str(DAGS))


@pytest.fixture
def dagbag(metadata_db: None) -> Any:
    """Parsed afresh per test (:func:`parsed`): ``dag.test(run_conf=…)`` also leaves its conf in the params."""
    return parsed()


def test_dags_import_without_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"zan_reextract", "zan_backfill", "zan_eval"}
    for dag in dagbag.dags.values():
        assert dag.doc_md and "zan" in dag.tags and dag.max_active_runs == 1
        assert all(t.owner == "zan" for t in dag.tasks)


def test_parse_hygiene_no_network_no_db_no_heavy_imports() -> None:
    """Parse the DAG files with sockets and database connections forbidden; the library stays unimported."""
    probe = """
import json, runpy, socket, sys
def forbidden(*args, **kwargs):
    raise RuntimeError("network or database access while parsing a DAG file")
socket.socket.connect = forbidden
socket.create_connection = forbidden
import sqlalchemy.engine
sqlalchemy.engine.Engine.connect = forbidden
for path in sys.argv[1:]:
    runpy.run_path(path)
heavy = {"chromadb", "duckdb", "enrich", "extractors", "lookup", "schemas", "httpx", "lxml"}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe, str(DAGS / "zan_reextract.py"), str(DAGS / "zan_backfill.py")],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded if m.split(".")[0] in {"chromadb", "duckdb", "enrich", "extractors", "lookup"}]


def _edges(dag: Any) -> set[tuple[str, str]]:
    return {(t.task_id, d) for t in dag.tasks for d in t.downstream_task_ids}


def test_structure_of_both_dags(dagbag: Any) -> None:
    reextract, backfill = dagbag.get_dag("zan_reextract"), dagbag.get_dag("zan_backfill")
    assert [t.task_id for t in reextract.topological_sort()] in (["fetch", "update_scope", *STAGES],
                                                                 ["update_scope", "fetch", *STAGES])  # fmt: skip
    assert [t.task_id for t in backfill.topological_sort()] == STAGES
    chain = set(zip(STAGES, STAGES[1:], strict=False))
    data = {("plan", "finish")} | {("enrich", t) for t in ("index", "validate", "publish", "report")}  # state path
    assert _edges(backfill) == chain | data
    assert _edges(reextract) == chain | data | {("fetch", "plan"), ("update_scope", "plan")}
    assert reextract.get_task("update_scope").is_mapped
    # a run the repeal gate or the shrink gate refused goes on when triggered with allow_shrink (off by default)
    assert reextract.params["allow_shrink"] is False and backfill.params["allow_shrink"] is False
    assert reextract.get_task("finish").is_teardown and reextract.get_task("extract").is_mapped
    assert reextract.get_task("embed").is_mapped
    assert {a.name for a in reextract.get_task("publish").outlets} == {"zan_registry", "zan_index"}
    assert reextract.get_task("embed").pool == "zan_embed"  # one embedding service or one host's cores, shared
    assert all(t.on_failure_callback for t in reextract.tasks)  # failures go where operators look
    assert reextract.schedule == "@weekly" and backfill.schedule is None
    assert set(backfill.params) == {"doc_ids", "sources", "since", "force_reembed", "dry_run", "allow_shrink"}
    assert reextract.get_task("plan").retries == 2


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, str]]:
    """The compose topology natively: a real Chroma server named by the Airflow connection ``zan_chroma`` (as
    an operator defines it; no ZAN_CHROMA_URL), a data dir and a source folder, as the tasks' environment
    names them."""
    src, home = tmp_path / "sources", tmp_path / "zan"
    shutil.copytree(SAMPLE, src)
    with chroma_server(tmp_path / "chroma-server") as url:
        monkeypatch.setenv("ZAN_HOME", str(home))
        monkeypatch.setenv("ZAN_SOURCES", str(src))
        monkeypatch.delenv("ZAN_CHROMA_URL", raising=False)
        monkeypatch.setenv("AIRFLOW_CONN_ZAN_CHROMA", url)
        monkeypatch.setenv("ZAN_SHARDS", "3")
        monkeypatch.delenv("ZAN_LANDING", raising=False)
        yield src, home, url


def test_the_assets_name_where_the_registry_and_the_index_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``zan_registry`` is the home's ``CURRENT``, the file a publish moves to the new version; ``zan_index``
    the embedded index under the home, or the server's collection when ZAN_CHROMA_URL names one."""
    from runs.pipeline import run

    sys.path.insert(0, str(DAGS))
    home = tmp_path / "zan"
    monkeypatch.setenv("ZAN_HOME", str(home))
    monkeypatch.delenv("ZAN_CHROMA_URL", raising=False)
    sys.modules.pop("zan_tasks", None)
    try:
        import zan_tasks

        info = run([SAMPLE / "standards"], home)
        assert Path(urlparse(zan_tasks.REGISTRY_ASSET.uri).path).read_text("utf-8").strip() == info.version
        assert Path(urlparse(zan_tasks.INDEX_ASSET.uri).path) == home / "chroma" and (home / "chroma").is_dir()
        monkeypatch.setenv("ZAN_CHROMA_URL", "http://chroma-proxy:8000/")
        sys.modules.pop("zan_tasks", None)
        import zan_tasks as reread

        assert reread.INDEX_ASSET.uri == f"http://chroma-proxy:8000/{COLLECTION}"
    finally:
        sys.modules.pop("zan_tasks", None)  # the next parse reads its own environment


def test_connections_win_over_the_environment_which_stays_the_local_default(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(DAGS))
    import zan_tasks

    monkeypatch.setenv("ZAN_CHROMA_URL", "http://chroma-proxy:8000")
    monkeypatch.setenv("ZAN_EMBEDDER", "hash")
    monkeypatch.delenv("AIRFLOW_CONN_ZAN_CHROMA", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_ZAN_EMBEDDINGS", raising=False)
    assert (zan_tasks.chroma_url(), zan_tasks.embedder_spec()) == ("http://chroma-proxy:8000", "hash")
    monkeypatch.setenv(
        "AIRFLOW_CONN_ZAN_CHROMA",
        json.dumps(
            {"conn_type": "http", "host": "chroma.internal", "port": 8443, "schema": "https", "password": "t0ken-xyz"}
        ),
    )
    monkeypatch.setenv("AIRFLOW_CONN_ZAN_EMBEDDINGS", json.dumps(
        {"conn_type": "http", "host": "gpu-box", "port": 8080, "password": "s3cret-key",
         "extra": {"path": "/v1/", "model": "bge-m3", "batch": 32}}))  # fmt: skip
    monkeypatch.setenv("ZAN_CHROMA_TOKEN", "from-the-environment")  # restored when the test ends
    monkeypatch.setenv("ZAN_EMBED_API_KEY", "from-the-environment")
    assert zan_tasks.chroma_url() == "https://chroma.internal:8443"
    assert zan_tasks.embedder_spec() == "openai:http://gpu-box:8080/v1?model=bge-m3&batch=32"
    zan_tasks.use_connection_secrets()
    assert (os.environ["ZAN_CHROMA_TOKEN"], os.environ["ZAN_EMBED_API_KEY"]) == ("t0ken-xyz", "s3cret-key")


def _hashes(home: Path) -> dict[str, tuple[str, str]]:
    table = pq.read_table(
        published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash", "meta_hash"]
    )
    ids, texts, metas = (table.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    return {i: (t, m) for i, t, m in zip(ids, texts, metas, strict=True)}


def _the_golden_set_is_checked_after_the_publish(dagbag: Any, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zan_eval (scheduled on the registry asset) answers the golden set from the published version and keeps
    its figures; a drop (here: a row now expecting another act, so its answer is wrong) fails it, loudly, and
    the baseline stays the last good one."""
    evaluation = dagbag.get_dag("zan_eval")
    assert "zan_registry" in repr(evaluation.timetable.asset_condition)
    assert evaluation.test().state == "success"
    kept = json.loads((home / "runs" / "golden.json").read_text("utf-8"))
    assert (kept["version"], kept["hit@5"], kept["wrong_document"]) == ("v000001", 1.0, 0)
    rows = (ROOT / "data" / "golden" / "golden.jsonl").read_text("utf-8").splitlines()
    rows[0] = rows[0].replace('"v2400035612"', '"v1500010907"', 1)  # A01 «Приказ МТСЗН №211»: now «expects» another
    assert rows[0] != (ROOT / "data" / "golden" / "golden.jsonl").read_text("utf-8").splitlines()[0]
    worse = home.parent / "golden-worse.jsonl"
    worse.write_text("\n".join(rows) + "\n", "utf-8")
    monkeypatch.setenv("ZAN_GOLDEN", str(worse))
    assert dagbag.get_dag("zan_eval").test().state == "failed"
    assert json.loads((home / "runs" / "golden.json").read_text("utf-8")) == kept
    from lookup.run_history import RunHistory

    [failure] = RunHistory(home).task_failures()  # the failure callback: on zan serve's /runs, beside the runs
    assert (failure["dag_id"], failure["task_id"]) == ("zan_eval", "check_golden")
    assert "GoldenDropped" in (failure["error"] or "") and "hit@5" in (failure["error"] or "")


def test_reextract_then_backfill_end_to_end(
    dagbag: Any, deployment: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, home, url = deployment
    first = dagbag.get_dag("zan_reextract").test()
    assert first.state == "success"
    assert current_version(home) == "v000001" and not (home / ".lease").exists()
    from schemas.published import published_dir, read_manifest

    assert read_manifest(published_dir(home)).embedder_spec == "e5"  # the DAGs' default: a real model  # type: ignore[arg-type]
    shards = [t for t in first.get_task_instances() if t.task_id == "embed"]
    assert len(shards) == 3 and {t.state for t in shards} == {"success"}  # ZAN_SHARDS=3, mapped
    parts = list((home / "vectors").rglob("part-*-s*.keys.npy"))
    assert {p.name.split("-s")[1][0] for p in parts} == {"0", "1", "2"}  # each shard stored its own parts
    served = open_client(chroma_url=url).get_collection(COLLECTION)
    assert served.count() == len(_hashes(home)) == 81 and not (home / "chroma").exists()
    from lookup.route import Lookup

    routed = Lookup.open(home, chroma_url=url).route("ст. 182 ТК РК")  # the query side on the same server
    assert routed.status == "exact" and routed.chunks and all("182" in c.article_labels for c in routed.chunks)
    _the_golden_set_is_checked_after_the_publish(dagbag, home, monkeypatch)

    before = _hashes(home)
    mchs = src / "adilet/rus/V2100022334.html"
    mchs.write_text(mchs.read_text("utf-8").replace(">Действующий", ">Утративший силу"), "utf-8")
    code = src / "adilet/rus/K1500000414.html"
    code.write_text(code.read_text("utf-8").replace("Статья 156. Стороны", "Статья 156. (ред.) Стороны"), "utf-8")
    backfill = dagbag.get_dag("zan_backfill").test(run_conf={"doc_ids": ["v2100022334"]})
    assert backfill.state == "success" and current_version(home) == "v000002"
    after = _hashes(home)
    changed = {c for c in before if before[c] != after.get(c)}
    assert changed == {c for c in before if c.startswith("v2100022334:")}  # the Labour Code edit waits
    report = json.loads((home / "versions/v000002/report.json").read_text("utf-8"))
    assert (report["scope"], report["metadata_changed"], report["embedded"]) == ("only", 4, 0)


def test_backfill_params_are_validated(dagbag: Any, deployment: tuple[Path, Path, str]) -> None:
    from airflow.sdk.definitions.param import ParamValidationError

    backfill = dagbag.get_dag("zan_backfill")
    with pytest.raises(ParamValidationError, match="doc_ids"):
        backfill.test(run_conf={"doc_ids": "v2100022334"})
    with pytest.raises(ParamValidationError, match="dry_run"):
        backfill.test(run_conf={"dry_run": "yes"})


def test_a_terminal_error_fails_fast_and_keeps_the_published_version(
    dagbag: Any, deployment: tuple[Path, Path, str], tmp_path: Path
) -> None:
    src, home, url = deployment
    assert dagbag.get_dag("zan_reextract").test().state == "success"
    empty = src / "empty"
    empty.mkdir()
    failed = dagbag.get_dag("zan_backfill").test(run_conf={"sources": [str(empty)]})
    assert failed.state == "failed"
    plan = next(ti for ti in failed.get_task_instances() if ti.task_id == "plan")
    assert plan.state == "failed" and plan.try_number == 1  # no retries for a terminal error
    failures = json.loads((home / "runs" / "task_failures.jsonl").read_text("utf-8").splitlines()[-1])
    assert (failures["task_id"], failures["try_number"]) == ("plan", "1") and "no source files" in failures["error"]
    assert current_version(home) == "v000001" and not (home / ".lease").exists()
    reports = [json.loads(p.read_text("utf-8")) for p in sorted((home / "runs").glob("*.json"))]
    assert reports[-1]["status"] == "failed" and "no source files under" in reports[-1]["error"]


@pytest.mark.parametrize("outside", ["/etc", "{tmp}/elsewhere", "{src}/../elsewhere", "{src}/link-out"])
def test_backfill_sources_are_confined_to_the_configured_roots(
    dagbag: Any, deployment: tuple[Path, Path, str], tmp_path: Path, outside: str
) -> None:
    src, home, _ = deployment
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    (tmp_path / "elsewhere" / "x.json").write_text('{"_id": "1", "title": "t", "text": "t"}', "utf-8")
    (src / "link-out").symlink_to(tmp_path / "elsewhere")
    path = outside.format(tmp=tmp_path, src=src)
    failed = dagbag.get_dag("zan_backfill").test(run_conf={"sources": [path]})
    plan = next(ti for ti in failed.get_task_instances() if ti.task_id == "plan")
    assert failed.state == "failed" and plan.state == "failed" and plan.try_number == 1
    assert current_version(home) is None and not (home / ".lease").exists()  # nothing was read or written


def test_airflow_dags_test_cli_as_the_readme_says(tmp_path: Path) -> None:
    """``AIRFLOW_HOME=… airflow db migrate && airflow dags test zan_reextract`` on the bundled corpus."""
    airflow = Path(sys.executable).parent / "airflow"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "ZAN_HOME": str(tmp_path / "zan"),
        "ZAN_SOURCES": str(SAMPLE),
    }
    env.pop("ZAN_CHROMA_URL", None)
    for args in (["db", "migrate"], ["dags", "test", "zan_reextract"]):
        done = subprocess.run([str(airflow), *args], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    assert current_version(tmp_path / "zan") == "v000001"


def test_the_scope_update_task_follows_a_local_bare_repository(
    metadata_db: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kazakhstan-law scope as the scheduled run meets it: a bare repository (file://) with real acts and real
    commits made here; the mapped update task clones it, then fast-forwards to a new commit, and each run reads
    the clone."""
    import shutil as sh

    from tests.test_kazlaw_git import ACCIDENTS, RESCUERS, git

    if sh.which("git") is None:
        pytest.skip("git is not installed")
    work, bare, clone, home = (
        tmp_path / "work",
        tmp_path / "ministerial.git",
        tmp_path / "scopes" / "ministerial",
        tmp_path / "zan",
    )
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for act in (ACCIDENTS, RESCUERS):
        sh.copytree(corpus_file(act), work / act.split("/", 2)[2])
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "two acts")
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    monkeypatch.setenv("ZAN_SOURCES", "")
    monkeypatch.setenv("ZAN_EMBEDDER", "hash")
    monkeypatch.setenv("ZAN_SHARDS", "1")
    monkeypatch.delenv("ZAN_CHROMA_URL", raising=False)
    monkeypatch.delenv("ZAN_LANDING", raising=False)
    monkeypatch.setenv("ZAN_GIT_SCOPES", f"ministerial=file://{bare}@{clone}")  # read at parse: one task a scope
    reextract = parsed().get_dag("zan_reextract")  # before ZAN_HOME points here (see parsed)
    monkeypatch.setenv("ZAN_HOME", str(home))
    first = reextract.test()
    assert first.state == "success" and (clone / ".git").is_dir()
    updates = [t for t in first.get_task_instances() if t.task_id == "update_scope"]
    assert len(updates) == 1 and updates[0].state == "success"
    with connect(home) as con:
        assert sorted(r[0] for r in con.sql("SELECT doc_id FROM registry").fetchall()) == ["v1500010325", "v1800017233"]
    sh.rmtree(work / RESCUERS.split("/", 2)[2])
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "repeal order 507", when="2026-03-01T09:00:00")
    git(work, "push", "-q", str(bare), "main")
    second = reextract.test()
    assert second.state == "success" and not (clone / RESCUERS.split("/", 2)[2]).exists()
    with connect(home) as con:
        rows = dict(con.sql("SELECT doc_id, status FROM registry").fetchall())
    assert rows == {"v1500010325": "in_force", "v1800017233": "repealed"}
