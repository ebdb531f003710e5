"""Canonical identifier forms: equality after canonicalisation, never prefix; dashes and look-alikes fold."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extractors.requisites import parse_requisites
from schemas.designations import FAMILIES, find_designations
from schemas.identifiers import (
    canonical_adilet_id,
    canonical_article_label,
    canonical_law_number,
    canonical_order_number,
    fold_dashes,
    normalize_space,
    order_key,
)
from schemas.reference import parse_date


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("№414-V ЗРК", "414-V"),
        ("№ 226-V", "226-V"),
        ("№ 321-VІ", "321-VI"),  # Cyrillic І
        ("№ 386–VI ҚРЗ", "386-VI"),  # en dash
        ("271-VIII", "271-VIII"),
        ("№ 238", None),
        ("12-НП", None),
    ],
)
def test_law_numbers(raw: str, canonical: str | None) -> None:
    assert canonical_law_number(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [("№211", "211"), ("№ ҚР ДСМ -26", "ҚР ДСМ-26"), ("№ 8С 37/ 5", "8С 37/5"), ("N 238", "238"), ("№ 77‑НП", "77-НП")],
)
def test_order_numbers(raw: str, canonical: str) -> None:
    assert canonical_order_number(raw) == canonical


def test_order_keys_compare_by_equality_not_prefix() -> None:
    assert order_key("№ 211") == order_key("211")
    assert order_key("211") != order_key("2119") != order_key("21")
    assert order_key("№ ҚР ДСМ -26") == order_key("ҚР ДСМ-26") != order_key("ҚР ДСМ-262")


def test_adilet_ids_fold_cyrillic_lookalikes() -> None:
    assert canonical_adilet_id("К1500000414") == "K1500000414"  # Cyrillic К
    assert canonical_adilet_id("v16ul003811") == "V16UL003811"
    assert canonical_adilet_id("K070000212_") == "K070000212_"


def test_article_labels() -> None:
    assert canonical_article_label("5‑1") == "5-1"
    assert canonical_article_label("127 - 2") == "127-2"
    assert canonical_article_label("156") == "156"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.org)
def test_every_designation_example_is_matched_whole_by_its_family(family) -> None:  # type: ignore[no-untyped-def]
    for example in family.examples:
        found = find_designations(example)
        assert len(found) == 1 and found[0].org == family.org, example


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("API RP 75", "API RP 754"),
        ("ISO 45001", "ISO 4500"),
        ("29 CFR 1910.146", "29 CFR 1910.1460"),
        ("NFPA 652", "NFPA 65"),
    ],
)
def test_designations_never_match_by_prefix(a: str, b: str) -> None:
    (da,), (db,) = find_designations(a), find_designations(b)
    assert da.key != db.key and da.doc_id != db.doc_id


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ТР ТС 004/2011", "TR CU 004/ 2011"),
        ("ISO 45001:2018", "СТ РК ISO 45001"),
        ("API Recommended Practice 75", "API RP 75"),
    ],
)
def test_spellings_of_one_designation_share_a_doc_id(a: str, b: str) -> None:
    assert find_designations(a)[0].doc_id == find_designations(b)[0].doc_id


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("от 25 декабря 2024 года", dt.date(2024, 12, 25)),
        ("2024 жылғы 25 желтоқсандағы", dt.date(2024, 12, 25)),
        ("2015 жылғы 23 қарашадағы", dt.date(2015, 11, 23)),
        ("от 25.12.2024", dt.date(2024, 12, 25)),
        # Kazakh notes write year.day.month: «2012.13.02. № 553-IV», «2007.19.12. № 9-ІV» (real, 95666.md)
        ("2012.13.02.", dt.date(2012, 2, 13)),
        ("2007.19.12. № 9-ІV", dt.date(2007, 12, 19)),
        ("2012.99.99.", None),  # no such day or month either way
        ("от 4 мая 2014 года № 814", dt.date(2014, 5, 4)),
    ],
)
def test_dates(text: str, date: dt.date | None) -> None:
    assert parse_date(text) == date


def test_kazakh_requisites_with_registration() -> None:
    req = parse_requisites(
        "Қазақстан Республикасы Денсаулық сақтау министрінің м.а. 2020 жылғы 24 желтоқсандағы № ҚР ДСМ-322/2020 "
        "бұйрығы. Қазақстан Республикасының Әділет министрлігінде 2020 жылғы 25 желтоқсанда № 21906 болып тіркелді."
    )
    assert (req.doc_type, req.issuer, req.order_number, req.registration_number) == (
        "order",
        "МЗ",
        "ҚР ДСМ-322/2020",
        "21906",
    )
    assert (req.date_approved, req.registration_date) == (dt.date(2020, 12, 24), dt.date(2020, 12, 25))


@given(st.text())
def test_canonical_forms_are_idempotent_and_never_raise(text: str) -> None:
    once = canonical_order_number(text)
    assert canonical_order_number(once) == once
    assert fold_dashes(fold_dashes(text)) == fold_dashes(text)
    assert normalize_space(normalize_space(text)) == normalize_space(text)
    law = canonical_law_number(text)
    assert law is None or canonical_law_number(law) == law


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_designation_spans_slice_back_to_the_text(text: str) -> None:
    for d in find_designations(text):
        assert 0 <= d.span[0] < d.span[1] <= len(text)
        assert find_designations(text[d.span[0] : d.span[1]])[0].key == d.key


def test_one_article_order_for_the_registry_the_pages_and_the_structure_builder() -> None:
    from extractors.structure import label_key
    from schemas.identifiers import article_order

    labels = ["21", "20-1", "20", "100", "20bis", "20-2", "20ter", "Приложение", "20-1bis"]
    assert sorted(labels, key=article_order) == ["20", "20bis", "20ter", "20-1", "20-1bis", "20-2", "21", "100",
                                                 "Приложение"]  # fmt: skip
    ordered = ["5", "5bis", "5-1", "5-2", "6", "10", "10bis", "10-1"]
    assert sorted(ordered, key=label_key) == sorted(ordered, key=article_order) == ordered
    assert label_key("5-1-2") == label_key("статья") == (0, 0, 0)  # follows nothing: not a label it numbers
