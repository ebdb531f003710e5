"""HTTP clients for `zan serve`, sync and async: typed answers, the bearer token, timeouts, and retries on
503 (the server is starting, switching versions or at its cap on requests in flight), honouring Retry-After.

    from zan_client import ZanClient
    with ZanClient("http://127.0.0.1:8787", token=None) as zan:
        answer = zan.lookup("ст. 182 ТК РК", k_per_doc=3)
        answer.status, [c.article_labels for c in answer.chunks]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import random
import time
from typing import Any, Generic, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from zan_client.models import Article, Document, DocumentList, Health, History, LookupAnswer, Runs

M = TypeVar("M", bound=BaseModel)
H = TypeVar("H", httpx.Client, httpx.AsyncClient)  # the connection pool a client sends with
T = TypeVar("T", httpx.BaseTransport, httpx.AsyncBaseTransport)  # and the transport it may be given
Call: TypeAlias = tuple[str, type[M], dict[str, Any] | None]  # a call: path, the answer's model, parameters
RETRIED = frozenset({502, 503, 504})
MAX_WAIT = 30.0  # the longest a Retry-After is honoured for


class ZanError(Exception):
    """The server refused or failed: ``status`` is the HTTP status, ``detail`` its reason."""

    def __init__(self, status: int, detail: str, request_id: str | None = None) -> None:
        super().__init__(f"zan answered {status}: {detail}" + (f" (request {request_id})" if request_id else ""))
        self.status, self.detail, self.request_id = status, detail, request_id


class _Base(Generic[H, T]):
    """What both clients share: settings, the one retry policy, the checks of an answer, and the calls as
    (path, answer model, parameters); each client only sends them (blocking or awaited)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8787",
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: T | None = None,
    ) -> None:
        if retries < 0 or timeout <= 0:
            raise ValueError("retries must be ≥ 0 and timeout > 0")
        self.base_url = base_url.rstrip("/")
        self.retries, self.backoff = retries, backoff
        self.headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._http: H = self._open(transport)

    def _open(self, transport: T | None) -> H:
        raise NotImplementedError

    # --- the calls: (path, the answer's model, parameters) -------------------------------------------------

    @staticmethod
    def _lookup(query: str, k_per_doc: int, as_of: dt.date | str | None, k: int) -> Call[LookupAnswer]:
        params: dict[str, Any] = {"q": query, "k_per_doc": k_per_doc, "k": k}
        if as_of is not None:
            params["as_of"] = as_of.isoformat() if isinstance(as_of, dt.date) else as_of
        return "/api/lookup", LookupAnswer, params

    @staticmethod
    def _documents(q: str, doc_type: str, issuer: str, status: str, page: int) -> Call[DocumentList]:
        params = {"q": q, "doc_type": doc_type, "issuer": issuer, "status": status, "page": page}
        return "/api/documents", DocumentList, params

    @staticmethod
    def _document(doc_id: str, page: int) -> Call[Document]:
        return f"/api/documents/{quote(doc_id, safe='')}", Document, {"page": page}

    @staticmethod
    def _article(doc_id: str, label: str, page: int) -> Call[Article]:
        return f"/api/documents/{quote(doc_id, safe='')}/articles/{quote(label, safe='')}", Article, {"page": page}

    @staticmethod
    def _history(doc_id: str) -> Call[History]:
        return f"/api/documents/{quote(doc_id, safe='')}/history", History, None

    @staticmethod
    def _runs(limit: int) -> Call[Runs]:
        return "/api/runs", Runs, {"limit": limit}

    @staticmethod
    def _ready() -> Call[Health]:
        return "/readyz", Health, None

    def _after(self, attempt: int, response: httpx.Response | None) -> float | None:
        """The one retry policy of both clients: seconds to wait before the next attempt, or None to answer (or
        raise) now: attempts left, and a dropped connection (``response`` None) or a 502/503/504."""
        if attempt >= self.retries or (response is not None and response.status_code not in RETRIED):
            return None
        return self._wait(attempt, response)

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        """Retry-After when the server gave one (capped), else exponential backoff with full jitter."""
        if response is not None:
            after = response.headers.get("retry-after", "")
            if after.isdigit():
                return min(float(after), MAX_WAIT)
        return random.uniform(0, self.backoff * (2**attempt))

    @staticmethod
    def _checked(response: httpx.Response, model: type[M]) -> M:
        if response.status_code != 200:
            try:
                detail = str(response.json().get("detail", response.text))
            except ValueError:
                detail = response.text[:500]
            raise ZanError(response.status_code, detail, response.headers.get("x-request-id"))
        return model.model_validate_json(response.content)


class ZanClient(_Base[httpx.Client, httpx.BaseTransport]):
    """A blocking client; one connection pool for its life (use it as a context manager, or :meth:`close`)."""

    def _open(self, transport: httpx.BaseTransport | None) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=self.headers, timeout=self.timeout, transport=transport)

    def __enter__(self) -> ZanClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _get(self, path: str, model: type[M], params: dict[str, Any] | None = None) -> M:
        for attempt in itertools.count():
            try:
                response = self._http.get(path, params=params)
            except httpx.TransportError:
                if (wait := self._after(attempt, None)) is None:
                    raise
            else:
                if (wait := self._after(attempt, response)) is None:
                    return self._checked(response, model)
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def lookup(self, query: str, k_per_doc: int = 5, as_of: dt.date | str | None = None, k: int = 10) -> LookupAnswer:
        """Identifiers first (``k_per_doc`` chunks of each named document), else plain words (``k`` chunks);
        see :class:`~zan_client.models.LookupAnswer`."""
        return self._get(*self._lookup(query, k_per_doc, as_of, k))

    def documents(
        self, q: str = "", doc_type: str = "", issuer: str = "", status: str = "", page: int = 1
    ) -> DocumentList:
        return self._get(*self._documents(q, doc_type, issuer, status, page))

    def document(self, doc_id: str, page: int = 1) -> Document:
        return self._get(*self._document(doc_id, page))

    def article(self, doc_id: str, label: str, page: int = 1) -> Article:
        return self._get(*self._article(doc_id, label, page))

    def history(self, doc_id: str) -> History:
        return self._get(*self._history(doc_id))

    def runs(self, limit: int = 50) -> Runs:
        return self._get(*self._runs(limit))

    def ready(self) -> Health:
        """The server's readiness; raises :class:`ZanError` (503) while it serves no version."""
        return self._get(*self._ready())


class AsyncZanClient(_Base[httpx.AsyncClient, httpx.AsyncBaseTransport]):
    """The same calls for asyncio (``await zan.lookup(…)``)."""

    def _open(self, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url, headers=self.headers, timeout=self.timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncZanClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _get(self, path: str, model: type[M], params: dict[str, Any] | None = None) -> M:
        for attempt in itertools.count():
            try:
                response = await self._http.get(path, params=params)
            except httpx.TransportError:
                if (wait := self._after(attempt, None)) is None:
                    raise
            else:
                if (wait := self._after(attempt, response)) is None:
                    return self._checked(response, model)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def lookup(
        self, query: str, k_per_doc: int = 5, as_of: dt.date | str | None = None, k: int = 10
    ) -> LookupAnswer:
        return await self._get(*self._lookup(query, k_per_doc, as_of, k))

    async def documents(
        self, q: str = "", doc_type: str = "", issuer: str = "", status: str = "", page: int = 1
    ) -> DocumentList:
        return await self._get(*self._documents(q, doc_type, issuer, status, page))

    async def document(self, doc_id: str, page: int = 1) -> Document:
        return await self._get(*self._document(doc_id, page))

    async def article(self, doc_id: str, label: str, page: int = 1) -> Article:
        return await self._get(*self._article(doc_id, label, page))

    async def history(self, doc_id: str) -> History:
        return await self._get(*self._history(doc_id))

    async def runs(self, limit: int = 50) -> Runs:
        return await self._get(*self._runs(limit))

    async def ready(self) -> Health:
        return await self._get(*self._ready())
