"""``zan serve``: the API's contract (one JSON with ``zan lookup --json``), its bounds and security, the pages
as HTML, and a hot version switch under load against a real uvicorn process and a real ``chroma run``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from zan_client.models import LookupAnswer

from serve.app import check_binding, create_app
from serve.served import ServeConfig
from tests.conftest import ROOT, SAMPLE, chroma_server, zan, zan_serve

GOLDEN = [ROOT / "data" / "golden" / name for name in ("golden.jsonl", "lineage_real.jsonl", "semantic.jsonl")]


def _rows() -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for path in GOLDEN for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_the_api_lookup_json_is_zan_lookup_json_for_every_golden_row(richest_run) -> None:  # type: ignore[no-untyped-def]
    _, home, _ = richest_run  # the real corpus's home (the bundled one without it: the same contract, other answers)
    rows = _rows()
    assert len(rows) > 150
    with TestClient(create_app(ServeConfig(home))) as client:
        for row in rows:
            served = client.get("/api/lookup", params={"q": row["query"]})
            assert served.status_code == 200, (row["id"], served.text)
            cli = zan("lookup", row["query"], "--home", str(home), "--json")
            assert cli.returncode == 0, (row["id"], cli.stderr)
            assert served.json() == json.loads(cli.stdout), row["id"]
            assert (
                LookupAnswer.model_validate_json(served.content).model_dump(mode="json", by_alias=True) == served.json()
            )
            assert served.headers["x-zan-version"] == served.json()["version"]


@pytest.fixture(scope="module")
def client(sample_run):  # type: ignore[no-untyped-def]
    _, home = sample_run
    with TestClient(create_app(ServeConfig(home))) as c:
        yield c


def test_the_three_orders_numbered_211_are_listed_as_candidates(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.get("/api/lookup", params={"q": "приказ 211"}).json()
    assert answer["status"] == "ambiguous"
    assert sorted(answer["matches"][0]["doc_ids"]) == ["v1500010907", "v2100022334", "v2400035612"]
    listed = client.get("/api/documents", params={"q": "приказ 211"}).json()
    assert sorted(d["doc_id"] for d in listed["documents"]) == ["v1500010907", "v2100022334", "v2400035612"]
    page = client.get("/", params={"q": "приказ 211"})
    assert page.status_code == 200 and page.text.count('class="candidate"') == 3
    assert "/documents/v2400035612" in page.text


def test_a_number_the_registry_lacks_is_refused_with_the_reason(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.get("/api/lookup", params={"q": "приказ 2119"}).json()
    assert answer["status"] == "not_found" and answer["chunks"] == [] and "НЕ НАЙДЕН" in answer["hint"]
    page = client.get("/", params={"q": "приказ 2119"}).text
    assert 'data-status="not_found"' in page and "НЕ НАЙДЕН" in page


def test_documents_filter_and_page(client) -> None:  # type: ignore[no-untyped-def]
    orders = client.get("/api/documents", params={"doc_type": "order"}).json()
    assert orders["total"] >= 5 and {d["doc_type"] for d in orders["documents"]} == {"order"}
    by_issuer = client.get("/api/documents", params={"issuer": "мтсзн"}).json()
    assert by_issuer["documents"] and all("МТСЗН" in d["issuer"] for d in by_issuer["documents"])
    assert client.get("/api/documents", params={"page": 0}).status_code == 422
    assert client.get("/api/documents", params={"q": "x" * 201}).status_code == 422
    html = client.get("/documents", params={"doc_type": "order"}).text
    assert html.count("<tr>") == orders["total"] + 1


def test_a_document_its_requisites_articles_and_versions(client) -> None:  # type: ignore[no-untyped-def]
    doc = client.get("/api/documents/v2400035612").json()
    assert doc["document"]["order_number"] == "211" and doc["document"]["issuer"] == "МТСЗН"
    assert doc["document"]["status"] in ("in_force", "updated", "unknown")
    assert doc["versions"] and doc["versions"][0]["how"] == "added"
    code = client.get("/api/documents/k1500000414").json()
    assert [a["article"] for a in code["articles"]][:2] == ["1", "2"] or code["articles"]
    page = client.get("/documents/v2400035612").text
    assert 'id="doc-status"' in page and "211" in page


def test_unknown_ids_are_404_and_never_reach_the_filesystem(client) -> None:  # type: ignore[no-untyped-def]
    for path in ("/api/documents/..%2F..%2Fetc%2Fpasswd", "/api/documents/nope", "/documents/..%2Fregistry.parquet",
                 "/api/documents/k1500000414/articles/..%2F..%2FCURRENT", "/api/documents/k1500000414/articles/9999"):  # fmt: skip
        got = client.get(path)
        assert got.status_code == 404, path
        assert "root:" not in got.text


def test_the_api_is_read_only_and_has_no_sql(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/openapi.json").json()
    methods = {m for ops in schema["paths"].values() for m in ops}
    assert methods == {"get"}
    assert set(schema["paths"]) == {"/api/lookup", "/api/documents", "/api/documents/{doc_id}",
                                    "/api/documents/{doc_id}/articles/{label}", "/api/documents/{doc_id}/history",
                                    "/api/runs", "/healthz", "/livez", "/readyz", "/metrics"}  # fmt: skip
    assert client.post("/api/lookup", json={"q": "x"}).status_code == 405
    # /mcp takes POSTs (JSON-RPC), and every tool there reads: each is annotated read-only to the client
    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                         headers={"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18",
                                  "Host": "127.0.0.1:8787"})  # fmt: skip
    assert listed.status_code == 200, listed.text
    tools = listed.json()["result"]["tools"]
    assert tools and all(t["annotations"]["readOnlyHint"] and not t["annotations"]["destructiveHint"] for t in tools)
    rebound = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                          headers={"Accept": "application/json", "Host": "evil.example"})  # fmt: skip
    assert rebound.status_code == 421  # a page on another name that resolves here (DNS rebinding) is refused
    assert client.get("/api/sql", params={"q": "DROP TABLE registry"}).status_code == 404


def test_inputs_are_bounded_as_the_cli_bounds_them(client) -> None:  # type: ignore[no-untyped-def]
    too_long = client.get("/api/lookup", params={"q": "x" * 2001})
    assert too_long.status_code == 400 and "limit is 2000" in too_long.json()["detail"]
    assert client.get("/api/lookup", params={"q": "ст. 15 ТК", "k_per_doc": 0}).status_code == 422
    assert client.get("/api/lookup", params={"q": "ст. 15 ТК", "k_per_doc": 101}).status_code == 422
    assert client.get("/api/lookup").status_code == 422


def test_health_metrics_and_runs(client) -> None:  # type: ignore[no-untyped-def]
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["version"].startswith("v")
    client.get("/api/lookup", params={"q": "приказ 211"})
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'zan_requests_total{route="/api/lookup",status="200"}' in text
    assert "zan_request_seconds_bucket" in text and f'zan_version_served{{version="{health["version"]}"}} 1.0' in text
    runs = client.get("/api/runs").json()
    assert runs["current_version"] == health["version"]
    run = runs["runs"][0]
    assert run["status"] == "published" and run["classes"]["added"] > 0 and "enrich" in run["seconds"]
    page = client.get("/runs").text
    assert page.count("<svg") >= 4


def test_tasks_that_failed_for_good_are_listed_beside_the_runs(client, sample_run) -> None:  # type: ignore[no-untyped-def]
    """What the DAGs' failure callback writes (``lookup.run_history.record_task_failure``) is in ``/api/runs``
    and on the ``/runs`` page, newest first; a line that does not parse is skipped, a link that is not http(s)
    is not made a link, and the file keeps a bounded tail."""
    from lookup import run_history
    from lookup.run_history import record_task_failure

    _, home = sample_run
    path = home / "runs" / run_history.TASK_FAILURES
    try:
        record_task_failure(home, {"dag_id": "zan_eval", "task_id": "check_golden", "run_id": "asset_triggered_1",
                                   "error": "GoldenDropped: hit@5 0.96 → 0.90 <script>x()</script>", "log_url": "javascript:alert(1)"})  # fmt: skip
        with path.open("a", encoding="utf-8") as handle:
            handle.write("{not json\n")
        record_task_failure(home, {"dag_id": "zan_reextract", "task_id": "update_scope", "map_index": 0,
                                   "error": "x" * 10_000, "log_url": "http://airflow.local/log"})  # fmt: skip
        listed = client.get("/api/runs").json()["task_failures"]
        assert [(f["dag_id"], f["task_id"]) for f in listed] == [("zan_reextract", "update_scope"),
                                                                   ("zan_eval", "check_golden")]  # fmt: skip
        assert len(listed[0]["error"]) == run_history.MAX_FAILURE_CHARS and listed[0]["map_index"] == "0"
        page = client.get("/runs").text
        assert "GoldenDropped: hit@5 0.96 → 0.90" in page and 'href="http://airflow.local/log"' in page
        assert "javascript:" not in page
        assert "<script>x()" not in page and "&lt;script&gt;x()" in page  # a message's markup is text, not markup
        for n in range(2 * run_history.MAX_TASK_FAILURES + 1):
            record_task_failure(home, {"task_id": f"t{n}"})
        assert len(path.read_text("utf-8").splitlines()) <= 2 * run_history.MAX_TASK_FAILURES
        assert client.get("/api/runs").json()["task_failures"][0]["task_id"] == f"t{2 * run_history.MAX_TASK_FAILURES}"
    finally:
        path.unlink(missing_ok=True)


def test_a_server_with_no_published_version_says_so_with_503(tmp_path: Path) -> None:
    with TestClient(create_app(ServeConfig(tmp_path / "empty"))) as c:
        health = c.get("/healthz")
        assert health.status_code == 503 and health.json()["reason"]
        assert c.get("/api/lookup", params={"q": "приказ 211"}).status_code == 503


def test_a_token_guards_every_request_but_health(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    with TestClient(create_app(ServeConfig(home, token="s3cret-token"))) as c:
        assert c.get("/healthz").status_code == 200
        for path in ("/api/lookup?q=приказ 211", "/metrics", "/", "/runs", "/openapi.json"):
            assert c.get(path).status_code == 401, path
            assert c.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
        good = c.get("/api/lookup", params={"q": "приказ 211"}, headers={"Authorization": "Bearer s3cret-token"})
        assert good.status_code == 200 and good.json()["status"] == "ambiguous"


def test_binding_beyond_loopback_needs_a_token() -> None:
    check_binding("127.0.0.1", None)
    check_binding("::1", None)
    check_binding("0.0.0.0", "a-token")
    with pytest.raises(ValueError, match="ZAN_SERVE_TOKEN"):
        check_binding("0.0.0.0", None)
    done = subprocess.run([sys.executable, "-m", "cli", "serve", "--host", "0.0.0.0", "--home", "/nonexistent"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "ZAN_SERVE_TOKEN": ""})  # fmt: skip
    assert done.returncode == 1 and "ZAN_SERVE_TOKEN" in done.stderr


# --- the hot switch under load -----------------------------------------------------------------------------

GOST = "ГОСТ 12.0.004-2015"  # in the first version, removed in the second, back after the rollback
QUESTIONS = [GOST, "приказ 211", "ст. 15 ТК РК", "обучение работников безопасности труда",
             "как проводить оценку профессиональных рисков"]  # fmt: skip


@pytest.mark.server
def test_sixteen_clients_see_no_failure_and_no_mixed_version_across_a_publish_and_a_rollback(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(SAMPLE, source)
    home = tmp_path / "home"
    with chroma_server(tmp_path / "chroma") as chroma_url:
        first = zan("run", "--home", str(home), "--source", str(source), "--chroma-url", chroma_url, "--json")
        assert first.returncode == 0, first.stderr
        v1 = json.loads(first.stdout.splitlines()[-1])["version"]
        with zan_serve(home, "--chroma-url", chroma_url) as base:
            answers: list[tuple[str, dict]] = []  # type: ignore[type-arg]
            failures: list[str] = []
            stop = threading.Event()

            def client(n: int) -> None:
                with httpx.Client(base_url=base, timeout=30) as http:
                    i = n
                    while not stop.is_set():
                        q = QUESTIONS[i % len(QUESTIONS)]
                        i += 1
                        try:
                            r = http.get("/api/lookup", params={"q": q})
                        except httpx.HTTPError as exc:
                            failures.append(f"{q}: {exc!r}")
                            continue
                        if r.status_code != 200:
                            failures.append(f"{q}: {r.status_code} {r.text[:200]}")
                        else:
                            answers.append((q, r.json()))

            threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
            started = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(3)
            (source / "standards" / "gost" / "GOST_12.0.004-2015.txt").unlink()
            second = zan("run", "--home", str(home), "--source", str(source), "--chroma-url", chroma_url, "--json",
                         "--allow-shrink")  # fmt: skip
            assert second.returncode == 0, second.stderr
            v2 = json.loads(second.stdout.splitlines()[-1])["version"]
            assert v2 != v1
            time.sleep(4)
            back = zan("rollback", v1, "--home", str(home), "--chroma-url", chroma_url, "--json")
            assert back.returncode == 0, back.stderr
            time.sleep(max(0.0, 30 - (time.monotonic() - started)))
            stop.set()
            for t in threads:
                t.join(timeout=60)
            metrics = httpx.get(f"{base}/metrics").text
    assert not failures, failures[:5]
    assert len(answers) > 200
    seen = [a["version"] for _, a in answers]
    assert set(seen) == {v1, v2}
    # the version seen switched to v2 and back: answers in order of arrival go v1 … v2 … v1
    assert seen.index(v2) > 0 and any(v == v1 for v in seen[len(seen) - seen[::-1].index(v2) :])
    assert "zan_version_switches_total 2.0" in metrics
    by_version: dict[str, Counter[str]] = {v1: Counter(), v2: Counter()}
    for q, answer in answers:
        if q == GOST:  # never an answer that mixes: v1 has the standard, v2 refuses it
            expected = "exact" if answer["version"] == v1 else "not_found"
            assert answer["status"] == expected, answer["version"]
            assert bool(answer["chunks"]) == (expected == "exact")
        if answer["status"] == "no_identifier":  # plain words: chunks only from documents of that version
            assert answer["chunks"] and (answer["version"] == v1 or all(not c["doc_id"].startswith("gost-")
                                                                        for c in answer["chunks"]))  # fmt: skip
        by_version[answer["version"]][answer["status"]] += 1
    assert by_version[v2]["not_found"] and by_version[v1]["exact"] and by_version[v1]["no_identifier"]
