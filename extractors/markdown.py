"""Markdown exports of acts (the kz-laws layout) → :class:`Document`. Every export is an act; the curated
codes only add their identifiers and aliases.

Layout: an optional table of contents («МАЗМҰНЫ» / «СОДЕРЖАНИЕ») that lists every heading, then a ``# title``
and the body (``####`` headings in the codes, plain «Статья 1.» lines in older laws). A table of contents is
not an article: everything before the ``#`` title that follows it is skipped (and tallied as such).

Identity (the README's doc_id rule): the curated code whose title matches; else the adilet id the file is
named by or that a ``url:``/``source:`` line at the top names; else the export's own id, the zan.gov.kz portal
id it is named by (``10189.md`` → ``zan-10189``), so the Russian and Kazakh exports of one act are one
document. An export with none of these is rejected.

doc_type comes from the title («… кодекс», «Конституция») and the text («Настоящий Закон», «Осы Заң»);
an export signed by the President with no other type word is a law. Status comes from the opening notes
(«Сноска. Утратил силу …» → repealed); an export that states none is ``unknown``, said in the run report.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from extractors.model import Document, ExtractError, Requisites
from extractors.requisites import code_requisites
from extractors.structure import Line, build, count_heading_like, is_editorial_note
from schemas.identifiers import ADILET_ID, canonical_adilet_id, normalize_space
from schemas.kinds import DocType
from schemas.reference import code_by_title
from schemas.statuses import says_repealed

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TOC = re.compile(r"^(МАЗМҰНЫ|СОДЕРЖАНИЕ|ОГЛАВЛЕНИЕ)$", re.I)
_KAZAKH = re.compile(r"[ӘәҒғҚқҢңӨөҰұҮүҺһІі]")
_SELF_URL = re.compile(
    rf"(?i)^\W*(?:url|source|источник|дереккөз)\s*[:=]\s*\S*adilet\.zan\.kz/(rus|kaz)/docs/({ADILET_ID})"
)
_LAW_WORDS = re.compile(r"Настоящ\w+\s+Закон|настоящ\w+\s+Закона|Осы\s+Заң|Закон\w*\s+Республики\s+Казахстан\s+«?О\b")
_SIGNED = re.compile(r"Президент\s*Республики\s*Казахстан|Республикасының\s*Президенті")


def parse_markdown_act(text: str, source_file: str) -> Document:
    """Parse one markdown act; :class:`ExtractError` when it has no title or nothing to identify it by."""
    lines = text.splitlines()
    title, start = _title_and_body_start(lines)
    if title is None:
        raise ExtractError(source_file, "no level-1 '# ' title heading")
    language = "kaz" if _KAZAKH.search(text[:20000]) else "rus"
    body = lines[start:]
    requisites = _requisites(title, body, language, source_file)
    units, tally = build(_lines(body))
    tally.toc = count_heading_like(line.lstrip("# ") for line in lines[:start])
    tally.in_source = count_heading_like(line.lstrip("#") for line in lines)
    document = Document(requisites=requisites, units=units, source_file=source_file, language=language)
    document.headings = tally
    opening = [n for u in units[:2] for n in u.notes]
    if any(says_repealed(n) for n in opening):
        requisites.status = "repealed"
    elif not requisites.status:
        requisites.status = "unknown"
        document.notices.append("the export states no status; status set to unknown")
    return document


def _requisites(title: str, body: list[str], language: str, source_file: str) -> Requisites:
    reference = code_by_title(title)
    if reference is not None:
        requisites = code_requisites(reference, language)
        requisites.language, requisites.doc_title = language, title
        return requisites
    requisites = Requisites(doc_title=title, jurisdiction="KZ", language=language)
    requisites.doc_type = _doc_type(title, "\n".join(body[:400]))
    adilet_id = _named_adilet_id(source_file, body)
    stem = PurePath(source_file).stem
    if adilet_id:
        requisites.adilet_id = adilet_id
        requisites.source_url = f"https://adilet.zan.kz/{'kaz' if language == 'kaz' else 'rus'}/docs/{adilet_id}"
    elif stem.isdigit():
        requisites.portal_id = stem
    else:
        raise ExtractError(source_file, "no identity: name the export by its zan.gov.kz portal id or adilet id")
    return requisites


# A title that *names* a code: «Трудовой кодекс Республики Казахстан», «Кодекс … о недрах», «… Еңбек кодексі».
# A title about something («О введении в действие … кодекса», «… кодексін күшіне енгізу туралы») is not one.
_CODE_TITLE = re.compile(r"^кодекс\b|кодекс[іi]?(?:\s+(?:республики\s+казахстан|қазақстан\s+республикасының))?$")
_CODE_END = re.compile(r"кодекс[іi]?(?:республикиказахстан|қазақстанреспубликасының)?$")  # a letter-spaced title
_ABOUT = re.compile(r"^(?:о|об)\s|\bтуралы\b")


def read_spaced(title: str) -> str:
    """A title set letter by letter («В О Д Н Ы Й  К О Д Е К С») as words: a run of single letters is one word
    (runs are cut where the spacing widens)."""
    parts = []
    for part in re.split(r"\s{2,}", title.strip()):
        tokens = part.split()
        single = sum(len(t) == 1 for t in tokens)
        parts.append("".join(tokens) if len(tokens) >= 3 and single >= 0.8 * len(tokens) else part)
    return " ".join(parts)


def _doc_type(title: str, head: str) -> DocType | None:
    """The act's type from evidence: its title's form (what it names, not a word it contains), then the
    words of its own text (a law says «Настоящий Закон» and is signed by the President)."""
    lowered = normalize_space(read_spaced(title)).casefold()
    if not _ABOUT.search(lowered):
        if _CODE_TITLE.search(lowered) or _CODE_END.search(lowered.replace(" ", "")):
            return "code"
        if lowered.startswith(("конституция", "қазақстан республикасының конституциясы")):
            return "constitution"
    if _LAW_WORDS.search(head) or _SIGNED.search(head):
        return "law"
    return None


def _named_adilet_id(source_file: str, body: list[str]) -> str | None:
    stem = canonical_adilet_id(PurePath(source_file).stem)
    if re.fullmatch(ADILET_ID, stem):
        return stem
    for line in body[:10]:
        m = _SELF_URL.match(line)
        if m:
            return canonical_adilet_id(m.group(2))
    return None


def _title_and_body_start(lines: list[str]) -> tuple[str | None, int]:
    in_toc = False
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if not m:
            continue
        text = normalize_space(m.group(2))
        if _TOC.match(text):
            in_toc = True
        elif len(m.group(1)) == 1:
            return text, i + 1
        elif not in_toc:
            return None, 0
    return None, 0


def _lines(lines: list[str]) -> list[Line]:
    out = []
    for raw in lines:
        m = _HEADING.match(raw)
        text = normalize_space(m.group(2) if m else raw)
        out.append(Line(text, heading=bool(m), note=is_editorial_note(text) and not m, normalized=True))
    return out
