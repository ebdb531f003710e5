"""Curated reference data shipped with zan: codes of RK (ids, titles, numbers, aliases) and issuers."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

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


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("schemas.refdata").joinpath(name).read_text("utf-8"))
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


# --- dates as requisites and notes write them ------------------------------------------------------

RU_MONTHS = {
    "января": 1,
    "февраля": 2,
    "марта": 3,
    "апреля": 4,
    "мая": 5,
    "июня": 6,
    "июля": 7,
    "августа": 8,
    "сентября": 9,
    "октября": 10,
    "ноября": 11,
    "декабря": 12,
}
# Kazakh month stems; requisites decline them («желтоқсандағы», «қарашадағы», «сәуірдегі»).
KZ_MONTHS = {
    "қаңтар": 1,
    "ақпан": 2,
    "наурыз": 3,
    "сәуір": 4,
    "мамыр": 5,
    "маусым": 6,
    "шілде": 7,
    "тамыз": 8,
    "қыркүйек": 9,
    "қазан": 10,
    "қараша": 11,
    "желтоқсан": 12,
}

_RU_DATE = re.compile(r"(\d{1,2})\s+(" + "|".join(RU_MONTHS) + r")\s+(\d{4})\s*(?:года|г\.)?", re.I)
_KZ_DATE = re.compile(r"(\d{4})\s+жыл[ғг]ы\s+(\d{1,2})\s+(" + "|".join(KZ_MONTHS) + r")\w*", re.I)
_NUM_DATE = re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d])")
# Kazakh editorial notes write year first, then day, then month: «ҚР 2015.23.11. № 414-V» is 23.11.2015.
_KZ_NUM_DATE = re.compile(r"(?<![\d.])(\d{4})\.(\d{1,2})\.(\d{1,2})(?![\d])")
_ISO_DATE = re.compile(r"(?<![\d.-])(\d{4})-(\d{2})-(\d{2})(?![\d])")


def parse_date(text: str) -> dt.date | None:
    """The first date in ``text``: «25 декабря 2024 года», «2024 жылғы 25 желтоқсандағы», «25.12.2024»,
    the Kazakh notes' «2015.23.11.» (year, day, month) and ISO «2024-12-25»."""
    candidates: list[tuple[int, dt.date | None]] = []
    for m in _RU_DATE.finditer(text):
        candidates.append((m.start(), _safe_date(int(m.group(3)), RU_MONTHS[m.group(2).lower()], int(m.group(1)))))
    for m in _KZ_DATE.finditer(text):
        month = next(v for k, v in KZ_MONTHS.items() if m.group(3).lower().startswith(k))
        candidates.append((m.start(), _safe_date(int(m.group(1)), month, int(m.group(2)))))
    for m in _NUM_DATE.finditer(text):
        candidates.append((m.start(), _safe_date(int(m.group(3)), int(m.group(2)), int(m.group(1)))))
    for m in _KZ_NUM_DATE.finditer(text):
        year, first, second = int(m.group(1)), int(m.group(2)), int(m.group(3))
        candidates.append((m.start(), _safe_date(year, second, first) or _safe_date(year, first, second)))
    for m in _ISO_DATE.finditer(text):
        candidates.append((m.start(), _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))))
    valid = sorted((pos, d) for pos, d in candidates if d is not None)  # type: ignore[misc]
    return valid[0][1] if valid else None


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
