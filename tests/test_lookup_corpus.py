"""Lookups over a run of all of ../shared/corpus plus the bundled sample (real registry parquet, embedded
Chroma): every registry row is found by its own number and by its adilet id (a false refusal is the worst
answer), and an article binds only to the document the question names (never to another law that happens
to have that article)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lookup.grammar import parse
from lookup.registry_index import MAX_CANDIDATES
from lookup.route import Lookup

TYPE_WORD = {
    "order": "приказ",
    "resolution": "постановление",
    "decree": "указ",
    "decision": "решение",
    "ruling": "нормативное постановление",
    "instruction": "распоряжение",
    "law": "закон",
    "code": "кодекс",
}
# how a question names a local body (genitive, as Russian writes «решение маслихата»)
LOCAL = {"маслихат": "маслихата", "акимат": "акимата", "аким": "акима"}


@pytest.fixture(scope="module")
def lookup(corpus_run) -> Lookup:  # type: ignore[no-untyped-def]
    return Lookup.open(corpus_run[1])


def _rows(lookup: Lookup) -> list[Any]:
    return list(lookup.registry.docs.values())


def _queries(doc: Any) -> list[str]:
    queries = [doc.adilet_id] if doc.adilet_id else []
    number = doc.law_zrk or doc.order_number
    if number and doc.doc_type in TYPE_WORD:
        word = TYPE_WORD[doc.doc_type]
        queries += [f"{word} № {number}", f"№ {number}"]
        if doc.issuer and doc.doc_type not in ("law", "code"):
            queries.append(f"{word} {LOCAL.get(doc.issuer, doc.issuer)} № {number}")
    return queries


def test_every_registry_row_is_found_by_its_own_number_and_adilet_id(lookup: Lookup) -> None:
    asked, missed = 0, []
    for doc in _rows(lookup):
        for query in _queries(doc):
            asked += 1
            result = lookup.route(query, k_per_doc=1)
            if result.status not in ("exact", "ambiguous") or doc.doc_id not in result.doc_ids:
                missed.append((doc.doc_id, query, result.status))
            elif "НЕ НАЙДЕН" in result.hint:
                missed.append((doc.doc_id, query, "hint refuses"))
    assert asked > 3 * len(_rows(lookup)) // 2 and not missed, missed


def test_every_registry_row_is_found_by_its_own_title(lookup: Lookup) -> None:
    """Beside the own-number test: each act by its title, quoted after its type word, as lawyers cite it."""
    missed = []
    for doc in _rows(lookup):
        if not doc.doc_title or doc.doc_type == "standard":
            continue
        word = {"law": "Закон", "code": "Кодекс", "constitution": "Закон"}.get(doc.doc_type, "приказ")
        query = f"{word} «{doc.doc_title}»"
        result = lookup.route(query, k_per_doc=1)
        if result.status not in ("exact", "ambiguous") or doc.doc_id not in result.doc_ids:
            missed.append((doc.doc_id, query[:90], result.status))
    assert not missed, missed


@pytest.mark.parametrize(
    ("query", "status", "doc_id", "article"),
    [
        ("ст. 5 закона «О противодействии коррупции»", "exact", "z1500000410", "5"),
        ("статья 15 Закона РК о противодействии коррупции", "exact", "z1500000410", "15"),
        ("Закон о противодействии коррупции статья 1", "exact", "z1500000410", "1"),
        ("Закон Республики Казахстан «О противодействии коррупции»", "exact", "z1500000410", None),
        ("закон о противодействии коррупции: что такое конфликт интересов", "exact", "z1500000410", "15"),
        ('Закон РК "О гражданской защите"', "exact", "z1400000188", None),
        ("Трудовой кодекс", "exact", "k1500000414", None),
        ("по Трудовому кодексу перерыв для отдыха и приема пищи", "exact", "k1500000414", "81"),
        ("Еңбек кодексі", "exact", "k1500000414", None),
        ("Конституция", "exact", "k950001000_", None),
        ("Конституция статья 7", "exact", "k950001000_", "7"),
        ("Ата Заңның 7-бабы", "exact", "k950001000_", "7"),
        ("закон 94", "exact", "z050000094_", None),  # a bare old number: Закон от 13.12.2005 N 94
        ("указ 1428", "exact", "u040001428_", None),
        # not in the registry: refused, the title in the reason, and no chunks (only a law amending it is)
        ("Закон «О карантине растений»", "not_found", None, None),
        ("статья 2 закона «О карантине растений»", "not_found", None, None),
        ("Водный кодекс", "not_found", None, None),
        ("ст. 10 bis Конституции", "not_found", None, None),  # read as 10bis; the Constitution has none
    ],
)
def test_acts_cited_by_title_or_common_name(
    lookup: Lookup, query: str, status: str, doc_id: str | None, article: str | None
) -> None:
    result = lookup.route(query, k_per_doc=3)
    assert result.status == status, (result.status, result.hint)
    if doc_id is None:
        assert not result.chunks and not result.doc_ids
        return
    assert result.doc_ids == [doc_id] and {c.doc_id for c in result.chunks} == {doc_id}
    if article:  # the named article, or the best ones of the named document for what is asked
        assert any(article in c.article_labels for c in result.chunks[:3]), [c.article_labels for c in result.chunks]


def test_an_amending_act_never_answers_for_the_act_it_amends(lookup: Lookup) -> None:
    """z1500000330 amends the law «О карантине растений», which the registry does not hold."""
    amending = lookup.registry.docs["z1500000330"]
    assert "карантин" in amending.doc_title.lower()
    for query in ("Закон «О карантине растений»", "закон о карантине растений статья 1", "«О карантине растений»"):
        result = lookup.route(query)
        assert "z1500000330" not in result.doc_ids and not any(c.doc_id == "z1500000330" for c in result.chunks)


@pytest.mark.parametrize(
    "query",
    [
        "закон о защите прав беременных работниц при увольнении",  # a description, not a title
        "«Сыбайлас жемқорлыққа қарсы іс-қимыл туралы» Заң",  # a Kazakh title: the registry holds the Russian one
        "«Сыбайлас жемқорлыққа қарсы іс-қимыл туралы» Заңның 5-бабы",
    ],
)
def test_a_description_or_a_kazakh_title_is_never_a_refusal(lookup: Lookup, query: str) -> None:
    result = lookup.route(query)
    assert result.status == "no_identifier" and result.chunks


@pytest.mark.parametrize(
    ("query", "doc_id", "number"),
    [
        ("решение маслихата № 8С 37/5", "zan-223255", "8С 37/5"),
        ("решение Атбасарского районного маслихата № 8С 37/13", "zan-223264", "8С 37/13"),
        ("нормативное постановление Конституционного Суда № 77-НП", "zan-223231", "77-НП"),
        ("постановление № 77-НП", "zan-223231", "77-НП"),
        ("Закон Республики Казахстан от 13 декабря 2005 года N 94", "z050000094_", "94"),
        ("Указ Президента РК № 1428", "u040001428_", "1428"),
    ],
)
def test_number_forms_the_issue_named_resolve_to_their_document(
    lookup: Lookup, query: str, doc_id: str, number: str
) -> None:
    result = lookup.route(query, k_per_doc=1)
    assert (result.status, result.doc_ids) == ("exact", [doc_id]), result.hint


def test_law_94_is_not_law_94_vi(lookup: Lookup) -> None:
    assert lookup.route("закон № 94", k_per_doc=1).doc_ids == ["z050000094_"]
    assert lookup.route("Закон № 94-VI", k_per_doc=1).doc_ids == ["z1700000094"]


# --- binding: an article belongs to the document the question names -----------------------------------


@pytest.mark.parametrize(
    ("query", "status", "bound"),
    [
        ("ст. 156 ТК РК", "exact", {"k1500000414": {"156"}}),  # a code named with it
        ("статья 2 Закона № 213-VI", "exact", {"z1900000213": {"2"}}),  # a law that exists
        ("ст. 1 закона 229-V", "exact", {"z1400000229": {"1"}}),
        ("статья 4 ТР ТС 004/2011", "exact", {"tr-ts-004-2011": {"4"}}),  # a standard that exists
        # two documents, each article bound as the text says
        ("статья 2 Закона № 213-VI и статья 5 Закона № 410-V", "exact", {"z1900000213": {"2"}, "z1500000410": {"5"}}),
        ("ст. 156 ТК РК и статья 2 закона 999-VI", "partial", {"k1500000414": {"156"}}),
    ],
)
def test_articles_bind_to_the_named_document(lookup: Lookup, query: str, status: str, bound: dict) -> None:  # type: ignore[type-arg]
    result = lookup.route(query)
    assert result.status == status, result.hint
    assert result.chunks and {c.doc_id for c in result.chunks} == set(bound)
    for chunk in result.chunks:
        assert set(chunk.article_labels) & bound[chunk.doc_id], chunk.chunk_id


@pytest.mark.parametrize(
    ("query", "missing"),
    [
        ("статья 2 Закона № 999-VI", "999-VI не найден в реестре; статья 2 не привязана"),
        ("ст. 1 закона 777-V ЗРК", "777-V не найден в реестре; статья 1 не привязана"),
        ("п. 3 ст. 5 приказа № 98765", "Приказ № 98765 не найден в реестре; статья 5 не привязана"),
        ("статья 4 ТР ТС 099/2099", "не найден в реестре; статья 4 не привязана"),
    ],
)
def test_an_article_of_a_missing_document_is_refused_with_nothing_else(
    lookup: Lookup, query: str, missing: str
) -> None:
    result = lookup.route(query)
    assert (result.status, result.chunks) == ("not_found", [])
    assert missing in result.hint and "Не выдумывай" in result.hint


def test_an_article_with_no_document_is_ambiguous_and_capped(lookup: Lookup) -> None:
    result = lookup.route("что говорит статья 2?")
    [match] = result.matches
    having = lookup.registry.by_article["2"]
    assert len(having) > MAX_CANDIDATES  # the corpus has many laws with an article 2 …
    assert (result.status, result.chunks) == ("ambiguous", [])  # … none is fetched, none is guessed
    assert 0 < len(match.doc_ids) <= MAX_CANDIDATES and "Спроси пользователя" in result.hint


# Identifiers the corpus registry holds (the property test mixes them with absent ones).
PRESENT = ["ст. 156 ТК РК", "приказ МТСЗН № 211", "Закон № 410-V", "ISO 45001", "решение маслихата № 8С 37/5"]


@st.composite
def _absent_document(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["law", "order", "standard", "adilet"]))
    n = draw(st.integers(min_value=1, max_value=9999))
    if kind == "law":
        return f"Закона № {n}-{draw(st.sampled_from(['V', 'VI', 'VII', 'VIII', 'IV']))}"
    if kind == "order":
        return f"приказа № {n}"
    if kind == "standard":
        return f"ТР ТС {n % 1000:03d}/20{draw(st.integers(min_value=10, max_value=30))}"
    return f"V{draw(st.integers(min_value=10, max_value=26))}000{n:05d}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    absent=_absent_document(),
    article=st.integers(min_value=1, max_value=60),
    with_article=st.booleans(),
    present=st.lists(st.sampled_from(PRESENT), max_size=2, unique=True),
)
def test_property_a_missing_document_never_brings_another_documents_chunks(
    lookup: Lookup, absent: str, article: int, with_article: bool, present: list[str]
) -> None:
    named = f"статья {article} {absent}" if with_article else absent
    query = "; ".join([named, *present])
    missing = [m for m in lookup.registry.resolve(parse(named)) if m.identifier.kind != "article"]
    assume(missing and not any(m.doc_ids for m in missing))  # the absent document really is absent
    result = lookup.route(query, k_per_doc=2)
    allowed = {d for p in present for m in lookup.registry.resolve(parse(p)) for d in m.doc_ids}
    assert {c.doc_id for c in result.chunks} <= allowed
    if result.status == "not_found":
        assert result.chunks == []
    assert result.status != "exact"  # a partial answer is never reported as exact
