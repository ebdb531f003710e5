"""The answers of `zan serve`, typed: one definition for `zan lookup --json`, every `/api/…` response, the MCP
tools' structured output and this client.

Field names are a contract other tools read: a field may be added, never renamed or removed. Every model
ignores fields it does not know (``extra="ignore"``), so a client older than its server still reads the answer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LookupStatus = Literal["exact", "ambiguous", "partial", "not_found", "no_identifier"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Identifier(_Model):
    """One identifier the question names; ``span`` slices the question."""

    kind: str = Field(description="order, law, code_article, standard, adilet_id, title, …")
    raw: str = Field(description="As the question wrote it.")
    canonical: str = Field(description="Its canonical spelling (look-alikes and dashes folded).")
    span: tuple[int, int]
    binding: str | None = Field(None, description="The rule that bound an article or пункт to its document.")


class Candidate(_Model):
    """A document an identifier resolved to: what to show the user when asking which one is meant."""

    doc_id: str
    ref: str = Field(description="How to cite it: the adilet id, else the doc_id.")
    title: str
    doc_type: str
    issuer: str | None = None
    number: str | None = Field(None, description="Order number, law number or standard section.")
    date_approved: str | None = None
    status: str = Field(description="in_force, repealed, …")


class Match(_Model):
    """What one identifier resolved to in the registry, and why."""

    identifier: str = Field(description="The identifier's canonical spelling.")
    raw: str
    kind: str
    status: LookupStatus
    doc_ids: list[str]
    articles: list[str] = Field(default_factory=list, description="Articles that narrow the fetch.")
    sections: list[str] = Field(default_factory=list)
    near: list[str] = Field(default_factory=list, description="Same number, but issuer, date or edition differ.")
    reason: str | None = Field(None, description="Why nothing or something else was matched.")
    points: list[str] = Field(default_factory=list, description="Пункты that narrow the fetch.")
    binding: str | None = None
    candidates: list[Candidate] = Field(default_factory=list, description="doc_ids, described (ask the user).")


class Chunk(_Model):
    """One passage of a document, with the scores that ranked it."""

    chunk_id: str
    doc_id: str
    code_articles: list[int] = Field(default_factory=list)
    article_labels: list[str] = Field(default_factory=list)
    point_labels: list[str] = Field(default_factory=list)
    annex: int | None = None
    text: str
    score: float
    language: str | None = None
    vector: float | None = Field(None, description="Cosine to the question, when the vector ranking held it.")
    lexical: float | None = Field(None, description="BM25, when the lexical ranking held it.")
    fused: float | None = Field(None, description="Reciprocal-rank fusion of the two.")
    found_by: str = Field(description="identifier, vector, lexical or both.")
    replaces: str | None = Field(None, description="The repealed document this chunk's act replaced.")
    doc_title: str | None = Field(None, description="Its document's title.")
    ref: str | None = Field(None, description="How to cite its document: the adilet id, else the doc_id.")
    doc_status: str | None = Field(None, description="Its document's status: in_force, repealed, …")


class Change(_Model):
    """One change an amending act made, as an editorial note records it."""

    doc_id: str | None = None
    affected: str | None = None
    article: str | None = None
    target: str
    relation: str
    by: str = Field(description="The amending act, as written.")
    by_date: str | None = None
    takes_effect: str | None = None


class Expansion(_Model):
    """Words added to a plain-words question, and why (``by``: vocabulary or bridge)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    from_: str = Field(alias="from", serialization_alias="from")
    to: str
    by: str


class Edition(_Model):
    """The version of a named act an ``as_of`` answer quotes."""

    doc_id: str
    as_of: str
    found: Literal["history", "current", "none"]
    version_date: str | None = None
    commit: str | None = None
    link: str | None = None


class LookupAnswer(_Model):
    """The answer to one question: `zan lookup --json`, `GET /api/lookup`, the MCP ``lookup`` and ``search``
    tools. ``status``: exact (one document per identifier), ambiguous (ask the user which candidate),
    partial (some identifiers resolved), not_found (refused: no chunk is guessed), no_identifier (plain
    words: ranked search)."""

    query: str
    status: LookupStatus
    identifiers: list[Identifier] = Field(default_factory=list)
    matches: list[Match] = Field(default_factory=list)
    doc_ids: list[str] = Field(default_factory=list)
    chunks: list[Chunk] = Field(default_factory=list)
    hint: str = Field(description="What to tell the model: which document, what is ambiguous or missing.")
    changed: dict[str, list[Change]] = Field(default_factory=dict, description="Amending act → what it changed.")
    version: str | None = Field(None, description="The published version every part of the answer comes from.")
    expanded: list[Expansion] = Field(default_factory=list)
    as_of: str | None = None
    editions: list[Edition] = Field(default_factory=list)


# --- the registry's views -------------------------------------------------------------------------------


class DocumentBrief(_Model):
    """A registry row as a list shows it."""

    doc_id: str
    doc_title: str | None = None
    doc_type: str | None = None
    adilet_id: str | None = None
    issuer: str | None = None
    order_number: str | None = None
    law_zrk: str | None = None
    date_approved: str | None = None
    status: str | None = None
    repealed_by: str | None = None
    replaced_by: str | None = None


class DocumentList(_Model):
    """`GET /api/documents`: registry rows matching every filter, a page at a time."""

    version: str | None
    q: str
    total: int
    page: int
    page_size: int
    documents: list[DocumentBrief]
    doc_types: list[str] = Field(default_factory=list)
    statuses: list[str] = Field(default_factory=list)


class Requisites(DocumentBrief):
    """A registry row whole: its requisites, status and identifiers."""

    issuer_full: str | None = None
    registration_number: str | None = None
    registration_date: str | None = None
    jurisdiction: str | None = None
    language: str | None = None
    languages: list[str] | None = None
    source_url: str | None = None
    intl_org: str | None = None
    intl_section: str | None = None
    aliases: list[str] | None = None
    repealed_on: str | None = None
    amends: list[str] | None = None


class ArticleEntry(_Model):
    article: str
    last_change: Change | None = None


class VersionChanged(_Model):
    """A published version in which the document was added, changed or removed."""

    version: str | None = None
    run_id: str | None = None
    how: str | None = None
    finished: str | None = None


class EditionDate(_Model):
    version_date: str
    commit: str


class Document(_Model):
    """`GET /api/documents/{doc_id}`: requisites, status, articles with their current edition, lineage."""

    version: str | None
    document: Requisites
    articles: list[ArticleEntry]
    changed_by: list[Change]
    changes_made: list[Change]
    replaces: list[str]
    versions: list[VersionChanged]
    editions: list[EditionDate]
    page: int
    pages: int
    totals: dict[str, int]


class ArticleChunk(_Model):
    """A passage of an article as read: heading, text and editorial notes."""

    chunk_id: str | None = None
    language: str | None = None
    heading: str | None = None
    text: str | None = None
    notes: str | None = None
    continued: bool = False
    clipped: bool = False


class Article(_Model):
    """`GET /api/documents/{doc_id}/articles/{label}`: one article's text, notes and changes."""

    version: str | None
    doc_id: str
    doc_title: str | None = None
    article: str
    last_change: Change | None = None
    changes: list[Change]
    chunks: list[ArticleChunk]
    page: int
    pages: int
    totals: dict[str, int]


class ActVersion(_Model):
    version_date: str
    commit: str
    committed: str
    changed: list[dict[str, Any]] = Field(default_factory=list)


class History(_Model):
    """`GET /api/documents/{doc_id}/history`: the act's versions and what each changed (git sources)."""

    version: str | None
    doc_id: str
    versions: list[ActVersion]


class StageResult(_Model):
    """What one stage of a run did: what it read and wrote (``units`` says what), rejected, its seconds."""

    stage: str
    read: int = 0
    wrote: int = 0
    rejected: int = 0
    seconds: float = 0.0
    units: str = ""


class Run(_Model):
    """One run of the ETL, as its report says."""

    run_id: str
    status: str
    version: str | None = None
    previous_version: str | None = None
    started: str | None = None
    finished: str | None = None
    scope: str | None = None
    documents: int = 0
    chunks: int = 0
    classes: dict[str, int] = Field(default_factory=dict)
    seconds: dict[str, float] = Field(default_factory=dict)
    rejected: int = 0
    rejects: list[dict[str, Any]] = Field(default_factory=list)
    documents_diff: dict[str, list[str]] = Field(default_factory=dict)
    error: str | None = None
    stages: list[StageResult] = Field(default_factory=list)


class TaskFailure(_Model):
    """A scheduled task that failed for good (the DAGs' failure callback wrote it), newest first."""

    when: str | None = None
    dag_id: str | None = None
    task_id: str | None = None
    run_id: str | None = None
    map_index: str | None = None
    try_number: str | None = None
    log_url: str | None = None
    error: str | None = None


class Runs(_Model):
    """`GET /api/runs`."""

    current_version: str | None
    runs: list[Run]
    task_failures: list[TaskFailure] = Field(default_factory=list)


class Health(_Model):
    """`/healthz`, `/readyz`: whether a version can be served, and which."""

    status: Literal["ok", "unavailable"]
    version: str | None = None
    reason: str | None = None
    detail: str | None = None
    warning: str | None = None


# --- what the MCP tools answer beyond a lookup ------------------------------------------------------------


class Passage(_Model):
    """A document's text, or one article's or пункт's, in reading order, a page at a time."""

    doc_id: str
    doc_title: str | None = None
    article: str | None = None
    points: list[str] = Field(default_factory=list)
    chunks: list[ArticleChunk]
    page: int
    pages: int
    totals: dict[str, int] = Field(default_factory=dict)


class Resolved(_Model):
    """What every answer that starts from the question's identifiers carries: the status (exact, ambiguous,
    partial, not_found, no_identifier), the matches with their candidates, the hint, the version."""

    query: str
    status: LookupStatus
    hint: str
    version: str | None = None
    matches: list[Match] = Field(default_factory=list)


class Reading(Resolved):
    """The MCP ``read`` tool: the text of what the question names exactly (a document, an article, a пункт)."""

    passages: list[Passage] = Field(default_factory=list)


class DocumentAnswer(Resolved):
    """The MCP ``document`` tool: requisites, status and lineage of each document the question names exactly."""

    documents: list[Document] = Field(default_factory=list)


class HistoryAnswer(Resolved):
    """The MCP ``history`` tool: the versions of each act the question names exactly (acts read from git)."""

    histories: list[History] = Field(default_factory=list)
