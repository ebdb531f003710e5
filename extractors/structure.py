"""Turn a stream of lines (from HTML, markdown, JSON text or PDF) into structural units.

Each source format only says which lines it *marks* as headings (``<h3>``, a bold ``<p>``, ``####``) and
which are editorial notes; this module decides what every line is:

- an article heading («Статья 156.», «СТАТЬЯ 5», «156-бап.», «5-1 бап.», «Article 156», «Статья 21¹»),
  a structural level (part, section, chapter, paragraph; Russian and Kazakh), or a standard's section;
- the start of an **annex**: «Приложение 1 к …», «УТВЕРЖДЕНО Указом …», «… бұйрығымен бекітілген», or a
  document title («СОГЛАШЕНИЕ между …», «ПОЛОЖЕНИЕ о …») after the act was signed. An annex is its own
  structural part (``annex1/art5``): a treaty ratified by a law has articles, but they are not the law's;
- text that only *quotes* a heading: an amending act writes the new wording of another act's article in
  quotes («"Статья 11. …», or lines inside an open «…» quotation), and such a line is never a heading;
- a пункт (point, «12. …») inside an article or an annex, kept per paragraph so a lookup can filter «п. 12».

Marked headings are trusted unless quoted; an unmarked «Статья N.» line counts only when it is the next
article in the act's own numbering (1, 2, 2-1, 3 …), which is what tells the act's «Статья 2.» from a
quoted «Статья 311-2.» of the code it amends. Every article-like line is tallied (:class:`HeadingTally`)
so ``zan audit`` can show that none was silently lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from extractors.model import HeadingTally, Unit
from schemas.identifiers import (
    ANY_DASH,
    ARTICLE_LABEL,
    POINT_LABEL,
    article_order,
    canonical_article_label,
    fold_dashes,
    normalize_space,
)

# An article number has at most 4 digits (no act has 10 000 articles): «Статья 3000000000.» is not a heading.
_LABEL = rf"({ARTICLE_LABEL})(?!\d)"
# Article headings, one row per language. A quoted heading («"Статья 11.») never matches: it starts with a quote.
ARTICLE_HEADINGS = (
    re.compile(rf"^(?:Статья|СТАТЬЯ)\s+{_LABEL}(?:\s*\.\s*|\s*$|\s+(?=[А-ЯЁA-Z«\"]))(?P<title>.*)$"),
    re.compile(rf"^{_LABEL}\s*-?\s*(?:бап|БАП)(?:\s*\.\s*|\s*$|\s+(?=[А-ЯЁӘҒҚҢӨҰҮҺІA-Z<«\"]))(?P<title>.*)$"),
    re.compile(rf"^(?:Article|ARTICLE)\s+{_LABEL}(?:\s*\.\s*|\s*$|\s+(?=[A-Z]))(?P<title>.*)$"),
)
_DIGITS = frozenset("0123456789")
_ARTICLE_FIRST = frozenset("СA0123456789")  # every article heading starts with one of these (Статья, Article, 156-бап)
# What counts as an article-heading-like line when tallying a source (independent of the rules above).
HEADING_LIKE = re.compile(
    r"^[\s\"'«“„‘(]*(?:(?:Статья|СТАТЬЯ|Article|ARTICLE)\s+\d|\d+(?:\s*-\s*\d+)?\s*-?\s*(?:бап|БАП)\b)"
)
_QUOTE_START = re.compile(r"^[\"'«“„‘]")

# Structural levels, outermost first; the rank orders the section path.
_LEVELS = (
    (0, re.compile(r"^(ОБЩАЯ|ОСОБЕННАЯ)\s+ЧАСТЬ\b|^(ЖАЛПЫ|ЕРЕКШЕ)\s+БӨЛІК\b|^(GENERAL|SPECIAL)\s+PART\b", re.I)),
    (1, re.compile(r"^(РАЗДЕЛ|Раздел)\s+([\dIVXLCІ]+)\b|^(\d+)\s*-\s*(БӨЛІМ|бөлім)\b|^Part\s+[\dIVX]+\b", re.I)),
    (2, re.compile(r"^ГЛАВА\s+([\dIVXLC]+(?:-\d+)?)\b|^(\d+(?:-\d+)?)\s*-\s*ТАРАУ\b|^Chapter\s+\d+\b", re.I)),
    (3, re.compile(r"^(Параграф|ПАРАГРАФ)\s+\d+|^\d+\s*-\s*параграф\b|^§\s*\d+\.", re.I)),
)
_CHAPTER_NUMBER = re.compile(
    r"(?:Глава|ГЛАВА|Chapter)\s+([\dIVXLC]+(?:-\d+)?)|(\d+(?:-\d+)?)\s*-\s*(?:тарау|ТАРАУ)", re.I
)
# A marked heading «1. Общие положения» inside rules or a regulation: a numbered chapter of that annex (a
# sentence ending in «.», «;» or «:» is a пункт, however it is marked).
_NUMBERED_TITLE = re.compile(r"^(\d{1,2})\s*\.\s*(?=[А-ЯЁӘҒҚҢӨҰҮҺІA-Z])(.{2,200})$")
# Lines that open an annex: «Приложение 1 к постановлению», «УТВЕРЖДЕНО Указом», «… бұйрығымен бекітілген».
_ANNEX_MARK = re.compile(
    r"^(?:Приложение(?:\s+(?:№\s*)?\d+)?(?:\s+к\s|\s*$)|ПРИЛОЖЕНИЕ\b|УТВЕРЖДЕН[АОЫ]?\b|"
    r"Утвержден[аоы]?\s+(?:совместным\s+)?(?:приказом|постановлением|указом|решением|распоряжением|законом)|"
    r"\d+\s*-\s*қосымша\b|Қосымша\b|ҚОСЫМША\b|БЕКІТІЛГЕН\b|Бекітілген\b|Annex\b|ANNEX\b|Appendix\b|APPENDIX\b)"
    r"|(?:бекітілген|БЕКІТІЛГЕН)\s*$"
)
# A document title that opens an annex once the act's own text is signed: the treaty a law ratifies, the
# rules or regulation an order or a decree approves.
_ANNEX_TITLE = re.compile(
    r"^(?:(?:ПЕРВЫЙ|ВТОРОЙ|ТРЕТИЙ|ЧЕТВЕРТЫЙ|Первый|Второй|Третий|Четвертый)\s+)?"
    r"(?i:соглашение|договор|протокол|конвенция|устав|положение|правила|перечень|описание|инструкция|"
    r"регламент|меморандум|изменения|состав|требования|"
    r"келісім|шарт|хаттама|ереже|қағидалар|тізбе|нұсқаулық)\b"
)
# The act's own signature: «Президент Республики Казахстан | Н. НАЗАРБАЕВ», «Премьер-Министр … А. Мамин».
_SIGNER = (
    r"(?:Президент|Премьер-Министр|Министр|Председатель|Аким|Первый\s+заместитель|Заместитель|Руководитель|"
    r"Государственный\s+секретарь|Вице-министр|Секретарь|Қазақстан\s+Республикасының)"
)
_NAME = r"[А-ЯЁӘҒҚҢӨҰҮҺІ]\.\s*(?:[А-ЯЁӘҒҚҢӨҰҮҺІ]\.\s*)?[А-ЯЁӘҒҚҢӨҰҮҺІ][А-ЯЁӘҒҚҢӨҰҮҺІа-яёәғқңөұүһі-]+"
_SIGNATURE = re.compile(
    rf"^{_SIGNER}[^|]{{0,140}}?(?:\|\s*)?{_NAME}\s*$"
    r"|^(?:Президент|Премьер-Министр)(?:\s*Республики\s*Казахстан)?$|^Қазақстан\s*Республикасының\s*Президенті$"
)
# What an unmarked heading can start with; any other unmarked line is text (a fast path for most lines).
_MAYBE_HEADING = re.compile(
    r"^(?:Стат|СТАТ|Arti|ARTI|Sect|\d|Глав|ГЛАВ|Разд|РАЗД|Пара|ПАРА|§|Прил|ПРИЛ|УТВЕ|Утве|Қосы|ҚОСЫ|Бекі|БЕКІ|"
    r"Anne|ANNE|Appe|APPE|ОБЩ|ОСОБ|ЖАЛП|ЕРЕК|GENE|SPEC|Part|Chap)"
)
# A line that opens with a digit is a heading only as «156-бап», «1-БӨЛІМ», «2-тарау», «3-параграф» or «1-қосымша»
# (or when the source marks it): without one of these words it is a пункт or text, which most lines of an act are.
# (Matched at the start, dashes of any spelling, any case: a superset of those rules' digit-led forms.)
_DIGIT_HEADING = re.compile(
    rf"\d+(?:\s*{ANY_DASH}\s*\d+)?(?:\s*(?:bis|ter|quater))?\s*{ANY_DASH}?\s*(?:бап|бөлім|тарау|параграф|қосымша)",
    re.IGNORECASE,
)
# Editorial notes written as plain lines, without note markup: «Сноска.», «Примечание ИЗПИ!», «Ескерту.»
_EDITORIAL_NOTE = re.compile(r"^(Сноска|Примечание|Ескерту|РҚАО|ҚРЗАИ)", re.IGNORECASE)
# A standard's numbered section heading: «4.1 General», «Section 2—Safety…», «(c) Permit system».
STANDARD_SECTION = re.compile(r"^(?:Section\s+)?(\d+(?:\.\d+){0,3})\.?\s*(?:[-—–:]\s*)?(?P<title>[A-ZА-ЯЁ].{0,150})$")
# A пункт: «12. …», «4-1. …» at the start of a paragraph (not «1)», which is a подпункт).
_POINT = re.compile(rf"^({POINT_LABEL})\.\s+\S")
_ANY_QUOTE = re.compile('[«»„“”"]')
_QUOTE_PATIENCE = 1500  # lines a quotation may stay open before a stray quote mark is assumed


@dataclass(frozen=True)
class Line:
    """One line of a source: its text, whether the source marks it as a heading, or as a note."""

    text: str
    heading: bool = False
    note: bool = False
    normalized: bool = False  # the source already passed ``text`` through normalize_space: not done twice


def match_article(text: str) -> tuple[str, str] | None:
    """``(label, title)`` when ``text`` is an article heading, else None."""
    if not text or text[0] not in _ARTICLE_FIRST:
        return None
    text = fold_dashes(text)
    for pattern in ARTICLE_HEADINGS:
        m = pattern.match(text)
        if m:
            return canonical_article_label(m.group(1)), m.group("title").strip()
    return None


def heading_like(text: str) -> bool:
    """True for a line that reads like an article heading, quoted or not (what the audit tallies)."""
    return bool(HEADING_LIKE.match(fold_dashes(text[:80])))


def is_editorial_note(text: str) -> bool:
    """True for a line that opens an editorial note rather than normative text."""
    return bool(_EDITORIAL_NOTE.match(text.lstrip()))


def structural_rank(text: str) -> int | None:
    """The rank (0 part … 3 paragraph) of a structural heading, or None if ``text`` is not one."""
    head = fold_dashes(text[:80])
    return next((rank for rank, pattern in _LEVELS if pattern.match(head)), None)


def label_key(label: str) -> tuple[int, int, int]:
    """:func:`schemas.identifiers.article_order` as (number, dashed number, ordinal): ``5`` < ``5-1`` < ``6``,
    ``10bis`` right after ``10``; a label with two dashed numbers or none is (0, 0, 0), which follows nothing."""
    key = article_order(label)
    return (key[0], key[1], key[2]) if len(key) == 3 and label[:1].isdigit() else (0, 0, 0)


def _follows(previous: tuple[int, int, int] | None, label: tuple[int, int, int], strict: bool) -> bool:
    """Is ``label`` a plausible next article after ``previous``? Strict: the very next one."""
    if previous is None:
        return not strict or label[0] == 1
    if label[0] == previous[0]:
        return label[1:] > previous[1:]
    return label[0] == previous[0] + 1 if strict else label[0] > previous[0]


class _Quotes:
    """Whether the text read so far has an open quotation («…», „…“, "…")."""

    def __init__(self) -> None:
        self.depth, self.straight, self.age = 0, False, 0

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.straight

    def feed(self, text: str) -> None:
        if not _ANY_QUOTE.search(text):
            self.age = self.age + 1 if self.open else 0
            if self.age > _QUOTE_PATIENCE:
                self.reset()
            return
        opens, closes, either = text.count("«") + text.count("„"), text.count("»") + text.count("”"), text.count("“")
        if either:  # «„…“» closes a quotation, an English “…” opens one
            closes, opens = (closes + either, opens) if self.depth or opens > closes else (closes, opens + either)
        self.depth = max(0, self.depth + opens - closes)
        if text.count('"') % 2:
            self.straight = not self.straight
        self.age = self.age + 1 if self.open else 0
        if self.age > _QUOTE_PATIENCE:
            self.reset()

    def reset(self) -> None:
        self.depth, self.straight, self.age = 0, False, 0


class _Builder:
    """Accumulates units while walking lines in order."""

    def __init__(self, standard_sections: bool) -> None:
        self.units: list[Unit] = [Unit(kind="preamble", label=None, heading=None)]
        self.path: list[tuple[int, str]] = []
        self.standard_sections = standard_sections
        self.annex = 0
        self.annex_titled = True
        self.signed = False
        self.last_article: dict[int, tuple[int, int, int]] = {}  # per annex (0: the act's own)
        self.quotes = _Quotes()
        self.tally = HeadingTally()

    @property
    def current(self) -> Unit:
        return self.units[-1]

    def open(self, kind: str, label: str | None, heading: str | None) -> None:
        self.units.append(Unit(kind, label, heading, section_path=[t for _, t in self.path], annex=self.annex))

    def structural(self, rank: int, text: str) -> None:
        self.path = [(r, t) for r, t in self.path if r < rank] + [(rank, text)]
        m = _CHAPTER_NUMBER.search(fold_dashes(text)) or _NUMBERED_TITLE.match(text)
        kind, label = ("chapter", m.group(1) or m.group(2)) if m else ("division", None)
        self.open(kind, label, text)

    def open_annex(self, text: str, titled: bool) -> None:
        self.annex += 1
        self.annex_titled = titled
        self.path = [(-1, text)]
        self.open("annex", str(self.annex), text)

    def feed(self, line: Line) -> None:
        text = line.text if line.normalized else normalize_space(line.text)
        if not text:
            return
        if line.note:
            self.current.notes.append(text)
            self.tally.notes += heading_like(text)
            return
        quoted = bool(_QUOTE_START.match(text))
        in_quote = self.quotes.open
        self.quotes.feed(text)
        if quoted or in_quote:
            self._quoted(line, text)
        elif not self._heading(line, text):
            self._paragraph(text)

    def _quoted(self, line: Line, text: str) -> None:
        """A line that opens with a quote or sits inside a quotation is text, unless it is a marked heading
        that is exactly the next article (then the quotation was a stray mark, and it ends here)."""
        article = match_article(text)
        if article and line.heading and self._next_article(article[0], strict=True):
            self.quotes.reset()
            self._article(article[0], text)
            return
        self.tally.quoted += heading_like(text)
        self.current.add(text)

    def _paragraph(self, text: str) -> None:
        point = _POINT.match(text) if not self.standard_sections else None
        self.current.add(text, point.group(1) if point else None)
        if self.annex == 0 and _SIGNATURE.match(text) and self._has_own_text():
            self.signed = True

    def _has_own_text(self) -> bool:
        return any(u.paragraphs for u in self.units if not u.annex)

    def _heading(self, line: Line, text: str) -> bool:
        """Open a unit if ``text`` is a heading; False when it is ordinary text."""
        if not line.heading and (
            (not _MAYBE_HEADING.match(text) and not text.endswith(("бекітілген", "БЕКІТІЛГЕН")))
            or (text[0] in _DIGITS and not _DIGIT_HEADING.match(text))
        ):
            return False  # most lines: plain text or a пункт, which no heading rule could take (cheap tests first)
        article = match_article(text)
        if article:
            if self._next_article(article[0], strict=not line.heading):
                self._article(article[0], text)
                return True
            if heading_like(text):
                self.tally.out_of_sequence.append(text)
            return False
        if _ANNEX_MARK.match(text) and (line.heading or len(text) < 300):
            if self.annex and not self.annex_titled and not self.current.paragraphs:
                self.current.add(text)  # «Приложение 1 к …» then «Утверждено …»: one annex
            else:
                self.open_annex(text, titled=False)
            return True
        if line.heading and _ANNEX_TITLE.match(text) and self._annex_title(text):
            return True
        rank = structural_rank(text)
        if rank is not None and (line.heading or len(text) < 200):
            self.structural(rank, text)
            return True
        if line.heading and not self.standard_sections and _NUMBERED_TITLE.match(text) and text[-1] not in ".;:":
            self.structural(2, text)
            return True
        section = STANDARD_SECTION.match(text) if self.standard_sections and line.heading else None
        if section:
            self.open("section", section.group(1), text)
            return True
        return False

    def _annex_title(self, text: str) -> bool:
        """A document title names the annex just marked, or opens one once the act is signed."""
        if self.annex and not self.annex_titled:
            self.annex_titled = True
            head = self._annex_head()
            head.paragraphs.insert(0, head.heading or "")
            head.points.insert(0, None)
            head.heading = text
            self.path = [(-1, text)]
            if self.current is not head:
                self.open("division", None, text)
            return True
        if (self.signed and not self.annex) or (self.annex and not _same_title(text, self._annex_head().heading or "")):
            self.open_annex(text, titled=True)
            return True
        if self.annex:  # the annex's title said again (a caps title, then the same title in the text)
            self.open("division", None, text)
            return True
        return False

    def _annex_head(self) -> Unit:
        return next(u for u in reversed(self.units) if u.kind == "annex")

    def _next_article(self, label: str, strict: bool) -> bool:
        return _follows(self.last_article.get(self.annex), label_key(label), strict)

    def _article(self, label: str, text: str) -> None:
        self.last_article[self.annex] = label_key(label)
        self.open("article", label, text)
        if self.annex:
            self.tally.annex_articles += 1
        else:
            self.tally.articles += 1


def _same_title(a: str, b: str) -> bool:
    words_a, words_b = (re.findall(r"\w+", t.casefold())[:8] for t in (a, b))
    return words_a == words_b


def build_units(lines: Iterable[Line], standard_sections: bool = False) -> list[Unit]:
    """Ordered units from ordered lines. Empty preamble/division units are dropped."""
    return build(lines, standard_sections)[0]


def build(lines: Iterable[Line], standard_sections: bool = False) -> tuple[list[Unit], HeadingTally]:
    """Ordered units from ordered lines, and the tally of every article-like line met on the way."""
    builder = _Builder(standard_sections)
    for line in lines:
        builder.feed(line)
    units = [u for u in builder.units if u.kind in ("article", "annex") or u.paragraphs or u.notes]
    return units, builder.tally


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


# A literal first character lets the regex engine jump from NUL to NUL (6 → 1 ms on the Labour Code page,
# against ``(?:^|\x00)``, which is tried at every position). Its «-» takes every dash spelling, so the pieces
# need no fold_dashes pass (HEADING_LIKE's only «-» are outside its classes).
_HEADING_LIKE_PIECES = re.compile("\x00" + HEADING_LIKE.pattern.removeprefix("^").replace("-", ANY_DASH))


def count_heading_like(texts: Iterable[str]) -> int:
    """How many of ``texts`` (a source's lines or text nodes) start like an article heading: one regex pass
    over the pieces, each after a NUL (so a piece's own line breaks are only spacing)."""
    return len(_HEADING_LIKE_PIECES.findall("\x00" + "\x00".join(texts)))
