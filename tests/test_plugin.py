"""Lumi plugs in: MCP over stdio and over HTTP (the SDK's own client), the typed answer on every surface, the
Python client, the LangChain and LlamaIndex retrievers over a real `zan serve`, and the operations
conventions (liveness, readiness, request ids, the access log, metrics, CORS, internal errors as 500)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient
from zan_client import ZanClient, ZanError
from zan_client.models import LookupAnswer

from serve.app import create_app
from serve.served import ServeConfig
from tests.conftest import ROOT, zan, zan_serve

TOKEN = "plug-in-token-0123456789"
TOOLS = {"lookup", "search", "read", "document", "history"}


# --- MCP ------------------------------------------------------------------------------------------------


async def _the_contract(client: Any) -> None:
    """What the issue asks of both transports: the tools listed; «приказ 211» ambiguous with 3 candidates;
    «ст. 182 ТК РК» exact with article 182's chunks; a number the registry lacks refused, no chunk."""
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    assert all(t.description and t.output_schema for t in tools.tools)

    ambiguous = (await client.call_tool("lookup", {"query": "приказ 211"})).structured_content
    assert ambiguous["status"] == "ambiguous"
    candidates = ambiguous["matches"][0]["candidates"]
    assert sorted(c["doc_id"] for c in candidates) == ["v1500010907", "v2100022334", "v2400035612"]
    assert {c["issuer"] for c in candidates} == {"МЭ", "МЧС", "МТСЗН"}

    exact = (await client.call_tool("lookup", {"query": "ст. 182 ТК РК", "k_per_doc": 3})).structured_content
    assert exact["status"] == "exact" and exact["chunks"]
    assert all(c["doc_id"] == "k1500000414" and "182" in c["article_labels"] for c in exact["chunks"])
    LookupAnswer.model_validate(exact)

    refused = (await client.call_tool("lookup", {"query": "Приказ № 999999"})).structured_content
    assert refused["status"] == "not_found" and refused["chunks"] == []

    read = (await client.call_tool("read", {"query": "ст. 182 ТК РК"})).structured_content
    assert read["status"] == "exact" and [p["article"] for p in read["passages"]] == ["182"]
    assert any("182" in (c["chunk_id"] or "") for c in read["passages"][0]["chunks"])

    doc = (await client.call_tool("document", {"query": "приказ МТСЗН 211"})).structured_content
    assert [d["document"]["doc_id"] for d in doc["documents"]] == ["v2400035612"]
    assert doc["documents"][0]["document"]["issuer"] == "МТСЗН"
    unsure = (await client.call_tool("document", {"query": "приказ 211"})).structured_content
    assert (
        unsure["status"] == "ambiguous" and unsure["documents"] == [] and len(unsure["matches"][0]["candidates"]) == 3
    )

    found = await client.call_tool("search", {"query": "обучение по охране труда", "doc_type": "standard", "k": 3})
    chunks = found.structured_content["chunks"]
    assert len(chunks) == 3 and {c["doc_status"] for c in chunks} == {"in_force"}
    assert all(c["doc_id"].startswith(("gost", "iso", "osha", "api", "nfpa", "iogp")) for c in chunks), chunks

    too_long = await client.call_tool("lookup", {"query": "х" * 9000})
    assert too_long.is_error


def test_mcp_over_stdio_with_the_sdk_client(sample_run) -> None:  # type: ignore[no-untyped-def]
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "cli", "mcp", "--home", str(sample_run[1])],
                                   cwd=str(ROOT), env=dict(os.environ))  # fmt: skip

    async def main() -> None:
        async with Client(params) as client:
            await _the_contract(client)

    anyio.run(main)


def test_mcp_over_http_in_zan_serve_with_the_token(sample_run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    monkeypatch.setenv("ZAN_SERVE_TOKEN", TOKEN)
    with zan_serve(sample_run[1]) as url:

        async def main() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                await _the_contract(client)

        anyio.run(main)
        bare = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
        assert bare.status_code == 401  # the token guards /mcp as it guards the API


# --- one typed answer -----------------------------------------------------------------------------------


def test_every_route_has_a_response_schema_and_lookup_json_is_the_model(sample_run) -> None:  # type: ignore[no-untyped-def]
    with TestClient(create_app(ServeConfig(sample_run[1]))) as client:
        spec = client.get("/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            content = operation["responses"]["200"]["content"]
            assert content and all(c["schema"] for c in content.values()), (method, path)
    assert spec["paths"]["/api/lookup"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/LookupAnswer"
    }
    assert {"Candidate", "Chunk", "Match", "Document", "Article", "Runs", "Health"} <= set(
        spec["components"]["schemas"]
    )
    for query in ("приказ 211", "ст. 182 ТК РК", "Приказ № 999999", "обучение по охране труда"):
        out = json.loads(zan("lookup", query, "--home", str(sample_run[1]), "--json").stdout)
        assert LookupAnswer.model_validate(out).model_dump(mode="json", by_alias=True) == out


# --- the Python client and the retrievers ----------------------------------------------------------------


@pytest.fixture(scope="module")
def served(sample_run) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with zan_serve(sample_run[1]) as url:
        yield url


def test_the_client_reads_typed_answers_and_says_why_it_was_refused(served: str, tmp_path: Path) -> None:
    with ZanClient(served) as zan_client:
        answer = zan_client.lookup("ст. 182 ТК РК", k_per_doc=2)
        assert answer.status == "exact" and len(answer.chunks) == 2 and answer.chunks[0].ref == "K1500000414"
        assert zan_client.document("k1500000414").document.doc_type == "code"
        assert zan_client.article("k1500000414", "182").article == "182"
        assert zan_client.documents(q="приказ 211").total == 3
        assert zan_client.ready().version == answer.version
        with pytest.raises(ZanError) as missing:
            zan_client.document("no-such-doc")
        assert missing.value.status == 404 and missing.value.request_id
    with (
        zan_serve(tmp_path, wait_for="/livez") as empty,
        ZanClient(empty, retries=0) as zan_client,
    ):  # nothing published there
        with pytest.raises(ZanError) as unavailable:
            zan_client.lookup("приказ 211")
        assert unavailable.value.status == 503


def test_the_client_retries_503_as_retry_after_says() -> None:
    answers = iter([httpx.Response(503, headers={"Retry-After": "0"}, json={"detail": "busy"}),
                    httpx.Response(503, headers={"Retry-After": "0"}, json={"detail": "busy"}),
                    httpx.Response(200, json={"query": "q", "status": "no_identifier", "hint": "h"})])  # fmt: skip
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        return next(answers)

    with ZanClient("http://zan.test", token="t", retries=2, transport=httpx.MockTransport(handler)) as client:
        assert client.lookup("q").status == "no_identifier"
    assert seen == ["Bearer t"] * 3


def test_a_langchain_chain_with_zan_retriever_answers_article_182(served: str) -> None:
    from langchain_core.runnables import RunnableLambda
    from zan_client.langchain import ZanRetriever

    retriever = ZanRetriever(base_url=served, token=None, k_per_doc=3)
    chain = retriever | RunnableLambda(lambda docs: sorted({d.metadata["article"] for d in docs}))
    assert chain.invoke("ст. 182 ТК РК") == ["182"]
    docs = retriever.invoke("ст. 182 ТК РК")
    assert docs and {d.metadata["doc_id"] for d in docs} == {"k1500000414"}
    meta = docs[0].metadata
    assert (meta["status"], meta["lookup_status"], meta["ref"]) == (
        "updated",
        "exact",
        "K1500000414",
    )  # in force, with amendments
    assert meta["version"] and "182" in meta["hint"]
    assert retriever.invoke("Приказ № 999999") == []
    assert retriever.last_refusal and retriever.last_refusal["lookup_status"] == "not_found"
    assert retriever.last_refusal["not_found"] == ["Приказ № 999999"]
    assert anyio.run(retriever.ainvoke, "ст. 182 ТК РК") == docs


def test_the_llamaindex_retriever_returns_the_same_nodes(served: str) -> None:
    from zan_client.langchain import ZanRetriever as LangChainRetriever
    from zan_client.llamaindex import ZanRetriever

    for question in ("ст. 182 ТК РК", "приказ 211", "обучение по охране труда"):
        nodes = ZanRetriever(base_url=served, k_per_doc=3).retrieve(question)
        docs = LangChainRetriever(base_url=served, k_per_doc=3).invoke(question)
        assert [n.node.node_id for n in nodes] == [d.id for d in docs] and nodes, question
        assert [n.node.metadata for n in nodes] == [d.metadata for d in docs]
    refused = ZanRetriever(base_url=served)
    assert refused.retrieve("Приказ № 999999") == [] and refused.last_refusal


def test_the_client_imports_no_etl_module() -> None:
    code = ("import sys, zan_client, zan_client.client, zan_client.models, zan_client.langchain, "
            "zan_client.llamaindex; print(sorted({m.split('.')[0] for m in sys.modules}))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    etl = {"cli", "dags", "serve", "lookup", "runs", "vectors", "enrich", "extractors", "schemas", "chromadb",
           "duckdb", "pyarrow", "airflow"}  # fmt: skip
    assert loaded & etl == set()


# --- operations -------------------------------------------------------------------------------------------


def test_liveness_readiness_request_ids_access_log_and_metrics(sample_run, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ZAN_SERVE_TOKEN", TOKEN)
    log = tmp_path / "serve.log"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with zan_serve(sample_run[1], log=log) as url:
        assert httpx.get(f"{url}/livez").json() == {"status": "ok"}  # no token needed: the orchestrator's
        ready = httpx.get(f"{url}/readyz").json()
        assert ready["status"] == "ok" and ready["version"]
        given = httpx.get(f"{url}/api/lookup", params={"q": "приказ 211"}, headers=auth | {"X-Request-Id": "lumi-42"})
        assert given.headers["x-request-id"] == "lumi-42"
        fresh = httpx.get(
            f"{url}/api/lookup", params={"q": "приказ 211"}, headers=auth | {"X-Request-Id": "<script>" * 3}
        )
        assert "<" not in fresh.headers["x-request-id"] and len(fresh.headers["x-request-id"]) == 32
        metrics = httpx.get(f"{url}/metrics", headers=auth).text
        assert 'zan_lookups_total{status="ambiguous"} 2.0' in metrics
        assert "process_resident_memory_bytes" in metrics
    lines = [json.loads(line) for line in log.read_text("utf-8").splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("id") == "lumi-42"]
    assert len(mine) == 1 and mine[0]["path"] == "/api/lookup" and mine[0]["status"] == 200
    assert mine[0]["logger"] == "zan.access" and "приказ" not in json.dumps(lines, ensure_ascii=False)


def test_internal_errors_are_500_with_an_id_and_bad_input_stays_400(sample_run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import serve.app

    with TestClient(create_app(ServeConfig(sample_run[1]))) as client:
        assert client.get("/api/documents", params={"page": 0}).status_code == 422  # bounds, before our code
        assert client.get("/api/lookup", params={"q": "x" * 2500}).status_code == 400  # over the question limit

        def broken(*_: object) -> None:
            raise ValueError("a bug of ours")

        monkeypatch.setattr(serve.app, "search_documents", broken)
        failed = client.get("/api/documents")
        assert failed.status_code == 500 and failed.json()["request_id"] == failed.headers["x-request-id"]
        assert "bug" not in failed.text


def test_cors_is_off_by_default_and_allows_only_the_configured_origins(sample_run) -> None:  # type: ignore[no-untyped-def]
    origin = {"Origin": "https://lumi.example"}
    with TestClient(create_app(ServeConfig(sample_run[1]))) as client:
        assert "access-control-allow-origin" not in client.get("/api/lookup?q=x", headers=origin).headers
    config = ServeConfig(sample_run[1], cors_origins=("https://lumi.example",))
    with TestClient(create_app(config)) as client:
        allowed = client.get("/api/lookup?q=x", headers=origin)
        assert allowed.headers["access-control-allow-origin"] == "https://lumi.example"
        other = client.get("/api/lookup?q=x", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# --- LangChain's own standard tests for retrievers --------------------------------------------------------

try:
    from langchain_tests.integration_tests import RetrieversIntegrationTests
except ImportError:  # pragma: no cover - a dev dependency; the class below is then skipped
    RetrieversIntegrationTests = object  # type: ignore[assignment,misc]


@pytest.mark.anyio
@pytest.mark.skipif(RetrieversIntegrationTests is object, reason="langchain-tests is not installed")
class TestZanRetrieverStandard(RetrieversIntegrationTests):  # type: ignore[misc,valid-type]
    """`langchain-tests`' standard retriever tests (k in the constructor and in invoke, sync and async), run
    against a real `zan serve` over the bundled corpus with a plain-words question."""

    url = ""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture(autouse=True)
    def _server(self, served: str) -> None:
        type(self).url = served

    @property
    def retriever_constructor(self) -> type:
        from zan_client.langchain import ZanRetriever

        return ZanRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"base_url": self.url, "k_per_doc": 3}

    @property
    def retriever_query_example(self) -> str:
        return "обучение и проверка знаний по охране труда"


def test_the_library_says_what_a_run_did_in_its_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A finished run is one `zan.runs` line (Airflow shows library logs in the task's log)."""
    import logging

    from runs.pipeline import run
    from tests.conftest import SAMPLE

    with caplog.at_level(logging.INFO, logger="zan.runs"):
        info = run([SAMPLE], tmp_path / "home")
    lines = [r for r in caplog.records if r.name == "zan.runs"]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert f"run {info.run_id} published: version v000001" in lines[0].getMessage()
