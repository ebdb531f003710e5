"""YAML metadata read within fixed bounds: a kazakhstan-law ``meta.yaml``, an older act's front matter, and the same
files as a past commit had them (:mod:`runs.act_history`).

PyYAML's safe loader builds an alias as a second reference to the anchored node, so loading costs nothing; the bill
comes later, when a value is walked (``str()`` of nine levels of nine aliases is 387 million items: 75 s and 3 GB
to publish one act). So the document is first walked as parser events (libyaml's, in C), before anything is built,
and refused when

- it is over :data:`MAX_BYTES`;
- it holds more than :data:`MAX_ALIASES` aliases, or its nodes *with every alias expanded* are more than
  :data:`MAX_NODES` (a few aliases of a small mapping pass; a bomb of any shape does not);
- it nests deeper than :data:`MAX_DEPTH`;
- walking it takes longer than :data:`MAX_SECONDS`;
- it is not one mapping, or a value cannot be built (a date «0000-01-01»).

Beyond a bound the refusal is a :class:`~extractors.bounded.Refused` naming the file and the bound (malformed
metadata, an :class:`~extractors.model.ExtractError`); real metadata (a few KB, no anchors, depth 4) is read as
before.
"""

from __future__ import annotations

import time
from typing import Any

from extractors.bounded import Refused
from extractors.model import ExtractError

MAX_BYTES = 256 * 1024  # a meta.yaml is a few KB; a bigger one is not one
MAX_ALIASES = 64
MAX_NODES = 20_000  # scalars, sequences and mappings, every alias counted as the nodes it stands for
MAX_DEPTH = 32
MAX_SECONDS = 2.0
_CHECK_EVERY = 1024  # events between two looks at the clock


def loader() -> Any:
    """PyYAML's safe loader, in C when libyaml is there (1.3 ms → 0.1 ms a ``meta.yaml``: the full run of a scope
    parses one for every version of every act)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_mapping(raw: bytes, where: str) -> dict[str, Any]:
    """``raw`` as a mapping of keys, within the bounds above; else :class:`ExtractError` for ``where``."""
    import yaml

    if len(raw) > MAX_BYTES:
        raise Refused(where, f"the act's metadata is {len(raw):,} bytes, over {MAX_BYTES:,}")
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise ExtractError(where, f"malformed metadata: not UTF-8 at byte {exc.start}") from exc
    try:
        _check_events(yaml.parse(text, Loader=loader()), where)
        loaded = yaml.load(text, Loader=loader())
    except ExtractError:
        raise
    except yaml.YAMLError as exc:
        raise ExtractError(where, f"malformed metadata: {str(exc).splitlines()[0][:200]}") from exc
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # a value the constructor cannot build
        raise ExtractError(where, f"malformed metadata: {type(exc).__name__}: {str(exc)[:200]}") from exc
    if not isinstance(loaded, dict):
        raise ExtractError(where, "malformed metadata: not a mapping of keys")
    return loaded


def _check_events(events: Any, where: str) -> None:
    """Walk the parser's events once, counting what building the document would make: linear in its bytes."""
    import yaml

    started = time.monotonic()
    sizes: dict[str, int] = {}  # anchor → the nodes its value stands for, aliases expanded
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, nodes so far) of each collection being read
    total = aliases = 0
    for n, event in enumerate(events):
        if n % _CHECK_EVERY == 0 and time.monotonic() - started > MAX_SECONDS:
            raise Refused(where, f"the act's metadata took over {MAX_SECONDS:g} s to read")
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise Refused(where, f"the act's metadata uses over {MAX_ALIASES} aliases")
            size = sizes.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            open_nodes.append((event.anchor, 1))
            if len(open_nodes) > MAX_DEPTH:
                raise Refused(where, f"the act's metadata nests deeper than {MAX_DEPTH} levels")
            total += 1
            continue
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            anchor, size = open_nodes.pop()
            if anchor:
                sizes[anchor] = size
            if open_nodes:  # the collection's nodes are already in the total: only its parent grows
                parent, count = open_nodes[-1]
                open_nodes[-1] = (parent, count + size)
            continue
        else:
            continue
        total += size
        if open_nodes:
            parent, count = open_nodes[-1]
            open_nodes[-1] = (parent, count + size)
        if total > MAX_NODES:
            raise Refused(where, f"the act's metadata expands to over {MAX_NODES:,} values (aliases counted)")
