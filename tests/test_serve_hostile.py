"""``zan serve`` against hostile sources and hostile clients (issue 42), on real uvicorn processes over homes
built by real runs: no script behind a source's link, every page's security headers, a first burst answered,
a 2 MB header refused at once, slow clients cut at the header deadline while /healthz answers, a connection
cap and a cap on requests in flight, and a document with 30 000 notes served in pages under 500 KB.
(The same home in a real browser: ``test_serve_browser.py``.)"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from schemas.links import link_problem, safe_link
from serve.app import GuardAndMeasure, create_app
from serve.limits import ServeLimits
from serve.metrics import Metrics
from serve.served import ServeConfig
from tests.conftest import zan_serve
from tests.hostile_sources import (
    GOOD_URL,
    HOSTILE_URLS,
    MARKUP_NUMBER,
    NOTES_ID,
    write_hostile_records,
    write_noted_page,
)

PAGE_LIMIT = 500 * 1024


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    from runs.pipeline import run

    root = tmp_path_factory.mktemp("hostile-links")
    written = write_hostile_records(root / "src" / "zan")
    info = run([root / "src"], root / "home")
    assert info.documents == len(written) and info.rejected == 0
    return root / "home", written


@pytest.fixture(scope="module")
def noted_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    from runs.pipeline import run

    root = tmp_path_factory.mktemp("hostile-notes")
    notes = write_noted_page(root / "src" / "adilet" / "rus")
    run([root / "src"], root / "home")
    return root / "home", notes


# --- sources: links are data, identifiers hold identifier characters --------------------------------------


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_is_never_a_link(url: str) -> None:
    assert safe_link(url) is None and link_problem(url)


@pytest.mark.parametrize("url", [GOOD_URL, "https://adilet.zan.kz/rus/docs/K1500000414", "http://www.ecfr.gov/x",
                                 "https://ADILET.zan.kz/kaz/docs/V2400035612/info"])  # fmt: skip
def test_a_link_on_an_expected_host_is_kept(url: str) -> None:
    assert safe_link(url) == url


def test_more_hosts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert safe_link("https://laws.example.org/a") is None
    monkeypatch.setenv("ZAN_LINK_HOSTS", "laws.example.org, other.example")
    assert safe_link("https://laws.example.org/a") == "https://laws.example.org/a"


def test_hostile_urls_and_numbers_stay_out_of_the_registry_with_the_reason(hostile_home) -> None:  # type: ignore[no-untyped-def]
    home, written = hostile_home
    current = (home / "CURRENT").read_text().strip()
    rows = {r["doc_id"]: r for r in pq.read_table(home / "versions" / current / "registry.parquet").to_pylist()}
    assert set(rows) == set(written)  # a url's path names no act: each record is its own document
    for doc_id, url in written.items():
        row = rows[doc_id]
        notices = [n for e in row["extraction"] for n in e["notices"] or []]
        if url == GOOD_URL:
            assert row["source_url"] == GOOD_URL
            assert row["order_number"] is None  # the markup number is not a number
            assert any("order_number rejected" in n and "img" in n for n in notices), notices
        else:
            assert row["source_url"] is None, doc_id
            assert any("kept as text, not as a link" in n for n in notices), (doc_id, notices)
    assert MARKUP_NUMBER not in str([r["order_number"] for r in rows.values()])


def test_every_response_sends_the_security_headers_and_no_page_links_a_script(hostile_home) -> None:  # type: ignore[no-untyped-def]
    home, written = hostile_home
    with TestClient(create_app(ServeConfig(home))) as client:
        paths = ["/", "/?q=приказ 505", "/documents", "/runs", "/api/lookup?q=приказ 505", "/api/documents",
                 "/api/runs", "/healthz", "/metrics", "/openapi.json", "/documents/nope", "/static/zan.css"]  # fmt: skip
        paths += [f"/documents/{d}" for d in written] + [f"/api/documents/{d}" for d in written]
        for path in paths:
            response = client.get(path)
            assert response.status_code in (200, 404), path
            headers = response.headers
            assert "default-src 'self'" in headers["content-security-policy"] and "script-src 'none'" in (
                headers["content-security-policy"]), path  # fmt: skip
            assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY", path
            assert headers["referrer-policy"] == "no-referrer", path
            text = response.text.lower()
            for scheme in ("javascript:", "vbscript:", "data:text"):
                assert f'href="{scheme}' not in text and f"href='{scheme}" not in text, path
        for doc_id, url in written.items():
            api = client.get(f"/api/documents/{doc_id}").json()["document"]
            assert api["source_url"] == (url if url == GOOD_URL else None)
        good = next(d for d, u in written.items() if u == GOOD_URL)
        assert f'href="{GOOD_URL}"' in client.get(f"/documents/{good}").text
        assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404


def test_health_names_no_path_without_the_token(tmp_path: Path) -> None:
    empty = tmp_path / "no-such-home"
    with TestClient(create_app(ServeConfig(empty))) as client:
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "unavailable"
        assert str(tmp_path) not in health.text and health.json()["reason"]
        assert str(tmp_path) not in client.get("/api/lookup", params={"q": "приказ 211"}).text
    with TestClient(create_app(ServeConfig(empty, token="t0ken"))) as client:
        assert str(tmp_path) not in client.get("/healthz").text
        detailed = client.get("/healthz", headers={"Authorization": "Bearer t0ken"}).json()
        assert str(empty) in detailed["detail"]


# --- long documents: a page at a time ---------------------------------------------------------------------


def test_a_document_with_30000_notes_is_served_in_pages_under_500_kb(noted_home) -> None:  # type: ignore[no-untyped-def]
    home, notes = noted_home
    assert notes == 30_000
    doc = NOTES_ID.lower()
    with TestClient(create_app(ServeConfig(home))) as client:
        first = client.get(f"/api/documents/{doc}").json()
        assert first["totals"] == {"articles": 300, "changed_by": notes, "changes_made": 0}
        seen = 0
        for page in range(1, first["pages"] + 1):
            api = client.get(f"/api/documents/{doc}", params={"page": page})
            html = client.get(f"/documents/{doc}", params={"page": page})
            assert len(api.content) < PAGE_LIMIT and len(html.content) < PAGE_LIMIT, page
            seen += len(api.json()["changed_by"])
        assert seen == notes  # every note's change is on some page
        article = client.get(f"/api/documents/{doc}/articles/1").json()
        assert article["pages"] > 1 and article["totals"]["changes"] == 3_090
        texts = []
        for page in range(1, article["pages"] + 1):
            api = client.get(f"/api/documents/{doc}/articles/1", params={"page": page})
            html = client.get(f"/documents/{doc}/articles/1", params={"page": page})
            assert len(api.content) < PAGE_LIMIT and len(html.content) < PAGE_LIMIT, page
            texts += [c["notes"] or "" for c in api.json()["chunks"]]
        assert "".join(texts).count("Сноска") == 3_090  # split across pages, none lost
        assert 'class="pager"' in client.get(f"/documents/{doc}/articles/1").text


# --- clients: the first burst, oversized and slow heads, caps ------------------------------------------------

PLAIN = ["Может ли работодатель уволить беременную?", "испытательный срок сколько месяцев",
         "обучение работников по охране труда", "коллективный договор срок"]  # fmt: skip


@pytest.mark.slow
def test_a_fresh_server_answers_its_first_burst_of_plain_words_questions(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    for restart in range(5):
        with zan_serve(home) as url, concurrent.futures.ThreadPoolExecutor(16) as pool:
            barrier = threading.Barrier(16)
            codes = list(pool.map(lambda q, u=url, b=barrier: _ask_together(u, q, b), PLAIN * 4))
        assert codes == [200] * 16, (restart, codes)


def _ask_together(url: str, question: str, barrier: threading.Barrier) -> int:
    barrier.wait()  # all 16 at once
    return httpx.get(f"{url}/api/lookup", params={"q": question}, timeout=60).status_code


def _status_line(sock: socket.socket, timeout: float = 5.0) -> bytes:
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).split(b"\r\n", 1)[0]
    except OSError as exc:
        return type(exc).__name__.encode()


@pytest.mark.slow
def test_oversized_heads_are_refused_at_once_and_slow_clients_cut_while_health_answers(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    with zan_serve(home, "--header-timeout", "2") as url:
        port = int(url.rsplit(":", 1)[1])
        started = time.monotonic()
        big = socket.create_connection(("127.0.0.1", port))
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (2 << 20) + b"\r\n\r\n"
        threading.Thread(target=lambda: _quietly(big.sendall, head), daemon=True).start()
        assert _status_line(big) == b"HTTP/1.1 431 Request Header Fields Too Large"
        assert time.monotonic() - started < 1.0
        big.close()
        with httpx.Client() as client:
            assert client.get(f"{url}/healthz", headers={f"X-{i}": "a" for i in range(150)}).status_code == 431
            assert client.get(f"{url}/healthz", headers={"X-Long": "a" * 20_000}).status_code == 431

            slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
            for sock in slow:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # a head begun, never finished
            opened = time.monotonic()
            stop = opened + 3.5
            threading.Thread(target=_dribble, args=(slow, stop), daemon=True).start()
            latencies = []
            while time.monotonic() < stop:
                asked = time.perf_counter()
                assert client.get(f"{url}/healthz").status_code == 200
                latencies.append(time.perf_counter() - asked)
                time.sleep(0.05)
            cut = [_status_line(sock) for sock in slow]
            assert cut == [b"HTTP/1.1 408 Request Timeout"] * 200, set(cut)
            assert statistics.quantiles(latencies, n=20)[-1] < 0.1, sorted(latencies)[-5:]  # p95 under 100 ms
            assert client.get(f"{url}/healthz").status_code == 200
        for sock in slow:
            sock.close()


def _quietly(call, *args) -> None:  # type: ignore[no-untyped-def]
    with contextlib.suppress(OSError):
        call(*args)


def _dribble(socks: list[socket.socket], stop: float) -> None:
    """A byte from each client every half second: uvicorn's own keep-alive timer restarts with each one."""
    while time.monotonic() < stop:
        for sock in socks:
            _quietly(sock.send, b"X")
        time.sleep(0.5)


SLOW_BODY_SECONDS = float(os.environ.get("ZAN_SLOW_BODY_SECONDS", "15"))  # the figure: 60 (see README)


def _slow_body_client(port: int, stop: float, cuts: list[bytes]) -> None:
    """An MCP client that sends its body a byte a second, again and again: each time it is cut, it comes back."""
    while time.monotonic() < stop:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n")
        sock.settimeout(1.0)
        answer = b""
        while time.monotonic() < stop + 30:
            with contextlib.suppress(OSError):
                sock.send(b"{")
            try:
                answer = sock.recv(4096)
                break  # the server answered (or closed): this client was cut
            except TimeoutError:
                continue
            except OSError:
                break
        sock.close()
        cuts.append(answer.split(b"\r\n", 1)[0] if answer else b"closed")


@pytest.mark.slow
def test_slow_bodies_hold_no_place_of_the_server_and_are_cut_at_their_deadline(sample_run) -> None:  # type: ignore[no-untyped-def]
    """80 clients sending their /mcp bodies a byte a second (64 places in flight): a request reaches the app only
    once its body is whole, so /api/lookup answers 200 throughout, and each slow client gets 408 at the body
    deadline (they came back for more as soon as they were cut)."""
    _, home = sample_run
    with zan_serve(home, "--body-timeout", "3") as url, httpx.Client() as client:
        port = int(url.rsplit(":", 1)[1])
        stop = time.monotonic() + SLOW_BODY_SECONDS
        cuts: list[bytes] = []
        clients = [threading.Thread(target=_slow_body_client, args=(port, stop, cuts)) for _ in range(80)]
        for thread in clients:
            thread.start()
        time.sleep(1.0)  # every slow client connected and sending
        latencies, codes = [], []
        while time.monotonic() < stop:
            asked = time.perf_counter()
            codes.append(client.get(f"{url}/api/lookup", params={"q": "приказ 211"}, timeout=30).status_code)
            latencies.append(time.perf_counter() - asked)
        for thread in clients:
            thread.join(timeout=60)
        p99 = statistics.quantiles(latencies, n=100)[-1]
        print(
            f"/api/lookup beside 80 slow bodies for {SLOW_BODY_SECONDS:g} s: {len(codes)} answers, p99 {p99 * 1000:.1f} ms"
        )
        assert set(codes) == {200}, sorted(set(codes))
        assert p99 < 0.5, sorted(latencies)[-5:]
        assert len(cuts) >= 80 and set(cuts) == {b"HTTP/1.1 408 Request Timeout"}, set(cuts)
        whole = client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Accept": "application/json, text/event-stream"})  # fmt: skip
        assert whole.status_code == 200 and "lookup" in whole.text


def test_a_body_over_the_limit_is_413_and_expect_100_continue_is_answered(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    with zan_serve(home) as url:
        port = int(url.rsplit(":", 1)[1])
        big = socket.create_connection(("127.0.0.1", port))
        big.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n")
        _quietly(big.sendall, b"x" * 300_000)
        assert _status_line(big) == b"HTTP/1.1 413 Content Too Large"
        big.close()
        asking = socket.create_connection(("127.0.0.1", port))
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        asking.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode() + b"\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n"
                       b"Accept: application/json, text/event-stream\r\nContent-Length: " + str(len(body)).encode()
                       + b"\r\n\r\n")  # fmt: skip
        assert _status_line(asking) == b"HTTP/1.1 100 Continue"
        asking.sendall(body)
        assert _status_line(asking) == b"HTTP/1.1 200 OK"
        asking.close()


@pytest.mark.slow
def test_connections_beyond_the_cap_are_answered_503_and_closed(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    with zan_serve(home, "--max-connections", "20", "--header-timeout", "30") as url:
        port = int(url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
        time.sleep(0.3)
        lines = [_status_line(sock, timeout=0.5) for sock in held[-10:]]
        assert lines == [b"HTTP/1.1 503 Service Unavailable"] * 10, lines
        for sock in held:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(f"{url}/healthz").status_code == 200  # the cap frees as connections go


def test_requests_beyond_the_in_flight_cap_get_503_with_retry_after() -> None:
    release = asyncio.Event()

    async def slow_app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    class NoServed:
        lookup = None

    guard = GuardAndMeasure(slow_app, None, Metrics(), NoServed(), ServeLimits(max_in_flight=2))  # type: ignore[arg-type]

    async def main() -> list[tuple[int, str | None]]:
        transport = httpx.ASGITransport(app=guard)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            waiting = [asyncio.create_task(client.get("/api/lookup")) for _ in range(2)]
            await asyncio.sleep(0.1)
            over = await client.get("/api/lookup")
            health = asyncio.create_task(client.get("/healthz"))  # exempt: answered whatever the load
            await asyncio.sleep(0.1)
            release.set()
            done = [await t for t in waiting] + [await health]
            return [(over.status_code, over.headers.get("retry-after"))] + [(r.status_code, None) for r in done]

    results = asyncio.run(main())
    assert results == [(503, "1"), (200, None), (200, None), (200, None)]
