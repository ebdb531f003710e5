"""An HTML body → lines, the way a reader sees them (for :mod:`extractors.structure`).

- ``<br>`` and block elements end a line; inline elements (``<a>``, ``<b>``, ``<span>``…) join their text.
- ``<h1>``…``<h6>`` give marked headings; a ``<br>`` inside one separates headings only where the next piece
  starts a new one («РАЗДЕЛ 1.<br>Глава 1.»), else it continues («ДОГОВОР<br>между …»).
- A line whose every normative word is bold is a marked heading; a bold lead that is an article heading
  («<b>Статья 1.</b> Внести …») becomes a heading line and a text line.
- Editorial notes (``class="note"``, red ``<font>``) are kept apart as note lines, never mixed into text. A
  note that does not close (``<span class="note">`` left open) would take the rest of the page with it: a
  note ends at the first heading or heading-like block inside it (an article, a section, a chapter), and the
  cut is reported (:attr:`Lines.cuts`), so no article is ever read as a note.
- A table row is one line, its cells joined by `` | ``.
- ``<sup>`` right after a digit is an article sub-number: «Статья 21<sup>1</sup>» reads «Статья 21-1».
- Comments, scripts and styles are never text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from lxml import etree
from lxml.etree import ParserError, _Element

from extractors.model import ExtractError
from extractors.structure import (
    Line,
    count_heading_like,
    is_editorial_note,
    match_article,
    split_heading_lines,
    structural_rank,
)
from schemas.errors import ZanError
from schemas.identifiers import normalize_space

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "blockquote",
        "center",
        "pre",
        "dl",
        "dt",
        "dd",
        "section",
        "article",
        "form",
        "address",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "figure",
        "figcaption",
        "hr",
        "tr",
    }
)
_SKIP = frozenset({"script", "style", "template", "noscript", "iframe", "button", "svg", "select", "textarea", "head"})
_BOLD = frozenset({"b", "strong"})


@dataclass(slots=True)
class _Piece:
    text: str
    bold: bool
    note: bool


Note: TypeAlias = _Element | None  # the element that opened the note the walk is inside, or None outside notes


def is_note(el: _Element) -> bool:
    cls = el.get("class")
    if cls and "note" in cls.split():
        return True
    return el.tag == "font" and (el.get("color") or "").upper() == "#FF0000"


class TooDeep(ZanError, ValueError):
    """The markup nests deeper than :data:`MAX_DEPTH`: refused rather than read in part."""


MAX_DEPTH = 300  # real pages nest < 40 deep; deeper is hostile or broken markup


class _Collector:
    """Walks an element tree and emits lines."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.pieces: list[_Piece] = []
        self.depth = 0
        self.cut: set[int] = set()  # ids of note elements that were cut at a heading inside them
        self.cuts: list[str] = []  # the headings they were cut at
        self._kept: list[_Element] = []

    def add(self, text: str | None, bold: bool, note: bool) -> None:
        if text:
            self.pieces.append(_Piece(text, bold, note))

    def flush(self) -> None:
        pieces = self.pieces
        if not pieces:
            return
        self.pieces = []
        if len(pieces) == 1:  # the common case: one run of text
            piece = pieces[0]
            if not piece.text.isspace():
                kind = {"note": True} if piece.note else {"heading": piece.bold, "note": is_editorial_note(piece.text)}
                self.lines.append(Line(piece.text, **kind))
            return
        visible = [p for p in pieces if not p.text.isspace()]
        if not visible:
            return
        # A note runs to the end of its line: the links inside it («от 04.05.2020 <a>№ 321-VІ</a> (вводится…)»)
        # are the note's, never normative text of the article above.
        first = next((i for i, p in enumerate(pieces) if p.note and not p.text.isspace()), len(pieces))
        pieces[first:] = [_Piece(p.text, p.bold, True) for p in pieces[first:]]
        visible = [p for p in pieces if not p.text.isspace()]
        normative = [p for p in visible if not p.note]
        text = (
            "".join(p.text for p in pieces if not p.note)
            if len(normative) < len(visible)
            else "".join(p.text for p in pieces)
        )
        if normative and normative[0].bold and not all(p.bold for p in normative):
            lead = "".join(p.text for p in _leading_bold(normative))
            if match_article(normalize_space(lead)):
                self.lines.append(Line(lead, heading=True))
                text = text.replace(lead, "", 1)
                normative = []  # the rest is plain text
        if text.strip():
            bold = bool(normative) and all(p.bold for p in normative)
            self.lines.append(Line(text, heading=bold, note=is_editorial_note(text)))
        notes = "".join(p.text for p in pieces if p.note)
        if notes.strip():
            self.lines.append(Line(notes, note=True))

    def content(self, el: _Element, bold: bool, note: Note) -> None:
        pieces = self.pieces
        if el.text:
            pieces.append(_Piece(el.text, bold, note is not None))
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooDeep(f"markup nested deeper than {MAX_DEPTH} elements")
        for child in el:
            if note is not None and (id(note) in self.cut or self._ends_note(child, note)):
                note = None  # the rest of this element is the document's text again
            self.child(child, bold, note)
            if child.tail:
                self.pieces.append(_Piece(child.tail, bold, note is not None and id(note) not in self.cut))
        self.depth -= 1

    def _ends_note(self, el: _Element, note: _Element) -> bool:
        """True when ``el``, inside a note, shows that the note did not close: a heading (or a block opening
        an article or a section) inside any note, or any block inside an inline note (a ``<span>`` cannot
        hold a paragraph: the parser nested what follows an unclosed one). Only the first characters are
        read."""
        tag = el.tag.lower() if el.tag.__class__ is str else ""
        if tag not in _HEADINGS and tag not in _BLOCKS and tag != "table":
            return False
        lead = normalize_space(_lead(el))
        inline = str(note.tag).lower() not in _BLOCKS and str(note.tag).lower() not in _HEADINGS
        if not lead or not (inline or tag in _HEADINGS or match_article(lead) or structural_rank(lead) is not None):
            return False
        self.cut.add(id(note))
        self._kept.append(note)  # keeps the proxy alive, so its id is never reused for another element
        self.cuts.append(lead[:80])
        return True

    def child(self, el: _Element, bold: bool, note: Note) -> None:
        tag = el.tag
        if tag.__class__ is not str:  # a comment or a processing instruction: never text
            return
        tag = tag.lower()
        if tag in _SKIP:
            return
        if note is None and is_note(el):
            note = el
        if tag == "br":
            self.flush()
        elif tag in _HEADINGS:
            self.flush()
            self.heading(el, note)
        elif tag == "table":
            self.flush()
            self.table(el, note)
        elif tag == "sup":
            self.sup(el, bold, note)
        elif tag in _BLOCKS:
            self.flush()
            self.content(el, bold, note)
            self.flush()
        else:
            self.content(el, bold or tag in _BOLD, note)

    def heading(self, el: _Element, note: Note) -> None:
        inner = _Collector()
        inner.content(el, False, note)
        inner.flush()
        parts = [line.text for line in inner.lines if not line.note]
        self.lines += [Line(h, heading=True) for h in split_heading_lines(parts)]
        self.lines += [line for line in inner.lines if line.note]

    def table(self, el: _Element, note: Note) -> None:
        for row in el.xpath("./tr|./tbody/tr|./thead/tr|./tfoot/tr"):
            cells = [_cell_text(c) for c in row if isinstance(c.tag, str) and c.tag in ("td", "th")]
            text = " | ".join(c for c in cells if c)
            if text:
                self.lines.append(Line(text, note=note is not None or is_editorial_note(text)))

    def sup(self, el: _Element, bold: bool, origin: Note) -> None:
        text, note = normalize_space(text_content(el)), origin is not None
        before = self.pieces[-1].text.rstrip() if self.pieces else ""
        if text.isdigit() and before[-1:].isdigit():
            self.pieces[-1].text = before
            self.add(f"-{text}", bold, note)
        else:
            self.add(text_content(el), bold, note)


def _cell_text(cell: _Element) -> str:
    """A table cell's text on one line: its own line breaks («Президент<br>Республики Казахстан») become spaces."""
    inner = _Collector()
    inner.content(cell, False, None)
    inner.flush()
    return normalize_space(" ".join(line.text for line in inner.lines))


def _leading_bold(pieces: list[_Piece]) -> Iterator[_Piece]:
    for piece in pieces:
        if not piece.bold:
            return
        yield piece


def body_lines(body: _Element, notices: list[str] | None = None) -> list[Line]:
    """The lines of ``body`` (an ``<article>`` or any container) in document order. A note cut at a heading
    it would have swallowed is reported in ``notices`` (the document's, which the audit shows)."""
    collector = _Collector()
    collector.content(body, False, body if is_note(body) else None)
    collector.flush()
    if notices is not None:
        notices += [f"an editorial note did not close: it was ended at «{lead}»" for lead in collector.cuts]
    return collector.lines


# What a top-level block of a page gave (:func:`lines_by_block`): its lines (normalized text, marked heading, note),
# the notes cut inside it, and how many of its text nodes read like an article heading.
BlockLines: TypeAlias = tuple[tuple[tuple[str, bool, bool], ...], tuple[str, ...], int]
_FLUSHING = _BLOCKS | _HEADINGS | {"table", "br"}  # a child that ends the line before it and leaves none open


def block_starts(body: _Element) -> list[bool]:
    """Per child of ``body``: whether it starts a block (:func:`lines_by_block`): an element that ends the line
    before it and leaves none open after it. A block runs to the next one: the text, inline elements and
    comments after it belong to it (their line ends where the next block starts)."""
    return [c.tag.__class__ is str and c.tag.lower() in _FLUSHING for c in body]


def lines_by_block(
    body: _Element,
    begins: list[bool],
    keys: list[bytes | None],
    known: Mapping[bytes, BlockLines],
    read: dict[bytes, BlockLines],
    notices: list[str] | None = None,
) -> tuple[list[Line], int]:
    """:func:`body_lines` of ``body`` (not itself a note), and how many of its text nodes read like an article
    heading (:func:`~extractors.structure.count_heading_like` of its ``itertext()``), a block at a time
    (``begins``, :func:`block_starts`: a block runs to the next one, and its lines depend on its own markup
    alone), each with its key (``keys``, one per child: :mod:`extractors.blocks`; None for a child that starts
    no block, and for a block read as it is). A ``known`` block gives the lines it gave before; any other keyed
    block is read, and what it gave is added to ``read``. The lines of a keyed block come back normalized
    (:func:`~schemas.identifiers.normalize_space`, ``normalized=True``), read or remembered alike, so the
    structure builder does not normalize them again."""
    collector = _Collector()
    lines, cuts = collector.lines, collector.cuts
    heading_like = _heading_like(body.text)
    collector.add(body.text, False, False)
    collector.depth = 1  # as inside :meth:`_Collector.content` of ``body``
    key: bytes | None = None  # the block being read (None: before the first, or one that is not keyed)
    skipping = False  # inside a known block, whose lines are already out
    start = cut = counted_before = 0  # where the block being read began: its lines, cuts and heading count
    for child, child_key, starts in zip(body, keys, begins, strict=True):
        if starts:  # the block before ends here
            if key is not None and not skipping:
                _remember(collector, key, start, cut, heading_like - counted_before, read)
            skipping = False
        if child_key is not None:
            collector.flush()
            key, block = child_key, known.get(child_key)
            skipping = block is not None
            if block is not None:
                lines += [Line(text, heading, note, True) for text, heading, note in block[0]]
                cuts += block[1]
                heading_like += block[2]
                continue
            start, cut, counted_before = len(lines), len(cuts), heading_like
        elif starts:
            key = None  # a block without a key: read as it is
        elif skipping:
            continue
        collector.child(child, False, None)
        if child.tag.__class__ is str:
            heading_like += count_heading_like(child.itertext())
        heading_like += _heading_like(child.tail)
        collector.add(child.tail, False, False)
    if key is not None and not skipping:
        _remember(collector, key, start, cut, heading_like - counted_before, read)
    collector.flush()
    if notices is not None:
        notices += [f"an editorial note did not close: it was ended at «{lead}»" for lead in cuts]
    return lines, heading_like


def _remember(
    collector: _Collector, key: bytes, start: int, cut: int, counted: int, read: dict[bytes, BlockLines]
) -> None:
    """End the block read since ``lines[start]`` (its last line flushed), keep what it gave in ``read`` (with
    ``counted``, its heading-like text nodes) and put its lines back normalized."""
    collector.flush()
    made = tuple((normalize_space(line.text), line.heading, line.note) for line in collector.lines[start:])
    read[key] = (made, tuple(collector.cuts[cut:]), counted)
    collector.lines[start:] = [Line(text, heading, note, True) for text, heading, note in made]


def _heading_like(text: str | None) -> int:
    """:func:`~extractors.structure.count_heading_like` of one text node (most are blank: no regex)."""
    return count_heading_like([text]) if text and not text.isspace() else 0


def text_content(el: _Element) -> str:
    """Every text node under ``el``, in order (what ``lxml.html``'s ``text_content()`` gives; comments and
    processing instructions are not text)."""
    return "".join(el.itertext())


def _lead(el: _Element, size: int = 120) -> str:
    """The first ``size`` or so characters of ``el``'s text (never the whole subtree's)."""
    out: list[str] = []
    for text in el.itertext():
        out.append(text)
        size -= len(text)
        if size <= 0:
            break
    return "".join(out)


def parse_html(text: str | bytes, source_file: str) -> _Element:
    """The page's tree, or :class:`ExtractError`. libxml2's limits on depth and text-node size are raised on
    purpose (the file size is bounded before this), and anything the parser still had to stop at is a
    reject: a page is never read in part without saying so. ``text``: the page's text, or its UTF-8 bytes."""
    if not text.strip():
        raise ExtractError(source_file, "empty file")
    # Plain elements (lxml.html's per-element class lookup cost ~5 % of extraction). The text goes in as UTF-8
    # bytes with that encoding named: lxml refuses a str that opens with an XML declaration (an XHTML page saved
    # as such), and a declared or <meta> charset must not override the decoding already done.
    parser = etree.HTMLParser(huge_tree=True, encoding="utf-8")
    try:
        root = etree.fromstring(text if isinstance(text, bytes) else text.encode("utf-8"), parser=parser)
    except (ParserError, ValueError) as exc:
        raise ExtractError(source_file, f"not parseable as HTML: {exc}") from exc
    if root is None:
        raise ExtractError(source_file, "not parseable as HTML: Document is empty")
    fatal = [e for e in parser.error_log if e.level_name == "FATAL"]
    if fatal:
        raise ExtractError(source_file, f"the HTML parser stopped early: {fatal[0].message.strip()}")
    return root
