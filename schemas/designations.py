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


@dataclass(frozen=True)
class Designation:
    org: str  # OSHA, API, NFPA, ISO, IOGP, EAEU, ГОСТ, СТ РК, СП РК
    section: str  # canonical: 1910.146, RP 75, 45001:2018, 423, 004/2011
    key: str  # equality key without edition year: 45001, RP 75
    jurisdiction: str
    span: tuple[int, int]

    @property
    def doc_id(self) -> str:
        prefix = {"EAEU": "tr-ts", "ГОСТ": "gost", "СТ РК": "st-rk", "СП РК": "sp-rk"}.get(self.org, self.org.lower())
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
        r"(?P<num>19[0-9]{2}\.\d+)(?![\d.])",
        "29 CFR 1910.146",
        "OSHA 1910.146",
        "29 CFR § 1910.146(c)(2)",
        "Sec.  1910.146",
        "29CFR1910.146",
    ),
    _family(
        "ISO",
        "INTL",
        r"(?:\bCT\s+PK\s+)?\bISO(?:/IEC)?\s+(?P<num>\d{3,5}(?:-\d+)?)(?::(?P<year>\d{4}))?",
        "ISO 45001",
        "ISO 45001:2018",
        "ISO/IEC 27001",
        "СТ РК ISO 45001",
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
    _family("СТ РК", "KZ", r"\bCT\s+PK\s+(?P<num>\d+(?:\.\d+)*-\d{4})", "СТ РК 1.0-2015"),
    _family("СП РК", "KZ", r"\bCП\s+PK\s+(?P<num>\d+(?:\.\d+)*-\d+-\d{4})", "СП РК 2.02-101-2014"),
    _family("ГОСТ", "EAEU", r"\bГOCT\s+(?:P\s+)?(?P<num>\d+(?:\.\d+)*-\d{2,4})", "ГОСТ 12.0.004-2015"),
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
            found.append(_designation(family, m))
    return sorted(found, key=lambda d: d.span)


def _designation(family: Family, m: re.Match[str]) -> Designation:
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
    return Designation(family.org, section, key, family.jurisdiction, m.span())


def parse_designation(text: str) -> Designation | None:
    """The first designation in ``text`` (a title line), or None."""
    found = find_designations(text)
    return found[0] if found else None
