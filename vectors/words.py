"""A version's word-level indexes, built together and published in one folder (``lexical/``): BM25 over its
chunks (:mod:`vectors.lexical`), its documents' cards (:mod:`vectors.documents`) and its Kazakh↔Russian
bridge (:mod:`vectors.bridge`)."""

from __future__ import annotations

from pathlib import Path

from vectors.bridge import BRIDGE, build_bridge
from vectors.documents import DOC_CARDS, build_cards
from vectors.lexical import build_lexical


def build_word_indexes(enriched: Path, out: Path) -> int:
    """Every word-level index of the version whose chunks are ``enriched``, to ``out`` (replaced whole);
    returns the number of chunks."""
    return build_lexical(enriched, out, extras=(_cards, _bridge))


def _cards(enriched: Path, folder: Path) -> None:
    build_cards(enriched, folder / DOC_CARDS)


def _bridge(enriched: Path, folder: Path) -> None:
    build_bridge(enriched, folder / BRIDGE)
