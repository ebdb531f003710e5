"""Note lines parsed by the last version are not parsed again when their file is read again (runs.notecache):
the version's tables are those a run without the cache gives, a cache written by other code is not read, and
the cache keeps the lines of the files a run did not read again."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import enrich.lineage
from runs.notecache import NOTE_CACHE
from runs.pipeline import run
from schemas.published import published_dir, published_file
from tests.conftest import corpus_file

CODE = "adilet/rus/K1500000414.html"  # the Labour Code: hundreds of note lines
LAW = "adilet/rus/Z1500000410.html"  # a law with notes of its own


def _sources(tmp_path: Path) -> Path:
    """Two real acts with notes, in a folder of their own (the test edits them)."""
    src = tmp_path / "src"
    for name in (CODE, LAW):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_file(name), src / name)
    return src


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    real = enrich.lineage.parse_note_counted

    def counted(line: str) -> tuple[list[enrich.lineage.Relation], int]:
        parsed.append(line)
        return real(line)

    monkeypatch.setattr(enrich.lineage, "parse_note_counted", counted)
    return parsed


def _edit(page: Path, word: str) -> None:
    """A word added to the first long paragraph of the page (its notes unchanged)."""
    text = page.read_text("utf-8")
    new = re.sub(r"(<p[^>]*>)([^<]{80,}?)(</p>)", rf"\1\2 {word}\3", text, count=1)
    assert new != text
    page.write_text(new, "utf-8")


def _cached(home: Path) -> dict[str, int]:
    folder = published_dir(home)
    assert folder is not None
    files = pq.read_table(folder / NOTE_CACHE, columns=["source_file"]).column(0).to_pylist()
    return {f: files.count(f) for f in set(files)}


def test_a_file_read_again_parses_only_its_new_note_lines_and_publishes_the_same_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, home = _sources(tmp_path), tmp_path / "home"
    parsed = _counting(monkeypatch)
    run([src], home)
    first = _cached(home)
    code, law = str(src / CODE), str(src / LAW)
    assert first[code] >= 100 and first[law] >= 10  # every note line of the corpus, by file
    assert len(parsed) >= sum(first.values())

    _edit(src / CODE, "(уточнено)")
    page = (src / CODE).read_text("utf-8")  # and one note line of the code's changed: only it is parsed
    note = re.search(r"Сноска\. Статья \d+[^<]{20,}?(?=<)", page)
    assert note is not None
    (src / CODE).write_text(page.replace(note[0], note[0] + " (сноска уточнена)", 1), "utf-8")
    parsed.clear()
    info = run(None, home)
    assert info.status == "published" and info.text_changed >= 1
    assert parsed and all("сноска уточнена" in line for line in parsed), parsed[:3]
    assert _cached(home) == first  # the law was not read again: its lines were kept

    fresh = tmp_path / "fresh"  # the same sources, without any cache
    run([src], fresh)
    for name in ("registry", "chunks", "enriched_chunks", "lineage"):
        a = pq.read_table(published_file(home, f"{name}.parquet"))
        b = pq.read_table(published_file(fresh, f"{name}.parquet"))
        assert a.drop_columns([c for c in a.column_names if c in ("run_id",)]).equals(
            b.drop_columns([c for c in b.column_names if c in ("run_id",)])
        ), name


def test_a_cache_written_by_other_code_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, home = _sources(tmp_path), tmp_path / "home"
    run([src], home)
    folder = published_dir(home)
    assert folder is not None
    table = pq.read_table(folder / NOTE_CACHE)
    pq.write_table(table.replace_schema_metadata({"fingerprint": "other-code"}), folder / NOTE_CACHE)
    _edit(src / CODE, "(уточнено)")
    parsed = _counting(monkeypatch)
    run(None, home)
    assert len(set(parsed)) >= 100  # every line of the code parsed again


def test_a_damaged_cache_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, home = _sources(tmp_path), tmp_path / "home"
    run([src], home)
    folder = published_dir(home)
    assert folder is not None
    (folder / NOTE_CACHE).write_bytes(b"PAR1 not parquet at all")
    _edit(src / CODE, "(уточнено)")
    parsed = _counting(monkeypatch)
    info = run(None, home)
    assert info.status == "published" and len(set(parsed)) >= 100
    assert _cached(home)[str(src / CODE)] >= 100  # and the new version has a good one again


def test_memory_is_bounded_a_large_shard_reads_no_cache_and_lines_go_out_in_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runs.notecache

    src, home = _sources(tmp_path), tmp_path / "home"
    monkeypatch.setattr(runs.notecache, "ROWS", 50)
    run([src], home)
    folder = published_dir(home)
    assert folder is not None
    written = pq.ParquetFile(folder / NOTE_CACHE)
    assert written.metadata.num_rows == sum(_cached(home).values()) and written.metadata.num_row_groups >= 3
    _edit(src / CODE, "(уточнено)")
    _edit(src / LAW, "(уточнено)")
    monkeypatch.setattr(runs.notecache, "MAX_FILES", 1)  # the next run's one shard reads both files: more than 1
    parsed = _counting(monkeypatch)
    run(None, home)
    folder = published_dir(home)
    assert folder is not None
    lines = set(pq.read_table(folder / NOTE_CACHE, columns=["line"]).column(0).to_pylist())
    assert len(lines) >= 200 and lines <= set(parsed)  # every line of both files parsed again


def test_a_last_cache_that_fails_part_way_does_not_fail_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    import runs.notecache

    src, home = _sources(tmp_path), tmp_path / "home"
    run([src], home)
    _edit(src / CODE, "(уточнено)")
    real = runs.notecache._rows

    def failing(reader: pq.ParquetFile, files: pa.Array | None) -> object:
        if files is not None and len(files) and str(src / LAW) in files.to_pylist():  # the carried rows, in merge
            raise pa.ArrowInvalid("a damaged page")
        yield from real(reader, files)

    monkeypatch.setattr(runs.notecache, "_rows", failing)
    info = run(None, home)
    assert info.status == "published" and str(src / LAW) not in _cached(home)  # its lines are parsed next time
    assert _cached(home)[str(src / CODE)] >= 100


def test_a_shard_cache_whose_last_write_fails_leaves_no_file(tmp_path: Path) -> None:
    """The lines still held when the extraction ends are written on the way out; when that write fails the
    error goes on and nothing is left at the shard's cache path (a half-written cache is never merged)."""
    from runs.notecache import NoteMemory

    out = tmp_path / "shard-0000.notes.parquet"
    with pytest.raises(OSError, match="disk full"), NoteMemory(None, [], out) as memory:
        memory._rows["source_file"].append("a.html")
        memory._rows["line"].append("Сноска. Изложена в редакции Закона РК от 01.01.2020 № 1-VI.")
        memory._rows["parsed"].append(b"x")

        def full(table: object) -> None:
            raise OSError("disk full")

        memory._writer.write_table = full  # type: ignore[method-assign]
    assert not out.exists() and list(tmp_path.iterdir()) == []
