"""Errors of the query side, light to import (the CLI catches them without loading Chroma)."""

from __future__ import annotations

from schemas.errors import ZanError


class LookupProblem(ZanError):
    """The published data cannot serve lookups: no registry, no index, or an index built by another embedder."""


class BadQuestion(LookupProblem):
    """The question or a parameter is out of bounds (too long, a page out of range): the asker's to fix."""
