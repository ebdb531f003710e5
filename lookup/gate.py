"""The lookup grammar's gates (:func:`schemas.regex_gate.gate`), which a process can turn off.

The order rows alternate over a hundred issuer spellings and the code rows over every code's names; each
alternative goes behind a look-ahead of its first characters. Whole rows are not gated: reading their parse
trees cost 0.4 s of every process's first question for 0.07 ms a question.
"""

from __future__ import annotations

from schemas.regex_gate import gate as _gate

_ON = [True]


def use_gates(on: bool) -> None:
    """Gates cost ~0.2 s when the grammar is built and save ~1.6 ms a question: worth it in a process that
    answers many (``zan serve``, ``zan eval``, a library user), not in one that answers one and exits
    (``zan lookup``), which turns them off before its grammar is built. The matches are the same either way."""
    _ON[0] = on


def gate(regex: str, flags: int = 0) -> str:
    """``(?:regex)`` behind a look-ahead of its first characters while gates are on (:func:`use_gates`)."""
    return _gate(regex, flags) if _ON[0] else f"(?:{regex})"
