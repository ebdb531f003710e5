"""Designations of international and national standards → canonical (org, section) and doc_id.

One row per family, each with the spellings it must read (checked by tests both ways). The lookup side
builds its query grammar on the same canonical forms, so a registry key and a query key compare equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.identifiers import fold_dashes, fold_lookalikes, normalize_space, slug

_API_KINDS = {
    "rp": "RP",
    "recommended practice": "RP",
    "std": "Std",
    "standard": "Std",
    "spec": "Spec",
    "specification": "Spec",
    "publ": "Publ",
    "publication": "Publ",
    "bull": "Bull",
    "tr": "TR",
}


# A CFR paragraph written after the section: 1910.146(c)(2). Part of the designation's span, not of its key.
CFR_PARAGRAPH = r"(?:\s*(?P<para>(?:\([a-z0-9]{1,4}\))+))?"

_YEAR_SUFFIXED = ("ГОСТ", "ГОСТ Р", "СТ РК", "СП РК")


def _split_year(org: str, number: str) -> tuple[str, str | None]:
    """``12.0.004-2015`` → (12.0.004, 2015); ГОСТ also writes two-digit years (``12.1.005-88`` → 1988)."""
    m = re.fullmatch(r"(.+?)-(\d{4}|\d{2})" if org.startswith("ГОСТ") else r"(.+?)-(\d{4})", number)
    if not m:
        return number, None
    year = m.group(2)
    return m.group(1), year if len(year) == 4 else ("19" if int(year) > 30 else "20") + year


@dataclass(frozen=True)
class Designation:
    org: str  # OSHA, API, NFPA, ISO, IOGP, EAEU, ГОСТ, ГОСТ Р, СТ РК, СП РК
    section: str  # canonical: 1910.146, RP 75, 45001:2018, 423, 004/2011
    key: str  # equality key without edition year: 45001, RP 75
    jurisdiction: str
    span: tuple[int, int]
    paragraph: str | None = None  # (c)(2): narrows where to look inside the standard, never what it is

    @property
    def match_key(self) -> tuple[str, str]:
        """(org, number) compared by equality between a query and the registry; edition and kind excluded.

        ``ГОСТ 12.0.004-2015`` → (ГОСТ, 12.0.004); ``СП РК 2.02-101-2014`` and ``2.02.101-2014`` → (СП РК,
        2.02.101): national designations write ``.`` and ``-`` interchangeably between number groups.
        """
        if self.org in _YEAR_SUFFIXED:
            return self.org, _split_year(self.org, self.section)[0].replace("-", ".")
        if self.org == "API":
            return self.org, self.key.split()[-1]
        return self.org, self.key

    @property
    def qualifier(self) -> str | None:
        """What narrows a match when both sides state it: the edition year (ISO, ГОСТ…) or the API kind."""
        if self.org in _YEAR_SUFFIXED:
            return _split_year(self.org, self.section)[1]
        if self.org == "ISO":
            return self.section.partition(":")[2] or None
        if self.org == "API" and " " in self.key:
            return self.key.split()[0]
        return None

    @property
    def doc_id(self) -> str:
        prefix = {"EAEU": "tr-ts", "ГОСТ": "gost", "ГОСТ Р": "gost-r", "СТ РК": "st-rk", "СП РК": "sp-rk"}.get(
            self.org, self.org.lower()
        )
        return f"{prefix}-{slug(self.key.replace('/', '-'))}"


@dataclass(frozen=True)
class Family:
    org: str
    jurisdiction: str
    pattern: re.Pattern[str]
    examples: tuple[str, ...]


def _family(org: str, jurisdiction: str, regex: str, *examples: str) -> Family:
    return Family(org, jurisdiction, re.compile(regex, re.VERBOSE | re.IGNORECASE), examples)


# Order matters: more specific first (СТ РК ISO is ISO; ТР ТС before bare numbers).
FAMILIES: tuple[Family, ...] = (
    _family(
        "EAEU",
        "EAEU",
        r"\b(?:TP|TR)\s*(?:TC|CU|EAЭC|EAEU|ЕАЭС)\s*(?P<num>\d{3})\s*/\s*(?P<year>\d{4})",
        "ТР ТС 004/2011",
        "ТР ЕАЭС 043/2017",
        "TR СU 010/ 2011",
    ),
    _family(
        "OSHA",
        "US",
        r"(?:\b29\s*CFR\s*(?:Part\s*|§+\s*|Sec\.\s*)?|\bOSHA\s+(?:Standard\s+)?|§\s*|Sec\.\s+)"
        rf"(?P<num>19[0-9]{{2}}\.\d+)(?![\d.]){CFR_PARAGRAPH}",
        "29 CFR 1910.146",
        "OSHA 1910.146",
        "29 CFR § 1910.146(c)(2)",
        "Sec.  1910.146",
        "29CFR1910.146",
    ),
    _family(
        "ISO",
        "INTL",
        r"(?:\bCT\s+PK\s+)?\bISO(?:/IEC)?\s+(?P<num>\d{3,5}(?:-\d{1,3}(?!\d))?)(?:[:-](?P<year>\d{4}))?(?!\d)",
        "ISO 45001",
        "ISO 45001:2018",
        "ISO/IEC 27001",
        "СТ РК ISO 45001",
        "СТ РК ISO 45001-2019",
        "ISO 13849-1:2015",
    ),
    _family(
        "API",
        "US",
        r"\bAPI\s+(?:(?P<kind>RP|Std|Spec|Publ|Bull|TR|Recommended\s+Practice|Standard|Specification)\s*)?"
        r"(?P<num>\d{1,4}[A-Z]{0,2})\b",
        "API RP 75",
        "API 510",
        "API Std 650",
        "API Spec 6A",
        "API Recommended Practice 75",
    ),
    _family("NFPA", "US", r"\bNFPA\s*(?P<num>\d{1,4}[A-Z]?)\b", "NFPA 652", "NFPA 70E"),
    _family(
        "IOGP",
        "INTL",
        r"\b(?:IOGP|OGP)\s+(?:Report\s+)?(?:No\.?\s*)?(?P<num>\d{2,4}(?:-\d+)?)\b",
        "IOGP Report 423",
        "OGP Report No. 423",
        "IOGP 423-02",
    ),
    _family("СТ РК", "KZ", r"\bCT\s+PK\s+(?P<num>\d+(?:[.-]\d+)+)(?![\d.])", "СТ РК 1.0-2015", "СТ РК 1.10-2015"),
    _family(
        "СП РК", "KZ", r"\bCП\s+PK\s+(?P<num>\d+(?:[.-]\d+)+)(?![\d.])", "СП РК 2.02-101-2014", "СП РК 2.02.101-2014"
    ),
    _family("ГОСТ Р", "RU", r"\bГOCT\s+P\s+(?P<num>\d+(?:[.-]\d+)*)(?![\d.])", "ГОСТ Р 12.0.007-2009"),
    _family(
        "ГОСТ",
        "EAEU",
        r"\bГOCT\s+(?P<num>\d+(?:[.-]\d+)*)(?![\d.])",
        "ГОСТ 12.0.004-2015",
        "ГОСТ 12.1.005-88",
        "ГОСТ 12.0.004",
    ),
)


def find_designations(text: str) -> list[Designation]:
    """Every standard designation in ``text``, in order, non-overlapping, spans in ``text``'s indices.

    Folding (dashes, look-alikes) keeps string length, so spans found in the folded text slice the original.
    """
    folded = fold_lookalikes(fold_dashes(text))
    found: list[Designation] = []
    taken: list[tuple[int, int]] = []
    for family in FAMILIES:
        for m in family.pattern.finditer(folded):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            found.append(designation_from_match(family, m))
    return sorted(found, key=lambda d: d.span)


def designation_from_match(family: Family, m: re.Match[str]) -> Designation:
    """The typed designation for a match of ``family``'s pattern (shared with the query grammar)."""
    groups = m.groupdict()
    num = groups["num"].upper() if family.org in ("API", "NFPA") else groups["num"]
    if family.org == "EAEU":
        key = section = f"{num}/{groups['year']}"
    elif family.org == "API":
        kind = _API_KINDS.get(normalize_space(groups.get("kind") or "").lower())
        key = section = f"{kind} {num}" if kind else num
    elif family.org == "ISO":
        key, section = num, f"{num}:{groups['year']}" if groups.get("year") else num
    else:
        key = section = num
    paragraph = re.sub(r"\s+", "", groups["para"]) if groups.get("para") else None
    return Designation(family.org, section, key, family.jurisdiction, m.span(), paragraph)


def parse_designation(text: str) -> Designation | None:
    """The first designation in ``text`` (a title line), or None."""
    found = find_designations(text)
    return found[0] if found else None
