"""The text in force on a date, and an act's versions: the reading side of a version's ``history.parquet``.

Built by a run from the git sources' commits (:mod:`runs.act_history`): one row per version of each part of
each act (``unit``: the chunks' structural path, ``art156``, ``kaz/ch2``), with the version's date. Read here
into an index by act and part, each part's versions sorted by date, so the version in force on a date is
one binary search, however many versions an act has (:meth:`ActHistory.as_of`); texts are read from the
file's row groups only for the rows returned.
"""

from __future__ import annotations

import bisect
import datetime as dt
import difflib
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from lookup.chunks import Chunk
from lookup.version import Narrowing, Snapshot

HISTORY = "history.parquet"
MAX_DIFF_WORDS = 400  # words of a part compared for a version's diff; a longer part is compared by its start


@dataclass(frozen=True)
class Past:
    """One version of one part of an act."""

    doc_id: str
    language: str
    unit: str
    heading: str | None
    version_date: dt.date
    commit: str
    committed: dt.date
    event: str  # text, or repealed
    text: str | None

    @property
    def article(self) -> str | None:
        """The article label the part is (``art156`` → ``156``), or None for a chapter, a section, a preamble."""
        return _article(self.unit)

    def as_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "language": self.language, "unit": self.unit, "article": self.article,
                "heading": self.heading, "version_date": self.version_date.isoformat(), "commit": self.commit,
                "committed": self.committed.isoformat(), "event": self.event, "text": self.text}  # fmt: skip


@dataclass
class Version:
    """A date on which an act changed: the commit, and each part it changed, with a word diff."""

    version_date: dt.date
    commit: str
    committed: dt.date
    changed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"version_date": self.version_date.isoformat(), "commit": self.commit,
                "committed": self.committed.isoformat(), "changed": self.changed}  # fmt: skip


_Key = tuple[str, str]  # (language, unit)


class ActHistory:
    """One version's history of acts, indexed by act and part."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = pq.ParquetFile(path)
        self._lock = threading.Lock()
        columns = ["doc_id", "language", "unit", "version_date", "commit", "committed", "event"]
        self.index: dict[str, dict[_Key, list[tuple[dt.date, int]]]] = defaultdict(lambda: defaultdict(list))
        self.rows: list[tuple[str, str, str, dt.date, str, dt.date, str]] = []
        position = 0
        for batch in self.file.iter_batches(batch_size=65_536, columns=columns):
            for row in zip(*(batch.column(c).to_pylist() for c in columns), strict=True):
                self.rows.append(row)
                self.index[row[0]][(row[1], row[2])].append((row[3], position))
                position += 1
        for parts in self.index.values():
            for versions in parts.values():
                versions.sort()
        self._group_starts = [0]
        for n in range(self.file.metadata.num_row_groups):
            self._group_starts.append(self._group_starts[-1] + self.file.metadata.row_group(n).num_rows)

    @classmethod
    def open(cls, version_folder: Path) -> ActHistory | None:
        path = version_folder / HISTORY
        return cls(path) if path.exists() and pq.ParquetFile(path).metadata.num_rows else None

    def has(self, doc_id: str) -> bool:
        return doc_id in self.index

    def _text(self, position: int) -> tuple[str | None, str | None]:
        group = bisect.bisect_right(self._group_starts, position) - 1
        with self._lock:
            table = self.file.read_row_group(group, columns=["heading", "text"])
        at = position - self._group_starts[group]
        return table.column("heading")[at].as_py(), table.column("text")[at].as_py()

    def _past(self, position: int) -> Past:
        doc, language, unit, version, commit, committed, event = self.rows[position]
        heading, text = self._text(position)
        return Past(doc, language, unit, heading, version, commit, committed, event, text)

    def as_of(self, doc_id: str, date: dt.date, articles: tuple[str, ...] = ()) -> tuple[list[Past], Past | None]:
        """Each part of ``doc_id`` as in force on ``date`` (only the named ``articles``' parts, when given),
        in part order; and the repeal the act had by then, if any."""
        parts = self.index.get(doc_id, {})
        repeal = None
        found = []
        for (_language, unit), versions in sorted(parts.items()):
            at = bisect.bisect_right(versions, (date, len(self.rows))) - 1
            if at < 0:
                continue
            position = versions[at][1]
            if self.rows[position][6] == "repealed":
                repeal = self._past(position)
                continue
            if articles and _article(unit) not in articles:
                continue
            found.append(self._past(position))
        return found, repeal

    def dates(self, doc_id: str) -> list[tuple[dt.date, str]]:
        """The act's versions as (date, commit), oldest first, without reading any text."""
        found = {(self.rows[p][3], self.rows[p][4]) for v in self.index.get(doc_id, {}).values() for _, p in v}
        return sorted(found)

    def first_version(self, doc_id: str) -> dt.date | None:
        dates = [v[0][0] for v in self.index.get(doc_id, {}).values() if v]
        return min(dates) if dates else None

    def versions(self, doc_id: str, max_versions: int = 200) -> list[Version]:
        """The act's versions, oldest first, each with the parts it changed and a word diff of each."""
        by_date: dict[tuple[dt.date, str], Version] = {}
        for (language, unit), versions in sorted(self.index.get(doc_id, {}).items()):
            previous: str | None = None
            for date, position in versions:
                commit, committed, event = self.rows[position][4], self.rows[position][5], self.rows[position][6]
                version = by_date.setdefault((date, commit), Version(date, commit, committed))
                if event == "repealed":
                    version.changed.append({"language": language, "unit": None, "event": "repealed"})
                    continue
                heading, text = self._text(position)
                version.changed.append({"language": language, "unit": unit, "article": _article(unit),
                                        "heading": heading, "event": "added" if previous is None else "changed",
                                        "diff": word_diff(previous or "", text or "")})  # fmt: skip
                previous = text
        return [by_date[k] for k in sorted(by_date)][:max_versions]


def _article(unit: str) -> str | None:
    last = unit.rsplit("/", 1)[-1]
    return last[3:].split("@", 1)[0] if last.startswith("art") else None


def word_diff(old: str, new: str) -> str:
    """«[-old words-]{+new words+}» around what changed, the rest elided to a few words of context."""
    a, b = old.split()[:MAX_DIFF_WORDS], new.split()[:MAX_DIFF_WORDS]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            same = a[i1:i2]
            out.append(" ".join(same) if len(same) <= 8 else " ".join([*same[:3], "…", *same[-3:]]))
            continue
        if i2 > i1:
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    return " ".join(out)


def version_link(source_url: str | None, portal_id: str | None, language: str, date: dt.date) -> str | None:
    """The zan.gov.kz address of an act's version on a date (the portal keeps every version by its date)."""
    code = portal_id
    if code is None and source_url and "/doc/" in source_url:
        code = source_url.split("/doc/", 1)[1].split("/", 1)[0]
    if not code or not code.isdigit():
        return None
    return f"https://zan.gov.kz/client/#!/doc/{code}/{language}/{date:%d.%m.%Y}"


def history_of(snap: Snapshot) -> ActHistory | None:
    """The version's history, read on first use and kept with it (None: no act of it was read from git)."""
    with _open_lock:
        if "history" not in snap.views:
            snap.views["history"] = ActHistory.open(snap.folder)
        found = snap.views["history"]
    return found if isinstance(found, ActHistory) else None


_open_lock = threading.Lock()


def past_texts(
    snap: Snapshot, plan: dict[str, Narrowing], chunks: list[Chunk], as_of: dt.date, k_per_doc: int
) -> tuple[list[Chunk], list[dict[str, Any]], list[str]]:
    """The chunks of an answer with each named act's text as in force on ``as_of`` where the version holds
    its history (its parts, narrowed to the named articles), the edition answered from per act, and what
    the hint must say (which edition; none kept; not yet in force; repealed by then)."""
    history = history_of(snap)
    docs = snap.registry.docs
    out: list[Chunk] = []
    editions: list[dict[str, Any]] = []
    notes: list[str] = []
    for doc_id, narrowing in plan.items():
        current = [c for c in chunks if c.doc_id == doc_id]
        info = docs.get(doc_id)
        ref = info.ref if info else doc_id
        if history is None or not history.has(doc_id):
            notes.append(f"⚠ {ref}: истории редакций нет — показана действующая редакция, не на {as_of:%d.%m.%Y}.")
            out += current
            editions.append({"doc_id": doc_id, "as_of": as_of.isoformat(), "version_date": None, "commit": None,
                             "link": None, "found": "current"})  # fmt: skip
            continue
        pasts, repeal = history.as_of(doc_id, as_of, narrowing.articles)
        if repeal is not None:
            notes.append(f"⚠ {ref}: на {as_of:%d.%m.%Y} акт уже утратил силу (с {repeal.version_date:%d.%m.%Y}).")
        if not pasts:
            first = history.first_version(doc_id)
            notes.append(f"⚠ {ref}: на {as_of:%d.%m.%Y} текста нет (первая известная редакция — "
                         f"{first:%d.%m.%Y})." if first else f"⚠ {ref}: на {as_of:%d.%m.%Y} текста нет.")  # fmt: skip
            editions.append({"doc_id": doc_id, "as_of": as_of.isoformat(), "version_date": None, "commit": None,
                             "link": None, "found": "none"})  # fmt: skip
            continue
        newest = max(pasts, key=lambda p: (p.version_date, p.committed))
        language = newest.language
        link = version_link(info.source_url if info else None, info.portal_id if info else None, language,
                            newest.version_date)  # fmt: skip
        editions.append({"doc_id": doc_id, "as_of": as_of.isoformat(), "found": "history", "link": link,
                         "version_date": newest.version_date.isoformat(), "commit": newest.commit})  # fmt: skip
        where = f"; {link}" if link else ""
        notes.append(f"Текст {ref} — в редакции, действовавшей на {as_of:%d.%m.%Y}: версия от "
                     f"{newest.version_date:%d.%m.%Y} (commit {newest.commit[:12]}){where}.")  # fmt: skip
        for past in _chosen(pasts, k_per_doc):
            text = "\n".join(x for x in (past.heading, past.text) if x)
            out.append(Chunk(f"{doc_id}:{past.unit}@{past.version_date.isoformat()}", doc_id, [],
                             [past.article] if past.article else [], text, 1.0, language=past.language,
                             found_by="identifier"))  # fmt: skip
    named = set(plan)
    return out + [c for c in chunks if c.doc_id not in named], editions, notes


def _chosen(pasts: list[Past], k: int) -> list[Past]:
    """The parts answered, in one language (Russian first) and part order: every named article's part
    (``pasts`` were narrowed to them), else the act's first ``k``."""
    languages = sorted({p.language for p in pasts}, key=lambda lang: (lang != "rus", lang))
    first = [p for p in pasts if p.language == languages[0]]
    return first if len(first) <= k or all(p.article for p in first) else first[:k]
