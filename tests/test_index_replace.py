"""A record a run writes again carries exactly the chunk's metadata (Chroma's upsert merges it into the old
record's: a key the chunk lost stayed), and validation's read-back finds a left-behind key however large the
run (issue 23, case 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.errors import ValidationFailed
from runs.pipeline import run
from tests.conftest import chroma_server
from vectors.index import COLLECTION, open_client


def _page(points: bool, extra_articles: int = 0) -> str:
    """An order whose last article opens пункты «1.» and «2.» (or, without ``points``, the same article with
    plain paragraphs: other text, and no ``point_labels``)."""
    last = 1 + extra_articles
    body = "".join(f"<p><b>Статья {n}. Статья</b></p><p>Текст статьи {n}.</p>" for n in range(1, last))
    body += f"<p><b>Статья {last}. Пункты</b></p>"
    body += "<p>1. Первый пункт.</p><p>2. Второй пункт.</p>" if points else "<p>Первый абзац.</p><p>Второй абзац.</p>"
    return (
        "<html><head><title>Әділет</title></head><body><div class='container_alpha slogan'><h1>О пунктах</h1>"
        "<span class='status status_new'>Новый</span><p>Приказ Министра финансов Республики Казахстан от 1 марта"
        " 2024 года № 77</p></div><article>" + body + "</article></body></html>"
    )


def _write(src: Path, points: bool, extra: int = 0) -> None:
    folder = src / "adilet" / "rus"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "V2499077777.html").write_text(_page(points, extra), "utf-8")


def _metadata(home: Path, chunk_id: str, url: str | None = None) -> dict[str, object]:
    got = open_client(home / "chroma", url).get_collection(COLLECTION).get(ids=[chunk_id], include=["metadatas"])
    return dict(got["metadatas"][0] or {})


def _loses_point_labels(tmp_path: Path, url: str | None) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    _write(src, points=True)
    assert run([src], home, chroma_url=url).status == "published"
    assert _metadata(home, "v2499077777:art1:0", url)["point_labels"] == ["1", "2"]
    _write(src, points=False)
    info = run([src], home, chroma_url=url)
    assert info.status == "published" and info.text_changed == 1
    after = _metadata(home, "v2499077777:art1:0", url)
    assert "point_labels" not in after and after["doc_id"] == "v2499077777"


def test_a_rewritten_record_loses_the_keys_its_chunk_no_longer_has(tmp_path: Path) -> None:
    _loses_point_labels(tmp_path, None)


def test_a_rewritten_record_loses_them_on_a_chroma_server_too(tmp_path: Path) -> None:
    """The same through a real ``chroma run`` server."""
    with chroma_server(tmp_path / "chroma-server") as url:
        _loses_point_labels(tmp_path, url)


def test_validation_reads_back_every_replaced_record_in_a_run_larger_than_its_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the delete before the write, the merged record keeps ``point_labels``; the run rewrites 61
    records, far more than the even sample of 5 reads back, and validation still refuses to publish."""
    import runs.indexing
    from runs.state import RunOptions

    src, home = tmp_path / "src", tmp_path / "home"
    _write(src, points=True, extra=60)
    assert run([src], home).status == "published"
    _write(src, points=False, extra=60)
    monkeypatch.setattr(runs.indexing, "delete_ids", lambda collection, ids: 0)  # the merge comes back
    monkeypatch.setattr(runs.indexing, "READ_BACK", 5)
    with pytest.raises(ValidationFailed, match="read back do not match.*art61:0"):
        run([src], home, options=RunOptions(force_reembed=True))


def test_the_index_searches_wide_enough_and_an_older_one_is_widened(tmp_path: Path) -> None:
    # Chroma's default ef_search (100) returned 0.96 of the exact 50 nearest chunks on the real corpus (0.26 at
    # worst) and different ones per opening; zan's collections search SEARCH_EF wide (bench_recall.py: 0.998).
    from vectors.embedders import make_embedder
    from vectors.index import SEARCH_EF, get_collection

    embedder = make_embedder("hash")
    client = open_client(tmp_path / "new")
    assert get_collection(client, embedder).configuration_json["hnsw"]["ef_search"] == SEARCH_EF > 100
    old = open_client(tmp_path / "old")
    old.create_collection(COLLECTION, metadata={"hnsw:space": "cosine", "zan_embedder": embedder.id},
                          embedding_function=None)  # fmt: skip
    assert old.get_collection(COLLECTION).configuration_json["hnsw"]["ef_search"] == 100  # as built before
    get_collection(old, embedder)
    again = open_client(tmp_path / "old").get_collection(COLLECTION)
    assert again.configuration_json["hnsw"]["ef_search"] == SEARCH_EF and again.metadata["zan_embedder"] == embedder.id
