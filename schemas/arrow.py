"""Arrow schemas: the contracts between stages. Every writer validates against one before publishing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from schemas.errors import ZanError

# How one source file of a document was read: the parser chosen, the evidence for it, and what became of
# every article-heading-like line counted in the source (``unexplained`` = counted but not accounted for).
EXTRACTION = pa.struct(
    [
        pa.field("source_file", pa.string()),
        pa.field("parser", pa.string()),
        pa.field("evidence", pa.list_(pa.string())),
        pa.field("heading_lines", pa.int32()),
        pa.field("articles", pa.int32()),
        pa.field("annex_articles", pa.int32()),
        pa.field("quoted", pa.int32()),
        pa.field("notes", pa.int32()),
        pa.field("toc", pa.int32()),
        pa.field("out_of_sequence", pa.list_(pa.string())),
        pa.field("unexplained", pa.int32()),
        pa.field("notices", pa.list_(pa.string())),
    ]
)

# One article operation of an act this document amends, as its text states it.
AMENDMENT = pa.struct(
    [
        pa.field("relation", pa.string()),  # amended, new_edition, added, excluded
        pa.field("act", pa.string()),  # the amended act as written
        pa.field("act_type", pa.string()),
        pa.field("act_date", pa.date32()),
        pa.field("act_title", pa.string()),
        pa.field("article", pa.string()),
    ]
)

# One row per document. Identifier fields are what lookups and chunk filters use.
REGISTRY_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("doc_title", pa.string(), nullable=False),
        pa.field("doc_type", pa.string(), nullable=False),  # code, law, order, resolution, decree, standard…
        pa.field("adilet_id", pa.string()),
        pa.field("portal_id", pa.string()),  # zan.gov.kz record id
        pa.field("issuer", pa.string()),  # short form: МТСЗН, МЧС, ПРК…
        pa.field("issuer_full", pa.string()),
        pa.field("region", pa.string()),  # a local body's region: Акмолинская область, город Астана
        pa.field("order_number", pa.string()),  # canonical: 211, ҚР ДСМ-26
        pa.field("law_zrk", pa.string()),  # canonical: 414-V
        pa.field("date_approved", pa.date32()),
        pa.field("registration_number", pa.string()),  # Ministry of Justice registration
        pa.field("registration_date", pa.date32()),
        pa.field("jurisdiction", pa.string()),  # KZ, US, EAEU, INTL
        pa.field("status", pa.string()),  # in_force, updated, repealed, unknown
        pa.field("language", pa.string()),  # primary language: rus, kaz, eng
        pa.field("languages", pa.list_(pa.string())),
        pa.field("source_url", pa.string()),
        pa.field("intl_org", pa.string()),  # OSHA, API, NFPA, ISO, IOGP, EAEU, ГОСТ, СТ РК, СП РК
        pa.field("intl_section", pa.string()),  # 1910.146, RP 75, 45001:2018, 004/2011
        pa.field("code_articles", pa.list_(pa.int32())),  # plain article numbers the document has
        pa.field("article_labels", pa.list_(pa.string())),  # exact labels incl. 127-2
        pa.field("aliases", pa.list_(pa.string())),
        pa.field("annexes", pa.list_(pa.string())),  # titles of the annexes (a ratified treaty, approved rules)
        pa.field("source_files", pa.list_(pa.string())),
        pa.field("repealed_by", pa.string()),  # the act that repealed it, as written: «Указ РК от 18.07.1995 № 2367»
        pa.field("repealed_on", pa.date32()),  # when it lost force (the repeal's entry into force, else its date)
        pa.field("replaced_by", pa.string()),  # doc_id of the repealing act, when the registry holds it
        # what this act amends, read from its own text («Внести в Закон … : 1) в статье 4 …»): extractors.amendments
        pa.field("amends", pa.list_(AMENDMENT)),
        # the acts this one replaced, as its source names them (a kazakhstan-law meta.yaml's ``replaces``)
        pa.field("replaces", pa.list_(pa.string())),
        # how each source file was read (what ``zan audit`` shows): parser, why, article-like lines tallied
        pa.field("extraction", pa.list_(EXTRACTION)),
    ]
)

# One row per chunk: text plus the structure it came from.
CHUNK_SCHEMA = pa.schema(
    [
        pa.field("chunk_id", pa.string(), nullable=False),  # <doc_id>:<structural path>:<n>
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),  # structural path, e.g. art156, kaz/art5-1, sec-c
        pa.field("seq", pa.int32(), nullable=False),  # n within the path
        pa.field("heading", pa.string()),  # the unit heading (Статья 156. …)
        pa.field("section_path", pa.list_(pa.string())),  # enclosing headings: part, section, chapter
        pa.field("code_articles", pa.list_(pa.int32())),  # the article(s) the chunk *is*, plain numbers
        pa.field("article_labels", pa.list_(pa.string())),  # exact labels: 156, 127-2
        pa.field("section_label", pa.string()),  # standards: (c), 4.1
        pa.field("annex", pa.int32()),  # n for text of the act's n-th annex (a ratified treaty, approved rules)
        pa.field("annex_articles", pa.list_(pa.string())),  # an annex's own article labels (never the act's)
        pa.field("point_labels", pa.list_(pa.string())),  # пункты the chunk opens: 12, 4-1, (f)(1)(i)
        pa.field("text", pa.string(), nullable=False),  # normative text, the embedded text
        pa.field("notes", pa.string()),  # editorial notes (Сноска, Примечание ИЗПИ), kept apart
        pa.field("last_amended", pa.date32()),  # the date of the latest act that changed this article (its notes)
        pa.field("amended_by", pa.list_(pa.string())),  # those acts' canonical numbers, oldest first
        pa.field("text_hash", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
    ]
)

# A document as people cite it: its title, kind, adilet id, issuer, number and date (a registry row's brief).
CITED_FIELDS = ("doc_title", "doc_type", "adilet_id", "issuer", "order_number", "law_zrk", "date_approved")
# Registry identifier fields joined onto chunks, with the chunk's own code_articles kept.
_REGISTRY_ON_CHUNK = [
    *CITED_FIELDS,
    "registration_number",
    "jurisdiction",
    "status",
    "source_url",
    "intl_org",
    "intl_section",
    "repealed_by",
    "repealed_on",
]
ENRICHED_CHUNK_SCHEMA = pa.schema(
    list(CHUNK_SCHEMA)
    + [REGISTRY_SCHEMA.field(name) for name in _REGISTRY_ON_CHUNK]
    # hash of the metadata the chunk carries in the index: a change means a metadata-only update
    + [pa.field("meta_hash", pa.string(), nullable=False)]
)
REGISTRY_FIELDS_ON_CHUNK: tuple[str, ...] = tuple(_REGISTRY_ON_CHUNK)

# One row per relation an editorial note states (``enrich.lineage``): what changed, how, by which act, from when.
LINEAGE_SCHEMA = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),  # note (an editorial note) or amending_text (the act's own)
        pa.field("doc_id", pa.string()),  # the document affected (a note's own document; an amended act if known)
        pa.field("affected", pa.string()),  # the affected act as the amending text names it
        pa.field("language", pa.string()),
        pa.field("chunk_id", pa.string()),  # the chunk that carries the note
        pa.field("note_index", pa.int32()),  # the note's line in that chunk's notes
        pa.field(
            "target_kind", pa.string(), nullable=False
        ),  # act, article, heading, point, chapter, section, annex, toc
        pa.field("target", pa.string(), nullable=False),  # as written: «Статья 15», «Заголовок статьи 17»
        pa.field("article", pa.string()),  # the article label affected (156, 127-2)
        pa.field("relation", pa.string(), nullable=False),  # amended, new_edition, added, excluded, repealed, suspended
        pa.field("by_type", pa.string()),  # law, code, decree, resolution, order
        pa.field("by_date", pa.date32()),
        pa.field("by_number", pa.string()),  # canonical: 321-VI
        pa.field("by_written", pa.string()),  # «Закон РК от 04.05.2020 № 321-VI»
        pa.field("by_doc_id", pa.string()),  # the acting act's doc_id, when the registry holds it
        pa.field("takes_effect", pa.date32()),
        pa.field("takes_effect_text", pa.string()),  # «по истечении десяти календарных дней …» when no date
        pa.field("note", pa.string(), nullable=False),  # the note, or the amending act's words for the operation
        pa.field("source_file", pa.string()),
    ]
)

REJECT_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),  # discover, extract, registry, chunk, enrich, lineage, index…
        pa.field("source_file", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.string()),
        pa.field("error", pa.string()),  # the error's class: ExtractError, UnicodeDecodeError, Skipped…
        pa.field("reason", pa.string(), nullable=False),
    ]
)


RejectStage = Literal["discover", "extract", "registry", "chunk", "enrich", "lineage", "index", "history"]  # history:
# a past version the history left out (runs.act_history)


@dataclass(frozen=True)
class Reject:
    """One thing a run could not use, and why: a row of ``rejects.parquet`` (:data:`REJECT_SCHEMA`)."""

    run_id: str
    stage: RejectStage
    source_file: str | None
    doc_id: str | None
    reason: str
    chunk_id: str | None = None
    error: str | None = None  # the error's class: ExtractError, UnicodeDecodeError, Skipped, Displaced…


def reject_table(rejects: Iterable[Reject]) -> pa.Table:
    """Rejects as a :data:`REJECT_SCHEMA` table."""
    rows = [dataclasses.asdict(r) for r in rejects]
    return pa.Table.from_pylist(rows, schema=REJECT_SCHEMA) if rows else REJECT_SCHEMA.empty_table()


def rejects_of(table: pa.Table) -> list[Reject]:
    """The rejects a :data:`REJECT_SCHEMA` table holds."""
    return [Reject(**row) for row in table.select(REJECT_SCHEMA.names).to_pylist()]


class SchemaError(ZanError, ValueError):
    """A table does not match its contract; names the table and the first difference."""


def conform(table: pa.Table, schema: pa.Schema, name: str) -> pa.Table:
    """Return ``table`` cast to ``schema`` or raise :class:`SchemaError` saying what differs.

    Columns must be exactly the schema's (order may differ), except that a nullable column missing from
    ``table`` (a file written before the column was added) is filled with nulls; non-nullable columns must
    have no nulls.
    """
    for f in schema:  # a column added to a contract later reads as null in files written before it
        if f.name not in table.column_names and f.nullable:
            table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    missing = [f.name for f in schema if f.name not in table.column_names]
    extra = [c for c in table.column_names if c not in schema.names]
    if missing or extra:
        raise SchemaError(f"{name}: columns differ from the contract (missing={missing}, extra={extra})")
    table = table.select(schema.names)
    try:
        table = table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"{name}: cannot cast to the contract: {exc}") from exc
    return check_not_null(table, schema, name)


def check_not_null(table: pa.Table, schema: pa.Schema, name: str) -> pa.Table:
    """``table`` (already of ``schema``'s columns and types) or :class:`SchemaError` naming the first
    non-nullable column that holds a null."""
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise SchemaError(f"{name}: column {field.name!r} must not contain nulls")
    return table


# One row per version of one unit (article, пункт, annex) of an act read from git (runs.act_history).
HISTORY_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("unit", pa.string(), nullable=False),
        pa.field("heading", pa.string()),
        pa.field("version_date", pa.date32(), nullable=False),
        pa.field("commit", pa.string(), nullable=False),
        pa.field("committed", pa.date32(), nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("text_hash", pa.string()),
        pa.field("text", pa.string()),
        pa.field("caused_by", pa.string()),  # the amending act that made this version, as meta.yaml names it
    ]
)
