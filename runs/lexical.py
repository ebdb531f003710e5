"""The BM25 stage of a run: which lexical indexes it builds (:func:`lexical_jobs`), built in ``enrich`` by the
DAG's task and by a run in one process, or in a process of its own beside the embed and index stages by
``zan run --workers N`` (:func:`lexical_aside`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runs.child import Helper, report, wrapped
from runs.state import RunState, StageResult, as_state
from runs.versions import staging_dir
from schemas.published import versions_dir
from vectors.lexical import LEXICAL
from vectors.words import build_word_indexes


def lexical_jobs(state: RunState) -> list[tuple[Path, Path, Path | None]]:
    """The BM25 indexes a run builds, as (enriched chunks, index folder, the last version's index folder to
    reuse unchanged chunks from, if any): the staged version's when the run staged new tables, else none."""
    if state.same:
        return []
    staging = staging_dir(Path(state.home), state.run_id)
    before = versions_dir(Path(state.home)) / state.previous / LEXICAL if state.previous else None
    return [(staging / "enriched_chunks.parquet", staging / LEXICAL, before if before and before.is_dir() else None)]


@contextlib.contextmanager
def lexical_aside(state_path: RunState | Path | str, fresh: bool = False) -> Iterator[None]:
    """Build the run's BM25 index (:func:`lexical_jobs`) in a process of its own while the ``with`` body
    runs, then wait for it and add its seconds to the run's ``lexical``. Meant for the embed and index
    stages, which leave a core idle (Chroma's write holds one; the embedder mostly waits on its model or
    service): the build's time is hidden instead of added. Nothing changes in what is built (the same
    function, the same files). The process only writes its index folder (never the state file); if the body
    fails it is stopped, and if the build fails the run fails with its error (a RunError that keeps the error's
    retry class: :func:`runs.child.wrapped`), before anything is published. ``fresh``: the process is a spawned
    interpreter (:func:`runs.child.processes`)."""
    jobs = lexical_jobs(as_state(state_path))
    if not jobs:
        yield
        return
    helper = Helper(_lexical_child, jobs, name="zan-lexical", what="the BM25 build process", fresh=fresh)
    try:
        yield
    except BaseException:  # the body's own error (an EOFError of the body's is never taken for the build's)
        helper.stop()
        raise
    kind, value = helper.result()
    if kind != "ok":
        raise wrapped(f"the lexical (BM25) index was not built: {type(value).__name__}: {value}", value) from value
    state = as_state(state_path)  # as the body left it (read again when this was given a path)
    info = state.run_info()
    info.seconds["lexical"] = round(info.seconds.get("lexical", 0) + float(value[1]), 3)
    indexed = sum(value[0])
    state.update(
        info, None, StageResult("lexical", indexed, indexed, 0, round(float(value[1]), 3), "chunks → word indexes")
    )


def lexical_apart(state_path: RunState | Path | str, fresh: bool = False) -> None:
    """Build the run's BM25 index in a process of its own now (:func:`lexical_aside` with nothing beside it):
    a large run in one process does, so the word indexes' build (the bridge's EM holds ~250 MB whatever the
    corpus) does not stack on what the enrich stage holds."""
    with lexical_aside(state_path, fresh):
        pass


def _lexical_child(jobs: list[tuple[Path, Path, Path | None]], send: Any) -> None:
    """:func:`lexical_aside`'s process: build every index, and say how it went (:func:`runs.child.report`)."""
    report(send, lambda: [build_word_indexes(*job) for job in jobs], "the BM25 build")
