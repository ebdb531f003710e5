"""Re-extract without re-embedding, on real parts: real parquet, embedded Chroma, the bundled corpus copied
to a temporary folder and edited, and the real documents from ../shared/corpus."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from enrich.metadata import meta_hash
from enrich.query import connect
from lookup.route import Lookup
from runs.pipeline import RunOptions, ShrinkRefused, rollback, run
from schemas.published import current_version, list_versions, published_file
from tests.conftest import CORPUS, ROOT, SAMPLE, corpus_file, zan
from vectors.index import COLLECTION, open_client

K_RUS = Path("adilet/rus/K1500000414.html")
MCHS = Path("adilet/rus/V2100022334.html")


def _copy(tmp_path: Path, source: Path = SAMPLE) -> Path:
    target = tmp_path / "src"
    shutil.copytree(source, target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), "utf-8")


def _published(home: Path) -> dict[str, tuple[str, str]]:
    table = pq.read_table(
        published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash", "meta_hash"]
    )
    ids, texts, metas = (table.column(c).to_pylist() for c in ("chunk_id", "text_hash", "meta_hash"))
    return {i: (t, m) for i, t, m in zip(ids, texts, metas, strict=True)}


def _index(home: Path) -> dict[str, tuple[str, str]]:
    got = open_client(home / "chroma").get_collection(COLLECTION).get(include=["metadatas"])
    return {i: (m["text_hash"], meta_hash(m)) for i, m in zip(got["ids"], got["metadatas"], strict=True)}


def _doc_chunks(home: Path, doc_id: str) -> set[str]:
    return {c for c in _published(home) if c.startswith(f"{doc_id}:")}


@pytest.fixture
def edited(tmp_path: Path) -> tuple[Path, Path]:
    """A home with one published version of a copy of the bundled corpus; returns (source copy, home)."""
    src, home = _copy(tmp_path), tmp_path / "home"
    first = run([src], home)
    assert (first.status, first.added, first.embedded, first.vector_writes) == ("published", 81, 81, 81)
    return src, home


def test_unchanged_rerun_embeds_and_writes_nothing(edited: tuple[Path, Path]) -> None:
    src, home = edited
    again = run(None, home)
    assert (again.embedded, again.vector_writes, again.metadata_writes, again.deleted) == (0, 0, 0, 0)
    assert (again.unchanged, again.status, again.version) == (81, "unchanged", "v000001")
    assert _index(home) == _published(home)


def test_unchanged_files_are_not_read_again_unless_the_code_changed(
    edited: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, home = edited
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    one = run(None, home)
    assert one.files == 1 and one.metadata_changed == 4
    import runs.scope

    monkeypatch.setattr(runs.scope, "code_fingerprint", lambda: "an-extractor-fix")
    fixed = run(None, home)  # every file read again with the "new" code; nothing to embed or write
    assert fixed.files == 17 and (fixed.embedded, fixed.vector_writes, fixed.metadata_writes) == (0, 0, 0)
    assert run(None, home).files == 0


def test_a_file_that_breaks_is_a_reject_and_its_published_document_is_kept(edited: tuple[Path, Path]) -> None:
    src, home = edited
    doc = _doc_chunks(home, "v2200028911")
    (src / "adilet/rus/V2200028911.html").write_bytes(b"\xff\xfe broken \x80")
    info = run(None, home)
    assert info.deleted == 0 and doc <= set(_index(home)) and doc <= set(_published(home))
    reasons = connect(home).execute("SELECT reason FROM rejects WHERE source_file LIKE '%V2200028911.html'").fetchall()
    assert reasons and "not UTF-8" in reasons[0][0]


def test_editing_one_article_reembeds_only_its_chunks(edited: tuple[Path, Path]) -> None:
    src, home = edited
    before = _published(home)
    _edit(
        src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. Стороны коллективного договора (ред.)."
    )
    info = run(None, home)
    changed = {c for c in before if before[c][0] != _published(home)[c][0]}
    assert changed == {c for c in before if c.startswith("k1500000414:art156:")}
    assert (info.text_changed, info.embedded, info.vector_writes) == (len(changed), len(changed), len(changed))
    assert (info.added, info.deleted, info.metadata_changed) == (0, 0, 0)
    assert _index(home) == _published(home)


def test_a_rewritten_record_that_loses_a_metadata_key_keeps_no_stale_key(edited: tuple[Path, Path]) -> None:
    """Chroma's upsert merges metadata into the record it replaces: a chunk whose text changed and whose new
    metadata lacks a key the index holds (article 156 loses its пункт numbers: no ``point_labels``) must not
    keep the old key. The index then holds exactly the version's metadata, for it and for a chunk that kept its
    keys (a word added to article 158)."""
    src, home = edited
    before = _published(home)
    indent = "\n&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; "
    for n in range(1, 5):  # <p id="z13"> … <p id="z16">: пункты 1-4 of article 156
        _edit(src / K_RUS, f'<p id="z{n + 12}">{indent}{n}. ', f'<p id="z{n + 12}">{indent}')
    _edit(src / K_RUS, "вступает в силу со дня его подписания", "вступает в силу со дня его подписания обеими")
    info = run(None, home)
    after = _published(home)
    changed = {c for c in before if c in after and before[c][0] != after[c][0]}
    lost = {c for c in changed if ":art156:" in c}
    assert lost and changed - lost and all(":art158:" in c for c in changed - lost)
    assert info.text_changed == len(changed)
    got = open_client(home / "chroma").get_collection(COLLECTION).get(ids=sorted(lost), include=["metadatas"])
    assert all("point_labels" not in m and m["path"].startswith("art156") for m in got["metadatas"])
    assert _index(home) == after


def test_a_metadata_change_updates_metadata_only(edited: tuple[Path, Path]) -> None:
    src, home = edited
    collection = open_client(home / "chroma").get_collection(COLLECTION)
    doc = _doc_chunks(home, "v2100022334")
    vectors_before = collection.get(ids=sorted(doc), include=["embeddings"])["embeddings"]
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    info = run(None, home)
    assert (info.metadata_changed, info.metadata_writes) == (len(doc), len(doc))
    assert (info.embedded, info.vector_writes, info.text_changed, info.added, info.deleted) == (0, 0, 0, 0, 0)
    got = collection.get(ids=sorted(doc), include=["embeddings", "metadatas"])
    assert np.array_equal(np.asarray(got["embeddings"]), np.asarray(vectors_before))
    assert {m["status"] for m in got["metadatas"]} != {"in_force"}
    [(status,)] = connect(home).execute("SELECT DISTINCT status FROM registry WHERE doc_id = 'v2100022334'").fetchall()
    assert {m["status"] for m in got["metadatas"]} == {status}
    assert _index(home) == _published(home)


def test_removing_a_document_deletes_exactly_its_chunks(edited: tuple[Path, Path]) -> None:
    src, home = edited
    doc = _doc_chunks(home, "v2200028911")
    (src / "adilet/rus/V2200028911.html").unlink()
    info = run(None, home)
    assert info.deleted == len(doc) > 0 and (info.embedded, info.vector_writes) == (0, 0)
    assert set(_index(home)) == set(_published(home)) and not (doc & set(_index(home)))


def test_scoped_runs_touch_nothing_outside_their_scope(edited: tuple[Path, Path]) -> None:
    src, home = edited
    before = _published(home)
    _edit(src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. Стороны (ред.).")
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    only = run(None, home, options=RunOptions(only=("v2100022334",)))
    assert (only.scope, only.metadata_changed, only.text_changed, only.deleted) == ("only", 4, 0, 0)
    after = _published(home)
    assert {c for c in before if before[c] != after[c]} == _doc_chunks(home, "v2100022334")
    by_source = run([src / "standards"], home)  # the Labour Code edit is outside this scope too
    assert (by_source.scope, by_source.text_changed, by_source.metadata_changed) == ("source", 0, 0)
    assert all(_published(home)[c] == after[c] for c in after)
    full = run(None, home)
    assert full.text_changed == len(_doc_chunks(home, "k1500000414") & {c for c in after if ":art156:" in c})
    assert _index(home) == _published(home)


def test_since_scopes_to_files_modified_on_or_after_a_date(edited: tuple[Path, Path]) -> None:
    import datetime as dt

    src, home = edited
    old = dt.datetime(2020, 1, 1).timestamp()
    for path in src.rglob("*"):
        os.utime(path, (old, old))
    _edit(src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. (ред.)")
    os.utime(src / K_RUS, (old, old))  # edited but dated before --since: out of scope
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    info = run(None, home, options=RunOptions(since=dt.date(2021, 1, 1)))
    assert (info.scope, info.files, info.metadata_changed, info.text_changed) == ("since", 1, 4, 0)


def test_force_reembed_a_scope(edited: tuple[Path, Path]) -> None:
    src, home = edited
    forced = run(None, home, options=RunOptions(only=("nfpa-652",), force_reembed=True))
    n = len(_doc_chunks(home, "nfpa-652"))
    assert (forced.text_changed, forced.embedded, forced.vector_writes, forced.unchanged) == (n, n, n, 81 - n)


def test_text_moved_to_a_new_chunk_id_is_not_embedded_again(edited: tuple[Path, Path]) -> None:
    src, home = edited
    path = src / "adilet/rus/V2200028911.html"
    path.rename(path.with_name("V2200028999.html"))
    _edit(path.with_name("V2200028999.html"), "V2200028911", "V2200028999")
    info = run(None, home)
    n = len(_doc_chunks(home, "v2200028999"))
    assert (info.added, info.deleted, info.embedded, info.vector_writes) == (n, n, 0, n)


def test_shrink_gate_refuses_and_allow_shrink_passes(edited: tuple[Path, Path]) -> None:
    src, home = edited
    for name in ("V1500010907", "V2100022239", "V2100022334", "V2200028911"):
        (src / f"adilet/rus/{name}.html").unlink()
    with pytest.raises(ShrinkRefused, match=r"would delete 4 of 15 documents \(27%\).*--allow-shrink"):
        run(None, home)
    assert current_version(home) == "v000001" and len(_index(home)) == 81
    passed = run(None, home, options=RunOptions(allow_shrink=True))
    assert passed.status == "published" and passed.deleted > 0 and set(_index(home)) == set(_published(home))


def test_dry_run_writes_nothing(edited: tuple[Path, Path]) -> None:
    src, home = edited
    _edit(src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. (ред.)")
    files = sorted(p for p in home.rglob("*") if p.is_file() and ".lock" not in p.name)
    stamps = {p: p.stat().st_mtime_ns for p in files if "chroma" not in p.parts}
    dry = run(None, home, options=RunOptions(dry_run=True))
    assert (dry.status, dry.text_changed, dry.embedded, dry.vector_writes) == ("dry_run", 1, 1, 0)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert sorted(p for p in home.rglob("*") if p.is_file() and ".lock" not in p.name and "chroma" not in p.parts) == [
        p for p in files if "chroma" not in p.parts
    ]
    assert current_version(home) == "v000001"


def test_versions_and_rollback(edited: tuple[Path, Path]) -> None:
    src, home = edited
    v1 = _published(home)
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    _edit(src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. (ред.)")
    run(None, home)
    assert [m.version for m in list_versions(home)] == ["v000001", "v000002"] and current_version(home) == "v000002"
    back = rollback(home)
    assert (back.version, back.embedded, back.status) == ("v000001", 0, "rolled_back")
    assert current_version(home) == "v000001" and _published(home) == v1 and _index(home) == v1
    done = zan("versions", "--home", str(home), "--json")
    listed = json.loads(done.stdout)
    assert [(v["version"], v["current"]) for v in listed] == [("v000001", True), ("v000002", False)]


def test_keep_prunes_old_versions(edited: tuple[Path, Path]) -> None:
    src, home = edited
    for n in range(3):
        _edit(src / K_RUS, "Статья 156. Стороны", f"Статья 156. Стороны{n}")
        run(None, home, options=RunOptions(keep_versions=2))
    assert [m.version for m in list_versions(home)] == ["v000003", "v000004"]


def test_changing_the_embedder_reembeds_everything(edited: tuple[Path, Path]) -> None:
    from vectors.embed import HashingEmbedder

    src, home = edited
    info = run(None, home, embedder=HashingEmbedder(dim=256))
    assert (info.added, info.embedded, info.vector_writes) == (81, 81, 81)


def test_run_report_json_html_and_runs_view(edited: tuple[Path, Path]) -> None:
    src, home = edited
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    info = run(None, home)
    report = json.loads((home / "runs" / f"{info.run_id}.json").read_text("utf-8"))
    for key in ("added", "text_changed", "metadata_changed", "unchanged", "deleted", "rejected", "embedded",
                "vector_writes", "version", "by_doc_type", "by_source", "coverage", "documents_diff", "seconds"):  # fmt: skip
        assert key in report, key
    assert report["documents_diff"]["changed"] == ["v2100022334"]
    assert report["by_doc_type"]["order"]["metadata_changed"] == 4
    assert report["coverage"]["order"]["order_number"] == 1.0 and report["coverage"]["standard"]["intl_org"] == 1.0
    assert report["rejects"] and report["seconds"]["index"] >= 0
    page = (home / "runs" / f"{info.run_id}.html").read_text("utf-8")
    assert "metadata_changed" in page and "v2100022334" in page and "<table>" in page
    assert page.count("<svg") == 2 and "Seconds per stage" in page  # the run history page's charts, for this run
    rows = connect(home).execute("SELECT version, status, metadata_changed FROM runs ORDER BY run_id").fetchall()
    assert rows == [("v000001", "published", 0), ("v000002", "published", 4)]


def test_cli_run_json_has_the_change_fields(edited: tuple[Path, Path]) -> None:
    src, home = edited
    done = zan("run", "--home", str(home), "--json", "--dry-run")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    fields = ("added", "text_changed", "metadata_changed", "unchanged", "deleted", "rejected", "embedded",
              "vector_writes", "version")  # fmt: skip
    assert all(f in out for f in fields) and out["unchanged"] == 81 and out["embedded"] == 0


# --- real corpus --------------------------------------------------------------------------------------------


def test_real_corpus_unchanged_rerun_and_metadata_change(tmp_path: Path) -> None:
    corpus_file("zan/223189_rus.json")
    adilet, zan = tmp_path / "adilet", tmp_path / "zan"
    shutil.copytree(CORPUS / "adilet", adilet)
    shutil.copytree(CORPUS / "zan", zan)
    home = tmp_path / "home"
    first = run([adilet, zan], home)
    assert first.added == first.chunks == first.vector_writes > 600
    again = run(None, home)
    assert (again.embedded, again.vector_writes, again.status) == (0, 0, "unchanged")
    record = json.loads((zan / "223189_rus.json").read_text("utf-8"))
    [(doc_id,)] = (
        connect(home)
        .execute(
            "SELECT doc_id FROM registry WHERE len(list_filter(source_files, lambda f: f LIKE '%223189_rus.json')) > 0"
        )
        .fetchall()
    )
    record_text = json.dumps(record, ensure_ascii=False)
    changed = _real_status_edit(record)
    (zan / "223189_rus.json").write_text(json.dumps(changed, ensure_ascii=False), "utf-8")
    assert json.dumps(changed, ensure_ascii=False) != record_text
    meta = run(None, home)
    n = len(_doc_chunks(home, doc_id))
    assert (meta.metadata_changed, meta.embedded, meta.vector_writes, meta.text_changed) == (n, 0, 0, 0)
    assert _index(home) == _published(home)


def _real_status_edit(record: dict) -> dict:  # type: ignore[type-arg]
    """The record as zan.gov.kz would serve it once the act lost force (``status`` stops being ``exe``)."""
    assert record["status"] == "exe"
    return {**record, "status": "rep"}


# --- fault injection --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("point", ["extract", "index", "publish", "delete"])
def test_kill_9_at_any_point_keeps_a_readable_version_and_the_rerun_converges(tmp_path: Path, point: str) -> None:
    src, home = _copy(tmp_path), tmp_path / "home"
    run([src], home)
    v1 = _published(home)
    _edit(src / K_RUS, "Статья 156. Стороны коллективного договора.", "Статья 156. (ред.)")
    _edit(src / MCHS, 'status status_upd">Действующий', 'status status_upd">Утративший силу')
    (src / "adilet/rus/V2200028911.html").unlink()
    marker = tmp_path / "paused"
    env = {**os.environ, "ZAN_FAILPOINT": point, "ZAN_FAILPOINT_FILE": str(marker)}
    child = subprocess.Popen([sys.executable, "-m", "cli", "run", "--home", str(home)], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 180
    while not marker.exists():
        assert child.poll() is None, f"the run ended before reaching {point}"
        assert time.monotonic() < deadline, f"failpoint {point} never reached"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    expected = "v000002" if point == "delete" else "v000001"
    assert current_version(home) == expected
    published = _published(home)
    if point != "delete":
        assert published == v1
    # readers see the published version only: every chunk a lookup returns has the published text
    lookup = Lookup.open(home)
    texts = dict(connect(home).execute("SELECT chunk_id, text FROM chunks").fetchall())
    for query in ("ст. 156 ТК РК", "приказ МЧС № 211", "приказ № 411", "пожарная безопасность"):
        for chunk in lookup.route(query).chunks:
            assert texts[chunk.chunk_id] == chunk.text
    again = run(None, home)
    assert (again.status, current_version(home)) == ("repaired" if point == "delete" else "published", "v000002")
    assert _index(home) == _published(home)
    assert not (home / "index.dirty").exists() and not list((home / "versions").glob(".tmp-*"))


# --- enrich-collection ----------------------------------------------------------------------------------


def test_enrich_collection_adopts_a_collection_built_by_plain_chromadb(edited: tuple[Path, Path]) -> None:
    src, home = edited
    client = open_client(home / "chroma")
    foreign = client.create_collection("lumi_docs", embedding_function=None)
    vectors = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    foreign.add(
        ids=["a", "b", "c", "d"],
        embeddings=vectors,
        documents=[
            "Статья 156. Стороны коллективного договора. Сторонами коллективного договора являются…",
            "Глава 1. Общие положения",
            "Какой-то текст",
            "1 Scope This recommended practice…",
        ],
        metadatas=[
            {"source": "/lumi/raw/K1500000414.html", "page": 3},
            {"url": "https://adilet.zan.kz/rus/docs/V2400035612"},
            {"source": "unknown.pdf"},
            {"file_name": "API_RP_75.txt"},
        ],
    )

    def adopt(*extra: str) -> dict:  # type: ignore[type-arg]
        done = zan("enrich-collection", "--collection", "lumi_docs", "--home", str(home), "--json", *extra)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    dry = adopt("--dry-run")
    assert (dry["matched"], dry["updated"], dry["unmatched"]) == (3, 3, 1)
    assert "doc_id" not in foreign.get(ids=["a"], include=["metadatas"])["metadatas"][0]
    first = adopt()
    assert (first["records"], first["matched"], first["updated"], first["unmatched"]) == (4, 3, 3, 1)
    assert first["unmatched_sources"] == ["unknown.pdf"]
    got = foreign.get(ids=["a", "b", "c", "d"], include=["metadatas", "embeddings"])
    a, b, c, d = got["metadatas"]
    assert (a["doc_id"], a["adilet_id"], a["law_zrk"], a["article_labels"], a["code_articles"]) == (
        "k1500000414", "K1500000414", "414-V", ["156"], [156],
    )  # fmt: skip
    assert a["source"] == "/lumi/raw/K1500000414.html" and a["page"] == 3  # the tool's own keys are kept
    assert (b["doc_id"], b["issuer"], b["order_number"], b["date_approved"]) == (
        "v2400035612", "МТСЗН", "211", "2024-12-25",
    )  # fmt: skip
    assert "doc_id" not in c and (d["doc_id"], d["intl_org"], d["intl_section"]) == ("api-rp-75", "API", "RP 75")
    assert np.allclose(np.asarray(got["embeddings"]), vectors)  # vectors untouched
    again = adopt()
    assert (again["updated"], again["unchanged"]) == (0, 3)
    missing = zan("enrich-collection", "--collection", "nope", "--home", str(home))
    assert missing.returncode == 1 and "nope" in missing.stderr


def test_one_run_or_rollback_at_a_time(edited: tuple[Path, Path]) -> None:
    import socket

    from runs.stages import Busy

    src, home = edited
    held = {"run_id": "other", "taken": time.time(), "at": "now", "holder": "process",
            "host": socket.gethostname(), "pid": os.getpid()}  # fmt: skip
    (home / ".lease").write_text(json.dumps(held), "utf-8")  # a live process holds it
    with pytest.raises(Busy, match="run other holds"):
        run(None, home)
    with pytest.raises(Busy):
        rollback(home)
    assert json.loads((home / ".lease").read_text("utf-8"))["run_id"] == "other"  # not taken, not released
    (home / ".lease").unlink()
    assert run(None, home).status == "unchanged" and not (home / ".lease").exists()
