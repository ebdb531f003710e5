"""The query side on real parts: the registry parquet and embedded Chroma written by a real run of the main
job on the bundled corpus, and on the real Labour Code from ../shared/corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from enrich.query import connect
from lookup.grammar import parse
from lookup.registry_index import RegistryIndex, RegistryMissing
from lookup.route import Lookup
from tests.conftest import CORPUS, ROOT, corpus_file, zan
from vectors.embed import HashingEmbedder

T211, MCHS211, ME211 = "v2400035612", "v2100022334", "v1500010907"
TK = "k1500000414"


@pytest.fixture(scope="module")
def lookup(sample_run) -> Lookup:  # type: ignore[no-untyped-def]
    return Lookup.open(sample_run[1])


def _docs(lookup: Lookup, query: str) -> list[tuple[str, ...]]:
    return [m.doc_ids for m in lookup.registry.resolve(parse(query))]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Приказ МТСЗН №211 от 25.12.2024", [(T211,)]),
        ("приказ Минтруда №211", [(T211,)]),
        ("Приказ Министра труда и социальной защиты населения РК № 211", [(T211,)]),
        ("приказ №211 от 15.03.2021", [(MCHS211,)]),
        ("приказ 211 2015 года", [(ME211,)]),
        ("2024 жылғы 25 желтоқсандағы № 211 бұйрық", [(T211,)]),
        ("приказ № 2119", [()]),
        ("приказ №21", [()]),
        ("Постановление № 211", [()]),
        ("V2400035612", [(T211,)]),
        ("К1500000414", [(TK,)]),
        ("414-V ЗРК", [(TK,)]),
        ("рег. № 35612", [(T211,)]),
        ("№ 35612", [(T211,)]),
        ("№ ҚР ДСМ ‑ 26", [("v2100022239",)]),
        ("ҚР ЕК 156", [(TK,)]),
        ("ст. 999 ТК РК", [()]),
        ("ст. 188 ТК РК", [()]),
        ("ст. 70 Закона № 188-V ЗРК", [("z1400000188",), ("z1400000188",)]),
        ("API 75", [("api-rp-75",)]),
        ("API RP 754", [()]),
        ("API Std 75", [()]),
        ("ISO 45001", [("iso-45001",)]),
        ("ISO 45001:2015", [()]),
        ("ISO 4500", [()]),
        ("29 CFR 1910.1460", [()]),
        ("OSHA 1910.146", [("osha-1910.146",)]),
        ("ГОСТ 12.0.004", [("gost-12.0.004-2015",)]),
        ("ГОСТ 12.0.004-90", [()]),
        ("TR CU 004/2011", [("tr-ts-004-2011",)]),
    ],
)
def test_registry_resolves_by_equality_of_canonical_keys(lookup: Lookup, query: str, expected: list) -> None:  # type: ignore[type-arg]
    assert _docs(lookup, query) == expected


def test_bare_order_number_returns_every_order_and_a_date_narrows_it(lookup: Lookup) -> None:
    [bare] = lookup.registry.resolve(parse("приказ 211"))
    assert set(bare.doc_ids) == {T211, MCHS211, ME211} and bare.status == "ambiguous"
    [narrow] = lookup.registry.resolve(parse("приказ 211 от 25.12.2024"))
    assert narrow.doc_ids == (T211,) and narrow.status == "exact"


def test_a_wrong_issuer_is_refused_and_names_the_near_miss(lookup: Lookup) -> None:
    [match] = lookup.registry.resolve(parse("приказ МТСЗН №411"))
    assert match.status == "not_found" and match.near == ("v2200028911",)


def test_missing_registry_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryMissing, match="registry.parquet"):
        RegistryIndex.load(tmp_path)


def test_fetch_returns_only_named_documents_ranked_by_cosine(lookup: Lookup, sample_run) -> None:  # type: ignore[no-untyped-def]
    query = "проверка знаний работников по безопасности и охране труда"
    chunks = lookup.fetch_chunks_by_doc_ids([T211, MCHS211], query, k_per_doc=2)
    assert {c.doc_id for c in chunks} == {T211, MCHS211}
    assert all(sum(c.doc_id == d for c in chunks) == 2 for d in (T211, MCHS211))
    assert [c.score for c in chunks] == sorted((c.score for c in chunks), reverse=True)
    # independent check: rank the same document's chunks from the parquet with the same embedder
    texts = connect(sample_run[1]).execute("SELECT chunk_id, text FROM chunks WHERE doc_id = ?", [T211]).fetchall()
    embedder = HashingEmbedder()
    scores = embedder.embed_passages([t for _, t in texts]) @ embedder.embed_queries([query])[0]
    best = texts[int(np.argmax(scores))][0]
    assert next(c for c in chunks if c.doc_id == T211).chunk_id == best


def test_fetch_by_article_label_keeps_127_and_127_2_apart(lookup: Lookup) -> None:
    plain = lookup.fetch_chunks_by_doc_ids([TK], "гарантии", k_per_doc=10, articles=["127"])
    dashed = lookup.fetch_chunks_by_doc_ids([TK], "гарантии", k_per_doc=10, articles=["127-2"])
    assert plain and all(c.article_labels == ["127"] for c in plain)
    assert dashed and all(c.article_labels == ["127-2"] for c in dashed)
    both = lookup.fetch_chunks_by_doc_ids([TK], "гарантии", k_per_doc=10, articles=["156", "158"])
    assert {c.article_labels[0] for c in both} == {"156", "158"}


@pytest.mark.parametrize("query", ["ст. 182 ТК РК", "ҚР Еңбек кодексінің 182-бабы", "Article 182 of the Labour Code"])
def test_route_exact_article_fetches_only_that_article(lookup: Lookup, query: str) -> None:
    result = lookup.route(query)
    assert result.status == "exact"
    assert result.chunks and all(c.doc_id == TK and "182" in c.article_labels for c in result.chunks)
    assert result.hint.startswith(f"✓ '{query}' → Трудовой кодекс") and "K1500000414" in result.hint


def test_route_ambiguous_asks_which_one(lookup: Lookup) -> None:
    result = lookup.route("Приказ №211")
    assert result.status == "ambiguous"
    assert {c.doc_id for c in result.chunks} == {T211, MCHS211, ME211}
    assert "соответствует 3 документам" in result.hint and "Спроси пользователя" in result.hint
    for adilet in ("V2400035612", "V2100022334", "V1500010907"):
        assert adilet in result.hint


def test_route_refuses_unknown_numbers_without_guessing(lookup: Lookup) -> None:
    result = lookup.route("Приказ №999")
    assert (result.status, result.chunks) == ("not_found", [])
    assert (
        result.hint == "⚠ 'Приказ №999' — НЕ НАЙДЕН в реестре. Скажи: «этого документа нет в моей базе». Не выдумывай."
    )


def test_route_mixed_found_and_missing_fetches_only_what_was_found(lookup: Lookup) -> None:
    result = lookup.route("ст. 182 ТК РК и приказ №999")
    assert result.status == "partial"  # never reported as exact, and never as a refusal that carries chunks
    assert result.chunks and all("182" in c.article_labels for c in result.chunks)
    assert result.hint.splitlines()[0].startswith("✓") and "НЕ НАЙДЕН" in result.hint.splitlines()[1]


def test_route_without_identifier_falls_back_to_vector_search(lookup: Lookup) -> None:
    result = lookup.route("Правила пожарной безопасности: содержание территорий")
    assert result.status == "no_identifier" and result.matches == []
    assert result.chunks and result.chunks[0].doc_id == "v2200028911"


def test_lookup_refuses_an_index_built_by_another_embedder(sample_run) -> None:  # type: ignore[no-untyped-def]
    from lookup.errors import LookupProblem

    with pytest.raises(LookupProblem, match="embedded by"):
        Lookup.open(sample_run[1], embedder=HashingEmbedder(dim=256))


def test_cli_lookup_json_contract(sample_run) -> None:  # type: ignore[no-untyped-def]
    done = zan("lookup", "--json", "--k-per-doc", "1", "Что требует приказ 211?", "--home", str(sample_run[1]))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert {"query", "status", "identifiers", "matches", "chunks", "hint"} <= set(out)
    assert out["status"] == "ambiguous"
    assert out["identifiers"] == [
        {"kind": "order", "raw": "приказ 211", "canonical": "Приказ № 211", "span": [12, 22], "binding": None}
    ]
    assert {"identifier", "doc_ids"} <= set(out["matches"][0]) and len(out["matches"][0]["doc_ids"]) == 3
    assert len(out["chunks"]) == 3
    assert {"chunk_id", "doc_id", "code_articles", "article_labels", "text", "score"} <= set(out["chunks"][0])
    missing = zan("lookup", "x", "--home", str(sample_run[1] / "nowhere"))
    assert missing.returncode == 1 and "registry.parquet" in missing.stderr


def test_cli_eval_on_the_golden_set(sample_run) -> None:  # type: ignore[no-untyped-def]
    done = zan("eval", str(ROOT / "data" / "golden" / "golden.jsonl"), "--home", str(sample_run[1]), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows"] >= 80
    for category in ("A_direct_number", "B_code_article", "E_edge"):
        assert report["lookup"][category]["hit@5"] == 1.0, category
        assert report["vector"][category]["hit@5"] is not None
    assert report["lookup"]["R_refusal"]["refused"] == 1.0 and report["vector"]["R_refusal"]["refused"] == 0.0
    assert report["lookup"]["ALL"]["mrr"] > report["vector"]["ALL"]["mrr"]
    categories = {json.loads(line)["category"] for line in (ROOT / "data/golden/golden.jsonl").read_text().splitlines()}
    assert categories == {
        "A_direct_number",
        "B_code_article",
        "D_mixed",
        "E_edge",
        "R_refusal",
        "N_no_identifier",
        "F_binding",
        "L_lineage",
    }
    # an article binds only to the document the question names: no wrong document, every refusal kept
    assert report["wrong_document"] == 0 and report["lookup"]["F_binding"]["refused"] == 1.0
    # lineage rows: an article's latest change in the hint, an amending law's articles listed (not fetched)
    assert report["lineage"]["n"] >= 5 and report["lineage"]["passed"] == report["lineage"]["n"]
    table = zan("eval", str(ROOT / "data" / "golden" / "golden.jsonl"), "--home", str(sample_run[1]))
    assert "A_direct_number" in table.stdout and "vector h@1" in table.stdout


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus_file("adilet/rus/K1500000414.html")
    from runs.pipeline import run

    home = tmp_path_factory.mktemp("real-home")
    run([CORPUS / "adilet"], home)
    return home


@pytest.mark.parametrize(
    "query", ["ст. 182 ТК РК", "Еңбек кодексінің 182-бабы", "182-бап ҚР ЕК", "Article 182 of the Labour Code"]
)
def test_real_labour_code_article_182_only(real_home: Path, query: str) -> None:
    done = zan("lookup", "--json", query, "--home", str(real_home))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "exact" and out["chunks"]
    assert all(c["doc_id"] == TK and c["article_labels"] == ["182"] for c in out["chunks"])
    assert all(c["chunk_id"].startswith("k1500000414:art182:") for c in out["chunks"])


def test_hint_warns_when_a_document_lost_force(lookup: Lookup) -> None:
    import dataclasses

    from lookup.hint import describe

    doc = lookup.registry.docs["v2200028911"]
    assert "УТРАТИЛ СИЛУ" not in describe(doc)
    repealed = describe(dataclasses.replace(doc, status="repealed"))
    assert repealed.endswith("(V2200028911; УТРАТИЛ СИЛУ, не цитируй как действующий)")


def test_a_cfr_paragraph_narrows_to_its_section_and_falls_back_to_the_standard(lookup: Lookup) -> None:
    narrowed = lookup.route("29 CFR 1910.146(c)(2)")
    assert narrowed.matches[0].sections == ("secc",)
    assert [c.chunk_id for c in narrowed.chunks] == ["osha-1910.146:secc:0"]
    unknown = lookup.route("29 CFR 1910.146(z)")  # not a section of the bundled excerpt: the standard ranks
    assert unknown.status == "exact" and len(unknown.chunks) == 5
    assert {c.doc_id for c in unknown.chunks} == {"osha-1910.146"}


def test_a_point_of_the_approved_rules_narrows_to_the_annex_chunks_that_open_it(lookup: Lookup) -> None:
    result = lookup.route("п. 3 Правил приказа МТСЗН № 211")
    assert result.status == "exact" and result.chunks
    assert all(c.doc_id == T211 and c.annex == 1 and "3" in c.point_labels for c in result.chunks)
    own = lookup.route("пункт 2 приказа МТСЗН № 211")  # no «Правил»: the order's own пункт 2 as well
    assert {c.annex for c in own.chunks} == {None, 1} and all("2" in c.point_labels for c in own.chunks)


def test_a_question_that_only_names_documents_costs_no_model_call(sample_run) -> None:  # type: ignore[no-untyped-def]
    """«ст. 182 ТК РК» has no words to compare chunks with: its article's chunks are ranked by BM25 and chunk
    order, and the embedder is never asked (a model call is most of a served exact lookup's time). A question
    with words beyond its identifiers ranks by the model when a document has more chunks than the answer
    takes, with one model call per question."""
    from vectors.embed import HashingEmbedder

    class Counting(HashingEmbedder):
        asked: list[str] = []

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            self.asked.extend(texts)
            return super().embed_queries(texts)

    counting = Counting()
    lookup = Lookup.open(sample_run[1], embedder=counting)
    named = lookup.route("ст. 182 ТК РК")
    assert named.status == "exact" and named.chunks and counting.asked == []
    assert {c.doc_id for c in named.chunks} == {"k1500000414"} and all("182" in c.article_labels for c in named.chunks)
    assert all(c.vector is None and c.fused is None for c in named.chunks)
    assert named.chunks[0].language == "rus" and named.chunks[0].lexical and named.chunks[0].lexical > 0
    # words, but nothing to choose: the article has no more chunks than the answer takes, so all of them come
    # back in BM25 then chunk order, and the model is not asked
    worded = lookup.route("ст. 182 ТК РК: сколько дней длится отпуск")
    assert counting.asked == [] and len(worded.chunks) == len(named.chunks) <= 5
    assert {c.chunk_id for c in worded.chunks} == {c.chunk_id for c in named.chunks}
    # something to choose (the whole code, one chunk of the article): the model is asked, once per question
    assert len(named.chunks) > 1, "article 182 of the bundled Labour Code is chunked in several parts"
    whole = lookup.route("ТК РК: сколько дней длится отпуск")
    assert len(counting.asked) == 1 and counting.asked[0].endswith("сколько дней длится отпуск")
    assert len(whole.chunks) == 5 and all(c.vector is not None for c in whole.chunks)
    one = lookup.route("ст. 182 ТК РК: сколько дней длится отпуск", k_per_doc=1)
    assert len(counting.asked) == 2 and len(one.chunks) == 1 and one.chunks[0].vector is not None
    both = lookup.route("ст. 182 ТК РК и ISO 45001: сколько дней длится отпуск", k_per_doc=1)  # two fetches
    assert len(counting.asked) == 3 and all(c.vector is not None for c in both.chunks) and len(both.chunks) == 2
    before = len(counting.asked)
    several = lookup.route("ISO 45001, 29 CFR 1910.146 и ТК РК: обязанности работодателя")
    assert {c.doc_id for c in several.chunks} == {"iso-45001", "osha-1910.146", "k1500000414"}  # 6, 10, 10 chunks
    assert len(counting.asked) == before + 1 and counting.asked[-1].endswith("обязанности работодателя")
