"""A version's word-level indexes, built together and published in one folder (``lexical/``): BM25 over its
chunks (:mod:`vectors.lexical`), its documents' cards (:mod:`vectors.documents`) and its Kazakh↔Russian
bridge (:mod:`vectors.bridge`)."""

from __future__ import annotations

from pathlib import Path

from vectors.bridge import BRIDGE, build_bridge
from vectors.documents import DOC_CARDS, build_cards
from vectors.lexical import build_lexical


def build_word_indexes(enriched: Path, out: Path, previous: Path | None = None) -> int:
    """Every word-level index of the version whose chunks are ``enriched``, to ``out`` (replaced whole);
    returns the number of chunks. ``previous``, the last version's ``lexical/`` folder where there is one: what
    it holds of unchanged chunks is reused (:func:`vectors.lexical.build_lexical`,
    :func:`vectors.bridge.build_bridge`)."""

    def bridge(chunks: Path, folder: Path) -> None:
        build_bridge(chunks, folder / BRIDGE, previous=previous / BRIDGE if previous is not None else None)

    def cards(chunks: Path, folder: Path) -> None:
        build_cards(chunks, folder / DOC_CARDS, previous=previous / DOC_CARDS if previous is not None else None)

    return build_lexical(enriched, out, extras=(cards, bridge), previous=previous)
