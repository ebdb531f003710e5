"""The registry as hash indices: one dict lookup per identifier, equality of canonical keys, never prefixes.

Loaded once from ``registry.parquet``. Each identifier kind has its own index (adilet id, law number, order
number, registration number, code, article label, standards family); issuer, act type and date narrow a
match after the O(1) lookup. Nothing found is an honest refusal, with the near misses named so the hint
can say what the registry does hold.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup.code_names import code_key
from lookup.errors import LookupProblem
from lookup.grammar import find_issuer_short
from lookup.identifier import Identifier, LookupStatus
from lookup.parts import TYPE_ADMITS
from schemas.arrow import REGISTRY_SCHEMA
from schemas.designations import find_designations
from schemas.identifiers import canonical_adilet_id, order_key, title_key
from schemas.parquet import read_parquet
from schemas.published import published_dir
from schemas.statuses import INCOMPLETE_TEXT, DocStatus, as_status

MAX_CANDIDATES = 5


class RegistryMissing(LookupProblem):
    """No published registry under the data directory."""


@dataclass(frozen=True)
class DocInfo:
    """What the lookup and the hint need to know about one registry row."""

    doc_id: str
    doc_title: str
    doc_type: str
    adilet_id: str | None
    issuer: str | None
    order_number: str | None
    law_zrk: str | None
    date_approved: dt.date | None
    registration_number: str | None
    intl_org: str | None
    intl_section: str | None
    status: DocStatus
    article_labels: frozenset[str]
    repealed_by: str | None = None
    repealed_on: dt.date | None = None
    replaced_by: str | None = None
    languages: frozenset[str] = frozenset()  # the languages the document is published in
    portal_id: str | None = None  # its zan.gov.kz id, when a source named it
    source_url: str | None = None
    incomplete: bool = False  # part of its text is missing from its source (a part file its index names)

    @property
    def ref(self) -> str:
        """How the hint cites the document: its adilet id, else its doc_id."""
        return self.adilet_id or self.doc_id


@dataclass(frozen=True)
class Match:
    """The registry documents one identifier resolves to; ``articles`` narrows the chunks to fetch."""

    identifier: Identifier
    doc_ids: tuple[str, ...]
    articles: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()  # structural chunk paths a paragraph points at (29 CFR 1910.146(c) → secc)
    near: tuple[str, ...] = ()  # same number, but the issuer, date, edition or article stated differ
    reason: str | None = None
    points: tuple[str, ...] = ()  # пункты to narrow to («п. 12 Правил …»)
    candidates_only: bool = False  # an article no document was named for: candidates, never an answer
    annex_only: bool = False  # the пункт is one of an annex («п. 12 Правил»), not of the act's own text

    @property
    def status(self) -> LookupStatus:
        """An article named with no document is ``ambiguous`` (ask which document), whatever the registry
        holds; otherwise: none found, one, or several."""
        if self.candidates_only:
            return "ambiguous"
        return "not_found" if not self.doc_ids else "exact" if len(self.doc_ids) == 1 else "ambiguous"


def _index(pairs: Iterable[tuple[Any, str]]) -> dict[Any, tuple[str, ...]]:
    """key → doc_ids in first-seen order, built in linear time (an ordered set per key)."""
    out: dict[Any, dict[str, None]] = defaultdict(dict)
    for key, doc_id in pairs:
        if key:
            out[key][doc_id] = None
    return {k: tuple(v) for k, v in out.items()}


@dataclass
class RegistryIndex:
    docs: dict[str, DocInfo]
    by_adilet: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_law: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_order: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_registration: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_code_name: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_article: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_standard: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    by_title: dict[str, tuple[str, ...]] = field(default_factory=dict)
    qualifiers: dict[tuple[str, str], str] = field(default_factory=dict)  # (doc_id, org) → edition / API kind
    max_candidates: int = MAX_CANDIDATES  # documents listed for an article named with no document

    @classmethod
    def load(cls, home: Path) -> RegistryIndex:
        """Read the published ``registry.parquet`` under ``home`` into indices."""
        folder = published_dir(home)
        if folder is None:
            raise RegistryMissing(f"{home}: no registry.parquet published yet (run `zan run --home {home}` first)")
        return cls.load_file(folder / "registry.parquet", home)

    @classmethod
    def load_file(cls, path: Path, home: Path) -> RegistryIndex:
        """Read one version's ``registry.parquet`` into indices."""
        if not path.exists():
            raise RegistryMissing(f"{path}: no registry published yet (run `zan run --home {home}` first)")
        return cls.from_rows(read_parquet(path, REGISTRY_SCHEMA, "registry").to_pylist())

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> RegistryIndex:
        docs = {r["doc_id"]: _doc_info(r) for r in rows}
        index = cls(docs)
        index.by_adilet = _index((d.adilet_id, d.doc_id) for d in docs.values())
        index.by_law = _index((d.law_zrk, d.doc_id) for d in docs.values())
        index.by_order = _index((order_key(d.order_number), d.doc_id) for d in docs.values() if d.order_number)
        index.by_registration = _index((d.registration_number, d.doc_id) for d in docs.values())
        index.by_article = _index((a, d.doc_id) for d in docs.values() for a in d.article_labels)
        code_rows = [r for r in rows if r["doc_type"] in ("code", "constitution")]
        names = [(n, r["doc_id"]) for r in code_rows for n in (r["doc_title"], *(r["aliases"] or []))]
        index.by_code_name = _index((code_key(n), doc_id) for n, doc_id in names)
        titles = [(title_key(t), r["doc_id"]) for r in rows for t in (r["doc_title"], *(r["aliases"] or [])) if t]
        index.by_title = _index((key, doc_id) for key, doc_id in titles if key)
        standards = [(d, r["doc_id"]) for r in rows for d in _designations(r)]
        index.by_standard = _index((d.match_key, doc_id) for d, doc_id in standards)
        index.qualifiers = {(doc_id, d.org): q for d, doc_id in standards if (q := d.qualifier)}
        return index

    def resolve(self, identifiers: list[Identifier]) -> list[Match]:
        """One match per identifier, in query order. An article or a пункт goes to the document the query
        names for it (``Identifier.bound_to``, see :mod:`lookup.binding`) and nowhere else: when that
        document is not in the registry the article is refused with the reason; when the query names no
        document for it, it is ambiguous with at most ``max_candidates`` candidates, never every document."""
        unbound = ("article", "point")
        matches: list[Match | None] = [
            None if i.bound_to is not None or i.kind in unbound else self._one(i) for i in identifiers
        ]
        for n, ident in enumerate(identifiers):
            if matches[n] is not None:
                continue
            target = ident.bound_to
            if target is not None:
                matches[target] = matches[target] or self._one(identifiers[target])
                matches[n] = self._bound(ident, identifiers[target], matches[target])  # type: ignore[arg-type]
            else:
                matches[n] = self._unbound(ident)
        return [m for m in matches if m is not None]

    def _bound(self, ident: Identifier, target: Identifier, found: Match) -> Match:
        what = f"статья {ident.article}" if ident.kind != "point" else f"пункт {ident.paragraph}"
        if not found.doc_ids:
            unbound = "не привязан" if ident.kind == "point" else "не привязана"
            return Match(ident, (), reason=f"{target.canonical} не найден в реестре; {what} {unbound}")
        if ident.kind == "point":
            points = (ident.paragraph or "",)
            return Match(ident, found.doc_ids, points=points, sections=found.sections, annex_only=ident.in_annex)
        having = tuple(d for d in found.doc_ids if ident.article in self.docs[d].article_labels)
        if not having:
            return Match(
                ident, (), near=found.doc_ids, reason=f"в документе {target.canonical} нет статьи {ident.article}"
            )
        return Match(ident, having, articles=(ident.article or "",))

    def _unbound(self, ident: Identifier) -> Match:
        """No document named for it: the documents that have such an article, as candidates only."""
        if ident.kind == "point":
            return Match(ident, (), reason=f"пункт {ident.paragraph}: не сказано, какого документа")
        pool = self.by_article.get(ident.article or "", ())
        ranked = sorted(pool, key=self._candidate_order)[: self.max_candidates]
        reason = f"не сказано, какого документа статья {ident.article}"
        if len(pool) > len(ranked):
            reason += f": показаны {len(ranked)} из {len(pool)}"
        return Match(
            ident, tuple(ranked), articles=(ident.article or "",) if ranked else (), reason=reason, candidates_only=True
        )

    def _candidate_order(self, doc_id: str) -> tuple[int, int, str]:
        doc = self.docs[doc_id]
        kinds = ("constitution", "code", "law")
        return (kinds.index(doc.doc_type) if doc.doc_type in kinds else len(kinds), doc.status == "repealed", doc_id)

    def _one(self, ident: Identifier) -> Match:
        if ident.kind == "adilet_id":
            return Match(ident, self.by_adilet.get(canonical_adilet_id(ident.adilet_id or ""), ()))
        if ident.kind == "law_number":
            return Match(ident, self.by_law.get(ident.number or "", ()))
        if ident.kind == "registration":
            return Match(ident, self.by_registration.get(ident.number or "", ()))
        if ident.kind == "code_article":
            return self._code_article(ident)
        if ident.kind == "order":
            return self._order(ident)
        if ident.kind == "standard":
            return self._standard(ident)
        if ident.kind == "title":
            return self._title(ident)
        if ident.kind == "code_name":
            docs = self._code_docs(ident.code or "")
            return Match(ident, docs, reason=None if docs else "кодекса нет в реестре")
        raise ValueError(f"unknown identifier kind {ident.kind!r}")

    def _order(self, ident: Identifier) -> Match:
        same_number = self.by_order.get(ident.number or "", ())
        if not same_number and not (ident.issuer or ident.doc_type):
            # an untyped «№ 35612» may be the Minjust registration number: still equality, never a guess
            by_registration = self.by_registration.get(ident.number or "", ())
            if by_registration:
                return Match(ident, by_registration)
        agrees = [self._order_agrees(self.docs[d], ident) for d in same_number]
        found = [d for d, yes in zip(same_number, agrees, strict=True) if yes]
        near = tuple(d for d, yes in zip(same_number, agrees, strict=True) if not yes)
        reason = None if found else ("нет документа с этим номером" if not near else "номер есть, реквизиты другие")
        return Match(ident, tuple(found), near=near, reason=reason)

    @staticmethod
    def _order_agrees(doc: DocInfo, ident: Identifier) -> bool:
        if ident.issuer and doc.issuer != ident.issuer:
            return False
        if ident.doc_type and doc.doc_type not in TYPE_ADMITS.get(ident.doc_type, (ident.doc_type,)):
            return False
        if ident.date and doc.date_approved != ident.date:
            return False
        return not (ident.year and (doc.date_approved is None or doc.date_approved.year != ident.year))

    def _title(self, ident: Identifier) -> Match:
        """An act by its title: the title's key equal to a registry row's (its title or an alias), never a
        prefix of one. An unquoted title may run into the question («закон о противодействии коррупции что
        такое …»): its words are tried longest first, each candidate compared whole."""
        words = ident.title_words
        keys = [title_key(" ".join(words[:n])) for n in range(len(words), 1, -1)] if words else [ident.title or ""]
        for key in keys:
            docs = self.by_title.get(key, ())
            if docs:
                return Match(ident, docs)
        return Match(ident, (), reason=f"документа с названием {ident.canonical.split(' ', 1)[-1]} нет в реестре")

    def _code_docs(self, code: str) -> tuple[str, ...]:
        if code.startswith("code:"):
            return self.by_code_name.get(code.removeprefix("code:"), ())
        return self.by_adilet.get(code, ())

    def _code_article(self, ident: Identifier) -> Match:
        docs = self._code_docs(ident.code or "")
        if not docs:
            return Match(ident, (), reason="кодекса нет в реестре")
        having = tuple(d for d in docs if ident.article in self.docs[d].article_labels)
        if not having:
            return Match(ident, (), near=docs, reason=f"в документе нет статьи {ident.article}")
        return Match(ident, having, articles=(ident.article or "",))

    def _standard(self, ident: Identifier) -> Match:
        d = ident.designation
        if d is None:
            return Match(ident, ())
        same = self.by_standard.get(d.match_key, ())
        wanted = d.qualifier
        found = tuple(x for x in same if not wanted or self.qualifiers.get((x, d.org)) in (None, wanted))
        near = tuple(x for x in same if x not in found)
        reason = None if found else ("другая редакция или вид" if near else "стандарта нет в реестре")
        top = re.match(r"\((\w+)\)", ident.paragraph or "") if d.org == "OSHA" else None
        sections = (f"sec{top.group(1).lower()}",) if top and found else ()
        return Match(ident, found, near=near, reason=reason, sections=sections)


def _doc_info(row: dict[str, Any]) -> DocInfo:
    issuer = row["issuer"] or (find_issuer_short(row["issuer_full"]) if row["issuer_full"] else None)
    return DocInfo(
        doc_id=row["doc_id"],
        doc_title=row["doc_title"],
        doc_type=row["doc_type"],
        adilet_id=canonical_adilet_id(row["adilet_id"]) if row["adilet_id"] else None,
        issuer=issuer,
        order_number=row["order_number"],
        law_zrk=row["law_zrk"],
        date_approved=row["date_approved"],
        registration_number=row["registration_number"],
        intl_org=row["intl_org"],
        intl_section=row["intl_section"],
        status=as_status(row["status"]),
        article_labels=frozenset(row["article_labels"] or []),
        repealed_by=row.get("repealed_by"),
        repealed_on=row.get("repealed_on"),
        replaced_by=row.get("replaced_by"),
        languages=frozenset(row.get("languages") or ([row["language"]] if row.get("language") else [])),
        portal_id=row.get("portal_id"),
        source_url=row.get("source_url"),
        incomplete=any(INCOMPLETE_TEXT in n for e in row.get("extraction") or () for n in e.get("notices") or ()),
    )


def _designations(row: dict[str, Any]) -> list[Any]:
    """Standard designations a registry row answers to: its aliases (``API RP 75``, ``29 CFR 1910.146``)."""
    if not row["intl_org"]:
        return []
    found = [d for alias in row["aliases"] or [] for d in find_designations(alias)]
    return [d for d in found if d.org == row["intl_org"]]
