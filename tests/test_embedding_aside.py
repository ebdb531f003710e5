"""The embed stage beside the index stage (``zan run --workers N``): the index waits block by block for the
vectors the shards store, a shard's failure fails the run with its own error, and a failing body stops them."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from runs import stages
from runs.embedding import embedding_aside, plan_embedding, shard_path
from runs.indexing import KnownHashes, await_vectors
from schemas.errors import ZanError
from tests.conftest import SAMPLE
from vectors.store import VectorStore


def _hash(n: int) -> str:
    return f"{n:016x}" * 2  # the first 16 hex digits differ: KnownHashes keys on them


def test_await_vectors_waits_for_parts_stored_meanwhile_and_stops_when_the_stage_is_over(tmp_path: Path) -> None:
    store = VectorStore(tmp_path, "hash-test")
    store.put("earlier", {_hash(1): np.ones(4, np.float32)})
    known = KnownHashes.of(store.hashes())
    table = pa.table({"text_hash": [_hash(1), _hash(2), _hash(3), _hash(2)]})
    calls = []

    def pending() -> bool:  # the shards store hash 2 on the third look, hash 3 on the fifth, then finish
        calls.append(time.monotonic())
        if len(calls) == 3:
            store.put("run-s0", {_hash(2): np.full(4, 2, np.float32)}, block=1)
        if len(calls) == 5:
            store.put("run-s1", {_hash(3): np.full(4, 3, np.float32)}, block=1)
        return len(calls) < 6

    await_vectors(table, store, known, pending, poll=0.001)
    assert len(calls) == 5  # it returned as soon as every text was stored, without waiting for the stage
    assert known.contains(KnownHashes.of([_hash(2), _hash(3)]).prefixes).all()
    # the stage over with a text still missing: no more waiting, that text is left to the index stage
    done = []
    await_vectors(pa.table({"text_hash": [_hash(4)]}), store, known, lambda: bool(done.append(1)), poll=0.001)
    assert len(done) == 1 and not known.contains(KnownHashes.of([_hash(4)]).prefixes).any()
    assert store.hashes_among([_hash(4), _hash(3), _hash(1)]) == [_hash(1), _hash(3)]


def _planned(tmp_path: Path) -> tuple[Path, list[str]]:
    state = stages.begin(tmp_path / "home", [SAMPLE / "standards"], holder="process")
    stages.extract_all(state)
    stages.registry(state)
    stages.enrich(state)
    return state, plan_embedding(state, 2)


def _embedding_shards(apart: bool) -> list[Any]:
    """The shards still embedding: spawned processes, or threads of this process."""
    if apart:
        return [p for p in multiprocessing.active_children() if p.name.startswith("zan-embed-")]
    threads = [t for t in threading.enumerate() if t.name.startswith("zan-embed-")]
    for thread in threads:  # a stopped thread ends at its next batch
        thread.join(timeout=10)
    return [t for t in threads if t.is_alive()]


@pytest.mark.parametrize("apart", [True, False], ids=["processes", "threads"])
def test_a_failing_shard_fails_with_its_error_and_a_failing_body_stops_the_shards(tmp_path: Path, apart: bool) -> None:
    state, shards = _planned(tmp_path)
    run = stages.RunState.load(state)
    broken = shard_path(run, 1)
    good = broken.read_bytes()
    broken.write_bytes(b"PAR1 not a parquet file")
    with pytest.raises(Exception, match="(?i)parquet"), embedding_aside(state, shards, 2, apart) as pending:
        while pending():
            time.sleep(0.01)
    assert not _embedding_shards(apart)
    broken.write_bytes(good)
    with pytest.raises(KeyError, match="the body"), embedding_aside(state, shards, 2, apart):
        raise KeyError("the body")
    assert not _embedding_shards(apart)
    with embedding_aside(state, shards, 2, apart) as pending:
        if not apart:  # threads of this process, named by their shard
            assert {t.name for t in threading.enumerate()} >= {"zan-embed-0", "zan-embed-1"}
    assert not pending() and stages.RunState.load(state).run_info().seconds["embed"] > 0
    stored = VectorStore(tmp_path / "home", run.embedder_id).hashes().to_pylist()
    parts = [p.name for p in (tmp_path / "home" / "vectors").rglob("part-*.keys.npy")]
    assert any("-s0-" in p for p in parts) and any("-s1-" in p for p in parts), parts
    assert len(stored) == run.to_embed > 0
    # planned again, every text is stored: no shard has a text, so no process or thread is started
    again = plan_embedding(state, 2)
    assert stages.RunState.load(state).to_embed == 0
    with embedding_aside(state, again, 2, apart) as pending:
        assert not _embedding_shards(apart) and not pending()
    stages.finish(state)


def test_work_in_a_daemon_thread_hands_over_its_result_or_its_exception() -> None:
    from schemas.background import in_thread

    started = threading.Event()
    result = in_thread(lambda: started.wait(5) and 42, "zan-test-ok")
    assert [t.daemon for t in threading.enumerate() if t.name == "zan-test-ok"] == [True]  # waits until set
    started.set()
    assert result.result(timeout=5) == 42
    failed = in_thread(lambda: {}["missing"], "zan-test-error")
    with pytest.raises(KeyError, match="missing"):
        failed.result(timeout=5)


def test_models_that_compute_here_embed_in_processes_and_the_others_in_threads_until_the_work_is_large() -> None:
    from runs.embedding import SPAWN_FROM, embeds_apart

    service = "openai:http://127.0.0.1:8080/v1?model=e5"
    assert embeds_apart("e5", 10) and embeds_apart("st:/models/LaBSE", 10)
    assert not embeds_apart("hash", SPAWN_FROM - 1) and not embeds_apart(service, SPAWN_FROM - 1)
    assert embeds_apart("hash", SPAWN_FROM) and embeds_apart(service, 20_000)


class _Unpicklable(Exception):
    def __reduce__(self):  # type: ignore[no-untyped-def]
        raise TypeError("cannot pickle this one")


class _UnpicklableTerminal(ZanError):
    def __reduce__(self):  # type: ignore[no-untyped-def]
        raise TypeError("cannot pickle this one")


def _raise(exc: BaseException) -> None:
    raise exc


def test_a_helper_process_reports_its_result_its_own_exception_or_an_unpicklable_one_s_words() -> None:
    from runs.child import report
    from runs.errors import RunError
    from schemas.errors import TransientError

    def outcome(work: Any) -> Any:
        receive, send = multiprocessing.Pipe(duplex=False)
        report(send, work, "shard 7")
        assert send.closed
        got = receive.recv()
        receive.close()
        return got

    kind, (result, seconds) = outcome(lambda: 41 + 1)
    assert (kind, result) == ("ok", 42) and seconds >= 0
    kind, error = outcome(lambda: _raise(TransientError("the service is busy")))
    assert kind == "error" and type(error) is TransientError and str(error) == "the service is busy"
    kind, error = outcome(lambda: _raise(_Unpicklable("half-open socket")))
    assert kind == "error" and isinstance(error, RunError)
    assert str(error) == "shard 7: _Unpicklable: half-open socket"
    assert error.transient  # unexpected in the run's own process too: Airflow would retry it there
    kind, error = outcome(lambda: _raise(_UnpicklableTerminal("a page nested 400 deep")))
    assert kind == "error" and isinstance(error, RunError) and not error.transient  # it said: a retry won't help
    kind, error = outcome(lambda: _raise(RunError("no source")))
    assert kind == "error" and type(error) is RunError and not error.transient


def test_the_parent_reads_what_the_helper_sent_or_names_a_helper_that_ended_without_a_word() -> None:
    from types import SimpleNamespace

    from runs.child import outcome, report
    from runs.errors import RunError

    receive, send = multiprocessing.Pipe(duplex=False)
    report(send, lambda: "built", "the BM25 build")
    kind, (result, _) = outcome(receive, SimpleNamespace(exitcode=0), "the BM25 build process")
    assert (kind, result) == ("ok", "built")
    receive, send = multiprocessing.Pipe(duplex=False)
    send.close()  # the child died before it said anything
    kind, error = outcome(receive, SimpleNamespace(exitcode=-9), "embedding shard 3")
    assert kind == "error" and isinstance(error, RunError)
    assert str(error) == "embedding shard 3 died (exit code -9)"
    assert error.transient  # killed (the OOM killer, a signal): the run's own process dying would be retried


def test_a_wrapped_helper_failure_keeps_the_retry_class_of_its_cause() -> None:
    from runs.child import wrapped
    from runs.errors import RunError, ShrinkRefused
    from schemas.errors import TransientError

    assert not wrapped("the BM25 build failed", ShrinkRefused("would delete 80 %")).transient
    assert wrapped("the BM25 build failed", TransientError("the disk is busy")).transient
    assert wrapped("the BM25 build failed", OSError(28, "No space left on device")).transient
    assert not RunError("no source").transient  # the class itself stays terminal: only the instance says so
