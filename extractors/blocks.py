"""A page read again where it changed: its top-level blocks remembered between reads.

An edited act is read again whole, yet an edit touches a few paragraphs of a page of hundreds of blocks
(``benchmarks/README.md``: 460 of the 95 362 top-level blocks of the 120 pages a 1 % text edit changes). Turning
each block into lines (:func:`extractors.html_lines.body_lines`) and normalizing them is most of a page's
reading; so a run hands the extractor what the file's blocks gave last time (:class:`BlockMemo`, set for one
file at a time with :func:`remembering`), and :func:`page_lines` reads again only the blocks it does not know.

A page's ``<article>`` is read a block at a time (:func:`~extractors.html_lines.block_starts`: a block starts at
a child that ends the line before it, and runs to the next one, with the text and inline elements after it),
and a block's lines depend on its own markup alone. A block is known by its source bytes, not by its parsed
tree (serialising each block to hash it cost more than reading it): its key is a hash of its tag, its place
among the children that start on the same source line, and the source lines from the one it starts on to the
one the next block starts on (or the end of the page), which hold all of its markup. Inside ``<article>`` a
top-level child is parsed from its own bytes (the parser's open elements there are the page's, the same at
every child), so equal keys give equal lines. Source lines are those the parser numbers (line feeds; a carriage
return alone starts no line for it either); its numbers stop at 65 535, so a block from there on is read as
it is. Pages under :data:`MIN_BYTES` are always read whole (reading them costs less than remembering them).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

import numpy as np
from lxml.etree import _Element

from extractors.html_lines import BlockLines, block_starts, body_lines, is_note, lines_by_block
from extractors.structure import Line, count_heading_like

MIN_BYTES = 64 << 10
_LAST_LINE = 65_535  # libxml2 numbers lines up to here, then says 65 535 for every later one


class BlockMemo:
    """What one file's blocks gave when it was last read (``known``, by key), and what they give in this read
    (``fresh``: every keyed block of the page, read or remembered, which is what the next read may use)."""

    def __init__(self, known: Mapping[bytes, BlockLines] | None = None) -> None:
        self.known: Mapping[bytes, BlockLines] = known or {}
        self.fresh: dict[bytes, BlockLines] = {}
        self.read = 0  # blocks read in this read (not known)


_MEMO: ContextVar[BlockMemo | None] = ContextVar("zan_block_memo", default=None)


@contextlib.contextmanager
def remembering(memo: BlockMemo) -> Iterator[BlockMemo]:
    """Let the pages read inside the block use ``memo`` (one file's: the caller sets one per file)."""
    token = _MEMO.set(memo)
    try:
        yield memo
    finally:
        _MEMO.reset(token)


def page_lines(body: _Element, source: bytes, notices: list[str] | None = None) -> tuple[list[Line], int]:
    """The lines of a page's ``body`` and how many of its text nodes read like an article heading, from the
    blocks the current :class:`BlockMemo` knows where it can (``source``: the page's bytes, as parsed). With no
    memo set, a page under :data:`MIN_BYTES`, or a body that is itself a note, the page is read whole."""
    memo = _MEMO.get()
    if memo is None or len(source) < MIN_BYTES or is_note(body):
        return body_lines(body, notices), count_heading_like(body.itertext())
    begins = block_starts(body)
    keys = block_keys(body, source, begins)
    read: dict[bytes, BlockLines] = {}
    lines, heading_like = lines_by_block(body, begins, keys, memo.known, read, notices)
    memo.read += len(read)
    memo.fresh.update((key, read.get(key) or memo.known[key]) for key in keys if key is not None)
    return lines, heading_like


def block_keys(body: _Element, source: bytes, begins: list[bool]) -> list[bytes | None]:
    """One key per child of ``body`` that starts a block (``begins``: :func:`~extractors.html_lines.block_starts`),
    None for the others and for a block whose source lines are not known; ``source``: the bytes it was parsed
    from."""
    feeds = np.flatnonzero(np.frombuffer(source, dtype=np.uint8) == 10)
    starts = [0, *(feeds + 1).tolist()]  # line n starts at byte starts[n - 1]
    numbered = min(len(starts), _LAST_LINE - 1)  # the lines the parser's numbers name one by one
    children = list(body)
    lines = [child.sourceline or 0 for child in children]
    ordinals = [0] * len(lines)  # how many children before this one start on its line
    for n in range(1, len(lines)):
        if lines[n] == lines[n - 1]:
            ordinals[n] = ordinals[n - 1] + 1
    blocks = [n for n, starts in enumerate(begins) if starts]
    keys: list[bytes | None] = [None] * len(children)
    view = memoryview(source)
    for at, n in enumerate(blocks):
        line = lines[n]
        following = lines[blocks[at + 1]] if at + 1 < len(blocks) else None
        if not 0 < line <= numbered or (following is not None and not line <= following <= numbered):
            continue
        end = len(source) if following is None or following >= len(starts) else starts[following]
        digest = hashlib.blake2b(b"%s\0%d\0" % (str(children[n].tag).encode(), ordinals[n]), digest_size=16)
        digest.update(view[starts[line - 1] : end])
        keys[n] = digest.digest()
    return keys
