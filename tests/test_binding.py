"""Binding rules as data (lookup.binding): each rule binds its examples as its rows say, no earlier rule takes
them, and a rule that must not bind an example does not."""

from __future__ import annotations

import pytest

from lookup.binding import NOTHING_NAMED, RULES, binding_of
from lookup.grammar import parse, parse_unbound


@pytest.mark.parametrize(
    ("rule", "query", "target"), [(r, q, t) for r in RULES for q, t in r.examples], ids=lambda v: str(v)[:30]
)
def test_rule_examples_both_ways(rule, query: str, target: str | None) -> None:  # type: ignore[no-untyped-def]
    identifiers = parse_unbound(query)
    i = next(n for n, ident in enumerate(identifiers) if ident.kind in ("article", "point", "code_article"))
    j = rule.find(query, identifiers, i)
    if target is None:
        assert j is None, (rule.name, query)
        return
    assert j is not None and identifiers[j].canonical == target, (rule.name, query)
    earlier = RULES[: RULES.index(rule)]
    assert all(r.find(query, identifiers, i) is None for r in earlier), (rule.name, query)
    assert binding_of(query, identifiers, i)[0] == rule.name


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("статья 2 Закона № 213-VI", [("article", "document_right_after"), ("law_number", None)]),
        ("ст. 156 и 158 ТК РК", [("code_article", "document_later_in_clause"), ("code_article", "code_with_it")]),
        (
            "ст. 156 ТК РК и статья 2 закона 999-VI",
            [("code_article", "code_with_it"), ("article", "document_right_after"), ("law_number", None)],
        ),
        ("статья 2", [("article", NOTHING_NAMED)]),
        ("ст. 70. Закон № 188-V", [("article", NOTHING_NAMED), ("law_number", None)]),  # another sentence
        ("пункт 5", []),  # a пункт with no document is not an identifier: plain search answers it
        ("п. 12 Правил приказа МТСЗН № 211", [("point", "document_right_after"), ("order", None)]),
    ],
)
def test_parse_binds_articles_as_the_text_says(query: str, kinds: list) -> None:  # type: ignore[type-arg]
    assert [(i.kind, i.binding) for i in parse(query)] == kinds


def test_a_bound_article_points_at_its_document() -> None:
    found = parse("ст. 156 ТК РК и статья 2 закона 999-VI")
    assert found[1].bound_to == 2 and found[2].canonical == "999-VI"
    assert found[0].bound_to is None  # bound by the code written with it, no pointer needed


def test_rules_are_named_once_and_carry_examples() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names)) and all(r.examples for r in RULES)
    assert sum(1 for r in RULES for _, t in r.examples if t is None) >= 3  # negative rows too
