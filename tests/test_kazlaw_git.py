"""Re-extract by commit (issue 44, part 2): a git clone of a kazakhstan-law scope, with real acts and commits
made here (no network): an amending commit re-embeds only that act's changed chunks; a deleting commit keeps
the act, repealed on that commit's date; a rewritten (force-pushed) history is compared by content and
re-embeds nothing."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from enrich.query import connect
from lookup.route import Lookup
from runs.pipeline import run
from schemas.published import published_dir, read_manifest
from tests.conftest import corpus_file

MINISTERIAL = "kazlaw/ministerial/07-ministerial/103003000000-qriim"
ACCIDENTS = f"{MINISTERIAL}/2015/0123-ob-utverzhdenii-pravil-rassledovaniia-avarii-bedstvii-katastrof-86979"
RESCUERS = f"{MINISTERIAL}/2018/0711-ob-utverzhdenii-pravil-attestatsii-i-pereattestatsii-spasatelei-123851"


def git(repo: Path, *args: str, when: str = "2026-01-15T10:00:00") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "zan",
           "GIT_AUTHOR_EMAIL": "zan@example.org", "GIT_COMMITTER_NAME": "zan", "GIT_COMMITTER_EMAIL": "zan@example.org"}  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@pytest.fixture
def scope(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "ministerial"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for act in (ACCIDENTS, RESCUERS):
        shutil.copytree(corpus_file(act), repo / act.split("/", 2)[2])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two acts")
    return repo


def _registry(home: Path) -> dict[str, tuple[object, ...]]:
    with connect(home) as con:
        rows = con.sql("SELECT doc_id, status, repealed_on FROM registry").fetchall()
    return {r[0]: r[1:] for r in rows}


def test_amending_deleting_and_a_rewritten_history(scope: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = run([scope], home)
    assert first.documents == 2 and first.rejected == 0
    head = git(scope, "rev-parse", "HEAD")
    assert read_manifest(published_dir(home)).source_commits == {str(scope.resolve()): head}  # type: ignore[arg-type]

    # an amending commit: one пункт of the accident rules reworded, the version dated as the portal dates it
    act = scope / ACCIDENTS.split("/", 2)[2]
    rules = act / "rus.md"
    text = rules.read_text("utf-8")
    assert "в течение десяти рабочих дней со дня окончания расследования" in text
    rules.write_text(text.replace("в течение десяти рабочих дней со дня окончания расследования",
                                  "в течение пяти рабочих дней со дня окончания расследования"), "utf-8")  # fmt: skip
    meta = (act / "meta.yaml").read_text("utf-8")
    assert "rus: 2025-08-27" in meta
    meta = meta.replace("rus: 2025-08-27", "rus: 2026-02-01")
    # made by an order no note names
    meta = meta.replace("от 27 августа 2025 года № 362", "от 1 февраля 2026 года № 99")
    (act / "meta.yaml").write_text(meta, "utf-8")
    git(scope, "commit", "-q", "-am", "amend order 46", when="2026-02-01T10:00:00")
    amended = run([scope], home)
    assert amended.status == "published" and amended.text_changed >= 1 and amended.added == 0
    assert 1 <= amended.embedded <= 3  # the changed chunk(s) only
    assert any("2 files changed, 0 deleted" in s for s in amended.sources), amended.sources  # rus.md, meta.yaml
    assert any("№ 99 of 01.02.2026 has no note naming that act" in s for s in amended.sources), amended.sources
    assert not any("№ 362" in s for s in amended.sources)  # the first version's act is noted: they agree
    with connect(home) as con:
        assert con.sql(
            "SELECT count(*) FROM chunks WHERE text LIKE '%пяти рабочих дней со дня окончания%'"
        ).fetchall() == [(1,)]

    # a deleting commit: the rescuers' attestation rules are repealed on its date, not dropped
    shutil.rmtree(scope / RESCUERS.split("/", 2)[2])
    git(scope, "add", "-A")
    git(scope, "commit", "-q", "-m", "repeal order 507", when="2026-03-01T09:00:00")
    deleted = run([scope], home)
    assert deleted.repealed == 1 and deleted.deleted == 0 and deleted.embedded == 0
    assert deleted.metadata_changed >= 1 and deleted.text_changed == 0
    registry = _registry(home)
    assert registry["v1800017233"] == ("repealed", dt.date(2026, 3, 1))
    assert registry["v1500010325"][0] == "in_force"

    # the upstream is rebuilt and force-pushed: the same tree under a new commit, the recorded one gone
    tree = git(scope, "rev-parse", "HEAD^{tree}")
    rebuilt = git(scope, "commit-tree", tree, "-m", "rebuilt", when="2026-03-02T09:00:00")
    git(scope, "reset", "-q", "--hard", rebuilt)
    git(scope, "reflog", "expire", "--expire=now", "--all")
    git(scope, "gc", "-q", "--prune=now")
    again = run([scope], home)
    assert again.embedded == 0 and again.deleted == 0 and again.text_changed == 0
    assert any("no longer in the history" in s for s in again.sources), again.sources
    assert _registry(home)["v1800017233"][0] == "repealed"
    assert read_manifest(published_dir(home)).source_commits[str(scope.resolve())] == rebuilt  # type: ignore[arg-type]
    replayed = Lookup.open(home)
    from lookup.history import history_of

    assert len(history_of(replayed.snapshot()).versions("v1500010325")) == 2  # type: ignore[union-attr]  # not twice
    gone = replayed.route("приказ МВД № 507", as_of=dt.date(2026, 6, 1))
    assert "утратил силу" in gone.hint
    _mcp_history_and_as_of(replayed, home)


def _mcp_history_and_as_of(lookup: Lookup, home: Path) -> None:
    """The MCP tools over the same home (the SDK's client, in process): ``history`` lists the act's two
    versions, ``lookup`` with ``as_of`` answers from the edition in force then and names it."""
    import anyio
    from mcp import Client

    from lookup.run_history import RunHistory
    from serve.mcp import build_mcp

    server = build_mcp(lambda: (lookup, lookup.snapshot()), RunHistory(home))

    async def main() -> None:
        async with Client(server) as client:
            history = (await client.call_tool("history", {"query": "приказ МВД № 46"})).structured_content
            assert history["status"] == "exact", history["hint"]
            assert [h["doc_id"] for h in history["histories"]] == ["v1500010325"]
            assert [v["version_date"] for v in history["histories"][0]["versions"]] == ["2025-08-27", "2026-02-01"]
            before = {"query": "приказ МВД № 46", "as_of": "2025-12-31"}
            past = (await client.call_tool("lookup", before)).structured_content
            assert [e["version_date"] for e in past["editions"]] == ["2025-08-27"] and past["as_of"] == "2025-12-31"
            assert any("десяти рабочих дней со дня окончания" in c["text"] for c in past["chunks"])

    anyio.run(main)


def test_the_history_is_sorted_act_by_act_whatever_the_order_the_inputs_hold_acts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runs.act_history`: the previous history (sorted) and the new rows (one act after another, in any act
    order; an act may have rows in both), cut into sorted runs, give one file sorted by act, unit and date, in
    row groups of GROUP_ROWS, the same rows as a sort of the whole table; acts spanning row groups and runs,
    and stretches of acts only the previous history holds (copied whole), included."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    import runs.history_merge
    from runs.history_merge import GROUP_ROWS, SORT_KEY, merge_sorted, sorted_runs
    from schemas.arrow import HISTORY_SCHEMA

    monkeypatch.setattr(runs.history_merge, "RUN_ROWS", 97)

    rng = random.Random(44)

    def rows(doc: str, versions: range) -> list[dict[str, object]]:
        return [{"doc_id": doc, "language": lang, "unit": f"art{u}", "heading": None,
                 "version_date": dt.date(2020, 1, 1) + dt.timedelta(days=v), "commit": f"c{v:03d}",
                 "committed": dt.date(2020, 1, 1) + dt.timedelta(days=v), "event": "text", "text_hash": f"h{v}",
                 "text": f"{doc} {lang} {u} {v}", "caused_by": None}
                for lang in ("rus", "kaz") for u in range(rng.randint(1, 12)) for v in versions]  # fmt: skip

    docs = [f"V{n:06d}" for n in range(60)]
    before = sorted((r for d in docs[:40] for r in rows(d, range(3))), key=lambda r: tuple(str(r[k]) for k in SORT_KEY))
    fresh = [r for d in rng.sample(docs[20:], 40) for r in rows(d, range(3, 3 + rng.randint(1, 4)))]
    pq.write_table(pa.Table.from_pylist(before, HISTORY_SCHEMA), tmp_path / "before.parquet", row_group_size=50)
    pq.write_table(pa.Table.from_pylist(fresh, HISTORY_SCHEMA), tmp_path / "fresh.parquet", row_group_size=37)
    made = sorted_runs(tmp_path / "fresh.parquet", tmp_path / "out.parquet")
    assert len(made) > 5
    monkeypatch.setattr(runs.history_merge, "RUN_ROWS", 10**6)  # runs bounded by their bytes alone
    assert len(sorted_runs(tmp_path / "fresh.parquet", tmp_path / "whole.parquet")) == 1
    monkeypatch.setattr(runs.history_merge, "RUN_BYTES", 1)
    by_bytes = sorted_runs(tmp_path / "fresh.parquet", tmp_path / "bytes.parquet")
    assert len(by_bytes) == -(-len(fresh) // GROUP_ROWS) > 1
    for part in by_bytes:
        part.unlink()
    (tmp_path / "whole.parquet.run-00000").unlink()
    merge_sorted([tmp_path / "before.parquet", *made], tmp_path / "out.parquet")
    out = pq.ParquetFile(tmp_path / "out.parquet")
    whole = pa.Table.from_pylist(before + fresh, HISTORY_SCHEMA).sort_by([(k, "ascending") for k in SORT_KEY])
    assert out.read().to_pylist() == whole.to_pylist() and out.metadata.num_rows == len(before) + len(fresh) > 1000
    sizes = [out.metadata.row_group(n).num_rows for n in range(out.metadata.num_row_groups)]
    assert max(sizes) <= GROUP_ROWS and sum(sizes) == out.metadata.num_rows
    assert out.metadata.row_group(0).column(0).statistics.has_min_max  # doc_id: what an as-of read narrows by
