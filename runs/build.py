"""The documents a run rebuilds, streamed: extract → registry rows and chunks → the version's tables.

Memory holds one document's text and one batch of chunks at a time, whatever the corpus:

- ``extract_files`` appends each document to the shard's file as it is read (:mod:`runs.documents`), with
  its chunks and note rows already cut (:func:`cut_document`): the extracting processes share that work;
- ``registry_of`` groups documents into registry entries from their headers only, then loads each entry's
  documents and cuts again to build its row and chunks, written to parquet as they come;
- ``enrich_version`` joins the registry fields onto the chunks batch by batch (order-preserving, by position
  in the small registry), merges them with the published documents that stay as they are (both streams are
  already in chunk id order: nothing is sorted), and writes the version's tables into a folder: only the
  registry and rejects, small by nature, are held whole; lineage rows (as many as noted chunks) are streamed.

Measured: DuckDB's external ``ORDER BY`` of the 200 000-chunk table failed with out-of-memory at 256 MB and
512 MB limits with two threads (it passed with one thread at 512 MB, peaking at 712 MB): writing chunks in
order and merging needs no sort at all.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from enrich.chunking import chunk_document
from enrich.join import join_files
from enrich.lineage import (
    Found,
    NoteParser,
    Overflow,
    amends_of,
    lineage_batches,
    note_rows,
    repeal_of,
    with_replacements,
    with_successors,
)
from enrich.registry import Entry, IdentityError, build_registry, doc_id_for, registry_row
from extractors.discover import extract_file
from extractors.model import Document
from runs.blockmemo import BlockStore
from runs.documents import DocumentStore, DocumentWriter
from runs.errors import RunError
from runs.scope import Built, Prepared, Scope, _carried, _needs_reading, skipped_rejects
from runs.state import Published
from schemas.arrow import CHUNK_SCHEMA, ENRICHED_CHUNK_SCHEMA, LINEAGE_SCHEMA, REGISTRY_SCHEMA, REJECT_SCHEMA, Reject
from schemas.identifiers import order_key
from schemas.parquet import (
    STREAM_ROWS,
    ParquetStream,
    iter_parquet,
    merge_sorted,
    parquet_stream,
    table_from_rows,
    write_parquet_atomic,
    write_parquet_stream,
)

Progress = Callable[[str, int, int], None]


def extract_files(
    files: list[Path],
    run_id: str,
    keep: Callable[[Document], None],
    progress: Progress | None = None,
    blocks: BlockStore | None = None,
) -> list[Reject]:
    """Extract ``files`` (one shard of a run), handing each document to ``keep`` as it is read; returns the
    rejects for the files that could not be read, and for those read with part of their text missing
    (``Incomplete``: kept, and :func:`registry_of` decides whether they are published). ``blocks``: where the
    pages' blocks are remembered between runs (a page read again is read where it changed)."""
    rejects = []
    for n, path in enumerate(files, start=1):
        with blocks.reading(path) if blocks else contextlib.nullcontext():
            outcome = extract_file(path)
        if outcome.document:
            keep(outcome.document)
            if outcome.document.incomplete:
                rejects.append(
                    Reject(
                        run_id, "extract", outcome.source_file, None, outcome.document.incomplete, error="Incomplete"
                    )
                )
        else:
            reason = outcome.error or "unknown error"
            rejects.append(Reject(run_id, "extract", outcome.source_file, None, reason, error=outcome.error_class))
        if progress:
            progress("extract", n, len(files))
    return rejects


@dataclass(frozen=True)
class Cut:
    """What is built of one document alone, under one doc_id: its chunks (in document order, as a
    ``CHUNK_SCHEMA`` table: made where the document is cut, which the extracting processes share, and handed
    to the registry stage as Arrow buffers, which it concatenates; as rows, unpickling and converting them cost
    that one process 0.32 s of a 1 % text edit), the lineage rows of their notes and the notes that
    overflowed (``note_rows``), the amendments its text states (``amends_of``) and whether its own notes say it
    lost force (``repeal_of``)."""

    doc_id: str
    chunks: pa.Table
    notes: list[dict[str, Any]]
    overflows: list[Overflow]
    amends: list[dict[str, Any]]
    repeal: dict[str, Any]


def _cut(doc_id: str, document: Document, parse: NoteParser) -> Cut:
    chunks = chunk_document(doc_id, document, parse=parse)
    notes, overflows = note_rows(chunks, parse)
    repeal = repeal_of(n for unit in document.units for n in unit.notes)
    table = table_from_rows(chunks, CHUNK_SCHEMA, "chunks")
    return Cut(doc_id, table, notes, overflows, amends_of([document]), repeal)


def cut_document(document: Document, parse: NoteParser | None = None) -> Cut | None:
    """The document's :class:`Cut` under the doc_id its own requisites give, made where it was extracted
    (``DocumentWriter(handle, cut_document)``): each extracting process cuts its own files, and the registry
    stage, one process, only groups, sorts and writes them, from the documents' headers. None when the
    document has no identity of its own or cutting it fails: the registry stage cuts it again and rejects it,
    with the reason, if that fails. ``parse``: the document's note parser (a fresh one by default)."""
    try:
        return _cut(doc_id_for(document.requisites), document, parse or NoteParser())
    except Exception:  # noqa: BLE001 - cut again at the registry stage, which rejects the document with the reason
        return None


def _entry_cut(doc_id: str, headers: list[Document], cuts: list[Cut | None], load: Callable[[str], Document]) -> Cut:
    """One registry entry's chunks and note rows in chunk id order, from its documents' cuts. A document not
    cut, or cut under another doc_id (the entry's comes from another source of the act), is loaded and cut
    here. ``amends`` are those of the text :func:`enrich.lineage.amends_of` reads (the Russian one), ``repeal``
    the first that says the act lost force, as :func:`enrich.lineage.repeal_of` of all their notes."""
    parse = NoteParser()
    made = [
        c if c is not None and c.doc_id == doc_id else _cut(doc_id, load(h.source_file), parse)
        for h, c in zip(headers, cuts, strict=True)
    ]
    chunks = pa.concat_tables([cut.chunks for cut in made]) if len(made) > 1 else made[0].chunks
    chunks = chunks.take(pc.sort_indices(chunks, [("chunk_id", "ascending")]))  # a stable sort, as before
    notes = sorted((n for cut in made for n in cut.notes), key=lambda n: str(n["chunk_id"]))  # stable: line order kept
    overflows = sorted((o for cut in made for o in cut.overflows), key=lambda o: o.chunk_id)
    first = min(range(len(headers)), key=lambda n: headers[n].language != "rus")
    repeal = next((c.repeal for c in made if c.repeal["repealed_by"] is not None), made[first].repeal)
    return Cut(doc_id, chunks, notes, overflows, made[first].amends, repeal)


@dataclass
class Rebuilt:
    """The registry stage's output: rows and chunks (a parquet file) of the documents this run rebuilt."""

    registry: pa.Table
    chunks: Path
    rejects: list[Reject]
    reused: set[str]
    extracted: int
    notes: Path  # the lineage rows of the chunks' notes, acting acts not yet resolved (``note_rows``)


def registry_of(
    scope: Scope,
    previous: Published | None,
    run_id: str,
    prepared: Prepared,
    documents: DocumentStore,
    rejects: list[Reject],
    work: Path,
    only: tuple[str, ...] = (),
) -> Rebuilt:
    """Registry rows and chunks of the extracted documents, merged across sources and languages. A file
    that joins a reused document (another source, another language of the same act) rebuilds that one.
    Chunks go to ``work/chunks.parquet``, the lineage rows of their notes to ``work/notes.parquet``. A
    document read with part of its text missing is published only where no whole version of it was
    (:func:`_kept_whole`)."""
    reused, rejects = set(prepared.reused), list(rejects) + skipped_rejects(run_id, scope.skipped)
    failed_reads = {r.source_file for r in rejects if r.error != "Incomplete"}
    for extra in range(1, len(scope.files) + 2):
        aside = _kept_whole(documents.headers.values(), previous)
        headers = [d for d in documents.headers.values() if d.source_file not in aside]
        entries, group_rejects = _entries(headers, run_id)
        clash = _clashes(entries, reused, previous)
        if not clash:
            break
        reused -= clash
        more = [
            f
            for f in scope.files
            if str(f) not in documents and str(f) not in failed_reads and _needs_reading(f, reused, previous)
        ]
        path = work / f"more-{extra:04d}.docs"
        with open(path, "wb") as handle:
            extra_rejects = extract_files(more, run_id, DocumentWriter(handle, cut_document))
        documents.add_file(path)
        rejects += extra_rejects
        failed_reads |= {r.source_file for r in extra_rejects if r.error != "Incomplete"}
    if scope.files and not len(documents) and not reused:
        reasons = "; ".join(f"{r.source_file}: {r.reason}" for r in rejects[:5])
        raise RunError(f"no documents could be extracted from {len(scope.files)} file(s): {reasons}")
    wanted = [e for e in entries if not only or e.doc_id in only]
    chunks, notes = work / "chunks.parquet", work / "notes.parquet"
    registry, build_rejects = _rows_and_chunks(wanted, documents, run_id, chunks, notes)
    return Rebuilt(registry, chunks, rejects + group_rejects + build_rejects, reused, len(documents), notes)


def _kept_whole(headers: Iterable[Document], previous: Published | None) -> set[str]:
    """The files to set aside because a document read incomplete had a whole version published: that
    version's files, every language (the act is one registry row: rebuilt from its other language alone it
    would lose the first's text). Its ``Incomplete`` reject fails the file, so :func:`_carried` keeps the act
    as it was. An act published incomplete before (an ``Incomplete`` reject of the same file) or never is
    published from what there is."""
    if previous is None:
        return set()
    before = previous.rejects.filter(pc.equal(previous.rejects["error"], "Incomplete"))
    incomplete_before = set(before.column("source_file").to_pylist())
    owners, files = previous.file_owners(), previous.doc_files()
    aside: set[str] = set()
    for document in headers:
        if document.incomplete and document.source_file not in incomplete_before:
            aside |= {f for d in owners.get(document.source_file, ()) for f in files.get(d) or ()}
    return aside


def with_repealed(rebuilt: Rebuilt, previous: Published, repealed: dict[str, str], work: Path) -> Rebuilt:
    """``rebuilt`` with the published acts a git source deleted, as this version's: their rows with status
    ``repealed`` (``repealed_on`` the deleting commit's date, unless the act already said when), their chunks
    as they were (merged in chunk id order). Their text is unchanged, so nothing is embedded again; the status
    reaches the index as a metadata-only update."""
    kept = [d for d in sorted(repealed) if d not in set(rebuilt.registry.column("doc_id").to_pylist())]
    if not kept:
        return rebuilt
    published = previous.registry_rows()
    rows = []
    for doc_id in kept:
        row = dict(published[doc_id])
        row["status"] = "repealed"
        row["repealed_on"] = row.get("repealed_on") or dt.date.fromisoformat(repealed[doc_id])
        rows.append(row)
    extra = table_from_rows(rows, REGISTRY_SCHEMA, "registry")
    registry = pa.concat_tables([rebuilt.registry.cast(REGISTRY_SCHEMA), extra]).sort_by("doc_id")
    merged = work / "chunks.with-repealed.parquet"
    old = _carried_rows(previous.folder / "chunks.parquet", set(kept))
    write_parquet_stream(merge_sorted(_batches(rebuilt.chunks), old), merged, CHUNK_SCHEMA, "chunks")
    merged.replace(rebuilt.chunks)
    before = previous.folder / "lineage.parquet"
    if before.exists():  # their note rows as they were: their notes did not change
        merged = work / "notes.with-repealed.parquet"
        old = _carried_notes(before, set(kept))
        write_parquet_stream(merge_sorted(_batches(rebuilt.notes), old), merged, LINEAGE_SCHEMA, "lineage")
        merged.replace(rebuilt.notes)
    reused = rebuilt.reused - set(kept)
    return Rebuilt(registry, rebuilt.chunks, rebuilt.rejects, reused, rebuilt.extracted, rebuilt.notes)


def _entries(headers: list[Document], run_id: str) -> tuple[list[Entry], list[Reject]]:
    """Registry entries (in doc_id order) of the documents whose identity can be told, from their headers."""
    rejects: list[Reject] = []
    usable = []
    for document in headers:
        try:
            doc_id_for(document.requisites)
            usable.append(document)
        except IdentityError as exc:
            rejects.append(Reject(run_id, "registry", document.source_file, None, str(exc), error="IdentityError"))
    entries, displaced = build_registry(usable)
    rejects += [
        Reject(run_id, "registry", d.document.source_file, d.doc_id, d.reason, error="Displaced") for d in displaced
    ]
    return sorted(entries.values(), key=lambda e: chunk_order(e.doc_id)), rejects


GROUP_CHUNKS = 2_048  # chunks of the entries whose registry and note rows become Arrow at once


class _Item(NamedTuple):
    """One registry entry as the registry stage builds it."""

    entry: Entry
    headers: list[Document]
    row: dict[str, Any]  # its registry row
    chunks: pa.Table
    notes: list[dict[str, Any]]  # the lineage rows of its chunks' notes (``note_rows``)
    overflows: list[Overflow]


def _rows_and_chunks(
    entries: list[Entry], documents: DocumentStore, run_id: str, out: Path, notes_out: Path
) -> tuple[pa.Table, list[Reject]]:
    """Each entry's row and chunks, built from its documents' headers and cuts (:func:`_entry_cut`), one entry
    at a time. Chunks are written to ``out`` as they come, and the lineage rows of their notes to
    ``notes_out``. Each note line was parsed once for both, where the document was cut: the chunk's lineage
    fields and its rows. One document's odd content rejects that document only.

    Registry and note rows become Arrow a group of entries at a time (up to :data:`GROUP_CHUNKS` chunks): one
    conversion per group, where one per entry cost ~2 ms each (0.8 s of a 20 000-chunk build); the chunks are
    tables already (:class:`Cut`), concatenated a group at a time. A group that does not convert is converted
    again entry by entry, so only the entries that fail are rejected."""
    registry_parts: list[pa.Table] = []  # the registry rows as Arrow, a group at a time (not ~1 KB dicts each)
    rejects: list[Reject] = []

    def refuse(entry: Entry, headers: list[Document], exc: Exception) -> None:
        for document in headers:
            reason = f"cannot be stored: {type(exc).__name__}: {exc}"
            rejects.append(
                Reject(run_id, "registry", document.source_file, entry.doc_id, reason, error=type(exc).__name__)
            )

    def converted(group: list[_Item], notes: ParquetStream) -> pa.Table:
        try:
            registry = table_from_rows([item.row for item in group], REGISTRY_SCHEMA, "registry")
            table = pa.concat_tables([item.chunks for item in group])
            noted = table_from_rows([n for item in group for n in item.notes], LINEAGE_SCHEMA, "lineage")
        except Exception as exc:  # noqa: BLE001 - per-document isolation, the class is kept in the reject
            if len(group) == 1:
                refuse(group[0].entry, group[0].headers, exc)
                return CHUNK_SCHEMA.empty_table()
            return pa.concat_tables([converted([item], notes) for item in group])  # find the entries at fault
        registry_parts.append(registry)
        notes.write(noted)
        rejects.extend(
            Reject(run_id, "lineage", o.source_file, o.doc_id, o.reason, o.chunk_id, "NoteTooLarge")
            for item in group
            for o in item.overflows
        )
        return table

    def chunks(notes: ParquetStream) -> Iterator[pa.Table]:
        group: list[_Item] = []
        size = 0
        for entry in entries:
            headers = entry.documents  # without their texts: a document is loaded only where it has no cut
            try:
                cut = _entry_cut(entry.doc_id, headers, [documents.cut(d.source_file) for d in headers], documents.load)
                row = registry_row(entry, amends=cut.amends, repeal=cut.repeal)
            except Exception as exc:  # noqa: BLE001 - per-document isolation, the class is kept in the reject
                refuse(entry, headers, exc)
                continue
            clash = _duplicate(cut.chunks)
            if clash:  # the same edition of one act read twice under two ids' worth of paths: never mixed
                rejects.append(Reject(run_id, "chunk", clash[1], entry.doc_id, clash[0], error="DuplicateChunk"))
                continue
            group.append(_Item(entry, headers, row, cut.chunks, cut.notes, cut.overflows))
            size += cut.chunks.num_rows
            if size >= GROUP_CHUNKS:
                yield converted(group, notes)
                group, size = [], 0
        if group:
            yield converted(group, notes)

    with parquet_stream(notes_out, LINEAGE_SCHEMA, "lineage") as notes:
        write_parquet_stream(chunks(notes), out, CHUNK_SCHEMA, "chunks")
    return pa.concat_tables([REGISTRY_SCHEMA.empty_table(), *registry_parts]), rejects  # not combined: a second copy


def _duplicate(chunks: pa.Table) -> tuple[str, str] | None:
    """(reason, source file) when two of one entry's chunks have the same id. Chunks of different entries
    cannot clash: a chunk id starts with its doc_id and ``:``, and doc_ids hold no ``:``. ``chunks`` are
    sorted by id, so a duplicate sits next to its twin."""
    ids = chunks.column("chunk_id").to_pylist()
    for n in range(1, len(ids)):
        if ids[n] == ids[n - 1]:
            sources = chunks.column("source_file")
            return f"chunk id {ids[n]!r} already comes from {sources[n - 1].as_py()}", str(sources[n].as_py())
    return None


def _clashes(entries: list[Entry], reused: set[str], previous: Published | None) -> set[str]:
    """Reused documents that a freshly read file also builds (same doc_id or same act)."""
    if not reused or previous is None or not entries:
        return set()
    built_ids = {e.doc_id for e in entries}
    built_acts = {_act(_act_fields(e)) for e in entries} - {None}
    acts = {d: _act(r) for d, r in previous.registry_rows().items() if d in reused}
    return {d for d in reused if d in built_ids or (acts.get(d) is not None and acts[d] in built_acts)}


def _act_fields(entry: Entry) -> dict[str, Any]:
    r = entry.requisites
    return {
        "law_zrk": r.law_zrk,
        "order_number": r.order_number,
        "doc_type": r.doc_type or "unknown",
        "issuer": r.issuer,
        "date_approved": r.date_approved,
    }


def _act(row: dict[str, Any]) -> tuple[str, str, str, str] | None:
    number = row["law_zrk"] or (order_key(row["order_number"]) if row["order_number"] else None)
    if not (row["doc_type"] and row["issuer"] and number and row["date_approved"]):
        return None
    return (row["doc_type"], row["issuer"], number, str(row["date_approved"]))


def enrich_version(
    scope: Scope, previous: Published | None, run_id: str, rebuilt: Rebuilt, keys: dict[str, str], out: Path
) -> Built:
    """Join the registry's identifier fields onto the rebuilt chunks, then combine them with the
    published documents that stay as they are. The version's chunk tables are written under ``out``."""
    joined = out / ".joined.parquet"
    orphans = join_files(rebuilt.registry, rebuilt.chunks, joined)
    rejects = rebuilt.rejects + [
        Reject(
            run_id,
            "enrich",
            r["source_file"],
            r["doc_id"],
            f"doc_id {r['doc_id']!r} is not in the registry",
            r["chunk_id"],
        )
        for r in orphans.to_pylist()
    ]
    rebuilt_ids = set(rebuilt.registry.column("doc_id").to_pylist())
    failed = failed_files(rejects)
    carried = _carried(scope, previous, rebuilt_ids, rebuilt.reused, failed)
    folder = previous.folder if previous else None
    registry = _combine(previous.registry if previous else None, carried, rebuilt.registry, "doc_id")
    # the chunks table is merged in a thread beside the enriched one and the lineage: Arrow reads, filters,
    # compresses and writes without the GIL, so the two tables cost little more than one
    with ThreadPoolExecutor(1, thread_name_prefix="zan-chunks") as pool:
        merging = pool.submit(combine_files, folder, "chunks", carried, rebuilt.chunks, out, CHUNK_SCHEMA)
        enriched = combine_files(folder, "enriched_chunks", carried, joined, out, ENRICHED_CHUNK_SCHEMA)
        joined.unlink(missing_ok=True)
        found = Found()  # the whole version's lineage: acts resolve in its registry; streamed, a batch at a time
        lineage = out / "lineage.parquet"
        before = folder / "lineage.parquet" if folder is not None and carried else None
        old_rows = _carried_notes(before, carried) if before is not None and before.exists() else iter(())
        notes = lineage_batches(_batches(rebuilt.notes), registry, found, old_rows)
        write_parquet_stream(notes, lineage, LINEAGE_SCHEMA, "lineage")
        chunks = merging.result()
    registry = with_successors(with_replacements(registry, found.repeals))
    merged_keys = {**(previous.manifest.file_keys if previous else {}), **keys}
    return Built(registry, chunks, enriched, rejects, rebuilt_ids, rebuilt.reused, merged_keys, lineage)


def failed_files(rejects: list[Reject]) -> set[str]:
    """The source files that failed this run at any stage (not read, no identity, not storable, a duplicate
    chunk…): the documents they published before are kept as they were. A file set aside for a stronger
    file of the same act (``Displaced``) did not fail: the act is built from the winner."""
    return {r.source_file for r in rejects if r.source_file and r.error != "Displaced"}


def combine_files(
    published: Path | None, name: str, carried: set[str], fresh: Path, out: Path, schema: pa.Schema
) -> Path:
    """``out/<name>.parquet``: the rows of ``fresh`` and the published table's rows of the ``carried``
    documents, in chunk id order. Both inputs are in chunk id order already (see :func:`chunk_order`), so
    this is a streaming merge: nothing is sorted, one batch of each is held."""
    target = out / f"{name}.parquet"
    kept: Iterator[pa.Table] = iter(())
    if published is not None and carried:
        kept = _carried_rows(published / f"{name}.parquet", carried)
    write_parquet_stream(merge_sorted(_batches(fresh), kept), target, schema, name)
    return target


def chunk_order(doc_id: str) -> str:
    """The key documents are written in so that their chunks come out in chunk id order: a chunk id is
    ``<doc_id>:<path>:<seq>``, so ``<doc_id>:`` orders whole documents (``k15:`` after ``k150:``), and each
    document's chunks are sorted among themselves."""
    return doc_id + ":"


def _batches(path: Path) -> Iterator[pa.Table]:
    yield from iter_parquet(path, STREAM_ROWS)


def _carried_rows(path: Path, carried: set[str]) -> Iterator[pa.Table]:
    wanted = pa.array(sorted(carried), pa.string())
    for table in _batches(path):
        yield table.filter(pc.is_in(table.column("doc_id"), value_set=wanted))


def _carried_notes(lineage: Path, carried: set[str]) -> Iterator[pa.Table]:
    """The last version's lineage rows from the notes of the ``carried`` documents, in chunk id order (the
    rows from amending texts, which follow them, are made again from the registry)."""
    wanted = pa.array(sorted(carried), pa.string())
    for table in iter_parquet(lineage, STREAM_ROWS):
        noted = pc.and_(pc.equal(table.column("source"), "note"), pc.is_in(table.column("doc_id"), value_set=wanted))
        yield table.filter(noted)


def _combine(published: pa.Table | None, carried: set[str], fresh: pa.Table, key: str) -> pa.Table:
    if published is None or not carried:
        return fresh.sort_by(key)
    kept = published.filter(pc.is_in(published.column("doc_id"), pa.array(sorted(carried), pa.string())))
    return pa.concat_tables([kept, fresh.cast(kept.schema)]).sort_by(key)


def write_small_tables(built: Built, rejects: pa.Table, out: Path) -> None:
    """The version's small tables beside the chunk tables ``enrich_version`` wrote."""
    write_parquet_atomic(built.registry, out / "registry.parquet", REGISTRY_SCHEMA, "registry")
    write_parquet_atomic(rejects, out / "rejects.parquet", REJECT_SCHEMA, "rejects")
