"""What each page's blocks gave when it was last read, kept between runs (:mod:`extractors.blocks`).

One file per source page, ``HOME/cache/blocks/<hash of its path>.pickle``: the code fingerprint, the path and
its blocks (key → lines). The extracting process that reads a page loads its file first and writes it again
after, so memory holds one page's blocks at a time. It is a memo, not data: it belongs to no version, a run
that fails leaves it as right as before (a block is known by its bytes), and a file that is missing, damaged
or written by other code only means the page is read whole. So it is written without a sync (a crash at worst
leaves a file that does not load), and a page whose blocks did not change is not written again. Files of
pages no longer in the published version are removed at publish (:meth:`BlockStore.keep`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from extractors.blocks import BlockMemo, remembering
from extractors.html_lines import BlockLines
from runs.scope import code_fingerprint

BLOCKS = "cache/blocks"  # under HOME


class BlockStore:
    """The memo files of one HOME."""

    def __init__(self, home: Path) -> None:
        self.folder = home / BLOCKS

    def path(self, source: str) -> Path:
        return self.folder / f"{hashlib.blake2b(source.encode(), digest_size=16).hexdigest()}.pickle"

    @contextlib.contextmanager
    def reading(self, source: Path) -> Iterator[BlockMemo]:
        """A memo of ``source``'s blocks for the read inside the block; what the read gave is kept when the
        block ends without error (a file that is no page, or no longer one, keeps no memo)."""
        memo = BlockMemo(self._load(str(source)))
        with remembering(memo):
            yield memo
        self._save(str(source), memo)

    def _load(self, source: str) -> dict[bytes, BlockLines]:
        try:
            with open(self.path(source), "rb") as handle:
                held = pickle.load(handle)
        except FileNotFoundError:
            return {}
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, MemoryError):
            return {}  # a damaged memo is no memo
        ok = isinstance(held, dict) and held.get("fingerprint") == code_fingerprint() and held.get("source") == source
        blocks = held.get("blocks") if ok else None
        return cast(dict[bytes, BlockLines], blocks) if isinstance(blocks, dict) else {}

    def _save(self, source: str, memo: BlockMemo) -> None:
        path = self.path(source)
        if not memo.fresh:
            path.unlink(missing_ok=True)  # not a page (or no longer one): nothing to remember
            return
        if not memo.read and len(memo.fresh) == len(memo.known):
            return  # every block was known, and nothing it knew went away: the file is as it should be
        held = {"fingerprint": code_fingerprint(), "source": source, "blocks": memo.fresh}
        tmp = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=self.folder)
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(held, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:  # a memo that cannot be written only means the page is read whole next time
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            path.unlink(missing_ok=True)

    def keep(self, sources: Iterable[str]) -> int:
        """Remove the memo files of pages not among ``sources`` (and any left-over temporary file); returns how
        many were removed."""
        if not self.folder.is_dir():
            return 0
        live = {self.path(source).name for source in sources}
        removed = 0
        for entry in os.scandir(self.folder):
            if entry.name not in live:
                Path(entry.path).unlink(missing_ok=True)
                removed += 1
        return removed
