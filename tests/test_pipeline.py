"""The main job end to end on real parts: parquet, DuckDB, embedded Chroma and a `chroma run` server."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from enrich.query import connect
from runs.pipeline import RunError, RunOptions, run
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, REGISTRY_SCHEMA
from schemas.errors import ZanError
from schemas.published import published_dir, published_file
from tests.conftest import CORPUS, SAMPLE, chroma_server, corpus_file, zan
from vectors.embed import HashingEmbedder
from vectors.index import COLLECTION, open_client


def _sql(home: Path, query: str) -> list[tuple]:  # type: ignore[type-arg]
    with connect(home) as con:
        return con.execute(query).fetchall()


def test_sample_run_builds_registry_chunks_and_index(sample_run) -> None:  # type: ignore[no-untyped-def]
    info, home = sample_run
    assert info.documents == 15 and info.chunks == info.indexed > 50
    assert pq.read_schema(published_file(home, "registry.parquet")).names == REGISTRY_SCHEMA.names
    assert pq.read_schema(published_file(home, "enriched_chunks.parquet")).names == ENRICHED_CHUNK_SCHEMA.names
    orders = _sql(home, "SELECT issuer FROM registry WHERE order_number = '211' ORDER BY issuer")
    assert orders == [("МТСЗН",), ("МЧС",), ("МЭ",)]
    assert _sql(home, "SELECT count(*) FROM chunks c ANTI JOIN registry r USING (doc_id)") == [(0,)]


def test_one_act_from_two_sources_and_two_languages_is_one_registry_row(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    [(languages, files)] = _sql(home, "SELECT languages, len(source_files) FROM registry WHERE doc_id = 'k1500000414'")
    assert languages == ["kaz", "rus"] and files == 2
    [(n,)] = _sql(home, "SELECT len(source_files) FROM registry WHERE doc_id = 'v2400035612'")  # adilet + zan.gov.kz
    assert n == 2
    [(reason,)] = _sql(home, "SELECT reason FROM rejects WHERE source_file LIKE '%900211_rus.json'")
    assert "the same act" in reason and "V2400035612.html" in reason and "text is not used" in reason


def test_every_chunk_carries_its_documents_identifiers(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    rows = _sql(home, "SELECT doc_id, order_number, issuer, registration_number FROM chunks WHERE doc_id LIKE 'v%'")
    assert rows and all(r[1] and r[2] and r[3] for r in rows)
    rows = _sql(home, "SELECT DISTINCT intl_org, intl_section FROM chunks WHERE doc_type = 'standard' ORDER BY 1")
    assert ("OSHA", "1910.146") in rows and ("API", "RP 75") in rows


def test_chroma_metadata_filters_by_doc_and_article_exactly(sample_run) -> None:  # type: ignore[no-untyped-def]
    info, home = sample_run
    collection = open_client(home / "chroma").get_collection(COLLECTION)
    assert collection.count() == info.chunks
    got = collection.get(where={"code_articles": {"$contains": 127}}, include=["metadatas"])
    assert got["ids"] == ["k1500000414:art127:0"]  # never 127-2
    got = collection.get(where={"article_labels": {"$contains": "127-2"}}, include=["metadatas"])
    assert got["ids"] == ["k1500000414:art127-2:0"]
    meta = collection.get(ids=["k1500000414:art156:0"], include=["metadatas"])["metadatas"][0]
    assert meta["doc_id"] == "k1500000414" and meta["law_zrk"] == "414-V" and meta["code_articles"] == [156]
    assert meta["date_approved"] == "2015-11-23" and meta["language"] == "rus"
    vector = HashingEmbedder().embed_passages(["Статья 156. Стороны коллективного договора"])
    hit = collection.query(query_embeddings=vector, n_results=1, where={"doc_id": "k1500000414"})
    assert hit["ids"][0][0].startswith("k1500000414:art156")


def test_bad_files_become_rejects_and_the_run_goes_on(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(SAMPLE / "standards" / "api", source / "api")
    (source / "zan").mkdir()
    (source / "zan" / "broken.json").write_text("{oops", "utf-8")
    (source / "page.html").write_text("<html><body><p>adilet error page</p></body></html>", "utf-8")
    info = run([source], tmp_path / "home")
    assert (info.documents, info.rejected) == (1, 2)
    reasons = dict(_sql(tmp_path / "home", "SELECT regexp_extract(source_file, '[^/]+$'), reason FROM rejects"))
    assert "invalid JSON" in reasons["broken.json"] and "no <article> body" in reasons["page.html"]
    again = run([source], tmp_path / "home")  # unchanged bad files are not read again; their rejects stay
    assert (again.files, again.documents, again.rejected) == (0, 1, 2)
    assert dict(_sql(tmp_path / "home", "SELECT regexp_extract(source_file, '[^/]+$'), reason FROM rejects")) == reasons
    (source / "zan" / "broken.json").write_text("[]", "utf-8")  # changed: read again, with its new reason
    third = run([source], tmp_path / "home")
    assert (third.files, third.rejected) == (1, 2)
    reasons = dict(_sql(tmp_path / "home", "SELECT regexp_extract(source_file, '[^/]+$'), reason FROM rejects"))
    assert "must be a JSON object" in reasons["broken.json"] and "no <article> body" in reasons["page.html"]


def test_a_failed_run_leaves_published_files_intact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = run([SAMPLE / "standards"], home)
    folder = published_dir(home)
    assert folder is not None
    before = {p.name: p.read_bytes() for p in folder.glob("*.parquet")}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RunError, match="no source files"):
        run([empty], home)
    (empty / "junk.json").write_text("[]", "utf-8")
    with pytest.raises(RunError, match="no documents .*junk.json: a zan.gov.kz record must be a JSON object"):
        run([empty], home)
    assert published_dir(home) == folder
    assert {p.name: p.read_bytes() for p in folder.glob("*.parquet")} == before
    assert not list((home / "versions").glob(".tmp-*"))
    assert open_client(home / "chroma").get_collection(COLLECTION).count() == first.chunks
    statuses = _sql(home, "SELECT status, count(*) FROM runs GROUP BY status ORDER BY status")
    assert statuses == [("failed", 2), ("published", 1)]


def test_rerun_with_fewer_documents_removes_their_vectors(tmp_path: Path) -> None:
    home, source = tmp_path / "home", tmp_path / "standards"
    shutil.copytree(SAMPLE / "standards", source)
    run([source], home)
    for path in source.iterdir():
        if path.name != "api":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    second = run([source], home, options=RunOptions(allow_shrink=True))
    collection = open_client(home / "chroma").get_collection(COLLECTION)
    assert collection.count() == second.chunks and second.deleted > 0
    assert {m["doc_id"] for m in collection.get(include=["metadatas"])["metadatas"]} == {"api-rp-75"}


def test_real_corpus_via_cli_meets_the_main_job_contract(tmp_path: Path) -> None:
    corpus_file("adilet/rus/K1500000414.html")
    home = tmp_path / "x"
    sources = [CORPUS / "adilet", CORPUS / "kzlaws", CORPUS / "zan"]
    done = zan("run", *(a for s in sources for a in ("--source", str(s))), "--home", str(home), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    # every real act is accepted: no rejects, and every file is a source of some registry row
    assert summary["rejected"] == 0 and summary["indexed"] == summary["chunks"]
    assert summary["seconds"]["extract"] > 0  # the extraction's own time, summed over shards
    files = {str(p.resolve()) for s in sources for p in s.rglob("*") if p.suffix in (".html", ".md", ".json")}
    read = {f for (fs,) in _sql(home, "SELECT source_files FROM registry") for f in fs}
    assert files <= read
    [(doc_type, law, date)] = _sql(
        home, "SELECT doc_type, law_zrk, date_approved FROM registry WHERE doc_id='k1500000414'"
    )
    assert (doc_type, law, str(date)) == ("code", "414-V", "2015-11-23")
    [(law, title)] = _sql(home, "SELECT law_zrk, doc_title FROM registry WHERE doc_id = 'z1500000410'")
    assert (law, title) == ("410-V", "О противодействии коррупции")
    assert _sql(
        home, "SELECT count(DISTINCT article_labels[1]) FROM chunks WHERE doc_id = 'k1500000414' AND language = 'rus'"
    ) == [(221,)]
    assert _sql(home, "SELECT count(DISTINCT article_labels[1]) FROM chunks WHERE doc_id = 'k950001000_'") == [(102,)]
    art156 = _sql(home, "SELECT text FROM chunks WHERE list_contains(code_articles, 156) AND doc_id = 'k1500000414'")
    assert art156 and not [t for (t,) in art156 if "Статья 158" in t]
    assert _sql(
        home,
        "SELECT count(*) FROM registry WHERE doc_id LIKE 'zan-2%' AND (issuer IS NULL "
        "OR date_approved IS NULL OR coalesce(order_number, law_zrk) IS NULL)",
    ) == [(0,)]
    assert _sql(home, "SELECT count(*) FROM chunks WHERE text ILIKE '%shadowroot%' OR text ILIKE '%veepn%'") == [(0,)]
    count = open_client(home / "chroma").get_collection(COLLECTION).count()
    assert count == summary["chunks"]


def test_sql_command_formats_and_errors(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    done = zan(
        "sql",
        "SELECT doc_id, date_approved FROM registry WHERE doc_id = 'z1400000188'",
        "--home",
        str(home),
        "--format",
        "json",
    )
    assert json.loads(done.stdout) == [{"doc_id": "z1400000188", "date_approved": "2014-04-11"}]
    done = zan(
        "sql",
        "SELECT chunk_id, code_articles FROM chunks WHERE list_contains(code_articles, 162) ORDER BY 1",
        "--home",
        str(home),
        "--format",
        "csv",
    )
    assert done.stdout.splitlines() == [
        "chunk_id,code_articles",
        "k1500000414:art162:0,[162]",
        "k1500000414:kaz/art162:0,[162]",
    ]
    bad = zan("sql", "SELECT * FROM nowhere", "--home", str(home))
    assert bad.returncode == 1 and "nowhere" in bad.stderr
    empty = zan("sql", "SELECT 1", "--home", str(home / "missing"))
    assert empty.returncode == 1 and "nothing published" in empty.stderr


@pytest.mark.parametrize(
    "command",
    [[], ["run"], ["sql"], ["lookup"], ["eval"], ["versions"], ["rollback"], ["enrich-collection"], ["fetch"]],
)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    done = zan(*command, "--help")
    assert done.returncode == 0 and "Example" in done.stdout


@pytest.mark.server
def test_run_against_a_real_chroma_server(tmp_path: Path) -> None:
    with chroma_server(tmp_path / "server") as url:
        info = run([SAMPLE / "standards"], tmp_path / "home", chroma_url=url)
        assert open_client(chroma_url=url).get_collection(COLLECTION).count() == info.chunks == info.indexed
        assert not (tmp_path / "home" / "chroma").exists()


def test_two_workers_extract_in_two_processes_and_publish_the_same_version(tmp_path: Path) -> None:
    """``zan run --workers 2`` extracts its files in two spawned processes, one shard each (as the DAG's
    tasks do): the registry, the chunks and the rejects it publishes are the ones one process publishes,
    bad files included."""
    source = tmp_path / "source"
    shutil.copytree(SAMPLE, source)
    (source / "broken.html").write_bytes(b"\x00\x01 not a page")
    homes = {workers: tmp_path / f"home{workers}" for workers in (1, 2)}
    infos = {workers: run([source], home, workers=workers) for workers, home in homes.items()}
    assert infos[1].chunks == infos[2].chunks > 50 and infos[2].files == infos[1].files
    for name in ("registry.parquet", "enriched_chunks.parquet", "rejects.parquet"):
        one, two = (pq.read_table(published_file(home, name)) for home in homes.values())
        run_ids = [c for c in ("run_id",) if c in one.column_names]
        assert one.drop_columns(run_ids).equals(two.drop_columns(run_ids)), name
    rejects = pq.read_table(published_file(homes[2], "rejects.parquet")).column("source_file").to_pylist()
    assert any(str(f).endswith("broken.html") for f in rejects)
    # the BM25 index, built in a process of its own beside embed and index with workers, is the same files
    one, two = (published_dir(home) / "lexical" for home in homes.values())
    names = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file())
    assert names and names == sorted(p.relative_to(two).as_posix() for p in two.rglob("*") if p.is_file())
    assert all((one / name).read_bytes() == (two / name).read_bytes() for name in names)
    assert infos[2].seconds["lexical"] > 0
    # the stages themselves: two shards, each extracted in a process of its own, not this one
    from runs import stages

    state = stages.begin(tmp_path / "home3", [source], shards=2, holder="process")
    stages.extract_all(state, 2)
    marks = [json.loads(p.read_text()) for p in sorted(stages.RunState.load(state).work.glob("shard-*.json"))]
    pids = {mark["pid"] for mark in marks}
    assert len(marks) == 2 and len(pids) == 2 and os.getpid() not in pids
    stages.finish(state)
    # a run's files too few to fill a shard's bytes are read in the run's own process, all in one shard
    few = sum(p.stat().st_size for p in source.rglob("*") if p.is_file()) + 1
    state = stages.begin(tmp_path / "home4", [source], shards=2, holder="process", shard_bytes=few)
    assert len(stages.RunState.load(state).shards) == 1
    stages.extract_all(state, 2)
    [mark] = [json.loads(p.read_text()) for p in stages.RunState.load(state).work.glob("shard-*.json")]
    assert mark["pid"] == os.getpid()
    stages.finish(state)
    state = stages.begin(tmp_path / "home5", [source], shards=2, holder="process", shard_bytes=few // 3)
    assert len(stages.RunState.load(state).shards) == 2  # enough bytes for both
    stages.finish(state)


def test_lexical_aside_fails_the_run_with_the_builds_error_and_stops_on_the_bodys(tmp_path: Path) -> None:
    """``lexical_aside`` (the BM25 build beside embed and index): a build that fails raises a RunError that
    names the lexical index, after the body ran; a body that fails stops the build's process and raises
    the body's own error."""
    import multiprocessing

    from runs import stages
    from runs.lexical import lexical_jobs

    state = stages.begin(tmp_path / "home", [SAMPLE / "standards"], holder="process")
    stages.extract_all(state)
    stages.registry(state)
    stages.enrich(state, lexical=False)
    [(enriched, out, before)] = lexical_jobs(stages.RunState.load(state))
    assert before is None  # nothing published yet to reuse
    assert enriched.exists() and not out.exists()
    with pytest.raises(KeyError, match="the body"), stages.lexical_aside(state):
        raise KeyError("the body")
    assert not [p for p in multiprocessing.active_children() if p.name == "zan-lexical"]
    with pytest.raises(EOFError, match="the body's"), stages.lexical_aside(state):
        raise EOFError("the body's")  # never mistaken for the build process's end
    good = enriched.read_bytes()
    enriched.write_bytes(b"PAR1 not parquet")
    ran = []
    with pytest.raises(RunError, match="lexical .BM25. index was not built") as failed, stages.lexical_aside(state):
        ran.append(True)
    assert ran and not out.exists()
    # Arrow's own error, not zan's: in the run's own process Airflow would retry it, so it stays retryable here
    assert failed.value.transient and not isinstance(failed.value.__cause__, ZanError)
    enriched.write_bytes(good)
    with stages.lexical_aside(state):
        pass
    assert (out / "params.index.json").exists()
    assert stages.RunState.load(state).run_info().seconds["lexical"] > 0
    stages.finish(state)


def test_a_large_runs_registry_and_enrich_run_in_processes_of_their_own_and_publish_the_same_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``OWN_PROCESS_FROM`` files the registry and enrich stages each run in a spawned process (their
    memory goes back with it): the version published is the one a run in one process publishes, and an error
    in such a stage reaches the run as its own exception class, noted with where it was raised."""
    from runs import pipeline, stages
    from runs.child import in_own_process

    source = tmp_path / "source"
    shutil.copytree(SAMPLE, source)
    (source / "broken.html").write_bytes(b"\x00\x01 not a page")
    apart: list[tuple[str, bool]] = []

    def watched(work, *args, what: str, fresh: bool = False):  # type: ignore[no-untyped-def]
        apart.append((what, fresh))
        return in_own_process(work, *args, what=what, fresh=fresh)

    monkeypatch.setattr(pipeline, "in_own_process", watched)
    homes = {"one": tmp_path / "one", "apart": tmp_path / "apart"}
    run([source], homes["one"])  # the bundled sample is far below the threshold: one process
    assert apart == []
    monkeypatch.setattr(pipeline, "OWN_PROCESS_FROM", 5)  # the sample's files are above it
    info = run([source], homes["apart"])
    assert apart == [("the registry stage", True), ("the enrich stage", True)]  # spawned: runs.child.processes
    assert info.status == "published" and info.seconds["registry"] > 0 and info.seconds["enrich"] > 0
    for name in ("registry.parquet", "enriched_chunks.parquet", "rejects.parquet", "lineage.parquet"):
        one, two = (pq.read_table(published_file(home, name)) for home in homes.values())
        run_ids = [c for c in ("run_id",) if c in one.column_names]
        assert one.drop_columns(run_ids).equals(two.drop_columns(run_ids)), name
    # an error in the stage's process: the same exception the stage raises in this one
    state = stages.begin(tmp_path / "home3", [source], holder="process")
    stages.extract_all(state)
    in_own_process(stages.registry, state, what="the registry stage")
    (stages.RunState.load(state).work / "registry.parquet").write_bytes(b"PAR1 not parquet")
    with pytest.raises(Exception) as here:
        stages.enrich(state)
    with pytest.raises(type(here.value)) as there:
        in_own_process(stages.enrich, state, True, what="the enrich stage")
    assert str(there.value) == str(here.value)
    assert any("the enrich stage" in note for note in there.value.__notes__)
    stages.finish(state)


def test_a_run_state_saved_a_field_at_a_time_is_one_json_object_that_loads_back(tmp_path: Path) -> None:
    """``RunState.save`` writes each field's JSON in turn (the whole state as one string was a large run's
    peak): the file is still one JSON object with every field, non-ASCII text and dates as before."""
    from runs import stages

    state = stages.begin(tmp_path / "home", [SAMPLE / "standards"], holder="process")
    loaded = stages.RunState.load(state)
    info = loaded.info
    loaded.info = {"sources": ["Приказ МТСЗН № 211 — «кавычки»\n"], "when": dt.date(2026, 12, 6)}
    loaded.save()
    raw = json.loads(loaded.path.read_text("utf-8"))
    assert set(raw) == {f.name for f in dataclasses.fields(stages.RunState)}
    again = stages.RunState.load(loaded.path)
    assert again.info == {"sources": ["Приказ МТСЗН № 211 — «кавычки»\n"], "when": "2026-12-06"}
    assert (again.keys, again.shards, again.scope, again.stage) == (
        loaded.keys,
        loaded.shards,
        loaded.scope,
        loaded.stage,
    )
    assert again.keys and again.shards
    loaded.info = info  # the run's own, for finish
    loaded.save()
    stages.finish(state)
