"""Input from outside is bounded: `zan sql` is read-only and confined to the published files, a lookup question
is capped in length and identifiers and cleaned of invalid bytes, and every grammar row matches in linear
time (timed on adversarial 100 KB inputs, as a ratio against a trivial regex and against its own 10 KB time)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from enrich.query import QueryError, run_sql
from lookup.grammar import parse, rows
from lookup.route import Lookup, QueryTooLong, clean_query
from schemas.identifiers import fold_lookalikes
from schemas.limits import MAX_IDENTIFIERS, MAX_QUERY_CHARS
from schemas.published import current_version


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("CREATE TABLE t AS SELECT 1", "CREATE statements are refused"),
        ("DROP VIEW registry", "DROP statements are refused"),
        ("SELECT 1; SELECT 2", "one statement per call"),
        ("COPY (SELECT 1) TO '{home}/CURRENT'", "COPY statements are refused"),
        ("COPY registry TO '/tmp/zan-leak.parquet'", "COPY statements are refused"),
        ("ATTACH '/tmp/x.db'", "ATTACH statements are refused"),
        ("EXPORT DATABASE '/tmp/zan-export'", "EXPORT statements are refused"),
        ("INSTALL httpfs", "LOAD statements are refused"),
        ("SET threads = 1000000", "SET statements are refused"),
        ("SELECT * FROM read_blob('/etc/shadow')", "Permission"),
        ("SELECT * FROM glob('/root/*')", "Permission"),
        ("SELECT * FROM read_csv('/etc/passwd')", "Permission"),
        ("SELECT " + "1+" * 60_000 + "1", "the limit is"),
    ],
)
def test_zan_sql_refuses_writes_and_outside_reads(sample_run, sql: str, refused: str) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    with pytest.raises(QueryError, match=re.escape(refused)):
        run_sql(home, sql.replace("{home}", str(home)), "csv")
    assert current_version(home) == "v000001" and not Path("/tmp/zan-leak.parquet").exists()


def test_zan_sql_reads_the_published_views(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    out = run_sql(home, "WITH r AS (SELECT doc_id FROM registry) SELECT count(*) AS n FROM r", "csv")
    assert out.splitlines() == ["n", "15"]
    assert "rows" in run_sql(home, "SELECT count(*) AS rows FROM runs", "csv")


def test_zan_sql_stops_a_query_at_its_time_limit(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    started = time.monotonic()
    with pytest.raises(QueryError, match="was stopped"):
        run_sql(
            home,
            "SELECT sum(hash(range)) FROM range(100000000000)",  # minutes of work unless stopped
            "csv",
            timeout_s=1,
        )
    assert time.monotonic() - started < 30


def test_a_question_is_cleaned_and_bounded(sample_run) -> None:  # type: ignore[no-untyped-def]
    assert clean_query("ст. 156 \udcff ТК\x00РК") == "ст. 156 \ufffd ТК РК"  # an invalid byte, a NUL
    with pytest.raises(QueryTooLong, match=f"the limit is {MAX_QUERY_CHARS}"):
        clean_query("а" * (MAX_QUERY_CHARS + 1))
    lookup = Lookup.open(sample_run[1])
    many = lookup.route(" ".join(f"приказ № {n};" for n in range(1, 40)))
    assert len(many.identifiers) == MAX_IDENTIFIERS and f"первые {MAX_IDENTIFIERS}" in many.hint
    assert lookup.route("ст. 182 ТК РК \udcff").status == "exact"


# one long word, digits, spaces, and the prefixes rows start with, repeated: the shapes that make a regex backtrack
ADVERSARIAL = ["а", "1", " ", "№ ", "ст. 1", "Трудового ", "N ", "маслихата ", "ого ", "(a)", "1-", "2024 жылғы "]


def _timed(pattern: re.Pattern[str], text: str) -> float:
    """CPU seconds of one full scan (CPU time, so another busy process on the machine does not count)."""
    started = time.process_time()
    for _ in pattern.finditer(text):
        pass
    return time.process_time() - started


@pytest.mark.slow
def test_every_grammar_row_matches_in_linear_time() -> None:
    trivial = re.compile("x")
    worst: list[tuple[float, float, str, str]] = []
    for unit in ADVERSARIAL:
        small, large = ((unit * (n // len(unit) + 1))[:n] for n in (20_000, 100_000))
        base = max(_timed(trivial, large), 1e-5)
        for row in rows():
            text_small, text_large = (fold_lookalikes(t) if row.folded else t for t in (small, large))
            t_small, t_large = max(_timed(row.pattern, text_small), 1e-5), _timed(row.pattern, text_large)
            if t_large / t_small >= 15:  # an outlier: measure again, best of 3 (one slow scan is noise, not growth)
                t_small = max(min(_timed(row.pattern, text_small) for _ in range(3)), 1e-5)
                t_large = min(_timed(row.pattern, text_large) for _ in range(3))
            worst.append((t_large / t_small, t_large / base, row.name, unit))
    growth = max(worst)
    slowest = max(worst, key=lambda w: w[1])
    print(f"grammar rows on 100 KB adversarial input: worst growth 20 KB → 100 KB ×{growth[0]:.1f} ({growth[2]}, "
          f"{growth[3]!r}); slowest ×{slowest[1]:.0f} a trivial regex ({slowest[2]}, {slowest[3]!r})")  # fmt: skip
    assert growth[0] < 15, growth  # linear: ×5 input ≈ ×5 time (a quadratic row grows ×25)
    assert slowest[1] < 200_000, slowest


def test_a_long_cyrillic_word_is_parsed_quickly() -> None:
    started = time.process_time()
    assert parse("а" * MAX_QUERY_CHARS) == []
    assert time.process_time() - started < 2
