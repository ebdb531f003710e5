"""adilet.zan.kz pages → :class:`Document`.

Two layouts are read:
- the full page: ``div.slogan > h1`` title, ``span.status``, a requisites ``<p>``, tabs, then ``<article>``;
- a body-only save: ``<body><article>`` with no header (its identity comes from the file name or the
  ``saved from url`` comment, its title and numbers from curated reference data).

Only ``<article>`` is read for the body, so markup a browser extension appended after it is never text.
The body is flattened into lines (:mod:`extractors.html_lines`: ``<br>`` and blocks break lines, a bold
lead «<b>Статья 1.</b> Внести …» is a heading, editorial notes are kept apart), then
:mod:`extractors.structure` decides articles, annexes and quotations.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from lxml.etree import _Element

from extractors.blocks import page_lines
from extractors.html_lines import TooDeep, parse_html, text_content
from extractors.model import Document, ExtractError, Requisites
from extractors.requisites import code_requisites, doc_type_of, parse_requisites
from extractors.structure import build
from schemas.identifiers import ADILET_ID, canonical_adilet_id, normalize_space
from schemas.reference import code_by_adilet_id, code_by_title
from schemas.statuses import says_repealed, status_of, status_of_css

_ADILET_URL = re.compile(r"/(rus|kaz|eng)/docs/([A-Za-zА-Яа-я0-9_]+)")
_ADILET_ID = re.compile(rf"^{ADILET_ID}$")
_LANG = {"rus": "rus", "kaz": "kaz", "eng": "eng"}


def parse_adilet_html(text: str, source_file: str) -> Document:
    """Parse one adilet page. Raises :class:`ExtractError` when the page has no body or no identity."""
    source = text.encode("utf-8")
    root = parse_html(source, source_file)
    article = root.find(".//article")
    if article is None:
        raise ExtractError(source_file, "no <article> body: not an adilet document page")
    adilet_id, language = _identity(text, root, source_file)
    requisites = _header(root, adilet_id, language)
    notices: list[str] = []
    try:
        lines, heading_like = page_lines(article, source, notices)  # the blocks read before are remembered
        units, tally = build(lines)
    except TooDeep as exc:
        raise ExtractError(source_file, str(exc)) from exc
    if not units:
        raise ExtractError(source_file, "the <article> body holds no text")
    tally.in_source = heading_like
    notes = [n for u in units[:2] for n in u.notes]
    if requisites.status in (None, "unknown") and any(says_repealed(n) for n in notes):
        requisites.status = "repealed"
    document = Document(requisites=requisites, units=units, source_file=source_file, language=language)
    document.headings = tally
    document.notices += notices
    if requisites.status is None:
        requisites.status = "unknown"
        document.notices.append("no status label on the page; status set to unknown")
    return document


def _identity(text: str, root: _Element, source_file: str) -> tuple[str, str]:
    """The adilet id and language: from the saved-from URL, the page's own tab links, or the file name."""
    saved = re.search(r"saved from url=\(\d+\)(\S+)", text[:2000])
    candidates = [saved.group(1)] if saved else []
    candidates += [a.get("href", "") for a in root.iterfind(".//div[@id='tabs_container']//a")]
    for url in candidates:
        m = _ADILET_URL.search(url)
        if m and _ADILET_ID.match(canonical_adilet_id(m.group(2))):
            return canonical_adilet_id(m.group(2)), _LANG[m.group(1)]
    stem = PurePath(source_file).stem
    if _ADILET_ID.match(canonical_adilet_id(stem)):
        return canonical_adilet_id(stem), _language_from_path(source_file)
    raise ExtractError(source_file, "no adilet id in the saved-from URL, the page links or the file name")


def _language_from_path(source_file: str) -> str:
    parts = set(PurePath(source_file).parts)
    return next((code for code in ("kaz", "eng", "rus") if code in parts), "rus")


def _header(root: _Element, adilet_id: str, language: str) -> Requisites:
    slogan = root.find(".//div[@class='container_alpha slogan']")
    h1 = slogan.find(".//h1") if slogan is not None else root.find(".//h1")
    title = normalize_space(text_content(h1)) if h1 is not None else None
    status_el = next(iter(root.xpath(".//span[contains(concat(' ', @class, ' '), ' status ')]")), None)
    line = " ".join(normalize_space(text_content(p)) for p in slogan.iterfind("p")) if slogan is not None else ""
    requisites = parse_requisites(line, adilet_id) if line else Requisites(jurisdiction="KZ")
    requisites.doc_title = title
    requisites.doc_type = requisites.doc_type or doc_type_of("", adilet_id)
    requisites.adilet_id = adilet_id
    requisites.language = language
    if status_el is not None:
        label = normalize_space(text_content(status_el))
        requisites.status = status_of(label) or status_of_css(status_el.get("class") or "") or "unknown"
    requisites.source_url = f"https://adilet.zan.kz/{language}/docs/{adilet_id}"
    reference = code_by_adilet_id(adilet_id) or (code_by_title(title) if title else None)
    return requisites.fill_from(code_requisites(reference, language)) if reference else requisites
