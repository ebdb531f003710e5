"""Which document an article (or a пункт) named in a question belongs to: binding rules as data.

An article number alone identifies nothing: «статья 2» exists in almost every law. It binds only to a
document the question itself names, by the first rule below that applies; each rule carries examples that
``tests/test_binding.py`` checks both ways (the rule binds them as shown, and no earlier rule takes them).

1. ``code_with_it``: the code is written with the article («ст. 156 ТК РК», «ҚР ЕК 156», «Article 156 of
   the Labour Code»). The grammar reads these as one ``code_article`` identifier.
2. ``document_right_after``: a document identifier follows right after it («статья 2 Закона № 213-VI»,
   «п. 3 ст. 5 приказа № 98765», «статья 4 ТР ТС 004/2011», «ст. 5 и ст. 7 ТК РК» for «ст. 5»).
3. ``document_right_before``: a document identifier comes right before it («V2400035612 ст. 3»,
   «Приказ МТСЗН № 211, пункт 5»).
4. ``document_later_in_clause`` / ``document_earlier_in_clause``: the nearest document identifier in the
   same clause (no «.», «;», «?», «!» or line break between them), the following one first, as Russian
   writes «статья 2 … закона X».
5. ``nothing_named``: no document in its clause. The article is *ambiguous*: a few candidate documents
   may be listed (capped), but it is never bound to every document that happens to have such an article.
   A пункт with no document is dropped: «пункт 5» alone is answered by plain search.

When the bound document is not in the registry, the article is refused with the reason («закон № 213-VI
не найден в реестре; статья 2 не привязана»); nothing from another document is ever returned for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from lookup.identifier import Identifier

# Identifier kinds that name a document (an article alone does not).
DOCUMENT_KINDS = frozenset(
    {"adilet_id", "law_number", "order", "registration", "standard", "code_article", "title", "code_name"}
)
_ADJACENT = re.compile(r"[\s,:()«»\"–—-]*(?:(?:of|in)\s+(?:the\s+)?)?[\s,:()«»\"–—-]*", re.IGNORECASE)
_ADJACENT_MAX = 16
_CLAUSE_END = re.compile(r"[.;?!\n]\s")


@dataclass(frozen=True)
class Rule:
    """One binding rule: how it finds the document for the article at ``i``, and examples it must bind
    (query → the canonical form of the document identifier it binds to, or None for no binding)."""

    name: str
    find: Callable[[str, list[Identifier], int], int | None]
    examples: tuple[tuple[str, str | None], ...]


def _is_document(ident: Identifier) -> bool:
    return ident.kind in DOCUMENT_KINDS and not (ident.kind == "code_article" and ident.code is None)


def _gap(query: str, a: Identifier, b: Identifier) -> str:
    first, second = (a, b) if a.span[0] < b.span[0] else (b, a)
    return query[first.span[1] : second.span[0]]


def _adjacent(gap: str) -> bool:
    return len(gap) <= _ADJACENT_MAX and _ADJACENT.fullmatch(gap) is not None


def _same_clause(gap: str) -> bool:
    return _CLAUSE_END.search(gap + " ") is None


def _right_after(query: str, idents: list[Identifier], i: int) -> int | None:
    j = next((j for j in range(i + 1, len(idents)) if _is_document(idents[j])), None)
    return j if j is not None and j == i + 1 and _adjacent(_gap(query, idents[i], idents[j])) else None


def _right_before(query: str, idents: list[Identifier], i: int) -> int | None:
    j = i - 1
    return j if j >= 0 and _is_document(idents[j]) and _adjacent(_gap(query, idents[j], idents[i])) else None


def _later_in_clause(query: str, idents: list[Identifier], i: int) -> int | None:
    for j in range(i + 1, len(idents)):
        if not _same_clause(_gap(query, idents[i], idents[j])):
            return None
        if _is_document(idents[j]):
            return j
    return None


def _earlier_in_clause(query: str, idents: list[Identifier], i: int) -> int | None:
    for j in range(i - 1, -1, -1):
        if not _same_clause(_gap(query, idents[j], idents[i])):
            return None
        if _is_document(idents[j]):
            return j
    return None


def _written_with_it(query: str, idents: list[Identifier], i: int) -> int | None:
    return i if idents[i].kind == "code_article" and idents[i].code else None


RULES: tuple[Rule, ...] = (
    Rule(
        "code_with_it",
        _written_with_it,
        (("ст. 156 ТК РК", "ст. 156 ТК РК"), ("ҚР ЕК 156", "ст. 156 ТК РК"), ("статья 2", None)),
    ),
    Rule(
        "document_right_after",
        _right_after,
        (
            ("статья 2 Закона № 213-VI", "213-VI"),
            ("п. 3 ст. 5 приказа № 98765", "Приказ № 98765"),
            ("статья 4 ТР ТС 004/2011", "ТР ТС 004/2011"),
            ("ст. 5 и ст. 7 ТК РК", None),  # «и» is not adjacency: a later rule binds it
            ("ст. 1 закона 777-V ЗРК", "777-V"),
        ),
    ),
    Rule(
        "document_right_before",
        _right_before,
        (("V2400035612 ст. 3", "V2400035612"), ("Приказ МТСЗН № 211, пункт 5", "Приказ МТСЗН № 211")),
    ),
    Rule(
        "document_later_in_clause",
        _later_in_clause,
        (("ст. 5 и ст. 7 ТК РК", "ст. 7 ТК РК"), ("статья 3 по приказу № 211", "Приказ № 211")),
    ),
    Rule(
        "document_earlier_in_clause",
        _earlier_in_clause,
        (("Закон № 188-V ЗРК: что сказано в статье 70", "188-V"), ("Закон № 188-V. Статья 70", None)),
    ),
)
NOTHING_NAMED = "nothing_named"


def bind(query: str, identifiers: list[Identifier]) -> list[Identifier]:
    """The identifiers with every article and пункт bound (``bound_to`` = index of its document, ``binding`` =
    the rule); an article bound to a code becomes a ``code_article`` of that code, as if written with it."""
    out = list(identifiers)
    for i, ident in enumerate(identifiers):
        if ident.kind not in ("article", "point", "code_article"):
            continue
        for rule in RULES:
            j = rule.find(query, identifiers, i)
            if j is None:
                continue
            out[i] = _bound(ident, identifiers[j], j, rule.name)
            break
        else:
            out[i] = replace(ident, binding=NOTHING_NAMED)
    # a пункт with no document is not an identifier at all («пункт 5» alone: plain search answers it);
    # dropping it shifts no binding, since nothing can be bound to a пункт
    kept = [n for n, ident in enumerate(out) if not (ident.kind == "point" and ident.binding == NOTHING_NAMED)]
    moved = {old: new for new, old in enumerate(kept)}
    return [_renumbered(out[n], moved) for n in kept]


def _renumbered(ident: Identifier, moved: dict[int, int]) -> Identifier:
    return ident if ident.bound_to is None else replace(ident, bound_to=moved[ident.bound_to])


def _bound(ident: Identifier, target: Identifier, j: int, rule: str) -> Identifier:
    if target is ident:
        return replace(ident, binding=rule)
    if target.kind == "code_article" and ident.kind == "article":
        canonical = f"{ident.canonical} {target.code_name}"
        return replace(
            ident, kind="code_article", code=target.code, code_name=target.code_name, canonical=canonical, binding=rule
        )
    return replace(ident, bound_to=j, binding=rule)


def binding_of(query: str, identifiers: list[Identifier], i: int) -> tuple[str, int | None]:
    """(rule name, index of the bound document) for the article at ``i``, as :func:`bind` decides it."""
    for rule in RULES:
        j = rule.find(query, identifiers, i)
        if j is not None:
            return rule.name, j
    return NOTHING_NAMED, None
