"""The benchmarks' memory figures are the child's own peak: ``wait4``'s ``ru_maxrss`` is not (Linux folds the
parent's peak into a child's at exec), and a benchmark that held a model once made zan read 547 MB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from common import process_tree, wait_with_peak  # noqa: E402

CHILD = "import numpy as np, time; kept = np.ones({mb} * 2**20 // 8); time.sleep(0.3)"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from /proc (Linux)")
def test_a_child_s_peak_is_its_own_not_the_parent_s() -> None:
    held = np.ones(400 * 2**20 // 8)  # the parent's peak: 400 MB more than the child will ever use
    held[:: 4096 // 8] = 2.0  # touched: resident
    del held
    process = subprocess.Popen([sys.executable, "-c", CHILD.format(mb=60)])
    code, peak = wait_with_peak(process)
    assert code == 0
    assert 60 <= peak < 300, peak  # the 60 MB it held and the interpreter, not the parent's 400 MB


GRANDCHILD = "import subprocess, sys; subprocess.run([sys.executable, '-c', {code!r}], check=True)"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmRSS and VmHWM are read from /proc (Linux)")
def test_the_peak_counts_the_processes_a_run_starts() -> None:
    """A run's stages may run in processes of their own: what they hold counts with the run's own memory."""
    code = "import numpy as np, time; kept = np.ones(150 * 2**20 // 8); time.sleep(0.5)"
    process = subprocess.Popen([sys.executable, "-c", GRANDCHILD.format(code=code)])
    code_, peak = wait_with_peak(process)
    assert code_ == 0
    assert peak >= 150 + 10, peak  # the grandchild's 150 MB and the parent interpreter beside it


def test_a_process_that_ended_is_listed_without_its_children_and_does_not_stop_the_watch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The watch lists a run's processes every 10 ms; one that ends between being listed and its ``task``
    folder being read (a stage's process finishing) raised FileNotFoundError, which once killed the watcher
    thread, and the 20 000-act run's peak with it."""
    import common

    class Ending(type(Path())):  # type: ignore[misc]
        def glob(self, pattern: str):  # type: ignore[no-untyped-def]
            raise FileNotFoundError(2, "No such file or directory", str(self))

    monkeypatch.setattr(common, "Path", Ending)
    assert process_tree(4242) == [4242]
