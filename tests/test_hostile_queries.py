"""Hostile questions and requests (issue 23): `zan sql` writes nothing and bounds its output, an invisible or
variant character in a question changes no answer, and a backfill names only folders under its roots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.published import published_file


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("EXPLAIN ANALYZE COPY (SELECT * REPLACE ('repealed' AS status) FROM registry) TO '{registry}'", "EXPLAIN"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
        ("PRAGMA version", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("SELECT * FROM read_parquet('{registry}')", "Permission"),
        ("SELECT repeat('x', 100000) FROM range(20000)", "bytes"),
    ],
)
def test_zan_sql_writes_nothing_and_bounds_its_output(sample_run, sql: str, refused: str) -> None:  # type: ignore[no-untyped-def]
    from enrich.query import QueryError, run_sql

    _, home = sample_run
    registry = published_file(home, "registry.parquet")
    before = registry.read_bytes()
    for fmt in ("table", "json", "csv"):
        with pytest.raises(QueryError, match=refused):
            run_sql(home, sql.replace("{registry}", str(registry)), fmt)
    assert registry.read_bytes() == before


def test_zan_sql_escapes_control_characters_in_every_format(sample_run) -> None:  # type: ignore[no-untyped-def]
    from enrich.query import run_sql

    _, home = sample_run
    sql = "SELECT '\x1b[31mred\x1b[0m' || chr(155) || '\u202e' AS s, [chr(27)] AS l FROM registry LIMIT 1"
    for fmt in ("table", "json", "csv"):
        out = run_sql(home, sql, fmt)
        assert not any(ch in out for ch in "\x1b\x9b\u202e"), (fmt, out)
    assert json.loads(run_sql(home, sql, "json"))[0] == {"s": "\x1b[31mred\x1b[0m\x9b\u202e", "l": ["\x1b"]}


@pytest.mark.parametrize(
    ("question", "plain"),
    [
        ("ст. 1\u200b56 ТК РК", "ст. 156 ТК РК"),  # a zero-width space inside the number
        ("ст.\u2060156\u200d ТК \u202eРК", "ст. 156 ТК РК"),  # a word joiner, a zero-width joiner, a bidi override
        ("приказ № КР ДСМ-26", "приказ № ҚР ДСМ-26"),  # Russian К for Kazakh Қ
        ("Приказ № 21\u00ad1", "Приказ № 211"),  # a soft hyphen is not a dash
        ("Приказ МТСЗН №２１１", "Приказ МТСЗН №211"),  # fullwidth digits
        ("приказ № ٢١١", "приказ № 211"),  # Arabic-Indic digits
        ("V２４00035612", "V2400035612"),
        ("\ufeffст. 156\x00ТК РК", "ст. 156 ТК РК"),  # a BOM, a NUL
        ("Еңбек кодексінің 156-бабы", "Еңбек кодексінің 156-бабы"),
    ],
)
def test_invisible_and_variant_characters_in_a_question_change_nothing(sample_run, question: str, plain: str) -> None:  # type: ignore[no-untyped-def]
    import unicodedata

    from lookup.route import Lookup

    lookup = Lookup.open(sample_run[1])
    expected = lookup.route(plain)
    assert expected.status in ("exact", "ambiguous") and expected.doc_ids
    for variant in (question, unicodedata.normalize("NFD", question)):
        got = lookup.route(variant)
        assert (got.status, got.doc_ids, sorted(c.chunk_id for c in got.chunks)) == (
            expected.status,
            expected.doc_ids,
            sorted(c.chunk_id for c in expected.chunks),
        ), variant  # fmt: skip (the same chunks; their order follows the question's own wording)


def test_a_backfill_source_outside_the_configured_roots_is_refused_with_the_reason(tmp_path: Path) -> None:
    from runs.errors import RunError
    from runs.scope import confined_sources

    root, other = tmp_path / "root", tmp_path / "other"
    (root / "adilet").mkdir(parents=True)
    other.mkdir()
    (root / "out").symlink_to(other)
    assert confined_sources([str(root / "adilet"), str(root)], [root]) == [(root / "adilet").resolve(), root.resolve()]
    for bad in ("/etc", str(other), str(root / ".." / "other"), str(root / "out")):
        with pytest.raises(RunError, match="outside the configured source roots"):
            confined_sources([bad], [root])
    with pytest.raises(RunError, match="none configured"):
        confined_sources([str(root)], [])


@pytest.mark.parametrize("view", ["registry", "chunks", "raw_chunks", "rejects", "lineage", "runs"])
def test_every_view_of_the_real_corpus_renders_in_every_format(corpus_run, view: str) -> None:  # type: ignore[no-untyped-def]
    """Dates nested in lists and structs (a registry row's ``amends``), lists of structs (``extraction``):
    every column type the published files have, as JSON, CSV and a table."""
    from enrich.query import run_sql

    _, home = corpus_run
    rows = json.loads(run_sql(home, f"SELECT * FROM {view}", "json"))
    assert rows and all(isinstance(r, dict) for r in rows)
    assert run_sql(home, f"SELECT * FROM {view} LIMIT 5", "csv").count("\n") >= 2
    assert "row(s)" in run_sql(home, f"SELECT * FROM {view} LIMIT 5", "table")
    if view == "registry":
        dated = [a for r in rows for a in r["amends"] or [] if a.get("act_date")]
        assert dated and all(isinstance(a["act_date"], str) for a in dated)
