"""The fetcher against a real HTTP server on 127.0.0.1 that serves the bundled adilet pages and injects 429,
500, slow responses and truncated bodies; then a re-extract reads the landing zone with no network."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from enrich.query import connect
from extractors.fetch import Fetcher, FetchError
from runs.pipeline import run
from tests.conftest import SAMPLE

IDS = ("V2400035612", "V2100022334", "K1500000414")


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.server.log.append((self.path, dict(self.headers)))
        fault = self.server.faults.get(self.path, [])
        if fault:
            kind = fault.pop(0)
            if kind == "429":
                return self._plain(429, b"slow down", {"Retry-After": "0"})
            if kind == "500":
                return self._plain(500, b"oops")
            if kind == "slow":
                time.sleep(1.0)  # the client's timeout is 0.3 s
            if kind == "truncate":
                body = self._body()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return None
        if self.path in HOSTILE:
            return HOSTILE[self.path](self)
        body = self._body()
        if body is None:
            return self._plain(404, b"no such act")
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return None
        return self._plain(200, body, {"ETag": etag, "Content-Type": "text/html; charset=utf-8"})

    def _body(self) -> bytes | None:
        if self.path == "/rus/rss":
            items = "".join(f"<item><link>http://x/rus/docs/{i}</link></item>" for i in IDS[:2])
            return f"<rss><channel>{items}</channel></rss>".encode()
        parts = self.path.strip("/").split("/")  # rus/docs/ID or rus/docs/ID/info
        if len(parts) < 3 or parts[1] != "docs":
            return None
        page = SAMPLE / "adilet" / parts[0] / f"{parts[2]}.html"
        if not page.exists():
            return None
        text = page.read_bytes()
        return b"<html><body>info " + parts[2].encode() + b"</body></html>" if parts[3:] == ["info"] else text

    def _plain(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    faults: dict[str, list[str]]
    other_port: int = 0
    log: list[tuple[str, dict[str, str]]]

    def handle_error(self, request: object, client_address: object) -> None:
        return None  # a client that timed out on a "slow" response leaves a broken pipe: expected


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.faults, srv.log = {}, []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _fetcher(server: _Server, landing: Path, **kwargs: object) -> Fetcher:
    base = f"http://127.0.0.1:{server.server_address[1]}"
    return Fetcher(landing, base_url=base, min_interval=0.0, timeout=0.3, backoff=0.01, **kwargs)  # type: ignore[arg-type]


def _landing_files(landing: Path) -> dict[str, bytes]:
    return {str(p.relative_to(landing)): p.read_bytes() for p in sorted(landing.rglob("*")) if p.is_file()}


def test_survives_injected_faults_without_losing_or_duplicating_files(server: _Server, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    server.faults = {
        "/rus/docs/V2400035612": ["429", "500"],
        "/kaz/docs/K1500000414": ["slow", "truncate"],
        "/rus/docs/V2100022334/info": ["truncate"],
    }
    with _fetcher(server, landing) as fetcher:
        landed = [x for i in IDS for x in fetcher.fetch_act(i)]
    pages = [x for x in landed if "/info" not in x.url]
    assert sorted(str(Path(x.path).relative_to(landing)) for x in pages) == [
        "adilet/kaz/K1500000414.html", "adilet/rus/K1500000414.html", "adilet/rus/V2100022334.html",
        "adilet/rus/V2400035612.html",
    ]  # fmt: skip
    assert (
        sorted(fetcher.missing)
        == sorted(  # the bundled orders have no Kazakh edition: 404, noted
            f"{fetcher.base_url}/kaz/docs/{i}{tail}" for i in IDS[:2] for tail in ("", "/info")
        )
    )
    for x in landed:
        body = Path(x.path).read_bytes()
        assert hashlib.sha256(body).hexdigest() == x.sha256 and len(body) == x.bytes > 0
        assert (landing / "objects" / x.sha256[:2] / x.sha256).read_bytes() == body
    assert (landing / "adilet/rus/V2400035612.html").read_bytes() == (
        SAMPLE / "adilet/rus/V2400035612.html"
    ).read_bytes()
    assert (landing / "adilet/kaz/K1500000414.html").read_bytes() == (
        SAMPLE / "adilet/kaz/K1500000414.html"
    ).read_bytes()
    objects = list((landing / "objects").rglob("*"))
    assert len([o for o in objects if o.is_file()]) == len({x.sha256 for x in landed})  # stored once each
    assert not [p for p in landing.rglob("*") if p.name.endswith(".tmp")]
    assert all(not any(v for v in server.faults.values()) for _ in [0])  # every injected fault was hit
    assert len(server.log) == len(landed) + len(fetcher.missing) + 5  # one extra request per injected fault


def test_second_fetch_of_unchanged_pages_makes_conditional_requests_only(server: _Server, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    with _fetcher(server, landing) as fetcher:
        first = fetcher.fetch_act("K1500000414")
        before = _landing_files(landing)
        server.log.clear()
        second = fetcher.fetch_act("K1500000414")
    assert [x.status for x in first] == [200] * 4 and [x.status for x in second] == [304] * 4
    assert all(headers.get("If-None-Match") for _, headers in server.log) and len(server.log) == 4
    assert not any(x.changed for x in second)
    after = _landing_files(landing)
    assert {k: v for k, v in after.items() if not k.endswith(".meta")} == {
        k: v for k, v in before.items() if not k.endswith(".meta")
    }


def test_terminal_errors_are_not_retried(server: _Server, tmp_path: Path) -> None:
    with _fetcher(server, tmp_path / "landing") as fetcher, pytest.raises(FetchError, match="HTTP 404"):
        fetcher.fetch_act("V9999999999", languages=("rus",), info=False, missing_ok=False)
    assert len(server.log) == 1


def test_transient_errors_give_up_after_the_last_attempt(server: _Server, tmp_path: Path) -> None:
    server.faults = {"/rus/docs/V2400035612": ["500"] * 10}
    with _fetcher(server, tmp_path / "landing", attempts=3) as fetcher, pytest.raises(FetchError, match="HTTP 500"):
        fetcher.fetch_act("V2400035612", languages=("rus",), info=False)
    assert len(server.log) == 3 and not (tmp_path / "landing" / "adilet").exists()


def test_polite_interval_between_requests(server: _Server, tmp_path: Path) -> None:
    waits: list[float] = []
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with Fetcher(tmp_path / "landing", base_url=base, min_interval=0.5, sleep=waits.append) as fetcher:
        fetcher.fetch_act("V2400035612", languages=("rus",))
    assert len(waits) == 1 and 0.3 < waits[0] <= 0.5  # the second request waited for the interval


def test_rss_index_and_offline_reextract_of_the_landing_zone(server: _Server, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    with _fetcher(server, landing) as fetcher:
        ids = fetcher.index_ids(f"http://127.0.0.1:{server.server_address[1]}/rus/rss")
        assert ids == list(IDS[:2])
        for adilet_id in ids:
            fetcher.fetch_act(adilet_id, languages=("rus",))
    server.shutdown()  # no network from here on
    info = run([landing / "adilet"], tmp_path / "home")
    assert info.documents == 2 and info.rejected == 0
    rows = connect(tmp_path / "home").execute("SELECT doc_id, order_number FROM registry ORDER BY 1").fetchall()
    assert rows == [("v2100022334", "211"), ("v2400035612", "211")]


def test_a_fetch_round_records_failures_and_goes_on(server: _Server, tmp_path: Path) -> None:
    from extractors.fetch import fetch_into_landing

    base = f"http://127.0.0.1:{server.server_address[1]}"
    summary = fetch_into_landing(tmp_path / "landing", ["V2400035612", "V9999999999"], base_url=base, min_interval=0)
    assert (summary.requested, summary.landed) == (2, 2)  # rus page + rus info of the one that exists
    assert len(summary.missing or []) == 6 and not summary.failed
    server.shutdown()
    server.server_close()
    offline = fetch_into_landing(tmp_path / "landing", ["V2400035612"], base_url=base, min_interval=0, backoff=0.01)
    assert offline.landed == 0 and offline.failed and "ConnectError" in offline.failed[0]["reason"]
    assert (tmp_path / "landing/adilet/rus/V2400035612.html").exists()  # what landed before is still there


# --- a hostile server (issue 23, case 8): every answer bounded in bytes, time and where it may lead ----------


def _huge(declared: bool) -> Callable[[_Handler], None]:
    """A «1 GB» body sent a megabyte at a time, with or without saying its length up front."""

    def send(handler: _Handler) -> None:
        handler.send_response(200)
        if declared:
            handler.send_header("Content-Length", str(1 << 30))
        handler.end_headers()
        block = b"x" * (1 << 20)
        try:
            for _ in range(1024):
                handler.wfile.write(block)
        except OSError:  # the client hung up: what it should do
            return
        handler.close_connection = True

    return send


def _trickle(handler: _Handler) -> None:
    """One byte every 0.2 s: each read is well inside the client's timeout, the whole never ends."""
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    try:
        for _ in range(100_000):
            handler.wfile.write(b"x")
            handler.wfile.flush()
            time.sleep(0.2)
    except OSError:
        return


def _redirect(target: str) -> Callable[[_Handler], None]:
    def send(handler: _Handler) -> None:
        handler._plain(302, b"", {"Location": target.replace("{other}", str(handler.server.other_port))})

    return send


def _zstd_bomb(gib: int = 4) -> bytes:
    """``gib`` GiB of zeros as one zstd frame of RLE blocks (RFC 8878 §3.1.1.2: a 3-byte block header and the
    one byte repeated), 4 bytes for every 128 KiB: 4 GiB is a 131 KB body."""
    block = 128 * 1024
    header = (0xFD2FB528).to_bytes(4, "little") + bytes([0x00, 7 << 3])  # no content size; a 128 KiB window
    blocks = gib * 1024 * 1024 * 1024 // block
    rle = ((block << 3) | (1 << 1)).to_bytes(3, "little") + b"\0"
    last = ((block << 3) | (1 << 1) | 1).to_bytes(3, "little") + b"\0"
    return header + rle * (blocks - 1) + last


def _gzip_bomb(gib: int = 4) -> bytes:
    """``gib`` GiB of zeros as gzip members one after another (RFC 1952 allows it; 64 MiB each): ~4 MB."""
    import gzip

    member = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    return member * (gib * 16)


def _encoded(body: Callable[[], bytes], coding: str) -> Callable[[_Handler], None]:
    def send(handler: _Handler) -> None:
        try:
            handler._plain(200, body(), {"Content-Encoding": coding, "Content-Type": "text/html"})
        except OSError:  # the client hung up at its cap: what it should do
            return

    return send


def _gzipped_page() -> bytes:
    import gzip

    return gzip.compress((SAMPLE / "adilet/rus/V2400035612.html").read_bytes())


HOSTILE: dict[str, Callable[[_Handler], None]] = {
    "/rus/docs/V2499000006": _encoded(_zstd_bomb, "zstd"),
    "/rus/docs/V2499000007": _encoded(_gzip_bomb, "gzip"),
    "/rus/docs/V2499000008": _encoded(_gzipped_page, "gzip"),
    "/rus/docs/V2499000009": _encoded(lambda: b"not brotli at all", "br"),
    "/rus/docs/V2499000001": _huge(declared=True),
    "/rus/docs/V2499000002": _huge(declared=False),
    "/rus/docs/V2499000003": _trickle,
    "/rus/docs/V2499000004": _redirect("http://127.0.0.1:{other}/secret"),
    "/rus/docs/V2499000005": _redirect("/rus/docs/V2400035612"),
}


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("adilet_id", ["V2499000001", "V2499000002"])
def test_a_body_over_the_limit_is_refused_as_it_streams_in(server: _Server, tmp_path: Path, adilet_id: str) -> None:
    before = _rss_mb()
    with (
        _fetcher(server, tmp_path / "landing", max_bytes=8 << 20) as fetcher,
        pytest.raises(FetchError, match="over the 8,388,608"),
    ):
        fetcher.fetch_act(adilet_id, languages=("rus",), info=False)
    assert _rss_mb() - before < 200  # a 1 GB body held whole costs 1 GB or more
    assert not (tmp_path / "landing" / "adilet").exists()


@pytest.mark.slow
def test_a_trickling_server_is_given_up_at_the_act_deadline(server: _Server, tmp_path: Path) -> None:
    started = time.monotonic()
    with _fetcher(server, tmp_path / "landing", deadline=2.0) as fetcher, pytest.raises(FetchError, match="deadline"):
        fetcher.fetch_act("V2499000003", languages=("rus",), info=False)
    assert time.monotonic() - started < 10  # 100 000 bytes at one per 0.2 s would take 5.5 hours


def test_redirects_are_followed_only_within_the_site(server: _Server, tmp_path: Path) -> None:
    other = _Server(("127.0.0.1", 0), _Handler)
    other.faults, other.log = {}, []
    threading.Thread(target=other.serve_forever, daemon=True).start()
    server.other_port = other.server_address[1]
    try:
        with _fetcher(server, tmp_path / "landing") as fetcher:
            with pytest.raises(FetchError, match="redirect to .* refused"):
                fetcher.fetch_act("V2499000004", languages=("rus",), info=False)
            landed = fetcher.fetch_act("V2499000005", languages=("rus",), info=False)
    finally:
        other.shutdown()
        other.server_close()
    assert other.log == []  # the other service was never asked
    assert Path(landed[0].path).read_bytes() == (SAMPLE / "adilet/rus/V2400035612.html").read_bytes()


_BOMB_CHILD = """
import sys
from pathlib import Path
from extractors.fetch import Fetcher, FetchError
try:
    with Fetcher(Path(sys.argv[1]), base_url=sys.argv[2], min_interval=0.0, timeout=30) as f:
        f.fetch_act(sys.argv[3], languages=("rus",), info=False)
    print("FETCHED")
except FetchError as exc:
    print("REFUSED", exc)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))  # this process's own
print("PEAK_MB", int(hwm.split()[1]) / 1024)  # (ru_maxrss keeps the forking parent's high-water mark)
"""


@pytest.mark.parametrize(("adilet_id", "coding"), [("V2499000006", "zstd"), ("V2499000007", "gzip")])
def test_a_compression_bomb_is_refused_as_it_decompresses(server: _Server, tmp_path: Path, adilet_id: str,
                                                          coding: str) -> None:  # fmt: skip
    """4 GiB of zeros sent compressed (131 KB of zstd, ~4 MB of gzip) against the default 64 MB cap: refused
    with the reason, the fetching process's peak under 300 MB (it was 4.26 GB for zstd), nothing landed."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    base = f"http://127.0.0.1:{server.server_address[1]}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _BOMB_CHILD, str(tmp_path / "landing"), base, adilet_id],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**__import__("os").environ, "ZAN_MAX_FILE_MB": "64"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "REFUSED" in done.stdout and "over the 67,108,864 bytes limit once decoded" in done.stdout, done.stdout
    peak = float(done.stdout.split("PEAK_MB")[1])
    assert peak < 300, f"{coding}: peak {peak:.0f} MB"
    assert time.monotonic() - started < 60
    assert not (tmp_path / "landing" / "adilet").exists()


def test_a_compressed_page_lands_as_its_decoded_bytes(server: _Server, tmp_path: Path) -> None:
    with _fetcher(server, tmp_path / "landing") as fetcher:
        landed = fetcher.fetch_act("V2499000008", languages=("rus",), info=False)
    assert Path(landed[0].path).read_bytes() == (SAMPLE / "adilet/rus/V2400035612.html").read_bytes()
    assert server.log[-1][1]["Accept-Encoding"] == "gzip, deflate, zstd"  # only what it can bound


def test_a_coding_it_did_not_ask_for_is_refused_with_the_reason(server: _Server, tmp_path: Path) -> None:
    with (
        _fetcher(server, tmp_path / "landing") as fetcher,
        pytest.raises(FetchError, match="Content-Encoding 'br' is not one zan accepts"),
    ):
        fetcher.fetch_act("V2499000009", languages=("rus",), info=False)
