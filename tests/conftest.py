"""Shared fixtures. Real documents are read from ../shared/corpus (skipped with a reason when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
CORPUS = Path(os.environ.get("ZAN_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))


def corpus_file(relative: str) -> Path:
    """A file of the shared real corpus, or skip the test saying where it was looked for."""
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real corpus file {path} is absent (set ZAN_SHARED_CORPUS to the shared/corpus folder)")
    return path


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One run of the main job on the bundled corpus with embedded Chroma, shared by read-only tests."""
    from enrich.pipeline import run

    home = tmp_path_factory.mktemp("sample-home")
    info = run([SAMPLE], home)
    return info, home
