"""Article-aware chunks: one unit per chunk, code_articles from headings only, structural ids."""

from __future__ import annotations

from enrich.chunking import chunk_document, split_text, unit_paths
from extractors.adilet import parse_adilet_html
from extractors.model import Document, Requisites, Unit
from tests.conftest import SAMPLE, corpus_file


def _doc(units: list[Unit], language: str = "rus") -> Document:
    return Document(Requisites(doc_type="code"), units, "x.html", language)


def test_chunk_is_the_article_of_its_heading_not_the_ones_it_cites() -> None:
    path = SAMPLE / "adilet" / "rus" / "K1500000414.html"
    chunks = chunk_document("k1500000414", parse_adilet_html(path.read_text("utf-8"), str(path)))
    art158 = [c for c in chunks if c["path"] == "art158"]
    assert art158 and all(c["code_articles"] == [158] for c in art158)
    assert any("статьей 156" in c["text"] for c in art158)  # cites 156, is 158


def test_dashed_article_is_never_the_plain_number() -> None:
    path = SAMPLE / "adilet" / "rus" / "K1500000414.html"
    chunks = chunk_document("k1500000414", parse_adilet_html(path.read_text("utf-8"), str(path)))
    dashed = next(c for c in chunks if c["path"] == "art127-2")
    plain = next(c for c in chunks if c["path"] == "art127")
    assert (dashed["code_articles"], dashed["article_labels"]) == ([], ["127-2"])
    assert (plain["code_articles"], plain["article_labels"]) == ([127], ["127"])


def test_real_labour_code_chunks_never_mix_articles_and_cover_all() -> None:
    path = corpus_file("adilet/rus/K1500000414.html")
    chunks = chunk_document("k1500000414", parse_adilet_html(path.read_text("utf-8"), str(path)))
    by_label: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for c in chunks:
        assert len(c["article_labels"]) <= 1
        for label in c["article_labels"]:
            by_label.setdefault(label, []).append(c)
    assert len(by_label) == 221
    for label, group in by_label.items():
        assert all(c["text"].startswith(f"Статья {label}") for c in group)
    assert len({c["chunk_id"] for c in chunks}) == len(chunks)
    assert all(len(c["text"]) <= 1500 + 300 for c in chunks)  # limit plus a repeated heading


def test_chunk_ids_are_structural_and_stable_when_another_article_changes() -> None:
    units = [
        Unit("article", "1", "Статья 1. A", paragraphs=["a"]),
        Unit("article", "2", "Статья 2. B", paragraphs=["b"]),
    ]
    before = chunk_document("d", _doc(units))
    units[0].paragraphs = ["a changed", "and longer " * 200]
    after = chunk_document("d", _doc(units))
    assert [c["chunk_id"] for c in before] == ["d:art1:0", "d:art2:0"]
    assert {c["chunk_id"]: c["text_hash"] for c in after}["d:art2:0"] == before[1]["text_hash"]


def test_paths_prefix_other_languages_and_number_duplicates() -> None:
    units = [Unit("article", "5-1", "5-1 бап.", paragraphs=["x"]), Unit("article", "5-1", "5-1 бап.", paragraphs=["y"])]
    assert unit_paths(_doc(units, "kaz")) == ["kaz/art5-1", "kaz/art5-1@2"]


def test_split_text_respects_the_limit_and_keeps_every_character() -> None:
    paragraphs = ["Short one.", "Long sentence number one. " * 120, "x" * 4000]
    pieces = split_text(paragraphs, max_chars=1000)
    assert all(sum(len(p) for p in piece) <= 1000 + len(piece) for piece in pieces)
    flat = "".join("".join(piece) for piece in pieces).replace(" ", "")
    assert flat == "".join(paragraphs).replace(" ", "")
