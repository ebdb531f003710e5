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
import dataclasses
import datetime as dt
import hmac
import ipaddress
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from zan_client.models import Article, Document, DocumentList, Health, History, LookupAnswer, Runs

from lookup.errors import BadQuestion, LookupProblem
from lookup.route import Lookup
from lookup.run_history import MAX_RUNS
from lookup.version import Snapshot
from schemas.limits import MAX_FIELD_CHARS, MAX_K, MAX_K_PER_DOC, MAX_LABEL_CHARS, MAX_QUERY_PARAM
from schemas.run_report import TEMPLATES as REPORT_TEMPLATES
from serve import pages
from serve.limits import ServeLimits
from serve.logs import LogFormat
from serve.logs import configure as configure_logs
from serve.mcp import build_mcp
from serve.metrics import Metrics
from serve.served import ServeConfig, Served
from serve.views import MAX_PAGE, article, document, document_history, search_documents

HERE = Path(__file__).resolve().parent
TOKEN_ENV = "ZAN_SERVE_TOKEN"
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
    templates = Jinja2Templates(directory=[str(HERE / "templates"), str(REPORT_TEMPLATES)])  # a run's report too

    async def blocking(call: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(call, *args, limiter=limiter)

    async def answer(model: type[BaseModel], missing: str, view: Callable[..., Any], *args: Any) -> Response:
        """``view(snapshot, *args)`` in the worker pool, typed as ``model``; a view that finds nothing (None) is
        a 404 saying the served version holds ``missing``."""
        _, snap = served.snapshot()
        found = await blocking(view, snap, *args)
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds {missing}")
        return _typed(model, found)

    tools = build_mcp(served.snapshot, served.history, limiter)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        served.start()
        try:
            async with tools.session_manager.run():
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
    # MCP over streamable HTTP at /mcp: stateless JSON answers (no session to keep, nothing streamed), its route
    # put beside the API's so the token, the bounds and the metrics below cover it the same way
    mcp_app = tools.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        host=config.host,
        max_request_body_size=MAX_MCP_BODY,
    )
    app.router.routes.extend(mcp_app.routes)

    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"],
            expose_headers=["X-Request-Id", "X-Zan-Version"],
        )
    app.add_middleware(GuardAndMeasure, token=config.token, metrics=metrics, served=served, limits=config.limits)

    # --- the API ----------------------------------------------------------------------------------------

    @app.get(
        "/api/lookup",
        tags=["api"],
        summary="Resolve a question's identifiers, fetch only their chunks",
        response_model=LookupAnswer,
    )
    async def api_lookup(
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_PARAM, description="The question.")],
        k_per_doc: Annotated[int, Query(ge=1, le=MAX_K_PER_DOC, description="Chunks per matched document.")] = 5,
        k: Annotated[int, Query(ge=1, le=MAX_K, description="Chunks a plain-words question returns.")] = 10,
        as_of: Annotated[dt.date | None, Query(description="The text in force on this date (YYYY-MM-DD).")] = None,
    ) -> Response:
        """The same JSON as `zan lookup --json`: status, identifiers, matches, chunks, hint, version; with
        `as_of`, the named acts' text in force on that date and the edition answered from (`editions`)."""
        lookup, snap = served.snapshot()
        result = await blocking(_answer, lookup, snap, q, k_per_doc, as_of, k)
        metrics.lookups.labels(result.status).inc()
        return Response(
            result.model_dump_json(by_alias=True),
            media_type="application/json",
            headers={"X-Zan-Version": str(result.version)},
        )

    @app.get(
        "/api/documents", tags=["api"], summary="Registry rows, filtered, a page at a time", response_model=DocumentList
    )
    async def api_documents(
        q: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        doc_type: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        issuer: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        status: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    ) -> Response:
        return await answer(DocumentList, "", search_documents, q, doc_type, issuer, status, page)

    @app.get(
        "/api/documents/{doc_id}",
        tags=["api"],
        summary="One document: requisites, status, articles, lineage",
        response_model=Document,
    )
    async def api_document(doc_id: str, page: PageQuery = 1) -> Response:
        """Articles and changes come a page at a time (`page` of `pages`, each list's `totals`)."""
        doc_id = doc_id[:MAX_FIELD_CHARS]
        return await answer(Document, f"no document {doc_id!r}", document, doc_id, served.history, page)

    @app.get(
        "/api/documents/{doc_id}/articles/{label}",
        tags=["api"],
        summary="One article with notes, lineage",
        response_model=Article,
    )
    async def api_article(doc_id: str, label: str, page: PageQuery = 1) -> Response:
        """Chunks (by size) and changes come a page at a time (`page` of `pages`, `totals`)."""
        doc_id, label = doc_id[:MAX_FIELD_CHARS], label[:MAX_LABEL_CHARS]
        return await answer(Article, f"no article {label!r} of {doc_id!r}", article, doc_id, label, page)

    @app.get(
        "/api/documents/{doc_id}/history",
        tags=["api"],
        summary="An act's versions and what each changed",
        response_model=History,
    )
    async def api_history(doc_id: str) -> Response:
        """Each version of the act (from the git history a run read): its date, commit, and the parts it
        changed with a word diff. Empty for an act not read from git."""
        doc_id = doc_id[:MAX_FIELD_CHARS]
        return await answer(History, f"no document {doc_id!r}", document_history, doc_id)

    @app.get(
        "/api/runs", tags=["api"], summary="Run history: change classes, stage seconds, rejects", response_model=Runs
    )
    async def api_runs(limit: Annotated[int, Query(ge=1, le=MAX_RUNS)] = 50) -> Response:
        runs = await blocking(served.history.runs, limit)
        failures = await blocking(served.history.task_failures, limit)
        current = served.lookup.held().version if served.lookup else None
        return _typed(
            Runs, {"current_version": current, "runs": [r.as_dict() for r in runs], "task_failures": failures}
        )

    @app.get(
        "/livez",
        tags=["operations"],
        summary="The process answers (liveness: restart it when this fails)",
        response_model=Health,
    )
    async def livez() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get(
        "/readyz",
        tags=["operations"],
        summary="A version is served (readiness: route traffic here)",
        response_model=Health,
        responses={503: {"model": Health}},
    )
    async def readyz(request: Request) -> JSONResponse:
        """200 with the version while one is served; 503 while none can be (starting, or nothing published)."""
        return await healthz(request)

    @app.get(
        "/healthz",
        tags=["operations"],
        summary="The version served; 503 while none can be",
        response_model=Health,
        responses={503: {"model": Health}},
    )
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

    @app.get(
        "/metrics",
        tags=["operations"],
        summary="Prometheus text format",
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def prometheus() -> Response:
        body, content_type = metrics.render()
        return PlainTextResponse(body, media_type=content_type)

    # --- the pages --------------------------------------------------------------------------------------

    pages.register(app, served, templates, blocking)

    @app.exception_handler(BadQuestion)
    async def bad_question(request: Request, exc: BadQuestion) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(LookupProblem)
    async def cannot_serve(request: Request, exc: LookupProblem) -> JSONResponse:
        """The published data cannot answer (a missing index, another embedder's): the server's state, not the
        client's question."""
        log.warning("request %s: %s", request_id(request.scope), exc)
        return JSONResponse(
            {"detail": "the published version cannot answer this now", "request_id": request_id(request.scope)},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    return app


def _answer(
    lookup: Lookup, snap: Snapshot, q: str, k_per_doc: int, as_of: dt.date | None = None, k: int = 10
) -> LookupAnswer:
    return lookup.route(q, k_per_doc=k_per_doc, k=k, snapshot=snap, as_of=as_of).answer()


def _typed(model: type[BaseModel], found: dict[str, Any]) -> Response:
    """A view's dict checked against its model on the way out. The models ignore fields they do not declare
    (a client reads a newer server's answers), so a view's field the model lacks would silently vanish from
    the API: that is refused here as a fault of ours."""
    if unknown := set(found) - set(model.model_fields):
        raise TypeError(f"{model.__name__} does not declare {sorted(unknown)}")
    return Response(model.model_validate(found).model_dump_json(), media_type="application/json")


# Every response: no script but our own (the pages have none), nothing framed, nothing sniffed, no referrer.
CSP = (
    "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'; img-src 'self' data:; style-src 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
UNCAPPED = frozenset({"/healthz", "/livez", "/readyz"})  # answered whatever the load: an orchestrator must see it
OPEN = UNCAPPED  # answered without the token (they name no path and no data)
REQUEST_ID = "request_id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
MAX_MCP_BODY = 64 * 1024  # one tool call: a question of 4 × MAX_QUERY_CHARS bytes and its arguments, in JSON
log = logging.getLogger("zan.serve")
access = logging.getLogger("zan.access")


def _request_id(given: str | None) -> str:
    """The client's X-Request-Id when it is a plain token of at most 64 characters, else a fresh one."""
    return given if given and _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def request_id(scope: Scope) -> str:
    return str(scope.get("state", {}).get(REQUEST_ID, "-"))


class GuardAndMeasure:
    """Around every request, as plain ASGI (Starlette's ``BaseHTTPMiddleware`` runs each request through an
    extra task and stream): the header count and line bounds (431), the cap on requests in flight (503 with
    ``Retry-After``), the token, the security headers, the metrics and ``X-Zan-Version``."""

    def __init__(self, app: ASGIApp, token: str | None, metrics: Metrics, served: Served, limits: ServeLimits) -> None:
        self.app, self.token, self.metrics, self.served, self.limits = app, token, metrics, served, limits
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [0]
        rid = _request_id(Headers(scope=scope).get("x-request-id"))
        scope.setdefault("state", {})[REQUEST_ID] = rid

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                headers["X-Request-Id"] = rid
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
        except Exception:  # a fault of ours: 500 with the id the log names it by, never the client's 400
            log.exception("request %s failed", rid)
            if status[0]:  # the answer had begun: nothing more can be sent on it
                raise
            await JSONResponse({"detail": "internal error", "request_id": rid}, status_code=500)(
                scope, receive, sending
            )
        finally:
            self.in_flight -= capped
            route = scope.get("route")  # set by the router on this same scope
            seconds = time.perf_counter() - started
            self.metrics.observe(getattr(route, "path", "unmatched"), status[0] or 500, seconds)
            line = {
                "id": rid,
                "method": scope["method"],
                "path": scope["path"],
                "status": status[0] or 500,
                "ms": round(seconds * 1000, 1),
            }
            access.info("%s %s %s", scope["method"], scope["path"], status[0] or 500, extra={"request": line})

    def _refusal(self, scope: Scope, capped: bool) -> Response | None:
        headers = scope["headers"]
        if len(headers) > self.limits.max_headers:
            return JSONResponse({"detail": f"more than {self.limits.max_headers} header fields"}, status_code=431)
        if any(len(name) + len(value) + 2 > self.limits.max_header_line for name, value in headers):
            return JSONResponse(
                {"detail": f"a header field is over {self.limits.max_header_line} bytes"}, status_code=431
            )
        if capped and self.in_flight > self.limits.max_in_flight:
            return JSONResponse(
                {"detail": f"over {self.limits.max_in_flight} requests in flight; retry"},
                status_code=503,
                headers={"Retry-After": str(self.limits.retry_after)},
            )
        if self.token and scope["path"] not in OPEN and not _authorised(Headers(scope=scope), self.token):
            return JSONResponse(
                {"detail": "a bearer token is required"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
        return None


def _authorised(headers: Headers, token: str) -> bool:
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def serve(config: ServeConfig, host: str = "127.0.0.1", port: int = 8787, log_format: LogFormat = "json") -> None:
    """Run the app on uvicorn, with the connection bounds of :mod:`serve.protocol`, until interrupted; logs
    in ``log_format`` on stderr (:mod:`serve.logs`)."""
    import uvicorn

    from serve.protocol import bounded_protocol

    check_binding(host, config.token)
    configure_logs(log_format)
    config = dataclasses.replace(config, host=host)
    limits = config.limits
    _files_for(limits.max_connections)
    uvicorn.run(
        create_app(config),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        http=bounded_protocol(limits),
        timeout_keep_alive=limits.keep_alive,
    )


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
