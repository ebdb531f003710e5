"""International and national standards → :class:`Document`.

Formats: eCFR XML (29 CFR sections, ``DIV8``/``HEAD``/``P``), HTML, plain text and PDF (via pypdf).
A standard's identity comes from its own title block (the first lines), read by the designation grammar
in :mod:`schemas.designations`, never from the file name.
"""

from __future__ import annotations

import io
import re

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from extractors.html_lines import parse_html, text_content
from extractors.model import Document, ExtractError, Requisites
from extractors.structure import Line, build_units
from schemas.designations import Designation, parse_designation
from schemas.identifiers import normalize_space
from schemas.text import clean_text

_TITLE_LINES = 6
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")


def standard_requisites(designation: Designation, title: str, language: str) -> Requisites:
    return Requisites(
        doc_title=title,
        doc_type="standard",
        intl_org=designation.org,
        intl_section=designation.section,
        jurisdiction=designation.jurisdiction,
        language=language,
        status="in_force",
    )


def identify_standard(title_lines: list[str], source_file: str) -> tuple[Designation, str]:
    for i, line in enumerate(title_lines):
        designation = parse_designation(line)
        if designation:
            rest = [t for t in title_lines[i : i + 2] if t]
            return designation, normalize_space(" — ".join(rest))
    raise ExtractError(source_file, "no standard designation (API, ISO, NFPA, IOGP, 29 CFR, ТР ТС…) in the title")


def _language(text: str) -> str:
    sample = text[:5000]
    return "rus" if len(_CYRILLIC.findall(sample)) > len(sample) / 10 else "eng"


def parse_standard_text(text: str, source_file: str) -> Document:
    """Plain text: a title block, then numbered sections («4.1 General», «Статья 1. …»)."""
    lines = [normalize_space(line) for line in text.splitlines()]
    head = [line for line in lines if line][:_TITLE_LINES]
    designation, title = identify_standard(head, source_file)
    body = lines[lines.index(head[1]) + 1 :] if len(head) > 1 else []
    units = build_units((Line(t, heading=_heading_like(t)) for t in body), standard_sections=True)
    if not units:
        raise ExtractError(source_file, "the standard has a title but no body text")
    language = _language(text)
    return Document(standard_requisites(designation, title, language), units, source_file, language)


def _heading_like(line: str) -> bool:
    return 0 < len(line) < 160 and not line.endswith((".", ";", ",", ":")) or line.startswith(("Статья", "Section"))


def parse_standard_html(text: str, source_file: str) -> Document:
    """HTML: ``<h1>`` title block, ``<h2>``–``<h4>`` section headings, ``<p>``/``<li>`` paragraphs."""
    root = parse_html(text, source_file)
    title_el = root.find(".//h1")
    if title_el is None:
        raise ExtractError(source_file, "HTML standard without an <h1> title")
    subtitle = root.find(".//*[@class='subtitle']")
    head = [normalize_space(text_content(title_el))]
    head += [normalize_space(text_content(subtitle))] if subtitle is not None else []
    designation, title = identify_standard(head, source_file)
    lines = [
        Line(text_content(el), heading=el.tag in ("h2", "h3", "h4"))
        for el in root.iter("h2", "h3", "h4", "p", "li")
        if el.get("class") != "subtitle"
    ]
    units = build_units(lines, standard_sections=True)
    if not units:
        raise ExtractError(source_file, "the standard has a title but no body text")
    language = _language(text_content(root))
    return Document(standard_requisites(designation, title, language), units, source_file, language)


def parse_standard_pdf(data: bytes, source_file: str) -> Document:
    """PDF: text extracted page by page with pypdf, then read as plain text."""
    try:
        reader = PdfReader(io.BytesIO(data))
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
    except (PdfReadError, ValueError, KeyError) as exc:
        raise ExtractError(source_file, f"unreadable PDF: {exc}") from exc
    if not text.strip():
        raise ExtractError(source_file, "the PDF has no extractable text (scanned image?)")
    return parse_standard_text(clean_text(text), source_file)
