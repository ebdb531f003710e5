"""A version's texts by row (``vectors/texts.py``): what an answer reads instead of a whole row group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from vectors.texts import TextFile, TextWriter


def test_texts_come_back_by_row_exactly_as_written(tmp_path: Path) -> None:
    texts = ["", "Статья 1. Основные понятия", "1-бап. Негізгі ұғымдар " * 400, "a\x00b\n", "😀 ё"]
    writer = TextWriter(tmp_path)
    for text in texts:
        writer.add(text)
    assert writer.close() == len(texts) and not list(tmp_path.glob(".*"))  # temporary names renamed away
    found = TextFile.open(tmp_path)
    assert found is not None and found.size == len(texts)
    assert found.get([2, 0, 4, 1, 3, 2]) == [texts[2], texts[0], texts[4], texts[1], texts[3], texts[2]]
    assert found.get(np.array([1])) == [texts[1]]
    assert (tmp_path / "texts.zst").stat().st_size < len(texts[2].encode()) / 5  # each text compressed


def test_an_empty_version_and_a_version_without_texts(tmp_path: Path) -> None:
    assert TextFile.open(tmp_path) is None  # a version written before: the reader falls back to parquet
    TextWriter(tmp_path / "empty").close()
    empty = TextFile.open(tmp_path / "empty")
    assert empty is not None and empty.size == 0 and empty.get([]) == []


def test_a_version_reads_its_answers_texts_from_the_text_file_as_parquet_has_them(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """Every text of the real corpus's version, read by row from the text file, is the parquet's own."""
    from lookup.version import VersionChunks
    from schemas.published import published_file

    path = published_file(corpus_run[1], "enriched_chunks.parquet")
    chunks = VersionChunks(path)
    if chunks.text_file is None:
        pytest.fail("the run wrote no text file beside its lexical index")
    expected = pq.read_table(path, columns=["text"]).column("text").to_pylist()
    rows = chunks.rows(["k1500000414", "z1500000410"])
    assert rows.num_rows > 700
    positions = chunks.positions(rows)
    assert chunks.texts(rows) == [expected[p] or "" for p in positions]
    chunks.text_file = None  # the fallback: the row groups' text column
    assert chunks.texts(rows) == [expected[p] or "" for p in positions]
