"""Embedders. The default works offline with no model; real models load from a local path only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from schemas.errors import ZanError

_PRIME = np.uint64(1_000_003)
_MIX = np.uint64(0x9E3779B97F4A7C15)


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors and names itself."""

    @property
    def id(self) -> str: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Hashed character n-grams (3–5 by default), signed, L2-normalised (DESIGN.md: offline default).

    Deterministic across processes (no Python ``hash``), vectorised with numpy, no model to download.
    """

    def __init__(self, dim: int = 1024, ngrams: tuple[int, ...] = (3, 4, 5)) -> None:
        self.dim = dim
        self.ngrams = ngrams

    @property
    def id(self) -> str:
        return f"hash-ngram-{min(self.ngrams)}-{max(self.ngrams)}-d{self.dim}-v1"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def _one(self, text: str) -> np.ndarray:
        padded = f" {' '.join(text.lower().split())} "
        codes = np.frombuffer(padded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        vector = np.zeros(self.dim, dtype=np.float64)
        with np.errstate(over="ignore"):
            for n in self.ngrams:
                if len(codes) < n:
                    continue
                h = np.zeros(len(codes) - n + 1, dtype=np.uint64)
                for i in range(n):
                    h = h * _PRIME + codes[i : len(codes) - n + 1 + i]
                h = (h + np.uint64(n)) * _MIX
                h ^= h >> np.uint64(29)
                signs = np.where((h >> np.uint64(63)) == 1, -1.0, 1.0)
                vector += np.bincount((h % np.uint64(self.dim)).astype(np.int64), weights=signs, minlength=self.dim)
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector).astype(np.float32)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (bge-m3 in production); never downloads."""

    def __init__(self, model_path: Path, batch_size: int = 32) -> None:
        if not Path(model_path).is_dir():
            raise ModelMissing(f"model folder {model_path} does not exist (models are never downloaded)")
        from sentence_transformers import SentenceTransformer  # optional extra: zan[st]

        self._model = SentenceTransformer(str(model_path), local_files_only=True, device="cpu")
        self._name = Path(model_path).name
        self.batch_size = batch_size

    @property
    def id(self) -> str:
        return f"st:{self._name}"

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)


class EmbedderError(ZanError, ValueError):
    """An embedder spec zan does not know, or a local model folder that is not there (terminal)."""


class ModelMissing(ZanError, FileNotFoundError):
    """The local model folder an ``st:`` spec names is not there (models are never downloaded)."""


@dataclass(frozen=True)
class EmbedderSpec:
    """What ``--embedder`` / ``ZAN_EMBEDDER`` names: ``hash`` (the offline default) or ``st:/local/model``.
    One parser for every place a spec is read; :attr:`id` is known without loading a model."""

    kind: Literal["hash", "st"]
    path: Path | None = None

    @classmethod
    def parse(cls, spec: str) -> EmbedderSpec:
        if spec == "hash":
            return cls("hash")
        if spec.startswith("st:") and spec[3:].strip():
            return cls("st", Path(spec[3:]))
        raise EmbedderError(f"unknown embedder {spec!r}: use 'hash' or 'st:/path/to/local/model'")

    @property
    def id(self) -> str:
        return HashingEmbedder().id if self.path is None else f"st:{self.path.name}"

    def make(self) -> Embedder:
        return HashingEmbedder() if self.path is None else SentenceTransformerEmbedder(self.path)

    def __str__(self) -> str:
        return "hash" if self.path is None else f"st:{self.path}"


def make_embedder(spec: str) -> Embedder:
    """``hash`` (default) or ``st:/local/model/path``."""
    return EmbedderSpec.parse(spec).make()


def embedder_id_of(spec: str) -> str:
    """The id ``make_embedder(spec)`` will have, without loading a model (for planning a run)."""
    return EmbedderSpec.parse(spec).id
