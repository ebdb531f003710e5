"""The kinds of document zan knows, as one type the checker sees at every assignment and comparison.

Values read from outside (reference data, a parquet file written by an older zan) pass through
:func:`as_doc_type`, so an unknown kind is an error at the boundary, not a silent new branch."""

from __future__ import annotations

from typing import Literal, get_args

DocType = Literal[
    "constitution",
    "code",
    "law",
    "decree",  # Указ Президента
    "resolution",  # Постановление (the Government's, an akimat's)
    "order",  # Приказ (a minister's, a committee's)
    "decision",  # Решение (a maslikhat's, an akim's)
    "ruling",  # Нормативное постановление (a court's)
    "instruction",  # Распоряжение
    "standard",  # an international or national standard
]
DOC_TYPES: tuple[DocType, ...] = get_args(DocType)


def as_doc_type(value: str | None) -> DocType | None:
    """``value`` as a :data:`DocType` (None stays None); anything else is a :class:`ValueError`."""
    if value is None:
        return None
    for kind in DOC_TYPES:
        if value == kind:
            return kind
    raise ValueError(f"unknown document type {value!r}: one of {', '.join(DOC_TYPES)}")
