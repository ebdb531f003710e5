"""Readers never see a half-published version (issue 23, case 4).

A run writes the index before it moves CURRENT, and Chroma holds one record per chunk id: from the start of
indexing until the publish, the index holds the *next* version's text for every chunk the run changed. An
answer is computed on one version (named in the answer), its chunks come from that version's files, and a
reader kept open refreshes when CURRENT moves: `exact` with no chunks cannot happen.

The loop test runs `zan run`s that change every chunk's text of one act, back and forth, beside lookups (a
kept-open `Lookup` in this process and `zan lookup` processes); `ZAN_LOOP_SECONDS` sets how long (40 s
here; `ZAN_LOOP_SECONDS=300 pytest tests/test_version_readers.py -k loop -s` is the issue's figure)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lookup.route import Lookup
from runs.pipeline import run
from runs.state import RunOptions
from schemas.published import current_version
from tests.conftest import ROOT, SAMPLE

ORDER = "adilet/rus/V2400035612.html"  # the МТСЗН order № 211: every one of its chunks changes text


def _edit(src: Path, edition: int) -> None:
    """Edition 0 is the bundled text; edition n appends « (ред. n)» to every paragraph of the order."""
    original = (SAMPLE / ORDER).read_text("utf-8")
    text = original if edition == 0 else original.replace("</p>", f" (ред. {edition})</p>")
    (src / ORDER).write_text(text, "utf-8")


def _texts(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {c.text for c in result.chunks}


@pytest.mark.slow
def test_a_lookup_during_indexing_answers_from_the_published_version_then_moves_on(tmp_path: Path) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    lookup = Lookup.open(home)  # kept open, as a service keeps it
    before = lookup.route("Приказ МТСЗН №211 от 25.12.2024")
    assert before.status == "exact" and before.chunks and before.version == "v000001"
    _edit(src, 1)
    marker = tmp_path / "paused"
    env = {**os.environ, "ZAN_FAILPOINT": "index", "ZAN_FAILPOINT_FILE": str(marker), "ZAN_FAILPOINT_SLEEP": "4"}
    writer = subprocess.Popen([sys.executable, "-m", "cli", "run", "--home", str(home), "--source", str(src)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():  # the run has written the order's new text to the index, not yet published
            assert writer.poll() is None and time.monotonic() < deadline, writer.stderr.read() if writer.stderr else ""
            time.sleep(0.05)
        during = lookup.route("Приказ МТСЗН №211 от 25.12.2024")
        fresh = Lookup.open(home).route("Приказ МТСЗН №211 от 25.12.2024")
    finally:
        assert writer.wait(timeout=120) == 0
    for answer in (during, fresh):  # the published version, whole: its chunks, its text
        assert (answer.status, answer.version, _texts(answer)) == ("exact", "v000001", _texts(before))
    after = lookup.route("Приказ МТСЗН №211 от 25.12.2024")  # CURRENT moved: the kept-open reader follows
    assert after.version == "v000002" and after.chunks and all("(ред. 1)" in t for t in _texts(after))


def test_a_kept_open_lookup_never_answers_from_a_pruned_version(tmp_path: Path) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home, options=RunOptions(keep_versions=1))
    lookup = Lookup.open(home)
    for edition in (1, 2, 3):
        _edit(src, edition)
        run([src], home, options=RunOptions(keep_versions=1))
        answer = lookup.route("приказ МТСЗН 211")
        assert answer.version == current_version(home) and all(f"(ред. {edition})" in t for t in _texts(answer))
    assert [p.name for p in (home / "versions").iterdir()] == [current_version(home)]


@pytest.mark.slow
def test_a_loop_of_runs_and_lookups_never_answers_exact_without_chunks(tmp_path: Path) -> None:
    seconds = float(os.environ.get("ZAN_LOOP_SECONDS", "40"))
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    stop = threading.Event()
    runs: list[int] = []
    errors: list[str] = []

    def writer() -> None:
        edition = 0
        while not stop.is_set():
            edition += 1
            _edit(src, edition % 3)
            done = subprocess.run([sys.executable, "-m", "cli", "run", "--home", str(home), "--keep", "2"],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
            runs.append(done.returncode)
            if done.returncode:
                errors.append(f"zan run: {done.stderr[-500:]}")

    thread = threading.Thread(target=writer)
    thread.start()
    lookup = Lookup.open(home)
    questions = ["Приказ МТСЗН №211 от 25.12.2024", "приказ 211", "ст. 156 ТК РК", "V2400035612 п. 3"]
    answers = empty = cli = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            for question in questions:
                try:
                    result = lookup.route(question).as_dict()
                except Exception as exc:  # noqa: BLE001 - counted: the assertion below says what it was
                    errors.append(f"Lookup: {type(exc).__name__}: {exc}")
                    continue
                answers += 1
                empty += result["status"] == "exact" and not result["chunks"]
            if answers % 20 < len(questions):  # now and then a new process, as Lumi's calls were
                done = subprocess.run([sys.executable, "-m", "cli", "lookup", "--home", str(home), "--json",
                                       questions[cli % len(questions)]], cwd=ROOT, capture_output=True, text=True,
                                      timeout=120)  # fmt: skip
                cli += 1
                if done.returncode:
                    errors.append(f"zan lookup: {done.stderr[-300:]}")
                else:
                    result = json.loads(done.stdout.splitlines()[-1])
                    empty += result["status"] == "exact" and not result["chunks"]
    finally:
        stop.set()
        thread.join(timeout=600)
    print(f"{seconds:g} s: {len(runs)} runs, {answers} in-process answers, {cli} CLI answers, "
          f"{empty} exact with no chunks, {len(errors)} errors")  # fmt: skip
    assert len(runs) >= 2 and answers and cli
    assert empty == 0 and not errors, errors[:3]
