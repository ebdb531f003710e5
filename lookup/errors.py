"""Errors of the query side, light to import (the CLI catches them without loading Chroma)."""

from __future__ import annotations


class LookupProblem(RuntimeError):
    """The published data cannot serve lookups: no registry, no index, or an index built by another embedder."""
