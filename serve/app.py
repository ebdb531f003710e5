"""``zan serve``: the lookup API Lumi calls and the registry browser people use, one ASGI app.

Why FastAPI (on Starlette, served by uvicorn): the API's contract is published as a generated OpenAPI
schema (``/openapi.json``) with the parameters' bounds in it, request parameters are validated before any
code of ours runs, and it is already in the deployment's lock (Airflow 3's API server runs on it); the pages
are Jinja2 templates rendered on the server, with everything served from this package (no CDN).

How it holds up under load and across publishes:

- One :class:`~lookup.route.Lookup` for the process: the registry index, the lineage, the lexical index and
  the chunk file are opened once per version, the Chroma client once.
- Every request takes the version held at its start (:meth:`Lookup.held`) and answers wholly from it; its
  answer names that version (``version`` in the JSON, ``X-Zan-Version`` on every response).
- A watcher thread polls ``CURRENT`` (:data:`POLL_SECONDS`); when a run publishes or a rollback republishes,
  it opens the new version in the background and swaps it in with one assignment (:meth:`Lookup.refresh`).
  Requests in flight finish on the version they started on; none waits for the opening.
- Blocking work (parsing, ranking, embedding, reading parquet) runs in a bounded pool (``workers``
  threads); inputs are bounded as the CLI bounds them (:func:`lookup.route.clean_query`).

Security: read-only (no endpoint writes, no SQL), loopback by default, and a bearer token (``ZAN_SERVE_TOKEN``)
that every request but ``/healthz`` must carry; binding anywhere but loopback without one is refused. No
request parameter reaches the filesystem: a doc_id, an article or a run id is looked up among the version's
own keys, never joined to a path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hmac
import ipaddress
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lookup.errors import LookupProblem
from lookup.route import MAX_QUERY_CHARS, Lookup
from lookup.version import Snapshot
from runs.history import MAX_RUNS
from serve import pages
from serve.limits import ServeLimits
from serve.metrics import Metrics
from serve.served import ServeConfig, Served
from serve.views import MAX_PAGE, article, document, document_history, search_documents

HERE = Path(__file__).resolve().parent
TOKEN_ENV = "ZAN_SERVE_TOKEN"
MAX_K_PER_DOC = 100
T = TypeVar("T")
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Which page of a long document or article.")]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ValueError(f"zan serve binds {host}, beyond loopback: set {TOKEN_ENV} so every request needs a token")


def create_app(config: ServeConfig) -> FastAPI:
    metrics = Metrics()
    served = Served(config, metrics)
    limiter = anyio.CapacityLimiter(max(1, config.workers))
    templates = Jinja2Templates(directory=str(HERE / "templates"))

    async def blocking(call: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(call, *args, limiter=limiter)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        served.start()
        try:
            yield
        finally:
            served.stop()

    app = FastAPI(
        title="zan",
        summary="Identifier-aware lookup over the published registry, and the registry browser.",
        version="1",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's /docs and /redoc load scripts from a CDN on this origin: off; /openapi.json stays
        redoc_url=None,
    )
    app.state.served = served
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    app.add_middleware(GuardAndMeasure, token=config.token, metrics=metrics, served=served, limits=config.limits)

    # --- the API ----------------------------------------------------------------------------------------

    @app.get("/api/lookup", tags=["api"], summary="Resolve a question's identifiers, fetch only their chunks")
    async def api_lookup(
        q: Annotated[str, Query(min_length=1, max_length=4 * MAX_QUERY_CHARS, description="The question.")],
        k_per_doc: Annotated[int, Query(ge=1, le=MAX_K_PER_DOC, description="Chunks per matched document.")] = 5,
        as_of: Annotated[dt.date | None, Query(description="The text in force on this date (YYYY-MM-DD).")] = None,
    ) -> JSONResponse:
        """The same JSON as `zan lookup --json`: status, identifiers, matches, chunks, hint, version; with
        `as_of`, the named acts' text in force on that date and the edition answered from (`editions`)."""
        lookup, snap = served.snapshot()
        result = await blocking(_answer, lookup, snap, q, k_per_doc, as_of)
        return JSONResponse(result, headers={"X-Zan-Version": str(result["version"])})

    @app.get("/api/documents", tags=["api"], summary="Registry rows, filtered, a page at a time")
    async def api_documents(
        q: Annotated[str, Query(max_length=200)] = "",
        doc_type: Annotated[str, Query(max_length=200)] = "",
        issuer: Annotated[str, Query(max_length=200)] = "",
        status: Annotated[str, Query(max_length=200)] = "",
        page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    ) -> JSONResponse:
        _, snap = served.snapshot()
        found = await blocking(search_documents, snap, q, doc_type, issuer, status, page)
        return JSONResponse(found)

    @app.get("/api/documents/{doc_id}", tags=["api"], summary="One document: requisites, status, articles, lineage")
    async def api_document(doc_id: str, page: PageQuery = 1) -> JSONResponse:
        """Articles and changes come a page at a time (`page` of `pages`, each list's `totals`)."""
        _, snap = served.snapshot()
        found = await blocking(document, snap, doc_id[:200], served.history, page)
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds no document {doc_id!r}")
        return JSONResponse(found)

    @app.get("/api/documents/{doc_id}/articles/{label}", tags=["api"], summary="One article with notes, lineage")
    async def api_article(doc_id: str, label: str, page: PageQuery = 1) -> JSONResponse:
        """Chunks (by size) and changes come a page at a time (`page` of `pages`, `totals`)."""
        _, snap = served.snapshot()
        found = await blocking(article, snap, doc_id[:200], label[:50], page)
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds no article {label!r} of {doc_id!r}")
        return JSONResponse(found)

    @app.get("/api/documents/{doc_id}/history", tags=["api"], summary="An act's versions and what each changed")
    async def api_history(doc_id: str) -> JSONResponse:
        """Each version of the act (from the git history a run read): its date, commit, and the parts it
        changed with a word diff. Empty for an act not read from git."""
        _, snap = served.snapshot()
        found = await blocking(document_history, snap, doc_id[:200])
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds no document {doc_id[:200]!r}")
        return JSONResponse(found)

    @app.get("/api/runs", tags=["api"], summary="Run history: change classes, stage seconds, rejects")
    async def api_runs(limit: Annotated[int, Query(ge=1, le=MAX_RUNS)] = 50) -> JSONResponse:
        runs = await blocking(served.history.runs, limit)
        current = served.lookup.held().version if served.lookup else None
        return JSONResponse({"current_version": current, "runs": [r.as_dict() for r in runs]})

    @app.get("/healthz", tags=["operations"], summary="The version served; 503 while none can be")
    async def healthz(request: Request) -> JSONResponse:
        """Healthy or not, and the version served; why (which may name paths) only to a request that carries
        the token, on a server that has one."""
        detailed = bool(config.token) and _authorised(request.headers, config.token or "")
        if served.lookup is None:
            body: dict[str, Any] = {"status": "unavailable", "reason": served.problem_kind}
            if detailed:
                body["detail"] = served.problem
            return JSONResponse(body, status_code=503)
        body = {"status": "ok", "version": served.lookup.held().version}
        if served.problem:
            body["warning"] = served.problem if detailed else served.problem_kind
        return JSONResponse(body)

    @app.get("/metrics", tags=["operations"], summary="Prometheus text format")
    async def prometheus() -> Response:
        body, content_type = metrics.render()
        return PlainTextResponse(body, media_type=content_type)

    # --- the pages --------------------------------------------------------------------------------------

    pages.register(app, served, templates, blocking)

    @app.exception_handler(LookupProblem)
    async def lookup_problem(request: Request, exc: LookupProblem) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    return app


def _answer(lookup: Lookup, snap: Snapshot, q: str, k_per_doc: int, as_of: dt.date | None = None) -> dict[str, Any]:
    return lookup.route(q, k_per_doc=k_per_doc, snapshot=snap, as_of=as_of).as_dict()


# Every response: no script but our own (the pages have none), nothing framed, nothing sniffed, no referrer.
CSP = ("default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'; img-src 'self' data:; style-src 'self'")  # fmt: skip
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
UNCAPPED = frozenset({"/healthz"})  # answered whatever the load: an orchestrator must see the process alive


class GuardAndMeasure:
    """Around every request, as plain ASGI (Starlette's ``BaseHTTPMiddleware`` runs each request through an
    extra task and stream): the header count and line bounds (431), the cap on requests in flight (503 with
    ``Retry-After``), the token, the security headers, the metrics and ``X-Zan-Version``."""

    def __init__(self, app: ASGIApp, token: str | None, metrics: Metrics, served: Served,
                 limits: ServeLimits) -> None:  # fmt: skip
        self.app, self.token, self.metrics, self.served, self.limits = app, token, metrics, served, limits
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if self.served.lookup is not None and "x-zan-version" not in headers:
                    headers["X-Zan-Version"] = str(self.served.lookup.held().version)
            await send(message)

        capped = scope["path"] not in UNCAPPED
        self.in_flight += capped
        try:
            refused = self._refusal(scope, capped)
            if refused is not None:
                await refused(scope, receive, sending)
            else:
                await self.app(scope, receive, sending)
        finally:
            self.in_flight -= capped
            route = scope.get("route")  # set by the router on this same scope
            self.metrics.observe(getattr(route, "path", "unmatched"), status[0], time.perf_counter() - started)

    def _refusal(self, scope: Scope, capped: bool) -> Response | None:
        headers = scope["headers"]
        if len(headers) > self.limits.max_headers:
            return JSONResponse({"detail": f"more than {self.limits.max_headers} header fields"}, status_code=431)
        if any(len(name) + len(value) + 2 > self.limits.max_header_line for name, value in headers):
            return JSONResponse({"detail": f"a header field is over {self.limits.max_header_line} bytes"},
                                status_code=431)  # fmt: skip
        if capped and self.in_flight > self.limits.max_in_flight:
            return JSONResponse({"detail": f"over {self.limits.max_in_flight} requests in flight; retry"},
                                status_code=503, headers={"Retry-After": str(self.limits.retry_after)})  # fmt: skip
        if self.token and scope["path"] != "/healthz" and not _authorised(Headers(scope=scope), self.token):
            return JSONResponse({"detail": "a bearer token is required"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
        return None


def _authorised(headers: Headers, token: str) -> bool:
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def serve(config: ServeConfig, host: str = "127.0.0.1", port: int = 8787) -> None:
    """Run the app on uvicorn, with the connection bounds of :mod:`serve.protocol`, until interrupted."""
    import uvicorn

    from serve.protocol import bounded_protocol

    check_binding(host, config.token)
    limits = config.limits
    _files_for(limits.max_connections)
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning", access_log=False,
                http=bounded_protocol(limits), timeout_keep_alive=limits.keep_alive)  # fmt: skip


def _files_for(connections: int) -> None:
    """Raise the soft limit on open files toward the hard one, so the connection cap (not the file limit, which
    stops every client at once) is what a flood meets; refuse a cap the hard limit cannot hold."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 256  # the index, parquet files, the pool's sockets
    if hard != resource.RLIM_INFINITY and wanted > hard:
        raise ValueError(f"--max-connections {connections} needs {wanted} open files; the hard limit is {hard}")
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
