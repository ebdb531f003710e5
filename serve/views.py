"""What the server shows of one published version: the document list, a document, an article.

Built from the :class:`~lookup.version.Snapshot` a request answers from (its registry, lineage and chunk
file), so a page never mixes versions either. The registry's full rows (requisites the lookup index does not
keep) are read once per version and kept with it (:func:`documents_of`).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lookup.errors import BadQuestion
from lookup.grammar import parse
from lookup.history import history_of
from lookup.lineage import Change
from lookup.run_history import RunHistory
from lookup.version import Narrowing, Snapshot
from schemas.arrow import CITED_FIELDS
from schemas.identifiers import article_order, canonical_law_number, canonical_order_number
from schemas.links import safe_link

PAGE_SIZE = 50
MAX_PAGE = 10_000
MAX_FILTER_CHARS = 200
# A document or an article is shown a page at a time, whatever its size (a document with 30 000 notes made a
# 5 MB page): articles and change rows by count, an article's text and notes by characters, one long text
# cut where it would fill a page by itself. Every page stays under 500 KB.
ARTICLES_PER_PAGE = 500
CHANGES_PER_PAGE = 200
ARTICLE_PAGE_CHARS = 80_000  # ≤ 160 KB of Cyrillic, ≤ 400 KB were every character one HTML escapes
MAX_TEXT_CHARS = 25_000
REQUISITES = (
    "doc_id",
    "doc_title",
    "doc_type",
    "adilet_id",
    "issuer",
    "issuer_full",
    "order_number",
    "law_zrk",
    "date_approved",
    "registration_number",
    "registration_date",
    "jurisdiction",
    "status",
    "language",
    "languages",
    "source_url",
    "intl_org",
    "intl_section",
    "aliases",
    "repealed_by",
    "repealed_on",
    "replaced_by",
    "amends",
)


@dataclass
class Documents:
    """One version's registry rows by doc_id, and its lineage by changed document."""

    rows: dict[str, dict[str, Any]]
    changes_of: dict[str, list[Change]]  # doc_id → every change a note records of it


_views_lock = threading.Lock()


def documents_of(snap: Snapshot) -> Documents:
    """The version's :class:`Documents`, read on first use and kept while the snapshot lives."""
    with _views_lock:
        found = snap.views.get("documents")
        if found is None:
            path = snap.folder / "registry.parquet"
            names = [n for n in REQUISITES if n in pq.read_schema(path).names]
            rows = {r["doc_id"]: r for r in pq.read_table(path, columns=names).to_pylist()}
            for row in rows.values():  # a link only where it is one (schemas.links): older registries were not vetted
                row["source_url"] = safe_link(row.get("source_url"))
            changes: dict[str, list[Change]] = defaultdict(list)
            for (doc_id, _), found_changes in snap.lineage.by_article.items():
                changes[doc_id] += found_changes
            found = snap.views["documents"] = Documents(rows, dict(changes))
        assert isinstance(found, Documents)
        return found


def _json(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def bounded(value: str | None, what: str) -> str:
    value = (value or "").strip()
    if len(value) > MAX_FILTER_CHARS:
        raise BadQuestion(f"{what} is {len(value)} characters long; the limit is {MAX_FILTER_CHARS}")
    return value


def search_documents(
    snap: Snapshot, q: str = "", doc_type: str = "", issuer: str = "", status: str = "", page: int = 1
) -> dict[str, Any]:
    """Registry rows matching every filter given, a page of :data:`PAGE_SIZE`. ``q``: the documents its
    identifiers resolve to (the lookup's own resolution: «приказ 211» lists the three orders numbered 211),
    else the documents whose title, doc_id, adilet id or an alias contains it (case-folded)."""
    q, doc_type, issuer, status = (
        bounded(v, n) for v, n in ((q, "q"), (doc_type, "doc_type"), (issuer, "issuer"), (status, "status"))
    )
    if not 1 <= page <= MAX_PAGE:
        raise BadQuestion(f"page must be between 1 and {MAX_PAGE}")
    docs = documents_of(snap).rows
    if q:
        identifiers = parse(q)
        matched = [d for m in snap.registry.resolve(identifiers) for d in m.doc_ids] if identifiers else []
        if matched:
            ids = list(dict.fromkeys(matched))
        else:
            needle = q.casefold()
            ids = [d for d, row in docs.items() if needle in _haystack(row)]
    else:
        ids = sorted(docs)
    rows = [docs[d] for d in ids if d in docs]
    if doc_type:
        rows = [r for r in rows if (r.get("doc_type") or "") == doc_type]
    if issuer:
        rows = [r for r in rows if issuer.casefold() in (r.get("issuer") or "").casefold()]
    if status:
        rows = [r for r in rows if (r.get("status") or "") == status]
    start = (page - 1) * PAGE_SIZE
    return {
        "version": snap.version,
        "q": q,
        "total": len(rows),
        "page": page,
        "page_size": PAGE_SIZE,
        "documents": [_brief(r) for r in rows[start : start + PAGE_SIZE]],
        "doc_types": sorted({r.get("doc_type") or "" for r in docs.values()} - {""}),
        "statuses": sorted({r.get("status") or "" for r in docs.values()} - {""}),
    }


def _haystack(row: dict[str, Any]) -> str:
    parts = [row.get("doc_title"), row.get("doc_id"), row.get("adilet_id"), *(row.get("aliases") or [])]
    return " | ".join(p for p in parts if p).casefold()


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("doc_id", *CITED_FIELDS, "status", "repealed_by", "replaced_by")
    return {k: _json(row.get(k)) for k in keys}


def document(snap: Snapshot, doc_id: str, history: RunHistory, page: int = 1) -> dict[str, Any] | None:
    """A document's requisites, status (and what repealed or replaced it), its articles with their current
    edition, the changes notes record of it, what it changed in other acts, and the versions it changed in.
    Articles and changes a page at a time (:data:`ARTICLES_PER_PAGE`, :data:`CHANGES_PER_PAGE`): ``page``
    of ``pages``, with each list's ``totals``. None when the version holds no such document."""
    docs = documents_of(snap)
    row = docs.rows.get(doc_id)
    info = snap.registry.docs.get(doc_id)
    if row is None or info is None:
        return None
    labels = sorted(info.article_labels, key=article_order)
    changed_by = sorted(
        docs.changes_of.get(doc_id, []), key=lambda c: (article_order(c.article), c.by_date or dt.date.min)
    )
    made: list[Change] = []
    for number in _own_numbers(row):
        made += snap.lineage.changed_by(number)
    articles = []
    for label in _page(labels, page, ARTICLES_PER_PAGE):
        edition = snap.lineage.edition(doc_id, label)
        articles.append({"article": label, "last_change": edition.as_dict() if edition else None})
    replaces = sorted(d for d, other in docs.rows.items() if other.get("replaced_by") == doc_id)
    totals = {"articles": len(labels), "changed_by": len(changed_by), "changes_made": len(made)}
    return {
        "version": snap.version,
        "document": _json(row),
        "articles": articles,
        "changed_by": [c.as_dict() for c in _page(changed_by, page, CHANGES_PER_PAGE)],
        "changes_made": [c.as_dict() for c in _page(made, page, CHANGES_PER_PAGE)],
        "replaces": replaces,
        "versions": history.versions_changed(doc_id),
        "editions": _editions(snap, doc_id),
        "page": page,
        "pages": max(
            _pages(len(labels), ARTICLES_PER_PAGE),
            _pages(len(changed_by), CHANGES_PER_PAGE),
            _pages(len(made), CHANGES_PER_PAGE),
        ),
        "totals": totals,
    }


def _pages(count: int, size: int) -> int:
    return max(1, -(-count // size))


def _page(items: list[Any], page: int, size: int) -> list[Any]:
    return items[(page - 1) * size : page * size]


def _editions(snap: Snapshot, doc_id: str) -> list[dict[str, str]]:
    """The act's versions from git (date, commit), newest first; empty for an act not read from git."""
    history = history_of(snap)
    dates = history.dates(doc_id) if history is not None else []
    return [{"version_date": d.isoformat(), "commit": c} for d, c in reversed(dates)]


def document_history(snap: Snapshot, doc_id: str) -> dict[str, Any] | None:
    """The act's versions (:meth:`lookup.history.ActHistory.versions`), None when the version holds no such
    document."""
    if doc_id not in snap.registry.docs:
        return None
    history = history_of(snap)
    versions = history.versions(doc_id) if history is not None else []
    return {"version": snap.version, "doc_id": doc_id, "versions": [v.as_dict() for v in versions]}


def _own_numbers(row: dict[str, Any]) -> list[str]:
    """The numbers amending notes cite this act by, in the lineage's canonical forms (321-VI, 211)."""
    law = canonical_law_number(str(row["law_zrk"])) if row.get("law_zrk") else None
    order = canonical_order_number(str(row["order_number"])) if row.get("order_number") else None
    return list(dict.fromkeys(n for n in (law, order) if n))


def article(snap: Snapshot, doc_id: str, label: str, page: int = 1) -> dict[str, Any] | None:
    """One article of a document: its chunks (heading, text, editorial notes) in order, its current edition
    and every change the notes record, a page at a time: chunks until :data:`ARTICLE_PAGE_CHARS` characters
    of text and notes (long notes split into parts, see :func:`_by_size`), changes
    :data:`CHANGES_PER_PAGE` a page. None when the document or the article is not in the version."""
    info = snap.registry.docs.get(doc_id)
    if info is None or label not in info.article_labels:
        return None
    rows = snap.chunks.rows([doc_id], Narrowing((label,)))
    pages_of_chunks = _by_size(_chunk_texts(snap, rows))
    edition = snap.lineage.edition(doc_id, label)
    changes = sorted(snap.lineage.by_article.get((doc_id, label), []), key=lambda c: c.by_date or dt.date.min)
    return {
        "version": snap.version,
        "doc_id": doc_id,
        "doc_title": info.doc_title,
        "article": label,
        "last_change": edition.as_dict() if edition else None,
        "changes": [c.as_dict() for c in _page(changes, page, CHANGES_PER_PAGE)],
        "chunks": pages_of_chunks[page - 1] if page <= len(pages_of_chunks) else [],
        "page": page,
        "pages": max(len(pages_of_chunks), _pages(len(changes), CHANGES_PER_PAGE)),
        "totals": {"chunks": sum(map(len, pages_of_chunks)), "changes": len(changes)},
    }


def passage(snap: Snapshot, doc_id: str, narrowing: Narrowing | None = None, page: int = 1) -> dict[str, Any] | None:
    """A document's chunks that ``narrowing`` keeps (all of them when it is empty; the named articles' when a
    пункт or section has no chunk of its own), in reading order (article numbers as numbers), a page of
    :data:`ARTICLE_PAGE_CHARS` at a time. None when the version holds no such document."""
    info = snap.registry.docs.get(doc_id)
    if info is None:
        return None
    narrowing = narrowing or Narrowing()
    rows = snap.chunks.rows([doc_id], narrowing)
    if not rows.num_rows and (narrowing.points or narrowing.sections):
        rows = snap.chunks.rows([doc_id], Narrowing(narrowing.articles))
    ids = rows.column("chunk_id").to_pylist()
    rows = rows.take(sorted(range(len(ids)), key=lambda n: _natural(ids[n])))
    pages_of_chunks = _by_size(_chunk_texts(snap, rows))
    return {
        "doc_id": doc_id,
        "doc_title": info.doc_title,
        "article": ", ".join(narrowing.articles) or None,
        "points": list(narrowing.points),
        "chunks": pages_of_chunks[page - 1] if page <= len(pages_of_chunks) else [],
        "page": page,
        "pages": len(pages_of_chunks),
        "totals": {"chunks": sum(map(len, pages_of_chunks))},
    }


def _natural(chunk_id: str) -> tuple[int, list[list[tuple[int, int | str]]]]:
    """Reading order of a document's chunk ids: the preamble, the body, the annexes; within each, art2 before
    art10 before art10-1 (runs of digits compared as numbers, part by part)."""
    unit = chunk_id.split(":")[1] if ":" in chunk_id else chunk_id
    unit = unit.split("/", 1)[1] if unit.startswith(("kaz/", "rus/", "eng/")) else unit
    where = 0 if unit.startswith("pre") else 2 if unit.startswith("annex") else 1
    parts = [
        [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", part) if p]
        for part in re.split(r"[:/-]", chunk_id)
    ]
    return where, parts


def _by_size(chunks: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Chunks in pages of at most :data:`ARTICLE_PAGE_CHARS` characters. Notes longer than
    :data:`MAX_TEXT_CHARS` are split at line ends into parts of the same chunk (``continued``: the chunk's
    text is on an earlier part), so every note is on some page; a heading or text that long is cut there
    (``clipped``)."""
    pages: list[list[dict[str, Any]]] = [[]]
    used = 0
    for part in (p for chunk in chunks for p in _parts(chunk)):
        size = sum(len(part.get(k) or "") for k in ("heading", "text", "notes"))
        if pages[-1] and used + size > ARTICLE_PAGE_CHARS:
            pages.append([])
            used = 0
        pages[-1].append(part)
        used += size
    return pages


def _parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("heading", "text"):
        value = chunk.get(key)
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            chunk[key] = value[:MAX_TEXT_CHARS] + "…"
            chunk["clipped"] = True
    notes = chunk.get("notes")
    if not isinstance(notes, str) or len(notes) <= MAX_TEXT_CHARS:
        return [chunk]
    slices: list[str] = []
    current: list[str] = []
    size = 0
    for line in notes.split("\n"):
        while len(line) > MAX_TEXT_CHARS:  # one line longer than a part: cut into parts
            slices.append("\n".join([*current, line[: MAX_TEXT_CHARS - size]]))
            line, current, size = line[MAX_TEXT_CHARS - size :], [], 0
        if current and size + len(line) + 1 > MAX_TEXT_CHARS:
            slices.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        slices.append("\n".join(current))
    first = {**chunk, "notes": slices[0]}
    return [
        first,
        *(
            {
                "chunk_id": chunk.get("chunk_id"),
                "language": chunk.get("language"),
                "heading": None,
                "text": "",
                "notes": part,
                "continued": True,
            }
            for part in slices[1:]
        ),
    ]


def _chunk_texts(snap: Snapshot, rows: pa.Table) -> list[dict[str, Any]]:
    """heading, text and notes of these rows, read from their row groups only."""
    assert snap.chunks is not None
    wanted = list(zip(rows.column("_group").to_pylist(), rows.column("_row").to_pylist(), strict=True))
    out = []
    tables: dict[int, pa.Table] = {}
    for group, at in wanted:
        if group not in tables:
            tables[group] = snap.chunks.read_group(group, ["chunk_id", "language", "heading", "text", "notes"])
        out.append(_json(tables[group].slice(at, 1).to_pylist()[0]))
    return out
