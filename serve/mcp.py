"""zan as an MCP server (the official ``mcp`` SDK): the tools a chatbot calls, over stdio (`zan mcp`) and
streamable HTTP (mounted at ``/mcp`` in `zan serve`, behind the same token and bounds as the API).

Every tool takes the user's question as ``query`` and answers with a typed model of :mod:`zan_client.models`
as structured content (the JSON text beside it for clients that read text only). The tools that read
(``read``, ``document``, ``history``) start from the identifiers the question names and answer only what
resolved exactly; an ambiguous or unknown identifier comes back with its status, candidates and hint, so the
model can ask the user instead of guessing. Descriptions are written for a model, in English and Russian.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from zan_client.models import (
    Document,
    DocumentAnswer,
    History,
    HistoryAnswer,
    LookupAnswer,
    Passage,
    Reading,
    Resolved,
)

from lookup.plain import DocFilter
from lookup.result import RouteResult, fetch_plan
from lookup.route import Lookup
from lookup.run_history import RunHistory
from lookup.version import Narrowing, Snapshot
from schemas.limits import MAX_FIELD_CHARS, MAX_K, MAX_K_PER_DOC, MAX_QUERY_PARAM
from serve.views import document, document_history, passage

INSTRUCTIONS = """\
zan answers questions about the law of Kazakhstan on labour safety (codes, laws, ministerial orders and rules)
and international safety standards (29 CFR, API, NFPA, ISO, IOGP, ТР ТС, ГОСТ), from a registry of documents.
Call `lookup` first with the user's question as written. If `status` is `ambiguous`, ask the user which of
`matches[].candidates` is meant; if `not_found`, say the document is not in the registry: never answer from
another document. Quote `chunks[].text` and cite `doc_id` and `article_labels`; `hint` says what to tell the
user. / zan отвечает на вопросы о законодательстве РК по охране труда и о стандартах безопасности. Сначала
вызывайте `lookup` с вопросом пользователя; при `ambiguous` спросите, какой документ из `candidates` нужен;
при `not_found` скажите, что документа нет в реестре, и не отвечайте по другому документу."""

Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_PARAM,
        description="The user's question as written / вопрос пользователя как есть.",
    ),
]
KPerDoc = Annotated[int, Field(ge=1, le=MAX_K_PER_DOC, description="Passages per matched document.")]
Page = Annotated[int, Field(ge=1, le=10_000, description="Which page of a long text (see `pages`).")]
Source = Callable[[], tuple[Lookup, Snapshot]]  # the lookup and the version a call answers from


def build_mcp(source: Source, history: RunHistory, limiter: anyio.CapacityLimiter | None = None) -> MCPServer:
    """The MCP server over whatever ``source`` gives: a `zan serve` process's current version, or a lookup
    opened by `zan mcp`. Blocking work runs in worker threads (bounded by ``limiter``)."""
    server: MCPServer = MCPServer(
        name="zan",
        title="zan — законодательство РК и стандарты безопасности",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
    )
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    async def blocking(call: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(call, *args, limiter=limiter)

    @server.tool(annotations=read_only)
    async def lookup(query: Query, k_per_doc: KPerDoc = 5, as_of: dt.date | None = None) -> LookupAnswer:
        """Answer a question, identifiers first. Use this first, for every question.

        If the question names documents («ст. 182 ТК РК», «приказ МТСЗН № 211», «29 CFR 1910.146»), only their
        passages are returned (status `exact`); `ambiguous`: several documents carry that number: ask the user
        which of `matches[].candidates`; `not_found`: the registry has no such document: say so, do not answer
        from another one; `no_identifier`: plain words, ranked search over every document. `as_of`
        (YYYY-MM-DD): the text in force on that date, for acts whose versions are kept.
        / Ответ на вопрос: сначала номера документов, затем поиск по словам."""

        def answer() -> LookupAnswer:
            found, snap = source()
            return found.route(query, k_per_doc=k_per_doc, snapshot=snap, as_of=as_of).answer()

        result: LookupAnswer = await blocking(answer)
        return result

    @server.tool(annotations=read_only)
    async def search(
        query: Query,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many passages.")] = 10,
        doc_type: Annotated[str | None, Field(description="code, law, order, resolution, decree, standard …")] = None,
        issuer: Annotated[
            str | None, Field(max_length=MAX_FIELD_CHARS, description="Issuer, e.g. МТСЗН, МЧС, OSHA.")
        ] = None,
        status: Annotated[str | None, Field(description="in_force or repealed.")] = None,
        language: Annotated[str | None, Field(description="rus, kaz or eng: the passages' language.")] = None,
    ) -> LookupAnswer:
        """Search in plain words, optionally only in documents of one type, issuer or status, or passages in
        one language. Numbers in the query are searched as words, not resolved: use `lookup` when the user
        names a document. / Поиск по словам с фильтрами по виду документа, органу, статусу, языку."""
        where = DocFilter(doc_type or None, issuer or None, status or None, language or None)

        def answer() -> LookupAnswer:
            found, _ = source()
            return found.search(query, k, where).answer()

        result: LookupAnswer = await blocking(answer)
        return result

    @server.tool(annotations=read_only)
    async def read(query: Query, page: Page = 1) -> Reading:
        """Read the text of what the question names: a whole document («Трудовой кодекс», «приказ МТСЗН
        № 211»), an article («ст. 182 ТК РК») or a пункт («п. 12 Правил приказа МТСЗН № 211»), in reading
        order, a page at a time (`pages`). Only exact matches are read; otherwise `status` and `matches` say
        what to ask. / Текст документа, статьи или пункта, названного в вопросе."""

        def answer() -> Reading:
            found, snap = source()
            resolved = found.resolve(query, snap)
            passages = [
                Passage.model_validate(p) for d, n in _exact_plan(resolved).items() for p in _passages(snap, d, n, page)
            ]
            return Reading(**_head(resolved), passages=passages)

        result: Reading = await blocking(answer)
        return result

    @server.tool(name="document", annotations=read_only)
    async def document_info(query: Query, page: Page = 1) -> DocumentAnswer:
        """Requisites (issuer, number, dates, registration), status (in force, repealed, what replaced it),
        articles with their latest change, and lineage (what amended it, what it amended) of each document the
        question names. / Реквизиты, статус и история изменений документа."""

        def answer() -> DocumentAnswer:
            found, snap = source()
            resolved = found.resolve(query, snap)
            docs = [document(snap, d, history, page) for d in _exact_plan(resolved)]
            return DocumentAnswer(**_head(resolved), documents=[Document.model_validate(d) for d in docs if d])

        result: DocumentAnswer = await blocking(answer)
        return result

    @server.tool(name="history", annotations=read_only)
    async def history_of(query: Query) -> HistoryAnswer:
        """The versions of each act the question names and what each version changed (acts read from the
        kazakhstan-law git history; empty for others). For the text on a past date call `lookup` with
        `as_of`. / Редакции акта и что изменила каждая."""

        def answer() -> HistoryAnswer:
            found, snap = source()
            resolved = found.resolve(query, snap)
            found_histories = [document_history(snap, d) for d in _exact_plan(resolved)]
            histories = [History.model_validate(h) for h in found_histories if h]
            return HistoryAnswer(**_head(resolved), histories=histories)

        result: HistoryAnswer = await blocking(answer)
        return result

    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zan")
    except PackageNotFoundError:
        return "0"


def _head(resolved: RouteResult) -> dict[str, Any]:
    answer = resolved.answer()
    return Resolved(
        query=answer.query, status=answer.status, hint=answer.hint, version=answer.version, matches=answer.matches
    ).model_dump()


def _exact_plan(resolved: RouteResult) -> dict[str, Narrowing]:
    """doc_id → narrowing, for the identifiers that resolved to exactly one document."""
    exact = [m for m in resolved.matches if m.status == "exact"]
    return fetch_plan(exact)


def _passages(snap: Snapshot, doc_id: str, narrowing: Narrowing, page: int) -> list[dict[str, Any]]:
    """One passage per named article (each paged on its own), or one of the пункты or the whole document."""
    if not narrowing.articles:
        found = passage(snap, doc_id, narrowing, page)
        return [found] if found else []
    out = []
    for label in narrowing.articles:
        found = passage(
            snap, doc_id, Narrowing((label,), narrowing.sections, narrowing.points, narrowing.in_annex), page
        )
        if found:
            out.append(found)
    return out
