"""The run streams: documents on disk between stages, chunk tables written in chunk id order and merged
without a sort, the index stage in blocks. Small blocks must give exactly what the defaults give."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from enrich.registry import doc_id_for
from extractors.discover import extract_file
from runs.build import _entry_cut, chunk_order, cut_document
from runs.documents import DocumentStore, DocumentWriter
from schemas.parquet import STREAM_ROWS, merge_sorted, parquet_stream, write_parquet_stream
from schemas.published import published_file
from tests.conftest import CORPUS, ROOT, SAMPLE, corpus_file


def _tables(keys: list[str], rng: random.Random) -> list[pa.Table]:
    out, at = [], 0
    while at < len(keys):
        n = rng.randint(0, 5)  # empty tables too
        out.append(pa.table({"chunk_id": keys[at : at + n], "n": list(range(at, at + len(keys[at : at + n])))}))
        at += n
    return out


@pytest.mark.parametrize("seed", range(30))
def test_merge_of_two_sorted_streams_is_sorted_and_loses_nothing(seed: int) -> None:
    rng = random.Random(seed)
    keys = sorted(
        {f"d{rng.randint(0, 40)}:a{rng.randint(0, 99)}:{rng.randint(0, 3)}" for _ in range(rng.randint(0, 60))}
    )
    left = [k for k in keys if rng.random() < 0.5]
    right = [k for k in keys if k not in left]
    merged = pa.concat_tables(
        [pa.table({"chunk_id": pa.array([], pa.string()), "n": pa.array([], pa.int64())})]
        + list(merge_sorted(iter(_tables(left, rng)), iter(_tables(right, rng))))
    )
    assert merged.column("chunk_id").to_pylist() == keys


def test_a_stream_of_small_slices_is_written_in_row_groups_of_stream_rows(tmp_path: Path) -> None:
    """A merge of rebuilt and carried chunks yields a slice per run of documents; the stream gathers them into
    row groups of STREAM_ROWS (not one row group per slice), in order, each validated against the schema,
    slices of two schemas included (a column's order differs)."""
    schema = pa.schema([pa.field("chunk_id", pa.string(), nullable=False), pa.field("n", pa.int64())])
    keys = [f"d{i:06d}" for i in range(3 * STREAM_ROWS + 5)]
    slices = []
    for at in range(0, len(keys), 7):
        part = pa.table({"chunk_id": keys[at : at + 7], "n": list(range(at, at + len(keys[at : at + 7])))})
        slices.append(part.select(["n", "chunk_id"]) if at % 2 else part)
    assert write_parquet_stream(iter(slices), tmp_path / "t.parquet", schema, "t") == len(keys)
    written = pq.ParquetFile(tmp_path / "t.parquet")
    assert written.metadata.num_row_groups == 4  # three full, then the rest (was one per slice: 3 512)
    table = written.read()
    assert table.column("chunk_id").to_pylist() == keys and table.column("n").to_pylist() == list(range(len(keys)))
    bad = [pa.table({"chunk_id": ["a"], "n": [1]}), pa.table({"chunk_id": [None], "n": [2]})]
    with pytest.raises(Exception, match="chunk_id"), parquet_stream(tmp_path / "bad.parquet", schema, "t") as out:
        for part in bad:
            out.write(part)
    assert not (tmp_path / "bad.parquet").exists()  # a batch that breaks the contract leaves no file


def test_documents_in_chunk_order_give_chunk_ids_in_sorted_order() -> None:
    # "k15" sorts before "k150" as a doc id, but "k150:…" sorts before "k15:…" as a chunk id
    docs = ["k15", "k150", "k15a", "v1", "v10"]
    chunks = {d: sorted(f"{d}:{p}:{s}" for p in ("a1", "a10", "a2", "s") for s in (0, 1)) for d in docs}
    written = [c for d in sorted(docs, key=chunk_order) for c in chunks[d]]
    assert written == sorted(written)


def test_a_header_keeps_what_grouping_needs_and_the_document_loads_back_whole(tmp_path: Path) -> None:
    page = corpus_file("adilet/rus/K950001000_.html")  # the Constitution
    document = extract_file(page).document
    assert document is not None
    with open(tmp_path / "shard.docs", "wb") as handle:
        DocumentWriter(handle)(document)
    store = DocumentStore()
    store.add_file(tmp_path / "shard.docs")
    header = store.headers[str(page)]
    assert header.units == []
    assert header.article_labels == document.article_labels and "94-1" in header.article_labels
    assert len(header.article_labels) == 102  # SOURCES.md: 1–99 plus 83-1, 94-1, 94-2
    assert header.text_size == document.text_size > 50_000
    assert store.load(str(page)) == document


def test_the_registry_stage_builds_from_the_cuts_made_at_extraction_and_reads_no_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each extracting process cuts the documents it reads (chunks, note rows, amendments, repeal:
    ``runs.build.cut_document``); the registry stage builds every row and chunk from those cuts and the
    headers, loading no document's text and chunking nothing. What it stages is what it stages when nothing
    was cut at extraction and it cuts every document itself."""
    import runs.build
    import runs.stages
    from runs import stages

    corpus = corpus_file("")  # the whole shared corpus, or a skip saying where it was looked for
    staged = {}
    for name, cut in (("cut", True), ("uncut", False)):
        with monkeypatch.context() as patch:
            if not cut:
                patch.setattr(runs.stages, "cut_document", lambda document, parse=None: None)
            state = stages.begin(tmp_path / name, [SAMPLE, corpus], holder="process")
            stages.extract_all(state)
        with monkeypatch.context() as patch:
            if cut:

                def refused(*_: object, **__: object) -> None:
                    raise AssertionError("the registry stage loaded or chunked a text that was cut")

                patch.setattr(runs.build, "chunk_document", refused)
                patch.setattr(DocumentStore, "load", refused)
            stages.registry(state)
        work = stages.RunState.load(state).work
        staged[name] = {
            f: pq.read_table(work / f).drop_columns(["run_id"]) if f == "rejects.parquet" else pq.read_table(work / f)
            for f in ("registry.parquet", "chunks.parquet", "notes.parquet", "rejects.parquet")
        }
        stages.finish(state)
    assert staged["cut"]["chunks.parquet"].num_rows > 1000 and staged["cut"]["notes.parquet"].num_rows > 100
    assert any(staged["cut"]["registry.parquet"].column("amends").to_pylist())
    assert any(staged["cut"]["registry.parquet"].column("repealed_by").to_pylist())
    for name, table in staged["cut"].items():
        assert table.equals(staged["uncut"][name]), name


def test_a_document_cut_under_another_doc_id_is_cut_again_under_its_entrys() -> None:
    """A document's cut is made under the doc_id its own requisites give; an act met in another source may be
    filed under that source's doc_id, and then the document is loaded and cut again under it."""
    page = corpus_file("adilet/rus/K950001000_.html")  # the Constitution
    document = extract_file(page).document
    assert document is not None
    cut = cut_document(document)
    assert cut is not None and cut.doc_id == doc_id_for(document.requisites) and cut.chunks.num_rows > 100
    loaded: list[str] = []

    def load(source_file: str):  # type: ignore[no-untyped-def]
        loaded.append(source_file)
        return document

    same = _entry_cut(cut.doc_id, [document.header()], [cut], load)
    rows = cut.chunks.to_pylist()
    assert loaded == [] and same.chunks.to_pylist() == sorted(rows, key=lambda c: c["chunk_id"])
    other = _entry_cut("k0000000001", [document.header()], [cut], load)
    assert loaded == [str(page)]
    expected = sorted("k0000000001" + c["chunk_id"].removeprefix(cut.doc_id) for c in rows)
    assert other.chunks.column("chunk_id").to_pylist() == expected
    assert set(other.chunks.column("doc_id").to_pylist()) == {"k0000000001"}


def test_small_blocks_publish_exactly_what_the_defaults_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import enrich.join
    import runs.build
    import runs.changes
    import runs.indexing
    import schemas.parquet
    from runs.pipeline import run
    from vectors.index import open_client

    run([SAMPLE], tmp_path / "default")
    for module in (schemas.parquet, enrich.join, runs.build):
        monkeypatch.setattr(module, "STREAM_ROWS", 7)
    monkeypatch.setattr(runs.indexing, "BLOCK", 5)
    info = run([SAMPLE], tmp_path / "small")
    for name in ("registry", "chunks", "enriched_chunks", "lineage"):
        a = pq.read_table(published_file(tmp_path / "default", f"{name}.parquet"))
        b = pq.read_table(published_file(tmp_path / "small", f"{name}.parquet"))
        assert a.equals(b), name
    ids = pq.read_table(published_file(tmp_path / "small", "enriched_chunks.parquet")).column("chunk_id").to_pylist()
    assert ids == sorted(ids) and len(ids) == info.chunks > 5 * 5
    assert len(list((tmp_path / "small" / "vectors").rglob("part-*.keys.npy"))) == -(-info.embedded // 5)
    collection = open_client(tmp_path / "small" / "chroma").get_collection("zan_chunks")
    assert sorted(collection.get(include=[])["ids"]) == ids
    # and the next run of the same files, with the same small blocks, finds nothing to do
    assert run(None, tmp_path / "small").status == "unchanged"


def test_an_edit_spread_over_many_blocks_is_written_in_one_chroma_call_of_each_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re
    import shutil

    import runs.indexing
    from runs.pipeline import run
    from vectors.index import delete_ids, open_client, upsert_table

    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE, corpus)
    home = tmp_path / "home"
    run([corpus], home)
    edited = 0
    for page in sorted(corpus.rglob("*.html")):  # a word in one long paragraph of every page: many blocks
        text = page.read_text("utf-8")
        new = re.sub(r"(<p[^>]*>)([^<]{80,}?)(</p>)", r"\1\2 (уточнено)\3", text, count=1)
        edited += new != text
        page.write_text(new, "utf-8")
    assert edited >= 3
    calls: dict[str, list[int]] = {"delete": [], "upsert": []}

    def deleting(collection: object, ids: list[str]) -> int:
        calls["delete"].append(len(ids))
        return delete_ids(collection, ids)  # type: ignore[arg-type]

    def upserting(collection: object, table: pa.Table, *args: object, **kwargs: object) -> int:
        calls["upsert"].append(table.num_rows)
        return upsert_table(collection, table, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runs.indexing, "BLOCK", 5)
    monkeypatch.setattr(runs.indexing, "delete_ids", deleting)
    monkeypatch.setattr(runs.indexing, "upsert_table", upserting)
    before = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text"])
    info = run(None, home)
    published = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text"])
    old = dict(zip(before.column("chunk_id").to_pylist(), before.column("text").to_pylist(), strict=True))
    ids = published.column("chunk_id").to_pylist()
    changed = [n for n, (i, t) in enumerate(zip(ids, published.column("text").to_pylist(), strict=True))
               if i in old and old[i] != t]  # fmt: skip
    assert len(changed) == info.text_changed and len({n // 5 for n in changed}) >= 3  # in three blocks or more
    # sent together: one call of each kind
    assert calls == {"delete": [info.text_changed], "upsert": [info.text_changed + info.added]}
    held = open_client(home / "chroma").get_collection("zan_chunks").get(include=["documents"])
    assert dict(zip(held["ids"], held["documents"], strict=True)) == dict(
        zip(published.column("chunk_id").to_pylist(), published.column("text").to_pylist(), strict=True)
    )


def test_a_scoped_run_merges_carried_documents_in_chunk_id_order(tmp_path: Path) -> None:
    from runs.pipeline import run
    from runs.state import RunOptions

    home = tmp_path / "home"
    run([SAMPLE], home)
    before = pq.read_table(published_file(home, "enriched_chunks.parquet"))
    doc = before.column("doc_id")[len(before) // 2].as_py()
    info = run(None, home, options=RunOptions(only=(doc,), force_reembed=True))
    after = pq.read_table(published_file(home, "enriched_chunks.parquet"))
    ids = after.column("chunk_id").to_pylist()
    assert ids == sorted(ids) == sorted(before.column("chunk_id").to_pylist())
    assert info.embedded == sum(1 for d in after.column("doc_id").to_pylist() if d == doc)


@pytest.mark.slow
def test_the_bench_suite_runs_end_to_end_at_its_tiny_size() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--size", "tiny"],
                          capture_output=True, text=True, timeout=1500)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout[done.stdout.index("== summary") :]
    for section in ("bench_extract.py", "bench_reextract.py", "bench_lookup.py", "bench_fetch.py", "bench_scale.py",
                    "bench_langchain.py", "bench_serve.py"):  # fmt: skip
        assert f"{section}: " in summary and "goal" in summary, section
    shaped = (
        "fetch ",
        "article-bound",
        "peak, server mode",
        "peak, embedded",
        "write 500 chunks",
        "zan 1 % text edits",
    )
    if (CORPUS / "adilet").is_dir():
        for figure in shaped:
            assert figure in summary, figure
        assert "zan 1 % of files edited" in summary
        assert "floor (sum of medians)" in done.stdout  # edit_floor.py, not in `make bench`, ran too
        assert "A / B (medians)" in done.stdout  # edit_ab.py, this checkout against itself, ran too
    else:  # a clean clone without ../shared: the real-shaped sections say why they did not run
        for section in ("bench_fetch.py", "bench_scale.py", "bench_langchain.py"):
            assert f"{section}: skipped: no real documents under" in summary, section
    assert "serve exact p99, bundled corpus" in summary and "serve plain-words p99, 300 documents" in summary
    million = done.stdout[done.stdout.index("== bench_million.py") : done.stdout.index("== summary")]
    assert "status published" in million and "peak RSS: zan" in million
    assert "not_found" in million and "exact" in million  # the refusal, then the one law named by its id


def _reference_classes(old: dict[str, tuple], new: dict[str, tuple], forced: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"added": [], "text_changed": [], "metadata_changed": [], "unchanged": []}
    for chunk_id in sorted(new):
        if chunk_id not in old:
            out["added"].append(chunk_id)
        elif old[chunk_id][0] != new[chunk_id][0] or chunk_id in forced:
            out["text_changed"].append(chunk_id)
        elif old[chunk_id][1] != new[chunk_id][1]:
            out["metadata_changed"].append(chunk_id)
        else:
            out["unchanged"].append(chunk_id)
    out["deleted"] = sorted(set(old) - set(new))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_arrow_diff_classifies_as_the_rules_say(seed: int) -> None:
    from runs.diff import classify, state_table

    rng = random.Random(seed)

    def value() -> str | None:
        return rng.choice([None, "a", "b"])  # a hash the index never got (None) counts too

    ids = [f"d:{n}:0" for n in range(rng.randint(0, 30))]
    old = {i: (value(), value()) for i in ids if rng.random() < 0.7}
    new = {i: (value(), value()) for i in ids if rng.random() < 0.7}
    forced = {i for i in ids if rng.random() < 0.1}
    got = classify(state_table(old), state_table(new), forced)
    assert {name: getattr(got, name) for name in _reference_classes(old, new, forced)} == _reference_classes(
        old, new, forced
    )


def test_no_doc_id_holds_the_chunk_id_separator(corpus_run) -> None:  # type: ignore[no-untyped-def]
    # chunk ids are <doc_id>:<path>:<seq>; chunk order and the duplicate check rely on doc_ids without ':'
    _, home = corpus_run
    doc_ids = pq.read_table(published_file(home, "registry.parquet"), columns=["doc_id"]).column(0).to_pylist()
    assert len(doc_ids) > 40 and not [d for d in doc_ids if ":" in d]


@pytest.mark.parametrize(("override", "expected"), [(None, "jemalloc"), ("system", "system")])
def test_a_run_takes_arrow_memory_from_jemalloc_unless_the_user_names_a_pool(override, expected) -> None:  # type: ignore[no-untyped-def]
    import os

    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow is built without jemalloc")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if override:
        env["ARROW_DEFAULT_MEMORY_POOL"] = override
    done = subprocess.run([sys.executable, "-c", "from runs.memory import lean_arrow_memory; print(lean_arrow_memory())"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == expected
    # Arrow's C++ default (the parquet reader and writer, joins, the dataset scanner) is chosen when pyarrow
    # is imported: importing the run machinery first must already have picked jemalloc for it
    cpp = "import runs, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    done = subprocess.run([sys.executable, "-c", cpp], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == expected


def _cut(table: pa.Table, rng: random.Random) -> list[pa.Table]:
    """``table`` cut at random places, empty pieces included (the merge must not care where batches end)."""
    out, at = [], 0
    while at < table.num_rows:
        n = rng.randint(0, 6)
        out.append(table.slice(at, n))
        at += n
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_streamed_diff_gives_the_rules_classes_wherever_the_batches_end(seed: int, tmp_path: Path) -> None:
    from runs.changes import ChangeSet
    from runs.diff import classify_stream, state_table

    rng = random.Random(seed)
    ids = sorted(f"d{rng.randint(0, 9)}:{rng.randint(0, 40)}:0" for _ in range(rng.randint(0, 50)))
    ids = sorted(set(ids))

    def value() -> str | None:
        return rng.choice([None, "a", "b"])

    old = {i: (value(), value()) for i in ids if rng.random() < 0.7}
    new = {i: (value(), value()) for i in ids if rng.random() < 0.7}
    forced = {i for i in ids if rng.random() < 0.1}
    held = state_table(old).append_column("status", pa.array([f"was {i}" for i in old], pa.string()))
    mark = pa.array(sorted(forced), pa.string())
    steps = classify_stream(_cut(held, rng), _cut(state_table(new), rng),
                            lambda t: pc.is_in(t.column("chunk_id"), value_set=mark),
                            held_columns=("chunk_id", "status"))  # fmt: skip
    changes = ChangeSet.write(tmp_path, steps, pa.schema([("chunk_id", pa.string()), ("status", pa.string())]))
    expected = _reference_classes(old, new, forced)
    got = changes.diff()
    assert {name: getattr(got, name) for name in expected} == expected
    assert got.deleted == sorted(set(old) - set(new))
    assert changes.counts == {**{k: len(v) for k, v in expected.items()}, "deleted": len(got.deleted)}
    # the whole file is in chunk id order, deleted ids in their places; the wanted rows line up with `new`
    every = changes.table().column("chunk_id").to_pylist()
    assert every == sorted(set(old) | set(new))
    assert [t for b in changes.wanted() for t in b.column("chunk_id").to_pylist()] == sorted(new)
    # what the index held for each metadata-only update, in the same order
    rows = [r for t in changes.held() for r in t.to_pylist()]
    assert rows == [{"chunk_id": i, "status": f"was {i}"} for i in expected["metadata_changed"]]


@pytest.mark.parametrize("side", ["previous", "desired"])
def test_the_streamed_diff_refuses_chunks_out_of_order(side: str) -> None:
    from runs.diff import UnorderedChunks, classify_stream, state_table

    good = state_table({"a:1:0": ("t", "m"), "b:1:0": ("t", "m")})
    bad = [state_table({"b:1:0": ("t", "m")}), state_table({"a:1:0": ("t", "m")})]  # ordered within, not across
    previous, desired = (bad, [good]) if side == "previous" else ([good], bad)
    with pytest.raises(UnorderedChunks, match="chunk id order"):
        list(classify_stream(previous, desired))


def test_lockstep_recuts_two_streams_and_refuses_ones_that_do_not_line_up() -> None:
    from runs.changes import lockstep
    from runs.errors import RunError

    a = [pa.table({"x": [1, 2, 3]}), pa.table({"x": [4]}), pa.table({"x": pa.array([], pa.int64())}),
         pa.table({"x": [5, 6]})]  # fmt: skip
    b = [pa.table({"y": [10]}), pa.table({"y": [20, 30, 40, 50, 60]})]
    pairs = list(lockstep(iter(a), iter(b)))
    assert all(x.num_rows == y.num_rows for x, y in pairs)
    assert [v for x, _ in pairs for v in x.column("x").to_pylist()] == [1, 2, 3, 4, 5, 6]
    assert [v for _, y in pairs for v in y.column("y").to_pylist()] == [10, 20, 30, 40, 50, 60]
    with pytest.raises(RunError, match="do not line up"):
        list(lockstep(iter(a), iter(b[:1])))


def test_known_hashes_match_by_equality_of_their_prefix_never_by_a_shorter_one() -> None:
    from runs.indexing import KnownHashes, prefixes

    stored = ["0123456789abcdef" + "0" * 16, "ffffffffffffffff" + "1" * 16]
    known = KnownHashes.of(pa.array(stored))
    asked = ["0123456789abcdef" + "9" * 16, "0123456789abcde0" + "0" * 16, "not-hex-at-all", stored[1]]
    # a shared 64-bit prefix is a (harmless) maybe: the store is asked and embeds what it lacks
    assert known.contains(prefixes(asked)).tolist() == [True, False, False, True]
    known.add(["not-hex-at-all"])
    assert known.contains(prefixes(["not-hex-at-all", "not-hex"])).tolist() == [True, False]
    assert KnownHashes.of([]).contains(prefixes(stored)).tolist() == [False, False]


def test_an_older_version_file_out_of_chunk_order_is_read_sorted(tmp_path: Path) -> None:
    from runs.changes import sorted_chunks

    path = tmp_path / "enriched_chunks.parquet"
    ids = [f"d{n % 7}:{n}:0" for n in range(40)]
    pq.write_table(pa.table({"chunk_id": ids, "n": list(range(40))}), path, row_group_size=8)
    got = [i for t in sorted_chunks(path, ["chunk_id"]) for i in t.column("chunk_id").to_pylist()]
    assert got == sorted(ids)
    pq.write_table(pa.table({"chunk_id": sorted(ids)}), path, row_group_size=8)
    assert [i for t in sorted_chunks(path) for i in t.column("chunk_id").to_pylist()] == sorted(ids)


def test_iter_parquet_reads_a_file_in_order_in_bounded_batches(tmp_path: Path) -> None:
    from schemas.parquet import iter_parquet

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"n": list(range(1000))}), path, row_group_size=300)
    batches = list(iter_parquet(path, 128))
    assert max(b.num_rows for b in batches) <= 128
    assert [v for b in batches for v in b.column("n").to_pylist()] == list(range(1000))


MAPPED = """
import ctypes, sys
import numpy as np
from runs.memory import lean_malloc

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
print(lean_malloc() if sys.argv[1] == "lean" else False)
first = np.ones(4 << 20, np.uint8)  # 4 MB: glibc maps it
del first                            # freed: by default glibc now raises its threshold to 4 MB
second = np.ones(4 << 20, np.uint8)  # so this one lands in the heap, unless the threshold was fixed
print(libc.mallinfo2().hblkhd >= 4 << 20)
"""


@pytest.mark.parametrize(("mode", "mapped"), [("lean", True), ("default", False)])
def test_a_freed_large_block_does_not_send_the_next_ones_to_the_heap(mode: str, mapped: bool) -> None:
    """glibc's malloc raises its mmap threshold when a large block is freed, so the next blocks of a few MB
    (a block's vectors, the store's keys) stay in the heap and a run's memory grows with the corpus;
    ``lean_malloc`` (called by every run and task) keeps the threshold where it was."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's malloc only")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    done = subprocess.run([sys.executable, "-c", MAPPED, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.split() == [str(mapped), str(mapped)]
