"""What the published lineage (``lineage.parquet``) tells a lookup: the edition an article is in, and the
articles an amending act changed. Loaded once per :class:`~lookup.route.Lookup`; a version published before
lineage existed simply has none."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.identifiers import article_order

_CHANGES = ("new_edition", "amended", "added")


@dataclass(frozen=True)
class Change:
    """One relation, as the lookup reports it."""

    doc_id: str | None  # None: an amended act zan does not hold (``affected`` names it)
    article: str | None
    target: str
    relation: str
    by_written: str
    by_date: dt.date | None
    takes_effect: dt.date | None
    takes_effect_text: str | None
    affected: str | None = None

    @property
    def document(self) -> str:
        """How to name the changed document: its doc_id, or the act as the amending text wrote it."""
        return self.doc_id or self.affected or "?"

    def as_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "affected": self.affected,
            "article": self.article,
            "target": self.target,
            "relation": self.relation,
            "by": self.by_written,
            "by_date": self.by_date.isoformat() if self.by_date else None,
            "takes_effect": self.takes_effect.isoformat() if self.takes_effect else self.takes_effect_text,
        }


@dataclass
class LineageIndex:
    by_article: dict[tuple[str, str], list[Change]] = field(default_factory=dict)
    by_number: dict[str, list[Change]] = field(default_factory=dict)

    @classmethod
    def load_file(cls, path: Path) -> LineageIndex:
        """One version's ``lineage.parquet`` (empty when the version has none)."""
        if not path.exists():
            return cls()
        import pyarrow.parquet as pq

        by_article: dict[tuple[str, str], list[Change]] = defaultdict(list)
        by_number: dict[str, list[Change]] = defaultdict(list)
        for row in pq.read_table(path).to_pylist():
            if row["language"] not in (None, "rus"):  # one edition's notes are enough to say who changed it
                continue
            names = (
                "doc_id",
                "article",
                "target",
                "relation",
                "by_written",
                "by_date",
                "takes_effect",
                "takes_effect_text",
                "affected",
            )
            change = Change(*(row.get(n) for n in names))
            if row["article"] and row["doc_id"]:
                by_article[(row["doc_id"], row["article"])].append(change)
            if row["by_number"]:
                by_number[row["by_number"]].append(change)
        return cls(dict(by_article), dict(by_number))

    def edition(self, doc_id: str, article: str) -> Change | None:
        """The latest change of an article (its current edition), or None when no note names one."""
        changes = [c for c in self.by_article.get((doc_id, article), []) if c.relation in _CHANGES and c.by_date]
        return max(changes, key=lambda c: c.by_date or dt.date.min, default=None)

    def changed_by(self, number: str) -> list[Change]:
        """What the act numbered ``number`` (canonical: 321-VI) changed, one row per article or part."""
        seen: dict[tuple[str, str | None, str], Change] = {}
        for c in self.by_number.get(number, []):
            seen.setdefault((c.document, c.article, c.relation), c)
        return sorted(seen.values(), key=lambda c: (c.document, article_order(c.article), c.relation))
