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
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from extractors.notes import NOTE_START, Relation, parse_note
from schemas.arrow import LINEAGE_SCHEMA, conform

_CHANGES = ("amended", "new_edition", "added", "excluded")
_TYPE_NAMES = {"law": "Закон", "code": "Кодекс", "decree": "Указ", "resolution": "Постановление", "order": "Приказ"}


def note_relations(notes: Iterable[str]) -> list[Relation]:
    """Every relation the notes state, in order."""
    return [r for note in notes for line in note.split("\n") for r in parse_note(line)]


def chunk_lineage(notes: Iterable[str]) -> dict[str, Any]:
    """``last_amended`` and ``amended_by`` of the chunks of a unit with these notes."""
    changes = [r for r in note_relations(notes) if r.relation in _CHANGES and (r.by_date or r.by_number)]
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
    repeal = next((r for r in note_relations(notes) if r.relation == "repealed" and r.target_kind == "act"), None)
    if repeal is None:
        return {"repealed_by": None, "repealed_on": None}
    return {"repealed_by": act_written(repeal), "repealed_on": repeal.takes_effect or repeal.by_date}


def lineage_table(chunks: pa.Table, registry: pa.Table) -> pa.Table:
    """One ``LINEAGE_SCHEMA`` row per relation in the version's notes, acting acts resolved in ``registry``."""
    resolve = _resolver(registry)
    rows = []
    columns = ("chunk_id", "doc_id", "language", "notes", "source_file")
    for chunk_id, doc_id, language, notes, source in zip(*(chunks.column(c).to_pylist() for c in columns), strict=True):
        for n, line in enumerate((notes or "").split("\n")):
            if not NOTE_START.match(line):
                continue
            for r in parse_note(line):
                rows.append(_row(doc_id, language, chunk_id, n, line, source, r, resolve(r)))
    return conform(pa.Table.from_pylist(rows, schema=LINEAGE_SCHEMA), LINEAGE_SCHEMA, "lineage")


def with_replacements(registry: pa.Table, lineage: pa.Table) -> pa.Table:
    """``registry`` with ``replaced_by``: the repealing act's doc_id, for acts whose notes say they lost force."""
    repeals = {
        doc: by
        for doc, rel, kind, by in _columns(lineage, "doc_id", "relation", "target_kind", "by_doc_id")
        if rel == "repealed" and kind == "act" and by and by != doc
    }
    values = [repeals.get(doc) for doc in registry.column("doc_id").to_pylist()]
    index = registry.schema.get_field_index("replaced_by")
    return registry.set_column(index, registry.schema.field(index), pa.array(values, pa.string()))


def _columns(table: pa.Table, *names: str) -> Iterator[tuple[Any, ...]]:
    return zip(*(table.column(n).to_pylist() for n in names), strict=True)


def _resolver(registry: pa.Table) -> Any:
    """acting act → its doc_id: a law or code by its number (414-V), another act by type, number and date."""
    by_law: dict[str, str] = {}
    by_act: dict[tuple[str, str, dt.date], str] = {}
    for doc, doc_type, law, number, date in _columns(
        registry, "doc_id", "doc_type", "law_zrk", "order_number", "date_approved"
    ):
        if law:
            by_law.setdefault(law, doc)
        if number and date:
            by_act.setdefault((doc_type, number, date), doc)

    def resolve(r: Relation) -> str | None:
        if not r.by_number:
            return None
        if r.by_number in by_law:
            return by_law[r.by_number]
        return by_act.get((r.by_type or "", r.by_number, r.by_date)) if r.by_date else None

    return resolve


def _row(
    doc_id: str, language: str, chunk_id: str, n: int, note: str, source: str, r: Relation, by_doc_id: str | None
) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
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
