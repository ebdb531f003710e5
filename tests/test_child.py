"""Where a run's helper processes start from (:func:`runs.child.processes`): a fork server that imported the
stages once, never a fork of the run's own process, and each helper in its parent's environment as it is
when the helper starts (the fork server's own is the one it started with); a large run's helpers are spawned
interpreters instead (``fresh``)."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from pathlib import Path

import pytest

from runs import child, pipeline, stages
from runs.child import PRELOAD, in_own_process, processes
from schemas.arrow import REJECT_SCHEMA
from schemas.parquet import read_parquet

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _setting(name: str) -> str | None:
    return os.environ.get(name)


def _where() -> tuple[int, int, list[str]]:
    """The helper's pid, its parent's, and which of :data:`PRELOAD` it held before it ran anything."""
    return os.getpid(), os.getppid(), [m for m in PRELOAD if m in sys.modules]


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here")
def test_helpers_fork_from_a_server_that_imported_the_stages_not_from_this_process() -> None:
    assert processes().get_start_method() == "forkserver"
    pid, parent, held = _where()
    first, second = in_own_process(_where, what="a helper"), in_own_process(_where, what="another helper")
    assert first[0] != pid and second[0] != pid and first[0] != second[0]
    assert first[1] == second[1] != pid  # both forked by the one server, not by this process
    assert first[2] == list(PRELOAD)  # imported before the helper ran: a fork, not an interpreter's start


def test_a_helper_sees_the_environment_as_it_is_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "ZAN_TEST_HELPER_SETTING"
    monkeypatch.setenv(name, "one")
    assert in_own_process(_setting, name, what="a helper") == "one"  # the server may have started here
    monkeypatch.setenv(name, "two")
    assert in_own_process(_setting, name, what="a helper") == "two"  # set after it started: still seen
    monkeypatch.delenv(name)
    assert in_own_process(_setting, name, what="a helper") is None


def test_extracting_processes_read_the_file_size_limit_set_after_an_earlier_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ZAN_MAX_FILE_MB`` lowered between two runs in one process reaches the second run's extracting
    processes: every file over it is a reject naming the limit (the server the first run started holds the
    old environment)."""
    source = SAMPLE / "standards"
    for n, limit in enumerate((None, "0.0001")):  # 100 bytes: every sample file is larger
        if limit:
            monkeypatch.setenv("ZAN_MAX_FILE_MB", limit)
        state = stages.begin(tmp_path / f"home{n}", [source], shards=2, holder="process")
        stages.extract_all(state, 2)
        loaded = stages.RunState.load(state)
        work, read = loaded.work, sorted(f for shard in loaded.shards for f in shard)
        assert len(loaded.shards) == 2 and len(read) >= 2
        pids = {json.loads(p.read_text())["pid"] for p in work.glob("shard-*.json")}
        assert os.getpid() not in pids
        rejects = [
            r
            for shard in sorted(work.glob("shard-*.rejects.parquet"))
            for r in read_parquet(shard, REJECT_SCHEMA, "rejects").to_pylist()
        ]
        over = sorted(r["source_file"] for r in rejects if "ZAN_MAX_FILE_MB" in r["reason"])
        assert over == (read if limit else []), rejects
        stages.finish(state)


def test_a_fresh_helper_is_an_interpreter_this_process_spawned() -> None:
    """``fresh`` (a large run's helpers): spawned by this process itself, never forked by the server, whose
    heap a fork would hold beside the stage's."""
    assert processes(fresh=True).get_start_method() == "spawn"
    pid, parent, _ = in_own_process(_where, what="a fresh helper", fresh=True)
    assert pid != os.getpid() and parent == os.getpid()


def test_fresh_extracting_processes_extract_what_forked_ones_do(tmp_path: Path) -> None:
    """A large run's extracting processes (spawned, ``extract_all(..., fresh=True)``) run every shard in a
    process of their own and write what forked ones write: the same documents and rejects per shard."""
    written: list[list[bytes]] = []
    for fresh in (False, True):
        state = stages.begin(tmp_path / f"home-{fresh}", [SAMPLE / "standards"], shards=2, holder="process")
        stages.extract_all(state, 2, fresh=fresh)
        work = stages.RunState.load(state).work
        shards = sorted(work.glob("shard-*.json"))
        assert len(shards) == 2 and os.getpid() not in {json.loads(p.read_text())["pid"] for p in shards}
        rejects = [read_parquet(p, REJECT_SCHEMA, "rejects") for p in sorted(work.glob("shard-*.rejects.parquet"))]
        written.append([t.drop_columns(["run_id"]).to_pylist().__repr__().encode() for t in rejects])
        written[-1] += [p.read_bytes() for p in sorted(work.glob("shard-*.docs"))]
        stages.finish(state)
    assert written[0] == written[1] and len(written[0]) >= 4


def test_a_large_runs_helpers_are_all_fresh_and_a_small_runs_fork_from_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every helper a run starts (its stages apart, the word indexes beside the index stage) asks for a fresh
    interpreter exactly when the run is large (``OWN_PROCESS_FROM`` files and documents)."""
    asked: list[bool] = []
    real = child.processes

    def watched(fresh: bool = False) -> object:
        asked.append(fresh)
        return real(fresh)

    monkeypatch.setattr(child, "processes", watched)
    monkeypatch.setattr(stages, "processes", watched)
    assert pipeline.run([SAMPLE], tmp_path / "small", workers=2).status == "published"
    small = list(asked)
    asked.clear()
    monkeypatch.setattr(pipeline, "OWN_PROCESS_FROM", 5)  # the sample's files are above it
    assert pipeline.run([SAMPLE], tmp_path / "large", workers=2).status == "published"
    assert small and not any(small)  # the word indexes' process, forked from the server
    assert len(asked) >= 3 and all(asked)  # the registry and enrich stages and the word indexes, at least


def test_a_run_from_a_small_version_starts_the_fork_server_before_it_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's imports run beside the run's planning when the published version is small (its helpers
    will fork from it); a first run, one from a large version and a run in one process start none early."""
    calls: list[str] = []
    real_start, real_begin = pipeline.start_server_early, stages.begin
    monkeypatch.setattr(pipeline, "start_server_early", lambda: calls.append("server") or real_start())
    monkeypatch.setattr(stages, "begin", lambda *a, **k: calls.append("begin") or real_begin(*a, **k))
    home = tmp_path / "home"
    pipeline.run([SAMPLE / "standards"], home, workers=2)
    assert calls == ["begin"]  # nothing published yet: no guess at the run's size
    calls.clear()
    pipeline.run([SAMPLE / "standards"], home, workers=2)
    assert calls == ["server", "begin"]
    calls.clear()
    pipeline.run([SAMPLE / "standards"], home, workers=1)
    assert calls == ["begin"]
    calls.clear()
    monkeypatch.setattr(pipeline, "OWN_PROCESS_FROM", 2)  # the version's documents are above it
    pipeline.run([SAMPLE / "standards"], home, workers=2)
    assert calls == ["begin"]
