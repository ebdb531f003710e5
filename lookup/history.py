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
from typing import Any

from enrich.history_file import HistoryFile
from enrich.history_file import HistoryRow as _Row
from lookup.chunks import Chunk
from lookup.version import Narrowing, Snapshot

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
        return {
            "doc_id": self.doc_id,
            "language": self.language,
            "unit": self.unit,
            "article": self.article,
            "heading": self.heading,
            "version_date": self.version_date.isoformat(),
            "commit": self.commit,
            "committed": self.committed.isoformat(),
            "event": self.event,
            "text": self.text,
        }


@dataclass
class Version:
    """A date on which an act changed: the commit, and each part it changed, with a word diff."""

    version_date: dt.date
    commit: str
    committed: dt.date
    changed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version_date": self.version_date.isoformat(),
            "commit": self.commit,
            "committed": self.committed.isoformat(),
            "changed": self.changed,
        }


@dataclass(frozen=True)
class InForce:
    """What :meth:`ActHistory.as_of` answers."""

    pasts: list[Past]
    repeal: Past | None
    newest: _Row | None  # the newest version among every part in force, read or not

    @property
    def language(self) -> str | None:
        return self.newest.language if self.newest else None


class ActHistory(HistoryFile):
    """One version's history of acts, read act by act (:class:`~enrich.history_file.HistoryFile`): the text in
    force on a date, an act's versions and what each changed."""

    def _pasts(self, doc_id: str, rows: list[_Row]) -> list[Past]:
        texts = self._texts([r for r in rows if r.event != "repealed"])
        out = []
        for r in rows:
            heading, text = texts.get((r.group, r.at), (None, None))
            out.append(Past(doc_id, r.language, r.unit, heading, r.version_date, r.commit, r.committed, r.event, text))
        return out

    def has(self, doc_id: str) -> bool:
        return bool(self._parts(doc_id))

    def as_of(self, doc_id: str, date: dt.date, articles: tuple[str, ...] = (), limit: int | None = None) -> InForce:
        """Each part of ``doc_id`` as in force on ``date`` (only the named ``articles``' parts, when given;
        the first ``limit`` parts of each language, when given), in part order; the repeal the act had by
        then, if any; and the newest version among all its parts in force (the edition answered from). Texts
        are read for the parts returned only."""
        repeal = None
        newest: _Row | None = None
        chosen: list[_Row] = []
        taken: dict[str, int] = defaultdict(int)
        for (language, unit), versions in sorted(self._parts(doc_id).items()):
            at = bisect.bisect_right([v.version_date for v in versions], date) - 1
            if at < 0:
                continue
            row = versions[at]
            if row.event == "repealed":
                repeal = row
                continue
            if newest is None or (row.version_date, row.committed) > (newest.version_date, newest.committed):
                newest = row
            if articles and _article(unit) not in articles:
                continue
            if limit is not None and taken[language] >= limit:
                continue
            taken[language] += 1
            chosen.append(row)
        pasts = self._pasts(doc_id, chosen)
        gone = self._pasts(doc_id, [repeal])[0] if repeal is not None else None
        return InForce(pasts, gone, newest)

    def dates(self, doc_id: str) -> list[tuple[dt.date, str]]:
        """The act's versions as (date, commit), oldest first, without reading any text."""
        return sorted({(r.version_date, r.commit) for versions in self._parts(doc_id).values() for r in versions})

    def first_version(self, doc_id: str) -> dt.date | None:
        dates = [versions[0].version_date for versions in self._parts(doc_id).values() if versions]
        return min(dates) if dates else None

    def versions(self, doc_id: str, max_versions: int = 200) -> list[Version]:
        """The act's versions, oldest first, each with the parts it changed and a word diff of each."""
        parts = self._parts(doc_id)
        kept = {(r.version_date, r.commit) for versions in parts.values() for r in versions}
        kept = set(sorted(kept)[:max_versions])
        rows = [r for versions in parts.values() for r in versions]
        texts = self._texts([r for r in rows if r.event != "repealed"])
        by_date: dict[tuple[dt.date, str], Version] = {}
        for (language, unit), versions in sorted(parts.items()):
            previous: str | None = None
            for row in versions:
                text = texts.get((row.group, row.at), (None, None))
                if (row.version_date, row.commit) in kept:
                    version = by_date.setdefault(
                        (row.version_date, row.commit), Version(row.version_date, row.commit, row.committed)
                    )
                    if row.event == "repealed":
                        version.changed.append({"language": language, "unit": None, "event": "repealed"})
                        continue
                    version.changed.append(
                        {
                            "language": language,
                            "unit": unit,
                            "article": _article(unit),
                            "heading": text[0],
                            "event": "added" if previous is None else "changed",
                            "diff": word_diff(previous or "", text[1] or ""),
                        }
                    )
                previous = text[1] if row.event != "repealed" else previous
        return [by_date[k] for k in sorted(by_date)]


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
            editions.append(_edition(doc_id, as_of, "current"))
            continue
        found = history.as_of(doc_id, as_of, narrowing.articles, None if narrowing.articles else k_per_doc)
        pasts, repeal = found.pasts, found.repeal
        if repeal is not None:
            notes.append(f"⚠ {ref}: на {as_of:%d.%m.%Y} акт уже утратил силу (с {repeal.version_date:%d.%m.%Y}).")
        if not pasts:
            first = history.first_version(doc_id)
            notes.append(
                f"⚠ {ref}: на {as_of:%d.%m.%Y} текста нет (первая известная редакция — {first:%d.%m.%Y})."
                if first
                else f"⚠ {ref}: на {as_of:%d.%m.%Y} текста нет."
            )
            editions.append(_edition(doc_id, as_of, "none"))
            continue
        newest = found.newest or max(pasts, key=lambda p: (p.version_date, p.committed))
        language = newest.language
        link = version_link(
            info.source_url if info else None, info.portal_id if info else None, language, newest.version_date
        )
        editions.append(_edition(doc_id, as_of, "history", link, newest.version_date.isoformat(), newest.commit))
        where = f"; {link}" if link else ""
        notes.append(
            f"Текст {ref} — в редакции, действовавшей на {as_of:%d.%m.%Y}: версия от "
            f"{newest.version_date:%d.%m.%Y} (commit {newest.commit[:12]}){where}."
        )
        for past in _chosen(pasts, k_per_doc):
            text = "\n".join(x for x in (past.heading, past.text) if x)
            out.append(
                Chunk(
                    f"{doc_id}:{past.unit}@{past.version_date.isoformat()}",
                    doc_id,
                    [],
                    [past.article] if past.article else [],
                    text,
                    1.0,
                    language=past.language,
                    found_by="identifier",
                )
            )
    named = set(plan)
    return out + [c for c in chunks if c.doc_id not in named], editions, notes


def _chosen(pasts: list[Past], k: int) -> list[Past]:
    """The parts answered, in one language (Russian first) and part order: every named article's part
    (``pasts`` were narrowed to them), else the act's first ``k``."""
    languages = sorted({p.language for p in pasts}, key=lambda lang: (lang != "rus", lang))
    first = [p for p in pasts if p.language == languages[0]]
    return first if len(first) <= k or all(p.article for p in first) else first[:k]


def _edition(
    doc_id: str,
    as_of: dt.date,
    found: str,
    link: str | None = None,
    version_date: str | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """Which version an as-of answer quoted for one act: ``history`` (that version, its date, commit and link),
    ``current`` (no history: today's text) or ``none`` (no text on that date)."""
    return {
        "doc_id": doc_id,
        "as_of": as_of.isoformat(),
        "found": found,
        "link": link,
        "version_date": version_date,
        "commit": commit,
    }
