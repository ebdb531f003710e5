"""The documents' centroids taken in a helper process beside the index stage's last write (``zan run --workers
N`` on a small run): the same centroids as a run in one process takes, and a helper that fails fails the run
with the last version still published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from runs import centroids as centroids_module
from runs import pipeline
from runs.errors import RunError
from schemas.published import published_dir
from vectors.documents import CENTROIDS, IDS

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "standards"


def _centroids(home: Path) -> tuple[list[str], np.ndarray]:
    folder = published_dir(home)
    assert folder is not None
    return json.loads((folder / CENTROIDS / IDS).read_text("utf-8")), np.load(folder / CENTROIDS / "vectors.npy")


def _edit(source: Path) -> None:
    """A text edit in one act: one of its chunks' texts changes, the other acts' do not."""
    path = source / "gost" / "GOST_12.0.004-2015.txt"
    text = path.read_text("utf-8")
    at = text.index("\n", len(text) // 2)
    path.write_text(text[:at] + " Дополнено при проверке центроидов." + text[at:], "utf-8")


def _published(tmp_path: Path) -> tuple[Path, Path, Path | None]:
    """A copy of the standards published with helpers, then edited: (the copy, HOME, its published folder)."""
    source, home = tmp_path / "standards", tmp_path / "home"
    shutil.copytree(SAMPLE, source)
    pipeline.run([source], home, workers=2)
    before = published_dir(home)
    _edit(source)
    return source, home, before


def test_centroids_taken_beside_the_last_write_equal_those_a_run_in_one_process_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waited: list[bool] = []
    real_wait = centroids_module.CentroidsAside.wait

    def wait(self: centroids_module.CentroidsAside) -> bool:
        waited.append(real_wait(self))
        return waited[-1]

    monkeypatch.setattr(centroids_module.CentroidsAside, "wait", wait)
    source = tmp_path / "standards"
    shutil.copytree(SAMPLE, source)
    for round_ in ("first", "edited"):
        if round_ == "edited":
            _edit(source)
        waited.clear()
        assert pipeline.run([source], tmp_path / "one", workers=1).status == "published"
        assert waited == []  # one process: no helper is asked for
        info = pipeline.run([source], tmp_path / "helpers", workers=2)
        assert info.status == "published"
        assert waited == [True], round_  # the helper took them, beside the write
        if round_ == "edited":
            assert info.text_changed >= 1
        ids_one, vectors_one = _centroids(tmp_path / "one")
        ids_helper, vectors_helper = _centroids(tmp_path / "helpers")
        assert ids_one == ids_helper and len(ids_one) >= 5
        assert np.allclose(vectors_one, vectors_helper, atol=1e-6)


def test_a_large_run_takes_its_centroids_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large run's helpers are spawned interpreters whose memory would stack on the index stage's: none here."""
    started: list[object] = []
    monkeypatch.setattr(centroids_module.CentroidsAside, "start", lambda self: started.append(self))
    monkeypatch.setattr(pipeline, "OWN_PROCESS_FROM", 2)
    assert pipeline.run([SAMPLE], tmp_path / "home", workers=2).status == "published"
    assert started == []
    ids, vectors = _centroids(tmp_path / "home")
    assert len(ids) == len(vectors) >= 5


def test_a_failing_centroids_helper_fails_the_run_and_the_last_version_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, home, before = _published(tmp_path)
    ids_before, vectors_before = _centroids(home)
    monkeypatch.setenv("ZAN_FAILPOINT", "centroids")  # the helper takes its parent's environment
    monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "enospc")
    with pytest.raises(RunError, match="centroids") as raised:
        pipeline.run([source], home, workers=2)
    assert raised.value.transient  # a full disk may be gone on a retry
    monkeypatch.delenv("ZAN_FAILPOINT")
    assert published_dir(home) == before
    ids, vectors = _centroids(home)
    assert ids == ids_before and np.array_equal(vectors, vectors_before)
    assert pipeline.run([source], home, workers=2).status == "published"  # the next run converges
    assert published_dir(home) != before


def test_a_write_that_fails_beside_the_helper_stops_it_and_the_last_version_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing

    started: list[object] = []
    real_start = centroids_module.CentroidsAside.start
    monkeypatch.setattr(centroids_module.CentroidsAside, "start", lambda self: started.append(real_start(self)))
    source, home, before = _published(tmp_path)
    started.clear()
    monkeypatch.setenv("ZAN_FAILPOINT", "index")  # after the write the helper was started beside
    monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "enospc")
    with pytest.raises(OSError, match="No space left"):
        pipeline.run([source], home, workers=2)
    monkeypatch.delenv("ZAN_FAILPOINT")
    assert len(started) == 1  # it was running when the write failed
    assert not [p for p in multiprocessing.active_children() if p.name == "zan-centroids"]
    assert published_dir(home) == before
    assert pipeline.run([source], home, workers=2).status == "published"
