"""adilet.zan.kz pages → :class:`Document`.

Two layouts are read:
- the full page: ``div.slogan > h1`` title, ``span.status``, a requisites ``<p>``, tabs, then ``<article>``;
- a body-only save: ``<body><article>`` with no header (its identity comes from the file name or the
  ``saved from url`` comment, its title and numbers from curated reference data).

Only ``<article>`` is read for the body, so markup a browser extension appended after it is never text.
Editorial notes (``span.note``, ``p.note``, red ``<font>``: «Сноска», «Примечание ИЗПИ») are kept apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath

from lxml import html as lxml_html
from lxml.etree import ParserError, _Element

from extractors.model import Document, ExtractError, Requisites
from extractors.reference import code_by_adilet_id, code_by_title
from extractors.requisites import doc_type_of, parse_requisites
from extractors.structure import Line, build_units, is_editorial_note, split_heading_lines
from schemas.identifiers import canonical_adilet_id, normalize_space

_ADILET_URL = re.compile(r"/(rus|kaz|eng)/docs/([A-Za-zА-Яа-я0-9_]+)")
_ADILET_ID = re.compile(r"^[A-ZА-Я]\d{2}[A-Z0-9А-Я_]{5,12}$")
_INLINE = {"span", "font", "a", "b", "i", "u", "sup", "sub", "strong", "em"}
_STATUS = {
    "обновленный": "updated",
    "действующий": "in_force",
    "утративший силу": "repealed",
    "жаңартылған": "updated",
    "қолданыстағы": "in_force",
    "күші жойылған": "repealed",
    "новый": "in_force",
    "жаңа": "in_force",
}
_LANG = {"rus": "rus", "kaz": "kaz", "eng": "eng"}


def looks_like_adilet(text: str) -> bool:
    """True for pages saved from adilet (full or body-only)."""
    head = text[:4000]
    return "adilet" in head.lower() or bool(re.search(r"<body>\s*<article>", head))


def parse_adilet_html(text: str, source_file: str) -> Document:
    """Parse one adilet page. Raises :class:`ExtractError` when the page has no body or no identity."""
    try:
        root = lxml_html.document_fromstring(text)
    except (ParserError, ValueError) as exc:
        raise ExtractError(source_file, f"not parseable as HTML: {exc}") from exc
    article = root.find(".//article")
    if article is None:
        raise ExtractError(source_file, "no <article> body: not an adilet document page")
    adilet_id, language = _identity(text, root, source_file)
    requisites = _header(root, adilet_id, language)
    units = build_units(_body_lines(article))
    if not units:
        raise ExtractError(source_file, "the <article> body holds no text")
    return Document(requisites=requisites, units=units, source_file=source_file, language=language)


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
    title = normalize_space(h1.text_content()) if h1 is not None else None
    status_el = next(iter(root.xpath(".//span[contains(concat(' ', @class, ' '), ' status ')]")), None)
    line = " ".join(normalize_space(p.text_content()) for p in slogan.iterfind("p")) if slogan is not None else ""
    requisites = parse_requisites(line, adilet_id) if line else Requisites(jurisdiction="KZ")
    requisites.doc_title = title
    requisites.doc_type = requisites.doc_type or doc_type_of("", adilet_id)
    requisites.adilet_id = adilet_id
    requisites.language = language
    requisites.status = (
        _STATUS.get(normalize_space(status_el.text_content()).lower(), "unknown") if status_el is not None else None
    )
    requisites.source_url = f"https://adilet.zan.kz/{language}/docs/{adilet_id}"
    reference = code_by_adilet_id(adilet_id) or (code_by_title(title) if title else None)
    return requisites.fill_from(reference.requisites(language)) if reference else requisites


def _is_note(el: _Element) -> bool:
    cls = el.get("class") or ""
    return "note" in cls.split() or (el.tag == "font" and (el.get("color") or "").upper() == "#FF0000")


def _note_only(el: _Element) -> bool:
    """A block whose every non-blank text piece sits inside a note element."""
    if _is_note(el):
        return True
    normative = [t for t in _texts_outside_notes(el) if t.strip()]
    has_note = any(_is_note(d) for d in el.iter() if isinstance(d.tag, str))
    return has_note and not normative


def _texts_outside_notes(el: _Element) -> Iterator[str]:
    if el.text and not _is_note(el):
        yield el.text
    for child in el:
        if isinstance(child.tag, str) and not _is_note(child):
            yield from _texts_outside_notes(child)
        if child.tail:
            yield child.tail


def _body_lines(article: _Element) -> Iterator[Line]:
    """Lines of the ``<article>`` body in document order, with heading and note hints."""
    inline: list[str] = []
    inline_note = False
    if article.text and article.text.strip():
        inline.append(article.text)
    for child in article:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in _INLINE:
            inline.append(child.text_content())
            inline_note = inline_note or _note_only(child)
        elif inline or tag == "br":
            if "".join(inline).strip():
                yield Line("".join(inline), note=inline_note or is_editorial_note("".join(inline)))
            inline, inline_note = [], False
        if tag not in _INLINE and tag != "br":
            yield from _block_lines(child, tag)
        if child.tail and child.tail.strip():
            inline.append(child.tail)
    if "".join(inline).strip():
        yield Line("".join(inline), note=inline_note)


def _block_lines(el: _Element, tag: str) -> Iterator[Line]:
    if tag == "h3":
        parts = _split_on_br(el)
        for heading in split_heading_lines(parts):
            yield Line(heading, heading=True)
    elif tag == "p" and _note_only(el):
        yield Line(el.text_content(), note=True)
    elif tag == "p":
        bold = el.find("b")
        is_heading = bold is not None and normalize_space(bold.text_content()) == normalize_space(el.text_content())
        yield Line("".join(_texts_outside_notes(el)), heading=is_heading)
        for note in (d for d in el.iter() if isinstance(d.tag, str) and _is_note(d)):
            yield Line(note.text_content(), note=True)
    elif tag == "table":
        for row in el.iterfind(".//tr"):
            cells = [normalize_space(c.text_content()) for c in row if isinstance(c.tag, str)]
            yield Line(" | ".join(c for c in cells if c))
    elif tag not in ("script", "style", "template"):
        yield Line(el.text_content(), note=_note_only(el))


def _split_on_br(el: _Element) -> list[str]:
    parts, current = [], [el.text or ""]
    for child in el:
        if child.tag == "br":
            parts.append("".join(current))
            current = []
        elif isinstance(child.tag, str):
            current.append(child.text_content())
        current.append(child.tail or "")
    parts.append("".join(current))
    return parts
