"""The pages people use, rendered on the server at addresses they can share: ``/?q=…`` (search, answered as
the lookup answers), ``/documents`` (the registry, filtered), ``/documents/{doc_id}``,
``/documents/{doc_id}/articles/{article}``, ``/runs`` (history with charts) and ``/runs/{run_id}`` (one run's
report, with the template its own HTML file is written with). Everything they load is
served from this package: one stylesheet, inline SVG charts, no script; every page is rendered in the worker
pool and a long document or article comes a page at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from lookup.route import Lookup
from lookup.version import Snapshot
from schemas.changes import CLASSES, RunStatus
from schemas.charts import stacked_bars
from schemas.limits import MAX_FIELD_CHARS, MAX_LABEL_CHARS, MAX_QUERY_PARAM
from schemas.links import safe_link
from schemas.run_report import RunReport, report_view
from serve.served import Served
from serve.views import MAX_PAGE, article, document, search_documents

Blocking = Callable[..., Awaitable[Any]]
PageNumber = Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)]

STATUS_WORDS = {  # a document's status, as a person reads it
    "in_force": "действует",
    "updated": "действует, с изменениями",
    "repealed": "утратил силу",
    "not_in_force": "не вступил в силу",
    "suspended": "приостановлен",
    "unknown": "статус на странице не указан",
}
STATUS_TEXT = {  # what a page says of a lookup's status
    "exact": "Найден документ",
    "ambiguous": "Несколько документов с этим номером — уточните, какой имеется в виду",
    "partial": "Найдена часть названных документов",
    "not_found": "Не найдено в реестре",
    "no_identifier": "Номер документа не назван: ответ по смыслу вопроса",
}


def register(app: FastAPI, served: Served, templates: Jinja2Templates, blocking: Blocking) -> None:
    templates.env.globals["safe_link"] = safe_link  # an href only for a link schemas.links allows

    async def page(request: Request, name: str, snap: Snapshot | None, **context: Any) -> HTMLResponse:
        """The template rendered in the worker pool, never on the event loop (a long page took the loop)."""
        context |= {"version": snap.version if snap else None, "status_words": STATUS_WORDS}
        response: HTMLResponse = await blocking(templates.TemplateResponse, request, name, context)
        if snap is not None:
            response.headers["X-Zan-Version"] = str(snap.version)
        return response

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def search_page(request: Request, q: Annotated[str, Query(max_length=MAX_QUERY_PARAM)] = "") -> HTMLResponse:
        lookup, snap = served.snapshot()
        answer = await blocking(_lookup_view, lookup, snap, q) if q.strip() else None
        return await page(request, "search.html", snap, q=q, answer=answer)

    @app.get("/documents", response_class=HTMLResponse, include_in_schema=False)
    async def documents_page(
        request: Request,
        q: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        doc_type: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        issuer: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        status: Annotated[str, Query(max_length=MAX_FIELD_CHARS)] = "",
        page_number: PageNumber = 1,
    ) -> HTMLResponse:
        _, snap = served.snapshot()
        found = await blocking(search_documents, snap, q, doc_type, issuer, status, page_number)
        filters = {"q": q, "doc_type": doc_type, "issuer": issuer, "status": status}
        return await page(request, "documents.html", snap, found=found, filters=filters)

    @app.get("/documents/{doc_id}", response_class=HTMLResponse, include_in_schema=False)
    async def document_page(request: Request, doc_id: str, page_number: PageNumber = 1) -> HTMLResponse:
        _, snap = served.snapshot()
        found = await blocking(document, snap, doc_id[:MAX_FIELD_CHARS], served.history, page_number)
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds no document {doc_id[:MAX_FIELD_CHARS]!r}")
        return await page(request, "document.html", snap, doc=found)

    @app.get("/documents/{doc_id}/articles/{label}", response_class=HTMLResponse, include_in_schema=False)
    async def article_page(request: Request, doc_id: str, label: str, page_number: PageNumber = 1) -> HTMLResponse:
        _, snap = served.snapshot()
        doc_id, label = doc_id[:MAX_FIELD_CHARS], label[:MAX_LABEL_CHARS]
        found = await blocking(article, snap, doc_id, label, page_number)
        if found is None:
            raise HTTPException(404, detail=f"version {snap.version} holds no article {label!r} of {doc_id!r}")
        return await page(request, "article.html", snap, art=found)

    @app.get("/runs", response_class=HTMLResponse, include_in_schema=False)
    async def runs_page(request: Request) -> HTMLResponse:
        runs = await blocking(served.history.runs, 50)
        failures = await blocking(served.history.task_failures, 50)
        snap = served.lookup.held() if served.lookup else None
        return await page(request, "runs.html", snap, runs=runs, charts=run_charts(runs), failures=failures)

    @app.get("/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
    async def run_page(request: Request, run_id: str) -> HTMLResponse:
        report = await blocking(served.history.run, run_id[:MAX_FIELD_CHARS])
        if report is None:
            raise HTTPException(404, detail=f"no run {run_id[:MAX_FIELD_CHARS]!r} under this home")
        snap = served.lookup.held() if served.lookup else None
        return await page(request, "run.html", snap, report=report, view=report_view(report))


def _lookup_view(lookup: Lookup, snap: Snapshot, q: str) -> dict[str, Any]:
    """The lookup's answer, with each matched document's requisites for the page."""
    result = lookup.route(q, snapshot=snap)
    answer = result.as_dict()
    docs = snap.registry.docs
    matches = []
    for m, typed in zip(result.matches, answer["matches"], strict=True):
        candidates = [docs[d] for d in m.doc_ids if d in docs]
        matches.append({"match": typed, "candidates": candidates})
    return {
        "result": answer,
        "status_text": STATUS_TEXT.get(result.status, result.status),
        "matches": matches,
        "titles": {c.doc_id: docs[c.doc_id].doc_title for c in result.chunks if c.doc_id in docs},
    }


def run_charts(runs: list[RunReport]) -> list[str]:
    """Documents and chunks per published version, change classes per run, seconds per stage per run
    (oldest first, as a history reads)."""
    ordered = list(reversed(runs))
    kept = (RunStatus.PUBLISHED, RunStatus.UNCHANGED, RunStatus.ROLLED_BACK)  # a run after which a version is current
    published = [r for r in ordered if r.status in kept and r.version]
    labels = [r.version or "" for r in published]
    charts = [
        stacked_bars("Документы в версии", labels, {"documents": [r.documents for r in published]}),
        stacked_bars("Фрагменты (chunks) в версии", labels, {"chunks": [r.chunks for r in published]}),
    ]
    run_labels = [r.run_id[:15] for r in ordered]
    changed: dict[str, Sequence[float]] = {
        str(c): [r.classes.get(c, 0) for r in ordered] for c in CLASSES if c != "unchanged"
    }
    charts.append(stacked_bars("Изменения по классам, по запускам", run_labels, changed))
    stages = list(dict.fromkeys(s for r in ordered for s in r.seconds))
    charts.append(
        stacked_bars(
            "Секунды по стадиям, по запускам",
            run_labels,
            {s: [r.seconds.get(s, 0.0) for r in ordered] for s in stages},
            unit=" s",
        )
    )
    return charts
