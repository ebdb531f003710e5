"""Hostile files in the kazakhstan-law layout (issue 67, parts 1 and 2): YAML alias bombs, files that never end, a
300 MB part, links to /proc and folders linked in from outside. Each act is rejected (or made incomplete) with the
file and the reason, its last good version stays, the others are published, and the run ends in bounded time and
memory: a real ``zan run`` process, its peak measured as the benchmarks measure it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from benchmarks.common import wait_with_peak
from enrich.query import connect
from tests.conftest import ROOT, corpus_file
from tests.test_hostile_git import BOMB
from tests.test_kazlaw import ACCIDENTS, GAS, MINISTERIAL
from tests.test_kazlaw_git import RESCUERS

AUDIT = f"{MINISTERIAL}/2015/0213-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-87811"
SUCCESSOR = f"{MINISTERIAL}/2017/0403-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-111943"
PEAK_MB = 300
DEADLINE = 120  # seconds: a hung run is killed here, and the test fails


def _zan_run(source: Path, home: Path) -> float:
    """``zan run`` in its own process, killed past :data:`DEADLINE`; its peak memory in MB (the process tree)."""
    process = subprocess.Popen([sys.executable, "-m", "cli", "run", "--source", str(source), "--home", str(home)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    timer = threading.Timer(DEADLINE, process.kill)
    timer.start()
    try:
        code, peak = wait_with_peak(process)
    finally:
        timer.cancel()
    assert process.stderr is not None
    assert code == 0, f"zan run ended with {code} (killed at {DEADLINE} s?): {process.stderr.read()[-2000:]!r}"
    return peak


def _copy(src: Path, relative: str) -> Path:
    target = src / "ministerial" / relative.split("/", 2)[2]
    shutil.copytree(corpus_file(relative), target)
    return target


def _rejects(home: Path) -> dict[str, tuple[str, str]]:
    with connect(home) as con:
        rows = con.sql("SELECT source_file, error, reason FROM rejects").fetchall()
    return {Path(f).parent.name if Path(f).name in ("rus.md", "kaz.md") else Path(f).name: (e, r) for f, e, r in rows}


def _doc_ids(home: Path) -> set[str]:
    with connect(home) as con:
        return {r[0] for r in con.sql("SELECT doc_id FROM registry").fetchall()}


def test_yaml_bombs_reject_their_acts_in_bounded_time_and_memory_and_the_last_good_versions_stay(
    tmp_path: Path,
) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    good = _copy(src, ACCIDENTS)
    nested, many, titled = _copy(src, RESCUERS), _copy(src, AUDIT), _copy(src, SUCCESSOR)
    _zan_run(src, home)
    published = _doc_ids(home)
    assert len(published) == 4
    mapping = "m: &m {" + ", ".join(f"k{i}: {'v' * 55}" for i in range(100)) + "}"  # ~6 KB
    bombs = {
        nested: BOMB + "\ncaused_by: {code: '1', requisite: *a8}\n",  # nine levels of nine
        many: mapping + "\nreplaces: [" + ", ".join(["*m"] * 30_000) + "]\n",  # 30 000 aliases of 6 KB
        titled: BOMB + "\ntitle: {rus: *a8, kaz: *a8}\n",  # a plain folder's title
    }
    for act, bomb in bombs.items():
        meta = yaml.safe_load((act / "meta.yaml").read_text("utf-8"))
        kept = {k: v for k, v in meta.items() if k not in ("caused_by", "title", "replaces")}
        (act / "meta.yaml").write_text(yaml.safe_dump(kept, allow_unicode=True) + bomb, "utf-8")
    peak = _zan_run(src, home)
    assert peak < PEAK_MB, peak
    rejects = _rejects(home)
    assert "expands to over 20,000 values" in rejects[nested.name][1]
    assert "uses over 64 aliases" in rejects[many.name][1]
    assert "expands to over 20,000 values" in rejects[titled.name][1]
    assert good.name not in rejects
    assert _doc_ids(home) == published  # each bombed act's last good version is kept


def _pagemap_link(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/proc/self/pagemap")  # a "regular file" of size 0 that never ends


def test_files_that_never_end_or_lie_elsewhere_are_refused_with_the_reason(tmp_path: Path) -> None:
    """A part linked to /proc/self/pagemap and a sparse 300 MB part make the split act incomplete, named; an
    unlisted link in its parts folder is never read; a meta.yaml linked to /proc/self/pagemap rejects its act; an
    act folder linked in from outside the source is a reject row, not silence; the rest is published."""
    src, home = tmp_path / "src", tmp_path / "home"
    split = _copy(src, GAS)
    text = corpus_file(f"{ACCIDENTS}/rus.md").read_text("utf-8")
    for language in ("rus", "kaz"):
        (split / language).mkdir()
        for n, part in enumerate(("an000", "an001", "an005", "an008", "an015", "an022-3")):
            (split / language / f"{part}.md").write_text(f"## Часть {part}\n\n{n + 1}. {text[:400]}\n", "utf-8")
    _pagemap_link(split / "rus" / "an001.md")
    with (split / "rus" / "an005.md").open("wb") as sparse:
        sparse.truncate(300 * 1024 * 1024)  # 300 MB that take no disk
    _pagemap_link(split / "kaz" / "unlisted.md")
    endless_meta = _copy(src, RESCUERS)
    _pagemap_link(endless_meta / "meta.yaml")
    good = _copy(src, ACCIDENTS)
    outside = shutil.copytree(corpus_file(AUDIT), tmp_path / "elsewhere" / "act-87811")
    (src / "ministerial" / "linked-87811").symlink_to(outside, target_is_directory=True)
    peak = _zan_run(src, home)
    assert peak < PEAK_MB, peak
    rejects = _rejects(home)
    error, why = rejects[split.name]
    assert error == "Incomplete" and "rus/an001.md (a symlink to /proc/" in why and "rus/an005.md (300.0 MB" in why
    assert "unlisted" not in why
    assert "a symlink to /proc/" in rejects[endless_meta.name][1]
    assert rejects["linked-87811"] == (
        "Skipped",
        f"a linked folder: a symlink to {outside}, outside the source folder {src.resolve()}: not followed",
    )
    assert good.name not in rejects
    with connect(home) as con:
        rows = con.sql("SELECT doc_id FROM registry ORDER BY 1").fetchall()
        read = " ".join(
            r[0]
            for r in con.sql("SELECT text FROM chunks WHERE doc_id = 'v1700015986' AND language = 'rus'").fetchall()
        )
    assert rows == [("v1500010325",), ("v1700015986",)]  # the split act with the text that is there, and the good act
    assert "Часть an000" in read and "Часть an001" not in read and "Часть an005" not in read
    assert os.path.getsize(split / "rus" / "an005.md") == 300 * 1024 * 1024


def test_a_yaml_value_git_history_or_the_parser_cannot_build_is_malformed_not_a_crash() -> None:
    from extractors.bounded_yaml import load_mapping
    from extractors.model import ExtractError

    for raw, reason in (
        (b"approved_on: 0000-01-01\n", "year 0 is out of range"),
        (b"a: " + b"[" * 40 + b"]" * 40 + b"\n", "nests deeper than 32"),
        (b"- a\n", "not a mapping"),
        (b"a: 1\n---\nb: 2\n", "malformed metadata"),
        (b"x" * (300 * 1024), "over 262,144"),
    ):
        with pytest.raises(ExtractError, match=reason):
            load_mapping(raw, "meta.yaml")
    assert load_mapping(b"a: &a [1, 2]\nb: *a\n", "meta.yaml") == {"a": [1, 2], "b": [1, 2]}  # a few aliases pass
