"""Turn a stream of lines (from HTML, markdown, JSON text or PDF) into structural units.

Each source format only has to say which lines are *headings* it trusts (``<h3>``, ``<p><b>``, ``####``)
and which are editorial notes; the heading grammar below decides what a heading is: an article
(«Статья 156.», «156-бап.», «5-1 бап.», «Article 156»), a structural level (part, section, chapter,
paragraph; Russian and Kazakh), an appendix, or a standard's numbered section.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from extractors.model import Unit
from schemas.identifiers import canonical_article_label, fold_dashes, normalize_space

_LABEL = r"(\d+(?:\s*-\s*\d+)?)"
# Article headings, one row per language. A quoted heading («"Статья 11.») never matches: it starts with a quote.
ARTICLE_HEADINGS = (
    re.compile(rf"^Статья\s+{_LABEL}(?:\s*\.\s*|\s*$|\s+(?=[А-ЯЁA-Z]))(?P<title>.*)$"),
    re.compile(rf"^{_LABEL}\s*-?\s*бап(?:\s*\.\s*|\s*$|\s+(?=[А-ЯЁӘҒҚҢӨҰҮҺІA-Z<]))(?P<title>.*)$"),
    re.compile(rf"^Article\s+{_LABEL}(?:\s*\.\s*|\s*$|\s+(?=[A-Z]))(?P<title>.*)$"),
)

# Structural levels, outermost first; the rank orders the section path.
_LEVELS = (
    (0, re.compile(r"^(ОБЩАЯ|ОСОБЕННАЯ)\s+ЧАСТЬ\b|^(ЖАЛПЫ|ЕРЕКШЕ)\s+БӨЛІК\b|^(GENERAL|SPECIAL)\s+PART\b", re.I)),
    (1, re.compile(r"^(РАЗДЕЛ|Раздел)\s+([\dIVXLCІ]+)\b|^(\d+)\s*-\s*(БӨЛІМ|бөлім)\b|^Part\s+[\dIVX]+\b", re.I)),
    (2, re.compile(r"^(ГЛАВА|Глава)\s+(\d+(?:-\d+)?)\b|^(\d+(?:-\d+)?)\s*-\s*(ТАРАУ|тарау)\b|^Chapter\s+\d+\b", re.I)),
    (3, re.compile(r"^(Параграф|ПАРАГРАФ)\s+\d+|^\d+\s*-\s*параграф\b|^§\s*\d+\.", re.I)),
)
_APPENDIX = re.compile(r"^(Приложение|Қосымша|\d+\s*-\s*қосымша|Annex|Appendix)\b", re.I)
_CHAPTER_NUMBER = re.compile(r"(?:Глава|ГЛАВА|Chapter)\s+(\d+(?:-\d+)?)|(\d+(?:-\d+)?)\s*-\s*(?:тарау|ТАРАУ)")
# Editorial notes written as plain lines, without note markup: «Сноска.», «Примечание ИЗПИ!», «Ескерту.»
_EDITORIAL_NOTE = re.compile(r"^(Сноска|Примечание|Ескерту|РҚАО|ҚРЗАИ)", re.IGNORECASE)
# A standard's numbered section heading: «4.1 General», «Section 2—Safety…», «(c) Permit system».
STANDARD_SECTION = re.compile(r"^(?:Section\s+)?(\d+(?:\.\d+){0,3})\.?\s*(?:[-—–:]\s*)?(?P<title>[A-ZА-ЯЁ].{0,150})$")


@dataclass(frozen=True)
class Line:
    """One line of a source: its text, whether the source marks it as a heading, or as a note."""

    text: str
    heading: bool = False
    note: bool = False


def match_article(text: str) -> tuple[str, str] | None:
    """``(label, title)`` when ``text`` is an article heading, else None."""
    text = fold_dashes(text)
    for pattern in ARTICLE_HEADINGS:
        m = pattern.match(text)
        if m:
            return canonical_article_label(m.group(1)), m.group("title").strip()
    return None


def is_editorial_note(text: str) -> bool:
    """True for a line that opens an editorial note rather than normative text."""
    return bool(_EDITORIAL_NOTE.match(normalize_space(text)))


def structural_rank(text: str) -> int | None:
    """The rank (0 part … 3 paragraph) of a structural heading, or None if ``text`` is not one."""
    return next((rank for rank, pattern in _LEVELS if pattern.match(fold_dashes(text))), None)


class _Builder:
    """Accumulates units while walking lines in order."""

    def __init__(self, standard_sections: bool) -> None:
        self.units: list[Unit] = [Unit(kind="preamble", label=None, heading=None)]
        self.path: list[tuple[int, str]] = []
        self.standard_sections = standard_sections

    @property
    def current(self) -> Unit:
        return self.units[-1]

    def open(self, kind: str, label: str | None, heading: str | None) -> None:
        self.units.append(Unit(kind, label, heading, section_path=[t for _, t in self.path]))

    def structural(self, rank: int, text: str) -> None:
        self.path = [(r, t) for r, t in self.path if r < rank] + [(rank, text)]
        m = _CHAPTER_NUMBER.search(fold_dashes(text))
        kind, label = ("chapter", m.group(1) or m.group(2)) if m else ("division", None)
        self.open(kind, label, text)

    def feed(self, line: Line) -> None:
        text = normalize_space(line.text)
        if not text:
            return
        if line.note:
            self.current.notes.append(text)
        elif not (line.heading and self._heading(text)):
            self.current.paragraphs.append(text)

    def _heading(self, text: str) -> bool:
        article = match_article(text)
        if article:
            self.open("article", article[0], text)
            return True
        rank = structural_rank(text)
        if rank is not None:
            self.structural(rank, text)
            return True
        if _APPENDIX.match(text):
            self.path = [(-1, text)]
            self.open("appendix", None, text)
            return True
        section = STANDARD_SECTION.match(text) if self.standard_sections else None
        if section:
            self.open("section", section.group(1), text)
            return True
        return False


def build_units(lines: Iterable[Line], standard_sections: bool = False) -> list[Unit]:
    """Ordered units from ordered lines. Empty preamble/division units are dropped."""
    builder = _Builder(standard_sections)
    for line in lines:
        builder.feed(line)
    return [u for u in builder.units if u.kind == "article" or u.paragraphs or u.notes]


def split_heading_lines(parts: list[str]) -> list[str]:
    """Join the ``<br>``-separated pieces of one ``<h3>`` into headings.

    «ОБЩАЯ ЧАСТЬ<br>РАЗДЕЛ 1. …<br>Глава 1. …» is three headings; «Глава 2. … ТРУДОВЫХ<br>ОТНОШЕНИЙ» is one,
    and «Раздел II<br>Человек и гражданин» is one (a section number, then its title).
    """
    headings: list[str] = []
    for part in (normalize_space(p) for p in parts):
        if not part:
            continue
        starts_new = structural_rank(part) is not None or match_article(part) is not None
        if headings and not starts_new:
            headings[-1] = f"{headings[-1]} {part}"
        else:
            headings.append(part)
    return headings
