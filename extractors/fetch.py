"""A polite fetcher for adilet.zan.kz pages into a content-addressed landing zone.

- Politeness: at most one request per ``min_interval`` seconds, a clear User-Agent, conditional requests
  (``If-None-Match`` / ``If-Modified-Since`` from the last fetch), so an unchanged page costs a 304.
- Retries (tenacity) only for transient failures: 429 (honouring ``Retry-After``), 5xx, timeouts, connection
  errors and truncated bodies, with exponential backoff. A 404 or another 4xx is terminal.
- Bounded against a hostile or broken server: a body over ``max_bytes`` (``ZAN_MAX_FILE_MB``, as the
  extractors bound files) is refused as it streams in, never held whole, and counted as it *decompresses*
  (:mod:`extractors.decoding`: gzip, deflate and zstd, the codings it accepts, a piece at a time), so a
  compression bomb costs the cap plus one piece; an act has one deadline
  (``deadline`` seconds) for all its pages and retries, so a server that trickles one byte at a time cannot
  hold a fetch for ever; redirects are followed only within the site (same scheme, host and port).
- Landing zone: every body is stored once under ``objects/<sha256[:2]>/<sha256>`` (written to a temporary
  file, then renamed: never half-written, never duplicated); the page a re-extract reads is
  ``adilet/<lang>/<ID>.html`` (a hard link to its object, replaced atomically) with a sidecar
  ``<ID>.html.meta`` (url, fetched_at, status, etag, last_modified, sha256, bytes). The ``/info`` requisites
  pages land under ``adilet-info/`` so the extractors never mistake them for acts. With no network, a
  re-extract reads the landing zone as it is.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tenacity import RetryCallState

from extractors.decoding import ACCEPTED, DecodingProblem, TruncatedBody, decoded
from extractors.discover import max_file_bytes
from schemas.errors import ZanError
from schemas.files import atomic_write
from schemas.http_retry import RetryPolicy, retry_after, transient_status
from schemas.identifiers import ADILET_ID, canonical_adilet_id

BASE_URL = "https://adilet.zan.kz"
LANGUAGES = ("rus", "kaz")
USER_AGENT = "zan/0.1 (+identifier-aware ETL for legal retrieval; polite: 1 req/s, conditional requests)"
_ADILET_ID = re.compile(rf"/docs/({ADILET_ID})", re.IGNORECASE)
MAX_REDIRECTS = 5


class FetchError(ZanError):
    """A page that cannot be fetched (404, another 4xx, or transient failures past the last retry)."""


class FetchTimedOut(FetchError):
    """The act's deadline passed (a server that trickles bytes or keeps failing); terminal for this round."""


class NotFound(FetchError):
    """HTTP 404/410: the site has no such page."""


class TransientFetchError(FetchError):
    """429, 5xx, timeouts, dropped connections, truncated bodies: worth retrying."""

    transient = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Landed:
    """One page in the landing zone after a fetch."""

    url: str
    path: str  # the file a re-extract reads
    sha256: str
    status: int  # 200 (new or changed body) or 304 (unchanged, not downloaded again)
    etag: str | None
    last_modified: str | None
    fetched_at: str
    bytes: int
    changed: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Fetcher:
    def __init__(
        self,
        landing: Path,
        base_url: str = BASE_URL,
        min_interval: float = 1.0,
        timeout: float = 30.0,
        attempts: int = 5,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_bytes: int | None = None,
        deadline: float = 300.0,
    ) -> None:
        self.landing, self.base_url = Path(landing), base_url.rstrip("/")
        self.min_interval, self.attempts = min_interval, attempts
        self.policy = RetryPolicy(attempts, backoff, max_wait)
        self.client = client or httpx.Client(
            timeout=timeout, follow_redirects=False, headers={"User-Agent": USER_AGENT}
        )
        self.sleep = sleep
        self.max_bytes = max_bytes if max_bytes is not None else max_file_bytes()
        self.deadline = deadline
        self._until = float("inf")  # the current act's deadline (monotonic clock)
        self._last_request = 0.0
        self.requests = 0
        self.missing: list[str] = []

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    # --- public -----------------------------------------------------------------------------------------

    def fetch_act(
        self, adilet_id: str, languages: Iterable[str] = LANGUAGES, info: bool = True, missing_ok: bool = True
    ) -> list[Landed]:
        """The act's text page in each language, and its ``/info`` requisites page. A page the site does
        not have (404: e.g. no Kazakh edition) is noted in ``self.missing`` and skipped when ``missing_ok``."""
        wanted = canonical_adilet_id(adilet_id)
        if not re.fullmatch(ADILET_ID, wanted):  # an id names a file in the landing zone: never a path
            raise FetchError(f"{adilet_id[:80]!r} is not an adilet id (like V2400035612 or K070000212_)")
        adilet_id = wanted
        self._until = time.monotonic() + self.deadline
        landed = []
        for lang in languages:
            if lang not in LANGUAGES:
                raise FetchError(f"unknown language {lang!r}: use {', '.join(LANGUAGES)}")
            url = f"{self.base_url}/{lang}/docs/{adilet_id}"
            pages = [(url, Path("adilet") / lang / f"{adilet_id}.html")]
            if info:
                pages.append((f"{url}/info", Path("adilet-info") / lang / f"{adilet_id}.html"))
            for page_url, relative in pages:
                try:
                    landed.append(self.fetch(page_url, relative))
                except NotFound:
                    if not missing_ok:
                        raise
                    self.missing.append(page_url)
        return landed

    def index_ids(self, rss_url: str) -> list[str]:
        """Adilet ids linked from an RSS index (new and changed acts), in feed order, without repeats."""
        self._until = time.monotonic() + self.deadline
        body = self._get_with_retries(rss_url, {}).content.decode("utf-8", errors="replace")
        return list(dict.fromkeys(m.group(1).upper() for m in _ADILET_ID.finditer(body)))

    def fetch(self, url: str, relative: Path) -> Landed:
        """Fetch ``url`` into ``landing/relative`` (conditionally, when it was fetched before)."""
        view = self.landing / relative
        if not view.resolve().is_relative_to(self.landing.resolve()):
            raise FetchError(f"{relative} would land outside {self.landing}")
        meta = _read_meta(view)
        headers = {}
        if meta and view.exists():
            if meta.get("etag"):
                headers["If-None-Match"] = meta["etag"]
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = meta["last_modified"]
        response = self._get_with_retries(url, headers)
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        if response.status_code == 304 and meta:
            landed = Landed(
                url,
                str(view),
                meta["sha256"],
                304,
                meta.get("etag"),
                meta.get("last_modified"),
                now,
                meta.get("bytes", 0),
                changed=False,
            )
        else:
            body = response.content
            digest = hashlib.sha256(body).hexdigest()
            self._store(digest, body, view)
            landed = Landed(
                url,
                str(view),
                digest,
                response.status_code,
                response.headers.get("ETag"),
                response.headers.get("Last-Modified"),
                now,
                len(body),
                changed=not meta or meta.get("sha256") != digest,
            )
        _write_meta(view, landed)
        return landed

    # --- internals ---------------------------------------------------------------------------------------

    def _get_with_retries(self, url: str, headers: dict[str, str]) -> httpx.Response:
        retrying = self.policy.retrying(TransientFetchError, self._wait, self.sleep)
        response: httpx.Response = retrying(self._get_once, url, headers)
        return response

    def _wait(self, state: RetryCallState) -> float:
        """The policy's wait, unless it would run past the act's deadline (then the fetch of this act stops)."""
        error = state.outcome.exception() if state.outcome else None
        wait = self.policy.wait(state.attempt_number, error)
        if time.monotonic() + wait > self._until:
            raise FetchTimedOut(f"the fetch of this act ran over its {self.deadline:g} s deadline") from error
        return wait

    def _get_once(self, url: str, headers: dict[str, str]) -> httpx.Response:
        self._polite_pause()
        for _ in range(MAX_REDIRECTS + 1):
            response = self._request(url, headers)
            if response.status_code not in (301, 302, 303, 307, 308):
                break
            url = self._same_site(url, response.headers.get("Location", ""))
        else:
            raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")
        if transient_status(response.status_code):
            raise TransientFetchError(f"{url}: HTTP {response.status_code}", retry_after(response))
        if response.status_code == 304:
            return response
        if response.status_code in (404, 410):
            raise NotFound(f"{url}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise FetchError(f"{url}: HTTP {response.status_code}")
        return response

    def _request(self, url: str, headers: dict[str, str]) -> httpx.Response:
        """One GET, its body read as it streams in: over :attr:`max_bytes` or past the act's deadline, refused
        before the rest arrives."""
        self.requests += 1
        if time.monotonic() > self._until:
            raise FetchTimedOut(f"{url}: the fetch of this act ran over its {self.deadline:g} s deadline")
        try:
            with self.client.stream(
                "GET", url, headers={"Accept-Encoding": ", ".join(ACCEPTED), **headers}
            ) as response:
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > self.max_bytes:
                    raise FetchError(f"{url}: the body is {int(declared):,} bytes, over the {self.max_bytes:,} limit")
                raw = _Counted(response.iter_raw())
                body = bytearray()
                for piece in decoded(raw, response.headers.get("Content-Encoding")):  # bounded as it decompresses
                    body += piece
                    if len(body) > self.max_bytes:
                        raise FetchError(f"{url}: the body is over the {self.max_bytes:,} bytes limit once decoded")
                    if time.monotonic() > self._until:
                        raise FetchTimedOut(f"{url}: the fetch of this act ran over its {self.deadline:g} s deadline")
                if response.is_success and declared.isdigit() and int(declared) != raw.count:
                    raise TransientFetchError(f"{url}: truncated body ({raw.count} of {declared} bytes)")
                kept = [
                    (k, v)
                    for k, v in response.headers.multi_items()
                    if k.lower() not in ("content-encoding", "content-length")
                ]
                return httpx.Response(response.status_code, headers=kept, content=bytes(body), request=response.request)
        except TruncatedBody as exc:
            raise TransientFetchError(f"{url}: {exc}") from exc
        except DecodingProblem as exc:
            raise FetchError(f"{url}: {exc}") from exc
        except (httpx.TimeoutException, httpx.TransportError) as exc:  # incl. bodies cut short by the server
            raise TransientFetchError(f"{url}: {type(exc).__name__}: {exc}") from exc

    def _same_site(self, url: str, location: str) -> str:
        """The redirect target, when it stays on the site being fetched; another host is refused."""
        target = httpx.URL(url).join(location)
        base = httpx.URL(self.base_url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise FetchError(f"{url}: redirect to {str(target)[:200]} refused (another site than {self.base_url})")
        return str(target)

    def _polite_pause(self) -> None:
        wait = self._last_request + self.min_interval - time.monotonic()
        if wait > 0:
            self.sleep(wait)
        self._last_request = time.monotonic()

    def _store(self, digest: str, body: bytes, view: Path) -> None:
        blob = self.landing / "objects" / digest[:2] / digest
        if not blob.exists():
            atomic_write(blob, body)
        view.parent.mkdir(parents=True, exist_ok=True)
        tmp = view.with_name(f".{view.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            os.link(blob, tmp)
        except OSError:  # a filesystem without hard links: a copy is as good
            tmp.write_bytes(body)
        os.replace(tmp, view)


class _Counted:
    """The raw (still encoded) blocks of a body, counted as they pass (a truncated body is told by them)."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self.blocks, self.count = blocks, 0

    def __iter__(self) -> Iterator[bytes]:
        for block in self.blocks:
            self.count += len(block)
            yield block


def _meta_path(view: Path) -> Path:
    return view.with_name(view.name + ".meta")


def _read_meta(view: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(_meta_path(view).read_text("utf-8"))
        return data
    except (OSError, ValueError):
        return None


def _write_meta(view: Path, landed: Landed) -> None:
    atomic_write(_meta_path(view), json.dumps(landed.as_dict(), ensure_ascii=False, indent=1).encode("utf-8"))


@dataclass
class FetchSummary:
    """What one fetch round did: ``failed`` lists acts that could not be fetched (the rest went on)."""

    requested: int = 0
    landed: int = 0
    changed: int = 0
    not_modified: int = 0
    missing: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fetch_into_landing(
    landing: Path,
    ids: Iterable[str] = (),
    rss: str | None = None,
    base_url: str = BASE_URL,
    languages: Iterable[str] = LANGUAGES,
    min_interval: float = 1.0,
    attempts: int = 5,
    backoff: float = 1.0,
) -> FetchSummary:
    """Fetch the given acts (and those an RSS index lists) into ``landing``; one act's failure is recorded
    and the round goes on, so a re-extract can still read what the landing zone holds."""
    summary = FetchSummary()
    with Fetcher(landing, base_url=base_url, min_interval=min_interval, attempts=attempts, backoff=backoff) as fetcher:
        wanted = list(dict.fromkeys(i.strip().upper() for i in ids if i.strip()))
        if rss:
            try:
                wanted += [i for i in fetcher.index_ids(rss) if i not in wanted]
            except FetchError as exc:
                summary.failed.append({"id": "rss", "reason": str(exc)})
        summary.requested = len(wanted)
        for adilet_id in wanted:
            try:
                landed = fetcher.fetch_act(adilet_id, languages)
            except FetchError as exc:
                summary.failed.append({"id": adilet_id, "reason": str(exc)})
                continue
            summary.landed += len(landed)
            summary.changed += sum(1 for x in landed if x.changed)
            summary.not_modified += sum(1 for x in landed if x.status == 304)
        summary.missing = list(fetcher.missing)
    return summary
