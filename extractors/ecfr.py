"""eCFR XML (29 CFR sections) → :class:`Document`, structured by the XML elements and the paragraph
designator levels, never by a regex over flat text.

A section is ``<DIV8 TYPE="SECTION">`` with a ``<HEAD>`` and ``<P>`` paragraphs; each paragraph opens with
one or more designators: «(a) <I>Scope.</I> —(1) <I>Scope.</I> (i) This standard…». The levels are

    (a) lower-case letter → (1) digit → (i) lower-case roman → (A) upper-case letter → (<I>1</I>) → (<I>i</I>)

«(i)», «(v)» and «(x)» are both letters and roman numerals: each is read as whichever continues the current
paragraph path (the letter after «(h)», or the first roman under «(f)(1)»); when both do, the next
designator decides («(ii)» follows a roman «(i)»). So «(i)» under «(f)(1)» stays inside (f) instead of
opening a false section (i). Units are the top-level paragraphs (a), (b)…; every paragraph keeps its full
designator path («(f)(1)(i)») as its point label. Appendices (``<DIV9 TYPE="APPENDIX">``) become annexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from extractors.model import Document, ExtractError, Unit
from extractors.standards import identify_standard, standard_requisites
from schemas.identifiers import normalize_space

_ITALIC = ("I", "E")
_NOTES = ("CITA", "SOURCE", "AUTH", "EDNOTE", "SECAUTH")
_TEXT = ("P", "FP", "NOTE", "HD", "HED", "EXTRACT", "GPOTABLE")
_DESIGNATOR = re.compile(r"\(\x01?([A-Za-z]{1,4}|\d{1,3})\x02?\)")
# After a designator: an italic heading and the dash that leads to the next designator («(a) Scope —(1)»).
_AFTER = re.compile(r"\s*(?:\x01[^\x02]{0,300}\x02)?\s*[.—–-]*\s*")
_ROMAN = re.compile(r"^(?=[ivxlc]+$)c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}


def parse_ecfr_xml(data: bytes, source_file: str) -> Document:
    """One eCFR section; raises :class:`ExtractError` for invalid XML or a file with no section."""
    if not data.strip():
        raise ExtractError(source_file, "empty file")
    parser = etree.XMLParser(recover=False, resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as exc:
        raise ExtractError(source_file, f"invalid XML: {exc}") from exc
    section = root if root.get("TYPE") == "SECTION" else root.find(".//DIV8[@TYPE='SECTION']")
    head_el = section.find("HEAD") if section is not None else None
    if section is None or head_el is None:
        raise ExtractError(source_file, "no eCFR section (DIV8 TYPE=SECTION with a HEAD)")
    head = normalize_space("".join(head_el.itertext()))
    designation, _ = identify_standard([f"29 CFR {section.get('N') or ''}", head], source_file)
    name = re.sub(r"^§\s*[\d.]+\s*", "", head)
    title = f"29 CFR {designation.section} — {name}"
    units = _units(section, _appendices(root, section))
    return Document(standard_requisites(designation, title, "eng"), units, source_file, "eng")


def _appendices(root: etree._Element, section: etree._Element) -> list[etree._Element]:
    """Appendices to the section: inside its DIV8, or sibling DIV9s whose name cites the section."""
    inside = section.findall(".//DIV9[@TYPE='APPENDIX']")
    number = section.get("N") or ""
    beside = [d for d in root.iter("DIV9") if d.get("TYPE") == "APPENDIX" and number and number in (d.get("N") or "")]
    return list(dict.fromkeys([*inside, *beside]))


@dataclass
class _Para:
    text: str
    designators: list[tuple[str, bool]]  # (marker, italic)
    note: bool = False


def _units(section: etree._Element, appendices: list[etree._Element]) -> list[Unit]:
    paras = [_para(el) for el in section if isinstance(el.tag, str) and el.tag in (*_TEXT, *_NOTES)]
    units = _paragraph_units(paras)
    for n, appendix in enumerate(appendices, start=1):
        head = appendix.find("HEAD")
        heading = normalize_space("".join(head.itertext())) if head is not None else f"Appendix {n}"
        unit = Unit("annex", str(n), heading, section_path=[heading], annex=n)
        for el in appendix:
            if isinstance(el.tag, str) and el.tag in _TEXT:
                text = normalize_space("".join(el.itertext()))
                if text:
                    unit.add(text)
            elif isinstance(el.tag, str) and el.tag in _NOTES:
                unit.notes.append(normalize_space("".join(el.itertext())))
        units.append(unit)
    return [u for u in units if u.paragraphs or u.notes or u.kind == "annex"]


def _para(el: etree._Element) -> _Para:
    marked = _marked_text(el)
    plain = normalize_space(marked.replace("\x01", "").replace("\x02", ""))
    if el.tag in _NOTES:
        return _Para(plain, [], note=True)
    designators: list[tuple[str, bool]] = []
    pos = len(marked) - len(marked.lstrip())
    while (m := _DESIGNATOR.match(marked, pos)) is not None:
        designators.append((m.group(1), "\x01" in m.group(0)))
        pos = _AFTER.match(marked, m.end()).end()  # type: ignore[union-attr]
    return _Para(plain, designators)


def _marked_text(el: etree._Element) -> str:
    """The element's text, italic runs wrapped in \\x01 … \\x02 (designators and headings are italic)."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str):
            inner = _marked_text(child)
            parts.append(f"\x01{inner}\x02" if child.tag in _ITALIC else inner)
        parts.append(child.tail or "")
    return "".join(parts)


def _paragraph_units(paras: list[_Para]) -> list[Unit]:
    markers = [d for p in paras for d in p.designators]
    levels = iter(assign_levels(markers))
    units = [Unit(kind="preamble", label=None, heading=None)]
    path: list[tuple[int, str]] = []
    for para in paras:
        if para.note:
            units[-1].notes.append(para.text)
            continue
        for marker, _ in para.designators:
            level = next(levels)
            path = [p for p in path if p[0] < level] + [(level, marker)]
            if level == 1:
                units.append(Unit("section", f"({marker})", _heading(para.text)))
        point = "".join(f"({m})" for _, m in path) if para.designators else None
        units[-1].add(para.text, point)
    return units


def _heading(text: str) -> str:
    m = re.match(r"^\(\w+\)\s*([^.—]{0,120}[.—])?", text)
    return (m.group(0) if m else text[:120]).strip(" —")


# --- designator levels -------------------------------------------------------------------------------------


def assign_levels(markers: list[tuple[str, bool]]) -> list[int]:
    """The level (1–6) of every designator, in document order; see the module docstring."""
    levels: list[int] = []
    path: list[tuple[int, str]] = []
    for n, (marker, italic) in enumerate(markers):
        nxt = markers[n + 1][0] if n + 1 < len(markers) else None
        level = _choose(marker, italic, path, nxt)
        levels.append(level)
        path = [p for p in path if p[0] < level] + [(level, marker)]
    return levels


def _kinds(marker: str, italic: bool) -> list[int]:
    if italic:
        return [5] if marker.isdigit() else [6]
    if marker.isdigit():
        return [2]
    if marker.isupper():
        return [4]
    roman = bool(_ROMAN.match(marker))
    letter = len(set(marker)) == 1  # a, …, z, aa, bb …
    return [lvl for lvl, ok in ((1, letter), (3, roman)) if ok] or [1]


def _choose(marker: str, italic: bool, path: list[tuple[int, str]], nxt: str | None) -> int:
    scored = [(_fit(level, marker, path), level) for level in _kinds(marker, italic)]
    best = max(score for score, _ in scored)
    tied = [level for score, level in scored if score == best]
    if len(tied) > 1 and best > 0:  # (i) as a letter and as a roman numeral both fit: the next one decides
        return 3 if nxt is not None and (_value(nxt, 3) == _value(marker, 3) + 1 or nxt == "A") else 1
    if best == 0:  # nothing fits (a paragraph missing from the source): the shallowest reading
        return min(level for _, level in scored)
    return tied[0]


def _fit(level: int, marker: str, path: list[tuple[int, str]]) -> int:
    """2: the very next designator at ``level``; 1: further on at that level (a gap); 0: impossible."""
    depth = path[-1][0] if path else 0
    if level > depth + 1:
        return 0
    same = next((m for lv, m in path if lv == level), None)
    value = _value(marker, level)
    if same is None:
        return 2 if value == 1 else 0
    step = value - _value(same, level)
    return 2 if step == 1 else 1 if 1 < step <= 3 else 0


def _value(marker: str, level: int) -> int:
    if level in (2, 5):
        return int(marker) if marker.isdigit() else 0
    if level in (3, 6):
        return _roman(marker)
    letters = marker.lower()
    return (ord(letters[0]) - ord("a") + 1) + 26 * (len(letters) - 1) if letters.isalpha() else 0


def _roman(marker: str) -> int:
    total = 0
    values = [_ROMAN_VALUES.get(ch, 0) for ch in marker.lower()]
    for i, v in enumerate(values):
        total += -v if i + 1 < len(values) and values[i + 1] > v else v
    return total
