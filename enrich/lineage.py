"""The lineage of a version: one row per relation an editorial note states (``extractors.notes``), the acting
act resolved to its registry row when the registry holds it, and the fields lineage gives chunks and
registry rows.

- ``lineage.parquet`` (``LINEAGE_SCHEMA``; the ``lineage`` view of ``zan sql``): document, article or heading
  or the whole act, relation, the acting act as written (type, date, number) and its ``by_doc_id``, the date
  it takes effect or the words that say when.
- per chunk (at chunking time, from its own article's notes): ``last_amended`` (the latest acting act's date)
  and ``amended_by`` (its canonical numbers, oldest first);
- per registry row (from the act's own notes): ``repealed_by`` (as written), ``repealed_on``; and, once the
  whole version's registry is known, ``replaced_by`` (the doc_id of the repealing act when zan has it).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from extractors.amendments import amendments
from extractors.model import Document
from extractors.notes import MAX_RELATIONS, NOTE_START, Relation, note_target, parse_note_counted
from schemas.arrow import LINEAGE_SCHEMA, conform
from schemas.kinds import DOC_TYPES, as_doc_type
from schemas.parquet import merge_sorted
from schemas.reference import code_by_title

_CHANGES = ("amended", "new_edition", "added", "excluded")
NOTE_COLUMNS = ("chunk_id", "doc_id", "language", "notes", "source_file")  # what note_rows reads of a chunk
_TYPE_NAMES = {"law": "Закон", "code": "Кодекс", "decree": "Указ", "resolution": "Постановление", "order": "Приказ"}


ParsedNote = tuple[list[Relation], int]  # a note line's relations, and how many it states
ParseNote = Callable[[str], ParsedNote]


class NoteParser:
    """Parses each note line of one document once. A unit's notes give its chunks both their lineage fields
    (:func:`chunk_lineage`) and their lineage rows (:func:`note_rows`). The run makes one parser for each
    document it cuts (``runs.build``), so it holds one document's lines at most. ``known``: what lines parsed
    to before (the last version's, :mod:`runs.notecache`), taken as they are: a line's relations depend on
    the line and the parsing code alone."""

    def __init__(self, known: Mapping[str, ParsedNote] | None = None) -> None:
        self._seen: dict[str, ParsedNote] = {}
        self._known = known or {}

    def __call__(self, line: str) -> ParsedNote:
        found = self._seen.get(line)
        if found is None:
            found = self._known.get(line)
            self._seen[line] = found = found if found is not None else parse_note_counted(line)
        return found

    def lines(self) -> dict[str, ParsedNote]:
        """Every line this parser was asked for, and what it parsed to."""
        return self._seen


def note_relations(notes: Iterable[str], parse: ParseNote | None = None) -> list[Relation]:
    """Every relation the notes state, in order."""
    parse = parse or parse_note_counted
    return [r for note in notes for line in note.split("\n") for r in parse(line)[0]]


def chunk_lineage(notes: Iterable[str], parse: ParseNote | None = None) -> dict[str, Any]:
    """``last_amended`` and ``amended_by`` of the chunks of a unit with these notes."""
    changes = [r for r in note_relations(notes, parse) if r.relation in _CHANGES and (r.by_date or r.by_number)]
    dated = sorted(changes, key=lambda r: r.by_date or dt.date.min)
    numbers = list(dict.fromkeys(r.by_number for r in dated if r.by_number))
    last = max((r.by_date for r in changes if r.by_date), default=None)
    return {"last_amended": last, "amended_by": numbers[:100]}


def act_written(r: Relation) -> str:
    """The acting act as a person writes it: «Указ РК от 18.07.1995 № 2367»."""
    parts = [_TYPE_NAMES.get(r.by_type or "", "Акт") + " РК"]
    if r.by_date:
        parts.append(f"от {r.by_date:%d.%m.%Y}")
    if r.by_number:
        parts.append(f"№ {r.by_number}")
    return " ".join(parts)


def repeal_of(notes: Iterable[str]) -> dict[str, Any]:
    """``repealed_by`` and ``repealed_on`` of an act whose own notes say it lost force."""
    # only a note about the whole act can say it lost force: the others (most of a code's) are not parsed
    acts = (line for note in notes for line in note.split("\n") if note_target(line) == "act")
    repeal = next((r for r in note_relations(acts) if r.relation == "repealed" and r.target_kind == "act"), None)
    if repeal is None:
        return {"repealed_by": None, "repealed_on": None}
    return {"repealed_by": act_written(repeal), "repealed_on": repeal.takes_effect or repeal.by_date}


def amends_of(documents: Iterable[Document]) -> list[dict[str, Any]]:
    """The ``amends`` of a registry row: what the act's own text says it amends (its Russian text when it has
    one: both languages state the same operations)."""
    ordered = sorted(documents, key=lambda d: d.language != "rus")
    if not ordered:
        return []
    text = "\n".join(p for unit in ordered[0].units for p in unit.paragraphs)
    return [
        {
            "relation": a.relation,
            "act": a.act_written,
            "act_type": a.act_type,
            "act_date": a.act_date,
            "act_title": a.act_title,
            "article": a.article,
        }
        for a in amendments(text)
    ][:2000]


@dataclass(frozen=True)
class Overflow:
    """A note that states more relations than :data:`extractors.notes.MAX_RELATIONS` (the first were kept)."""

    doc_id: str
    chunk_id: str
    source_file: str | None
    stated: int

    @property
    def reason(self) -> str:
        return (
            f"an editorial note of {self.chunk_id} states {self.stated} relations; the first {MAX_RELATIONS} "
            "were kept in the lineage"
        )


@dataclass
class Found:
    """What :func:`lineage_batches` learns while it streams: the acts whose own notes say they lost force
    (doc_id → the repealing act's doc_id)."""

    repeals: dict[str, str] = field(default_factory=dict)


def note_rows(
    chunks: Iterable[Mapping[str, Any]], parse: ParseNote | None = None
) -> tuple[list[dict[str, Any]], list[Overflow]]:
    """The lineage rows of the notes of ``chunks`` (rows with chunk_id, doc_id, language, notes, source_file),
    one per relation each note line states, with the acting act not yet resolved. A run makes them where it
    chunks (``runs.build.cut_document``), with the ``parse`` that gave the chunks their lineage fields, so
    each line is parsed once. :func:`lineage_batches` resolves the acting acts once the version's registry is
    known. Also returns the notes that stated more relations than were kept."""
    parse = parse or NoteParser()
    rows: list[dict[str, Any]] = []
    overflows = []
    for chunk in chunks:
        doc_id, chunk_id, source = chunk["doc_id"], chunk["chunk_id"], chunk["source_file"]
        for n, line in enumerate((chunk["notes"] or "").split("\n")):
            if not NOTE_START.match(line):
                continue
            relations, stated = parse(line)
            if stated > len(relations):
                overflows.append(Overflow(doc_id, chunk_id, source, stated))
            rows += [_row(doc_id, chunk["language"], chunk_id, n, line, source, r, None) for r in relations]
    return rows, overflows


def lineage_batches(
    noted: Iterable[pa.Table], registry: pa.Table, found: Found, carried: Iterable[pa.Table] = ()
) -> Iterator[pa.Table]:
    """``LINEAGE_SCHEMA`` tables: the note rows of the rebuilt documents (``noted``, from :func:`note_rows`, in
    chunk id order) and of the documents that did not change (``carried``: the last version's rows, in chunk
    id order), with every acting act resolved in ``registry``, merged in chunk id order; then one row per
    article operation the registry's amending acts state. One batch is held at a time (a version of 140 000
    chunks has as many lineage rows as chunks); what the registry needs from them is kept in ``found``.

    No note is parsed here. A carried act's notes were parsed by the code that would parse them now: a
    changed code fingerprint re-reads every file (``runs.scope``)."""
    resolve = _resolver(registry)
    fresh = (_resolved(table, resolve) for table in noted)
    kept = (_resolved(table, resolve) for table in carried)
    for table in merge_sorted(fresh, kept):
        yield _noting(table, found)
    yield _noting(_table(_amending_rows(registry)), found)


def _resolved(table: pa.Table, resolve: Resolve) -> pa.Table:
    """Note rows with their acting act resolved (``by_doc_id``) in this version's registry."""
    table = conform(table, LINEAGE_SCHEMA, "lineage")
    acts = [resolve(*act) for act in _columns(table, "by_type", "by_number", "by_date")]
    index = LINEAGE_SCHEMA.get_field_index("by_doc_id")
    return table.set_column(index, LINEAGE_SCHEMA.field(index), pa.array(acts, pa.string()))


def lineage_table(chunks: pa.Table, registry: pa.Table) -> tuple[pa.Table, list[Overflow]]:
    """:func:`lineage_batches` of one table of chunks, as one table (small inputs: tests, a single act)."""
    rows, overflows = note_rows(chunks.select(list(NOTE_COLUMNS)).to_pylist())
    tables = list(lineage_batches([_table(rows)], registry, Found()))
    return pa.concat_tables(tables), overflows


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return conform(pa.Table.from_pylist(rows, schema=LINEAGE_SCHEMA), LINEAGE_SCHEMA, "lineage")


def _noting(table: pa.Table, found: Found) -> pa.Table:
    """``table``, its repeals of whole acts kept in ``found`` (the last repealing act named wins)."""
    for doc, rel, kind, by in _columns(table, "doc_id", "relation", "target_kind", "by_doc_id"):
        if rel == "repealed" and kind == "act" and by and by != doc:
            found.repeals[doc] = by
    return table


def _amending_rows(registry: pa.Table) -> list[dict[str, Any]]:
    """Rows from the amending acts' own texts: the amended act (resolved by date and title, or a curated code),
    the article, the operation; the acting act is the amending document itself."""
    affected = _affected_resolver(registry)
    columns = ("doc_id", "doc_type", "date_approved", "law_zrk", "order_number", "amends", "source_files")
    rows = []
    for by_doc, by_type, by_date, law, number, amends, files in _columns(registry, *columns):
        for a in amends or []:
            kind = as_doc_type(by_type) if by_type in DOC_TYPES else None  # "unknown" is no type
            by = Relation(
                a["relation"],
                "article",
                f"Статья {a['article']}",
                a["article"],
                kind,
                by_date,
                law or number,
                None,
                None,
            )
            row = _row(
                affected(a),
                "rus",
                None,
                None,
                f"{a['act']}: {a['relation']} ст. {a['article']}",
                (files or [None])[0],
                by,
                by_doc,
            )
            rows.append(row | {"source": "amending_text", "affected": a["act"]})
    return rows


def _affected_resolver(registry: pa.Table) -> Any:
    """An amended act → its doc_id: a registry row of that date whose title holds the act's quoted title, or the
    curated code of that title and date."""
    by_date: dict[dt.date, list[tuple[str, str]]] = defaultdict(list)
    known = set(registry.column("doc_id").to_pylist())
    for doc, title, date in _columns(registry, "doc_id", "doc_title", "date_approved"):
        if date:
            by_date[date].append((doc, _fold(title)))

    def resolve(a: dict[str, Any]) -> str | None:
        title, date = a["act_title"], a["act_date"]
        if not title or not date:
            return None
        code = code_by_title(title)
        if code is not None and code.date_approved == date and code.adilet_id.lower() in known:
            return code.adilet_id.lower()
        found = [doc for doc, t in by_date.get(date, []) if _fold(title) in t]
        return found[0] if len(found) == 1 else None

    return resolve


def _fold(text: str) -> str:
    return re.sub(r"[^\w]+", " ", text.casefold()).strip()


def with_replacements(registry: pa.Table, repeals: dict[str, str] | pa.Table) -> pa.Table:
    """``registry`` with ``replaced_by``: the repealing act's doc_id, for acts whose notes say they lost force
    (``repeals`` as :class:`Found` keeps them, or a lineage table)."""
    if isinstance(repeals, pa.Table):
        found = Found()
        _noting(repeals, found)
        repeals = found.repeals
    values = [repeals.get(doc) for doc in registry.column("doc_id").to_pylist()]
    index = registry.schema.get_field_index("replaced_by")
    return registry.set_column(index, registry.schema.field(index), pa.array(values, pa.string()))


def with_successors(registry: pa.Table) -> pa.Table:
    """``registry`` with ``replaced_by`` filled from the successors' own word: an act whose ``replaces`` names
    a document of the registry is that document's successor, where no note said otherwise."""
    if "replaces" not in registry.column_names:
        return registry
    successor: dict[str, str] = {}
    for doc, replaced in _columns(registry, "doc_id", "replaces"):
        for old in replaced or ():
            successor.setdefault(old, doc)
    if not successor:
        return registry
    values = [held or successor.get(doc) for doc, held in _columns(registry, "doc_id", "replaced_by")]
    index = registry.schema.get_field_index("replaced_by")
    return registry.set_column(index, registry.schema.field(index), pa.array(values, pa.string()))


def _columns(table: pa.Table, *names: str) -> Iterator[tuple[Any, ...]]:
    return zip(*(table.column(n).to_pylist() for n in names), strict=True)


Resolve = Callable[[str | None, str | None, dt.date | None], str | None]  # (type, number, date) → doc_id


def _resolver(registry: pa.Table) -> Resolve:
    """acting act (its type, number, date) → its doc_id: a law or code by its number (414-V), another act by
    type, number and date."""
    by_law: dict[str, str] = {}
    by_act: dict[tuple[str, str, dt.date], str] = {}
    for doc, doc_type, law, number, date in _columns(
        registry, "doc_id", "doc_type", "law_zrk", "order_number", "date_approved"
    ):
        if law:
            by_law.setdefault(law, doc)
        if number and date:
            by_act.setdefault((doc_type, number, date), doc)

    def resolve(by_type: str | None, by_number: str | None, by_date: dt.date | None) -> str | None:
        if not by_number:
            return None
        if by_number in by_law:
            return by_law[by_number]
        return by_act.get((by_type or "", by_number, by_date)) if by_date else None

    return resolve


def _row(
    doc_id: str | None,
    language: str,
    chunk_id: str | None,
    n: int | None,
    note: str,
    source: str | None,
    r: Relation,
    by_doc_id: str | None,
) -> dict[str, Any]:
    return {
        "source": "note",
        "doc_id": doc_id,
        "affected": None,
        "language": language,
        "chunk_id": chunk_id,
        "note_index": n,
        "target_kind": r.target_kind,
        "target": r.target,
        "article": r.article,
        "relation": r.relation,
        "by_type": r.by_type,
        "by_date": r.by_date,
        "by_number": r.by_number,
        "by_written": act_written(r),
        "by_doc_id": by_doc_id,
        "takes_effect": r.takes_effect,
        "takes_effect_text": r.takes_effect_text,
        "note": note[:2000],
        "source_file": source,
    }
