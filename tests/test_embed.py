"""Embedders: the offline default is deterministic and meaningful; real models load only from a local path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from vectors.embed import HashingEmbedder
from vectors.embedders import make_embedder


def test_hashing_embedder_is_normalised_and_separates_paraphrase_from_unrelated() -> None:
    e = HashingEmbedder()
    v = e.embed_passages(
        [
            "Работодатель обязан обеспечить безопасные условия труда",
            "Работодатель должен обеспечивать безопасные условия труда работников",
            "Ставка вознаграждения банка второго уровня по депозитам",
        ]
    )
    assert v.shape == (3, 1024) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.5 > 0.2 > v[0] @ v[2]


def test_hashing_embedder_is_identical_across_processes() -> None:
    code = "from vectors.embed import HashingEmbedder; print(HashingEmbedder().embed_passages(['ст. 156 ТК РК'])[0][:8].tolist())"
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout for _ in range(2)}
    here = str(HashingEmbedder().embed_passages(["ст. 156 ТК РК"])[0][:8].tolist())
    assert outputs == {here + "\n"}


def test_sentence_transformer_adapter_never_downloads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        make_embedder(f"st:{tmp_path / 'no-such-model'}")


def test_unknown_embedder_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("openai")
