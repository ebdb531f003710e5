"""A first-character gate for large alternations: the lookup grammar's issuer and code names
(:mod:`lookup.gate`), the relation phrases of editorial notes (:mod:`extractors.notes`).

Python's regex engine tries every alternative of a pattern at every position of the text. The order rows
alternate over a hundred issuer spellings, each behind a look-behind, so a 90-character question cost a
millisecond per row before any identifier was found. :func:`gate` reads an alternative's own parse tree for
the characters a match can start with and puts them in front as a look-ahead: a position that cannot start a
match fails on one character class. The matches are the same by construction (a look-ahead consumes
nothing, groups keep their numbers and names); when the start characters cannot be listed (an alternative
that may start with any letter, or matches the empty string) it is left as it was.
``tests/test_lookup_grammar.py`` compares the grammar with and without gates on every row;
``tests/test_lineage.py`` the notes' relation phrases.
"""

from __future__ import annotations

import re
from re import _constants as c  # type: ignore[attr-defined]  # the parse tree's opcodes (CPython ≥ 3.11)
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

MAX_CHARS = 400  # a larger start set prunes little and makes a slow class


class _Open(Exception):
    """The start characters cannot be listed."""


def gate(regex: str, flags: int = 0) -> str:
    """``(?:regex)`` behind a look-ahead of its possible first characters (none when they cannot be listed):
    for one alternative of a larger pattern, which is matched under that pattern's flags."""
    try:
        chars, empty = _first(list(parser.parse(regex, flags)))
    except (_Open, re.error):
        return f"(?:{regex})"
    if empty or not chars or len(chars) > MAX_CHARS:
        return f"(?:{regex})"
    return f"(?=[{''.join(re.escape(ch) for ch in sorted(chars))}])(?:{regex})"


def _first(items: list[tuple[Any, Any]]) -> tuple[set[str], bool]:
    """(characters a match of ``items`` can start with, whether ``items`` can match the empty string)."""
    chars: set[str] = set()
    for op, av in items:
        if op is c.LITERAL:
            return chars | {chr(av)}, False
        if op is c.IN:
            return chars | _in_set(av), False
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):  # zero-width: the next item starts the match
            continue
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if (add_flags | del_flags) & re.IGNORECASE:
                raise _Open  # a scoped case flag the look-ahead would not share
            found, empty = _first(list(sub))
        elif op is c.BRANCH:
            found, empty = set(), False
            for alternative in av[1]:
                got, can_be_empty = _first(list(alternative))
                found |= got
                empty = empty or can_be_empty
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, _high, sub = av
            found, empty = _first(list(sub))
            empty = empty or low == 0
        elif op is c.ATOMIC_GROUP:
            found, empty = _first(list(av))
        else:  # ANY, CATEGORY, NOT_LITERAL, group references, conditionals: any character may start it
            raise _Open
        chars |= found
        if not empty:
            return chars, False
    return chars, True


def _in_set(av: list[tuple[Any, Any]]) -> set[str]:
    out: set[str] = set()
    for op, value in av:
        if op is c.LITERAL:
            out.add(chr(value))
        elif op is c.RANGE and value[1] - value[0] < MAX_CHARS:
            out.update(chr(n) for n in range(value[0], value[1] + 1))
        else:  # NEGATE, CATEGORY (\w, \d), a wide range
            raise _Open
    return out
