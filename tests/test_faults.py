"""Faults: a full disk during extract, index and publish (a real small tmpfs where this machine lets a test
mount one, else an injected ENOSPC), a damaged Chroma folder, a Chroma server killed mid-write, a read-only
HOME, a bad HOME. After each: the published version is intact, lookups work, and the next run converges with
index ids = chunk ids."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from enrich.query import run_sql
from lookup.route import Lookup
from runs.pipeline import run
from runs.state import RunOptions
from schemas.published import HomeError, check_home, current_version, published_file
from tests.conftest import ROOT, SAMPLE, chroma_server, free_port
from vectors.index import COLLECTION, open_client

K_RUS = Path("adilet/rus/K1500000414.html")


def _published(home: Path) -> set[str]:
    return set(
        pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id"])["chunk_id"].to_pylist()
    )


def _index_ids(home: Path, url: str | None = None) -> set[str]:
    client = open_client(home / "chroma", url)
    return set(client.get_collection(COLLECTION).get(include=[])["ids"])


def _work_to_do(src: Path) -> None:
    """Edits that give the next run text to embed, metadata to update and a document to delete."""
    path = src / K_RUS
    path.write_text(
        path.read_text("utf-8").replace("Статья 156. Стороны коллективного договора.", "Статья 156. (ред.)"), "utf-8"
    )
    (src / "adilet/rus/V2200028911.html").unlink()


def _lookups_answer(home: Path, url: str | None = None) -> None:
    lookup = Lookup.open(home, url)
    assert lookup.route("приказ МТСЗН №211").status == "exact"
    assert {c.doc_id for c in lookup.route("ст. 182 ТК РК").chunks} == {"k1500000414"}


@contextlib.contextmanager
def _tmpfs(path: Path, size_mb: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "none", str(path)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode:
        pytest.skip(
            f"cannot mount a tmpfs here ({mounted.stderr.strip() or 'mount failed'}): injected ENOSPC covers it"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.parametrize("point", ["extract", "index", "publish"])
def test_injected_disk_full_keeps_the_published_version_and_the_next_run_converges(
    tmp_path: Path, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    before = _published(home)
    _work_to_do(src)
    monkeypatch.setenv("ZAN_FAILPOINT", point)
    monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "enospc")
    with pytest.raises(OSError, match="No space left on device"):
        run(None, home)
    monkeypatch.delenv("ZAN_FAILPOINT")
    assert current_version(home) == "v000001" and _published(home) == before
    _lookups_answer(home)
    again = run(None, home)
    assert (again.status, current_version(home)) == ("published", "v000002")
    assert _index_ids(home) == _published(home)


@pytest.mark.slow
def test_a_real_full_disk_while_indexing_then_space_freed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLE, src)
    monkeypatch.setenv("ZAN_MIN_FREE_MB", "1")  # a small disk: keep only a token reserve
    with _tmpfs(tmp_path / "disk", 48) as disk:
        home = disk / "home"
        run([src], home)
        before = _published(home)
        _work_to_do(src)
        filler = disk / "filler"
        monkeypatch.setenv("ZAN_FAILPOINT", "index")
        monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "fill")  # after the first batch the disk is really full
        monkeypatch.setenv("ZAN_FAILPOINT_FILL", str(filler))
        with pytest.raises(Exception) as caught:  # noqa: PT011 - Chroma or the OS says the disk is full
            run(None, home)
        monkeypatch.delenv("ZAN_FAILPOINT")
        assert "space" in str(caught.value).lower() or "database" in str(caught.value).lower(), caught.value
        assert current_version(home) == "v000001" and _published(home) == before
        _lookups_answer(home)  # from the index, or from a copy rebuilt from the published version
        filler.unlink()
        again = run(None, home)
        assert (again.status, current_version(home)) == ("published", "v000002")
        assert _index_ids(home) == _published(home)


def test_a_run_that_would_fill_the_disk_stops_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vectors.repair import DiskFull

    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    _work_to_do(src)
    # a GB more than is free: other writers on this disk (a Chroma compaction) cannot free that much meanwhile
    monkeypatch.setenv("ZAN_MIN_FREE_MB", str(shutil.disk_usage(home).free // (1 << 20) + 1024))
    with pytest.raises(DiskFull, match="nothing was written"):
        run(None, home)
    assert current_version(home) == "v000001" and not (home / "index.dirty").exists()


def test_a_damaged_chroma_folder_is_answered_around_and_rebuilt_without_embedding(tmp_path: Path) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    database = home / "chroma" / "chroma.sqlite3"
    database.write_bytes(b"\0" * 4096)  # what a full disk left behind: the index cannot be read any more
    _lookups_answer(home)  # a private copy rebuilt from the published version answers
    again = run(None, home)
    assert again.repairs and "rebuilt from the published version" in again.repairs[0]
    assert again.embedded == 0 and again.status == "unchanged"  # vectors came from the store
    assert list(home.glob("chroma.damaged-*")) and _index_ids(home) == _published(home)
    _lookups_answer(home)


def test_damage_found_by_the_check_begun_while_files_are_extracted_is_repaired_the_same(tmp_path: Path) -> None:
    """``--workers 2`` with files to extract: the index is checked in a thread meanwhile
    (:func:`vectors.repair.check_aside`), and the index stage acts on what it found."""
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    _work_to_do(src)
    (home / "chroma" / "chroma.sqlite3").write_bytes(b"\0" * 4096)
    again = run(None, home, workers=2)
    assert again.repairs and "rebuilt from the published version" in again.repairs[0]
    assert again.status == "published" and again.text_changed > 0
    assert list(home.glob("chroma.damaged-*")) and _index_ids(home) == _published(home)


@pytest.mark.server
@pytest.mark.slow
def test_a_chroma_server_killed_mid_write_then_restarted(tmp_path: Path) -> None:
    src, home, data = tmp_path / "src", tmp_path / "home", tmp_path / "server-data"
    shutil.copytree(SAMPLE, src)
    port = free_port()
    with chroma_server(data, port=port) as url:
        run([src], home, chroma_url=url)
        before = _published(home)
        _work_to_do(src)
        marker = tmp_path / f"paused-{uuid.uuid4().hex}"
        env = {**os.environ, "ZAN_FAILPOINT": "index", "ZAN_FAILPOINT_FILE": str(marker), "ZAN_FAILPOINT_SLEEP": "6"}
        child = subprocess.Popen([sys.executable, "-m", "cli", "run", "--home", str(home), "--chroma-url", url],
                                 cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the run never reached the index writes"
            time.sleep(0.05)
    # the server is gone while the run is paused mid-write; it must fail, and say so in one line
    _, err = child.communicate(timeout=180)
    assert child.returncode == 1 and "Traceback" not in err, err
    assert current_version(home) == "v000001" and _published(home) == before
    with chroma_server(data, port=port) as url:
        _lookups_answer(home, url)
        again = run(None, home, chroma_url=url)
        assert again.status == "published" and _index_ids(home, url) == _published(home)


@pytest.mark.slow
def test_a_read_only_home_serves_lookups_sql_and_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from enrich.audit import audit_home

    monkeypatch.setenv("ZAN_MIN_FREE_MB", "1")
    with _tmpfs(tmp_path / "ro", 64) as disk:
        home = disk / "home"
        built = subprocess.run(
            [sys.executable, "-m", "cli", "run", "--home", str(home)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip  (no file left open here)
        assert built.returncode == 0, built.stderr
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        assert not os.access(home, os.W_OK)
        _lookups_answer(home)
        assert "15" in run_sql(home, "SELECT count(*) FROM registry", "csv")
        assert audit_home(home).gaps == 0
        with pytest.raises(HomeError, match="not writable"):
            run(None, home)


@pytest.mark.parametrize(
    ("home", "reason"),
    [("", "empty"), ("/dev/null", "system path"), ("/sys/x", "system path"), ("/proc/self", "system path")],
)
def test_a_bad_home_is_refused_up_front(home: str, reason: str) -> None:
    with pytest.raises(HomeError, match=reason):
        check_home(home, writable=True)


def test_a_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(HomeError, match="not a directory"):
        check_home(tmp_path / "f", writable=False)
    done = subprocess.run([sys.executable, "-m", "cli", "run", "--home", ""], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0 and "empty" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("tamper", ["metadata", "title", "record"])
def test_validate_refuses_an_index_that_does_not_hold_what_was_written(tmp_path: Path, tamper: str) -> None:
    """Between index and publish, a written record is changed or removed behind the run's back: validate
    refuses to publish (ValidationFailed), nothing is published, and the next run converges."""
    from runs import stages
    from runs.errors import ValidationFailed

    home = tmp_path / "home"
    state = stages.begin(home, [SAMPLE], holder="process")
    try:
        stages.extract_shard(state, 0)
        stages.registry(state)
        stages.enrich(state)
        stages.index(state)
        collection = open_client(home / "chroma").get_collection(COLLECTION)
        if tamper == "metadata":
            collection.update(ids=["k1500000414:art156:0"], metadatas=[{"text_hash": "not-what-was-written"}])
        elif tamper == "title":  # a field zan owns, changed by another writer: the hash is of what it holds
            collection.update(ids=["k1500000414:art156:0"], metadatas=[{"doc_title": "Другой документ"}])
        else:
            collection.delete(ids=["k1500000414:art156:0"])
        with pytest.raises(ValidationFailed, match="read back do not match|the index holds"):
            stages.validate(state)
    finally:
        stages.finish(state)
    assert current_version(home) is None
    again = run([SAMPLE], home)
    assert again.status == "published" and _index_ids(home) == _published(home)


def test_a_document_whose_chunks_break_the_contract_is_rejected_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks become Arrow a group of documents at a time; when one document's chunks do not fit the chunk
    contract, only that document is rejected (naming its file and the reason) and the rest of its group is
    published with all their chunks."""
    import runs.build

    clean = run([SAMPLE], tmp_path / "clean")
    registry = pq.read_table(published_file(tmp_path / "clean", "registry.parquet"), columns=["doc_id"])
    victim = sorted(registry["doc_id"].to_pylist())[1]
    real = runs.build.chunk_document

    def chunk_document(doc_id: str, document, **options):  # type: ignore[no-untyped-def]
        chunks = list(real(doc_id, document, **options))
        if doc_id == victim and chunks:
            chunks[0] = chunks[0] | {"seq": "not a number"}
        return chunks

    monkeypatch.setattr(runs.build, "chunk_document", chunk_document)
    home = tmp_path / "home"
    info = run([SAMPLE], home)
    rejects = pq.read_table(published_file(home, "rejects.parquet")).to_pylist()
    refused = [r for r in rejects if r["doc_id"] == victim]
    assert refused and all(r["stage"] == "registry" and "cannot be stored" in r["reason"] for r in refused)
    assert all(r["source_file"] for r in refused)
    kept = _published(home)
    assert not any(c.startswith(victim + ":") for c in kept)
    assert kept == {c for c in _published(tmp_path / "clean") if not c.startswith(victim + ":")}
    assert info.chunks == len(kept) < clean.chunks


def test_the_index_holds_no_stored_hash_and_an_older_one_is_ignored(tmp_path: Path) -> None:
    """The metadata hash is recomputed from what a record holds, never stored. An index written by an older
    zan (records with a ``meta_hash`` key of their own), read back after an interrupted run, still diffs as
    unchanged: only the fields zan owns are hashed."""
    from runs.changes import DIRTY

    home = tmp_path / "home"
    run([SAMPLE], home)
    collection = open_client(home / "chroma").get_collection(COLLECTION)
    got = collection.get(include=["metadatas"])
    assert got["ids"] and not any("meta_hash" in m for m in got["metadatas"])
    collection.update(ids=got["ids"], metadatas=[{"meta_hash": "written-by-an-older-zan"}] * len(got["ids"]))
    (home / DIRTY).write_text("an interrupted run\n", "utf-8")  # the next run reads the index itself back
    again = run(None, home)
    assert (again.status, again.metadata_changed, again.vector_writes, again.metadata_writes) == ("unchanged", 0, 0, 0)
    assert _index_ids(home) == _published(home)


@pytest.mark.parametrize("workers", [1, 2], ids=["checked-in-the-index-stage", "checked-while-extracting"])
def test_an_index_that_cannot_be_read_now_is_a_transient_error_never_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A full disk while the run checks the embedded index (an OSError, not a damaged database): the run fails
    as transient, the index is neither moved aside nor rebuilt, the version stays, and the retry publishes."""
    import sqlite3

    from vectors.repair import IndexBusy, is_damage

    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    _work_to_do(src)
    monkeypatch.setenv("ZAN_FAILPOINT", "index_check")
    monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "enospc")
    with pytest.raises(IndexBusy, match="not damage") as caught:
        run(None, home, workers=workers)
    assert caught.value.transient
    monkeypatch.delenv("ZAN_FAILPOINT")
    assert not list(home.glob("chroma.damaged-*")) and current_version(home) == "v000001"
    assert run(None, home).status == "published" and not list(home.glob("chroma.damaged-*"))  # the retry
    assert not is_damage(OSError(28, "No space left on device")) and is_damage(sqlite3.DatabaseError("malformed"))


@pytest.mark.parametrize("point", ["index_begin", "index", "publish", "delete"])
def test_a_rollback_interrupted_at_any_stage_leaves_one_version_and_the_next_run_converges(
    tmp_path: Path, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runs.pipeline import rollback

    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    _work_to_do(src)
    run(None, home, options=RunOptions(allow_shrink=True))
    assert current_version(home) == "v000002"
    monkeypatch.setenv("ZAN_FAILPOINT", point)
    monkeypatch.setenv("ZAN_FAILPOINT_ACTION", "enospc")
    with pytest.raises(OSError, match="No space left"):
        rollback(home, "v000001")
    monkeypatch.delenv("ZAN_FAILPOINT")
    expected = "v000001" if point == "delete" else "v000002"  # CURRENT moved only if the publish was reached
    assert current_version(home) == expected and not (home / ".lease").exists()
    _lookups_answer(home)
    again = run(None, home, options=RunOptions(allow_shrink=True))
    assert again.status in ("unchanged", "repaired", "published")
    assert _index_ids(home) == _published(home)  # the index holds exactly the published version
    done = rollback(home, "v000002" if expected == "v000001" else "v000001")
    assert done.status == "rolled_back" and _index_ids(home) == _published(home)


def test_a_defect_while_checking_the_index_is_raised_as_it_is_never_busy_nor_damage(tmp_path: Path) -> None:
    # Sorting every exception by its message made an unknown TypeError a retried IndexBusy; only what the
    # index's own layers raise is sorted into damage (rebuild) and busy (retry), anything else is a defect.
    import sqlite3

    from chromadb.errors import InternalError

    from vectors.repair import IndexBusy, damaged

    class Failing:
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        def get_collection(self, *args: object, **kwargs: object) -> object:
            raise self.exc

    with pytest.raises(TypeError, match="unexpected keyword"):
        damaged(Failing(TypeError("get() got an unexpected keyword argument 'limit'")))
    with pytest.raises(IndexBusy):
        damaged(Failing(sqlite3.OperationalError("database is locked")))
    reason = damaged(Failing(InternalError("error returned from database: (code: 26) file is not a database")))
    assert reason is not None and "file is not a database" in reason
