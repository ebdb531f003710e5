"""Plain words across the whole law (issue 43): the wide golden set as written, the methods that make the
ranking (the everyday vocabulary, the Kazakh↔Russian bridge, documents first, the cap on one act), and the
held-out figures (cross-validated by act) on the real corpus with the offline default and with e5."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lookup import tuning
from lookup.evaluate import read_golden
from lookup.plain import DocFilter
from lookup.route import Lookup
from lookup.vocabulary import entries, expand, expansion_terms
from tests.conftest import ROOT

WIDE = ROOT / "data" / "golden" / "semantic_wide.jsonl"
SEMANTIC = ROOT / "data" / "golden" / "semantic.jsonl"
LABOUR_CODE = "k1500000414"
_KAZAKH_LETTERS = re.compile("[әғқңөұүһі]", re.I)


def test_the_wide_set_is_written_as_the_issue_asks() -> None:
    rows = [json.loads(line) for line in WIDE.read_text("utf-8").splitlines() if line.strip()]
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    assert sum(r["doc_ids"] != [LABOUR_CODE] for r in rows) >= 0.6 * len(rows)
    kazakh = [r for r in rows if r["language"] == "kaz"]
    assert len(kazakh) >= 40
    assert sum(r["style"] == "translit" and not _KAZAKH_LETTERS.search(r["query"]) for r in kazakh) >= 10
    assert sum(r["language"] == "rus" and r["style"] in ("colloquial", "typo") for r in rows) >= 40
    standards = {"osha", "api", "iso", "nfpa", "iogp", "tr", "gost"}
    assert sum(r["language"] == "eng" and r["doc_ids"][0].split("-")[0] in standards for r in rows) >= 10
    assert all(r["answer"] and r["expect_status"] == "no_identifier" for r in rows)
    assert {r.category for r in read_golden(WIDE)} == {"W_wide"}


def _answers_in(home: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    current = (home / "CURRENT").read_text().strip()
    folder = home / "versions" / current
    table = pq.read_table(folder / "enriched_chunks.parquet", columns=["chunk_id", "doc_id", "text"]).to_pylist()
    texts: dict[str, list[str]] = {}
    for row in table:
        texts.setdefault(row["doc_id"], []).append(row["chunk_id"] + "\n" + row["text"])
    registry = pq.read_table(folder / "registry.parquet", columns=["doc_id", "languages"]).to_pylist()
    return texts, {r["doc_id"]: list(r["languages"] or []) for r in registry}


def test_every_wide_answer_is_read_in_the_text_of_a_chunk_that_counts(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    from lookup.chunks import Chunk

    _, home = whole_corpus_run
    texts, languages = _answers_in(home)
    norm = lambda s: re.sub(r"\s+", " ", s).casefold()  # noqa: E731
    current = (home / "CURRENT").read_text().strip()
    labels = {r["chunk_id"]: list(r["article_labels"] or []) for r in pq.read_table(
        home / "versions" / current / "enriched_chunks.parquet", columns=["chunk_id", "article_labels"]).to_pylist()}  # fmt: skip
    for row in read_golden(WIDE):
        assert all(d in languages for d in row.doc_ids), row.id
        counted = [t for d in row.doc_ids for t in texts[d]
                   if row.relevant(Chunk(t.split("\n", 1)[0], d, [], labels[t.split("\n", 1)[0]], "", 0.0))]  # fmt: skip
        assert counted, row.id
        assert any(norm(row.answer or "") in norm(t) for t in counted), (row.id, row.answer)
    about_russian_only = [r for r in read_golden(WIDE) if r.language == "kaz"
                          and not any("kaz" in languages[d] for d in r.doc_ids)]  # fmt: skip
    assert len(about_russian_only) >= 15


# --- the everyday vocabulary --------------------------------------------------------------------------------


def test_every_vocabulary_row_matches_its_own_example_and_adds_the_laws_words() -> None:
    for entry in entries():
        found = [law for _, law in expand(entry.example)]
        assert any(entry.law in law for law in found), (entry.example, found)
        assert expansion_terms(entry.example), entry.example
    assert dict(expand("прогулял полдня могут уволить"))["прогулял"].startswith("отсутствие работника на работе")
    assert "confin" in expansion_terms("лезть в колодец что нужно")  # an English standard's wording too
    assert expand("Какова нормальная продолжительность рабочего времени?") == []  # the law's words add nothing


def test_a_plain_words_answer_shows_what_was_added_to_the_question(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, home = sample_run
    answer = Lookup.open(home).route("начальник гонит без каски на высоту").as_dict()
    assert answer["status"] == "no_identifier"
    added = {e["from"]: e for e in answer["expanded"]}
    assert added["каска"]["by"] == "vocabulary" and "средства индивидуальной защиты" in added["каска"]["to"]
    assert Lookup.open(home).route("ст. 182 ТК РК").as_dict()["expanded"] == []  # identifiers: nothing added


# --- the bridge, the documents ------------------------------------------------------------------------------


def test_the_bridge_learned_from_the_bilingual_labour_code(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    _, home = whole_corpus_run
    snap = Lookup.open(home).snapshot()
    assert snap.bridge is not None
    assert "несчастн" in snap.bridge.expansion("жазатайым оқиға", "kaz")
    assert "отпуск" in snap.bridge.expansion("демалыс", "kaz")
    assert "несчастн" in snap.bridge.pseudo("Жазатайым оқиға болса не істеу керек?", "kaz")
    assert "демал" in snap.bridge.expansion("отпуск", "rus")  # and back


def test_a_kazakh_question_gets_the_kazakh_article_and_among_orders_the_russian_only_rules(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    # Who sits on the commission that investigates an accident: the Labour Code's art. 188 («состав комиссии»),
    # published in Kazakh too, is the answer in Kazakh; asked among orders, the sample rules (V2300031934, in
    # Russian only) come in Russian, and the hint says so, while an order held in both languages comes in Kazakh.
    lookup = Lookup.open(whole_corpus_run[1])
    question = "Өндірістегі жазатайым оқиғаны тергеу комиссиясында неше адам болады?"
    answer = lookup.route(question).as_dict()
    assert any(c["chunk_id"].startswith("k1500000414:kaz/art188:") for c in answer["chunks"][:5]), answer["chunks"]
    assert any(e["by"] == "bridge" for e in answer["expanded"])
    orders = lookup.search(question, k=5, where=DocFilter(doc_type="order")).as_dict()
    assert orders["chunks"][0]["doc_id"] == "v2300031934" and orders["chunks"][0]["language"] == "rus"
    assert {c["language"] for c in orders["chunks"] if c["doc_id"] == "v1500010325"} == {"kaz"}
    line = next(x for x in orders["hint"].splitlines() if "V2300031934" in x)
    assert "текст есть только на русском" in line


def test_documents_have_cards_and_centroids_in_every_version(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    _, home = whole_corpus_run
    snap = Lookup.open(home).snapshot()
    assert snap.documents is not None and snap.documents.centroids is not None
    assert set(snap.documents.card_ids) == set(snap.registry.docs) == set(snap.documents.centroid_ids)
    from vectors.lexical import query_terms

    cards = snap.documents.card_scores(query_terms("правила аттестации спасателей"))
    assert max(cards, key=cards.__getitem__) == "v1800017233"  # МВД order № 507, its rules' very title
    cards = snap.documents.card_scores(query_terms("правила пожарной безопасности"))
    assert "v2200028911" in sorted(cards, key=cards.__getitem__, reverse=True)[:3]  # beside the audit rules' acts
    norms = (snap.documents.centroids**2).sum(axis=1)
    assert abs(float(norms.min()) - 1) < 1e-4 and abs(float(norms.max()) - 1) < 1e-4


# --- honest tuning: cross-validation by act, and the held-out thresholds ------------------------------------


def test_folds_keep_each_act_whole(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    _, home = whole_corpus_run
    questions = tuning.gather_all(Lookup.open(home), read_golden(WIDE)[:60])
    folds = tuning.folds(questions, 5)
    assert sorted(n for f in folds for n in f) == list(range(len(questions)))
    acts = [{questions[n].act for n in f} for f in folds]
    assert all(not (a & b) for i, a in enumerate(acts) for b in acts[i + 1 :])
    assert len(tuning.grid(methods=())) < len(tuning.grid()) and all(not p.documents for p in tuning.grid(()))


def _questions(home: Path) -> list[tuning.Question]:
    return tuning.gather_all(Lookup.open(home), read_golden(WIDE) + read_golden(SEMANTIC))


def _held_out(home: Path) -> dict[str, dict[str, float]]:
    report = tuning.cross_validate(_questions(home), 5)
    out = {m: {g: t.as_dict()["hit@5"] for g, t in groups.items()} for m, groups in report.tallies.items()}
    out["n"] = {g: float(t.n) for g, t in report.tallies["fused"].items()}
    print(json.dumps(out["fused"], ensure_ascii=False, indent=1))
    return out


def test_the_offline_default_held_out_on_the_wide_set(whole_corpus_run) -> None:  # type: ignore[no-untyped-def]
    held = _held_out(whole_corpus_run[1])
    assert held["fused"]["set=W_wide"] >= 0.60
    assert held["fused"]["ALL"] >= max(held["model alone"]["ALL"], held["BM25 alone"]["ALL"])
    # English was below (0.74 against 0.79) until the weights were chosen per question language; now it is equal.
    # Chroma's HNSW search is approximate and its graph differs per process (14 of 250 questions' 50 nearest
    # chunks differed between two openings of one home), so a group may move by one question either way.
    below = {g: (v, held["model alone"][g]) for g, v in held["fused"].items()
             if v < held["model alone"][g] - 1 / held["n"][g] - 1e-9}  # fmt: skip
    assert not below, below


@pytest.mark.slow
def test_e5_held_out_on_the_wide_set(e5_corpus_home: Path) -> None:
    held = _held_out(e5_corpus_home)
    fused = held["fused"]
    assert fused["set=W_wide"] >= 0.80 and fused["language=kaz"] >= 0.70 and fused["style=colloquial"] >= 0.70
    assert fused["set=S_semantic"] >= 0.90
    assert fused["answer in another language"] >= 0.60
    below = {g: (v, held["model alone"][g]) for g, v in fused.items() if v < held["model alone"][g]}
    assert not below, below


@pytest.mark.slow
def test_a_kazakh_question_meets_a_russian_only_act_through_the_model_asked_apart(e5_corpus_home: Path) -> None:
    # Noise and vibration at workplaces: the sanitary rules (МЗ № ҚР ДСМ-26, V2100022239) exist only in Russian.
    # The model scores the Labour Code's Kazakh chunks higher; the rules found among the acts with no Kazakh text,
    # their cosine raised by the shipped offset, come first.
    question = "Жұмыс орындарындағы шу мен діріл деңгейіне қандай талаптар қойылады?"
    lookup = Lookup.open(e5_corpus_home)
    assert lookup.ranking.for_language("kaz").crossed > 0
    answer = lookup.route(question).as_dict()
    first = answer["chunks"][0]
    assert (first["doc_id"], first["language"]) == ("v2100022239", "rus") and first["vector"] is not None
    assert "текст есть только на русском" in answer["hint"].splitlines()[1]
    lookup.ranking = lookup.ranking.replaced(crossed=0.0)
    assert lookup.route(question).as_dict()["chunks"][0]["doc_id"] == LABOUR_CODE  # the model's own order


def test_shipped_parameters_name_how_they_were_chosen() -> None:
    shipped = json.loads((ROOT / "lookup" / "refdata" / "ranking.json").read_text("utf-8"))["embedders"]
    for family in ("hash", "e5"):
        entry = shipped[family]
        assert entry["held_out"]["ALL"]["hit@5"] > 0 and entry["questions"] >= 200, family
        assert set(entry["params"]) >= {"rrf_k", "vector", "lexical", "expanded", "pseudo", "crossed", "documents",
                                        "cap"}  # fmt: skip
    assert Counter(tuning.kind_of(t) for t in ("code", "law", "constitution", "order", "decree", "standard")) == {
        "code": 1, "law": 2, "order/rules": 2, "standard": 1}  # fmt: skip
