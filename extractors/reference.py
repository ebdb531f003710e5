"""Curated reference data shipped with zan: codes of RK (ids, titles, numbers, aliases) and issuers."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from extractors.model import Requisites
from schemas.identifiers import canonical_adilet_id, normalize_space
from schemas.kinds import DocType, as_doc_type


@dataclass(frozen=True)
class Issuer:
    short: str
    full_ru: str
    full_kz: str
    patterns: tuple[re.Pattern[str], ...]
    aliases: tuple[str, ...]
    kind: str = "central"  # ministry, agency, court, parliament, government, president…, or local
    former: str | None = None  # a former body: its years and successor
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Region:
    name: str  # Акмолинская область, город Астана
    kz: str
    patterns: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class LocalIssuer:
    """A local body (maslikhat, akimat, akim) and the region it belongs to, as read from requisites."""

    short: str  # маслихат, акимат, аким
    phrase: str  # as written: «Атбасарского районного маслихата Акмолинской области»
    region: str | None


@dataclass(frozen=True)
class CodeRef:
    adilet_id: str
    doc_type: DocType | None
    law_zrk: str | None
    date_approved: dt.date
    titles: dict[str, str]
    aliases: tuple[str, ...]

    def requisites(self, language: str) -> Requisites:
        """Requisites this reference row vouches for, titled in ``language`` (rus, kaz, eng)."""
        key = {"rus": "ru", "kaz": "kz", "eng": "en"}.get(language, "ru")
        titles = [self.titles[k] for k in ("ru", "kz", "en")]
        return Requisites(
            doc_title=self.titles.get(key) or self.titles["ru"],
            doc_type=self.doc_type,
            adilet_id=self.adilet_id,
            law_zrk=self.law_zrk,
            date_approved=self.date_approved,
            issuer="Парламент РК" if self.doc_type == "code" else None,
            jurisdiction="KZ",
            aliases=list(dict.fromkeys([*self.aliases, *titles])),
        )


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("extractors.refdata").joinpath(name).read_text("utf-8"))
    return data


@functools.cache
def issuers() -> tuple[Issuer, ...]:
    """Issuing bodies, most specific first."""
    rows = _load("issuers.json")["issuers"]
    return tuple(
        Issuer(
            short=r["short"],
            full_ru=r["full_ru"],
            full_kz=r["full_kz"],
            patterns=tuple(re.compile(p, re.IGNORECASE) for p in r["patterns"]),
            aliases=tuple(r["aliases"]),
            kind=r.get("kind", "central"),
            former=r.get("former"),
            examples=tuple(r.get("examples", ())),
        )
        for r in rows
    )


@functools.cache
def regions() -> tuple[Region, ...]:
    rows = _load("regions.json")["regions"]
    return tuple(Region(r["name"], r["kz"], tuple(re.compile(p, re.IGNORECASE) for p in r["patterns"])) for r in rows)


@functools.cache
def local_bodies() -> tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]:
    """(short form, pattern, examples) of the local bodies: маслихат, акимат, аким."""
    rows = _load("regions.json")["local_bodies"]
    return tuple(
        (r["short"], re.compile(r"(?<!\w)(?:" + "|".join(r["patterns"]) + ")", re.IGNORECASE), tuple(r["examples"]))
        for r in rows
    )


def find_region(text: str) -> Region | None:
    """The first region named in ``text`` (a requisites clause), by position."""
    found = [(m.start(), r) for r in regions() for p in r.patterns if (m := p.search(text))]
    return min(found, key=lambda f: f[0])[1] if found else None


def find_local_issuer(text: str) -> LocalIssuer | None:
    """A maslikhat, akimat or akim named in a requisites clause, with the phrase around it and its region.

    «Решение Атбасарского районного маслихата Акмолинской области от 18 марта 2026 года № 8С 37/5» →
    (маслихат, «Атбасарского районного маслихата Акмолинской области», Акмолинская область).
    """
    found = [(m.start(), -len(m.group(0)), short) for short, p, _ in local_bodies() if (m := p.search(text))]
    if not found:
        return None
    _, _, short = min(found)
    phrase = re.match(
        r"^(?:\w+\s+)?(?:постановлени\w*|решени\w*|распоряжени\w*)\s+(.+?)\s+(?:от\s+\d|\d{4}\s+жыл)", text, re.I
    )
    if phrase is None:
        phrase = re.match(r"^(.+?)\s+\d{4}\s+жыл", text)
    region = find_region(text)
    return LocalIssuer(short, normalize_space(phrase.group(1)) if phrase else short, region.name if region else None)


@functools.cache
def codes() -> tuple[CodeRef, ...]:
    """Codes of RK and the Constitution with their titles in three languages and short aliases."""
    return tuple(
        CodeRef(
            adilet_id=canonical_adilet_id(r["adilet_id"]),
            doc_type=as_doc_type(r["doc_type"]),
            law_zrk=r["law_zrk"],
            date_approved=dt.date.fromisoformat(r["date_approved"]),
            titles={"ru": r["title_ru"], "kz": r["title_kz"], "en": r["title_en"]},
            aliases=tuple(r["aliases"]),
        )
        for r in _load("codes.json")["codes"]
    )


def code_by_adilet_id(adilet_id: str) -> CodeRef | None:
    wanted = canonical_adilet_id(adilet_id)
    return next((c for c in codes() if c.adilet_id == wanted), None)


def code_by_title(title: str) -> CodeRef | None:
    """Find a code by its exact title in any language (case and spacing folded)."""
    key = normalize_space(title).casefold()
    return next((c for c in codes() if key in {t.casefold() for t in c.titles.values()}), None)


def find_issuer(text: str) -> Issuer | None:
    """The first issuer whose pattern occurs in ``text`` (requisites or a title line)."""
    return next((i for i in issuers() if any(p.search(text) for p in i.patterns)), None)
