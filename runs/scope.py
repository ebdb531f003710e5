"""Build a version's tables (registry, chunks, enriched chunks, rejects), re-extracting only what changed.

Which files a run reads is its *scope* (``plan_scope``). Inside the scope, a published document is reused
as it is (registry row, chunks, enriched chunks) when every one of its source files has the same content
hash and was read by the same code as before (``file_key`` = sha256 of the bytes + a fingerprint of the
extractor, registry, chunking and join code and the curated reference data): a fix to an extractor
changes the fingerprint and so rebuilds everything, on purpose. Documents outside the scope are carried
over untouched. Only the rest is extracted, chunked and joined.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from extractors.bounded import digest_source
from extractors.discover import max_file_bytes, scan
from extractors.kazlaw import companions
from runs.errors import RunError
from runs.gitsource import Changes, GitError, GitRefused, changes, head, repository
from runs.state import Published
from schemas.arrow import ENRICHED_CHUNK_SCHEMA, REJECT_SCHEMA, Reject, reject_table
from schemas.parquet import table_from_rows

DEFAULT_SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
Progress = Callable[[str, int, int], None]
# The code whose output a reused document stands for: change any of it and every document is rebuilt.
_FINGERPRINTED = {
    "extractors": ("*.py", "refdata/*.json"),
    "schemas": ("*.py",),
    "enrich": ("chunking.py", "registry.py", "join.py", "metadata.py", "lineage.py"),
}


@functools.cache
def code_fingerprint() -> str:
    digest = hashlib.sha256()
    for package, patterns in _FINGERPRINTED.items():
        root = Path(str(resources.files(package)))
        for pattern in patterns:
            for path in sorted(root.glob(pattern)):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def file_key(path: Path) -> str:
    """What decides whether a file must be read again: its content hash (and its companions': a
    kazakhstan-law text's ``meta.yaml`` and parts, :func:`extractors.kazlaw.companions`) and the code
    fingerprint. Read in blocks (memory stays flat); a file over the size limit or unreadable gets a key that
    says so, and is rejected when it is extracted."""
    try:
        size = path.stat().st_size
        if size > max_file_bytes():
            return f"oversize:{size}:{path.stat().st_mtime_ns}:{code_fingerprint()}"
        digest = hashlib.sha256()
        digest.update(path.name.encode() + b"\0")
        digest_source(path, digest)
        for companion in companions(path):  # confined to the act's folder, bounded: a link to /proc reads nothing
            digest.update(companion.name.encode() + b"\0")
            digest_source(companion, digest, path.parent)
    except OSError as exc:
        return f"unreadable:{exc.errno}:{code_fingerprint()}"
    return f"{digest.hexdigest()}:{code_fingerprint()}"


ScopeKind = Literal["full", "source", "only", "since", "rollback"]  # what a run reads: see plan_scope


@dataclass
class Scope:
    kind: ScopeKind
    files: list[Path]
    roots: list[Path]  # the sources the new version records
    touched: set[str]  # published doc_ids whose files are in scope (rebuilt, or deleted when gone)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # files not read, with the reason

    @property
    def is_full(self) -> bool:
        return self.kind == "full"

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "files": [str(f) for f in self.files],
            "roots": [str(r) for r in self.roots],
            "touched": sorted(self.touched),
            "skipped": [list(pair) for pair in self.skipped],
        }

    @classmethod
    def from_json(cls, s: dict[str, Any]) -> Scope:
        skipped = [(str(p), str(r)) for p, r in s.get("skipped", [])]
        return cls(s["kind"], [Path(f) for f in s["files"]], [Path(r) for r in s["roots"]], set(s["touched"]), skipped)


def plan_scope(sources: list[Path], only: tuple[str, ...], since: dt.date | None, previous: Published | None) -> Scope:
    """Which files to read, and which published documents they concern: ``--only`` documents, else the
    files under the sources (since a date), widened to every file of a published document they touch."""
    recorded = [Path(s) for s in previous.manifest.sources] if previous else []
    if only:
        return _only_scope(only, previous, recorded)
    roots = [p.resolve() for p in sources] or recorded or [DEFAULT_SAMPLE]
    files, skipped = _scanned(roots, previous)
    kind: ScopeKind = "source" if sources and previous else "full"
    if since:
        files, kind = [f for f in files if dt.date.fromtimestamp(f.stat().st_mtime) >= since], "since"
    if previous is None or kind == "full":
        return Scope("full", files, roots, set(), skipped)
    return _widened(kind, files, roots, recorded, skipped, previous)


def confined_sources(requested: list[str], roots: list[Path]) -> list[Path]:
    """The folders a backfill asked for, each resolved (links followed) and required to lie under one of the
    configured ``roots``: a request from outside (a DAG's Params) never names an arbitrary worker path."""
    allowed = [r.resolve() for r in roots]
    out = []
    for raw in requested:
        path = Path(raw).resolve()
        if not any(path == root or path.is_relative_to(root) for root in allowed):
            where = ", ".join(map(str, allowed)) or "none configured (ZAN_SOURCES, ZAN_SOURCE_ROOTS)"
            raise RunError(f"source {raw[:200]!r} is outside the configured source roots: {where}")
        out.append(path)
    return out


def _only_scope(only: tuple[str, ...], previous: Published | None, recorded: list[Path]) -> Scope:
    """``--only``: the source files the published version recorded for those documents."""
    if previous is None:
        raise RunError("--only needs a published version to take the documents' source files from")
    doc_files = previous.doc_files()
    unknown = sorted(set(only) - set(doc_files))
    if unknown:
        raise RunError(f"--only: {', '.join(unknown)} not in the published registry (use --source to add)")
    files = sorted({Path(f) for d in only for f in doc_files[d] if Path(f).exists()})
    return Scope("only", files, recorded, set(only))


def _scanned(roots: list[Path], previous: Published | None) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files to read under ``roots`` and those skipped; a source that yields nothing is an error, never
    "delete everything it had" — but for a git source whose tree a commit emptied: every act it held is deleted
    by a commit, which the repeal gate holds (:func:`runs.changes.check_repeals`)."""
    scanned = scan(roots)
    if not scanned.files and not _emptied_git_sources(roots, previous):
        raise RunError(f"no source files under {', '.join(map(str, roots))}")
    return scanned.files, scanned.skipped


def _emptied_git_sources(roots: list[Path], previous: Published | None) -> list[Path]:
    """The roots that are git sources the published version read acts from."""
    if previous is None:
        return []
    files = [f for fs in previous.doc_files().values() for f in fs]
    return [r for r in roots if any(f.startswith(f"{r}/") for f in files) and _is_git(r)]


def _is_git(root: Path) -> bool:
    try:
        return repository(root) is not None
    except GitRefused:
        return False


def _widened(
    kind: ScopeKind,
    files: list[Path],
    roots: list[Path],
    recorded: list[Path],
    skipped: list[tuple[str, str]],
    previous: Published,
) -> Scope:
    """A scoped run: the published documents whose files are in scope (or were under a ``--source`` folder,
    so a file gone from it deletes its document), with all of their files, so each is rebuilt whole."""
    wanted = {str(f) for f in files}
    under = tuple(f"{r}/" for r in roots) if kind == "source" else ()
    doc_files = previous.doc_files()
    touched = {d for d, fs in doc_files.items() if any(f in wanted or (under and f.startswith(under)) for f in fs)}
    extra = {Path(f) for d in touched for f in doc_files[d] if Path(f).exists()}
    return Scope(kind, sorted(set(files) | extra), sorted(set(recorded) | set(roots)), touched, skipped)


@dataclass
class Built:
    """A version's tables: the registry in memory, the chunk tables as files (they can be large)."""

    registry: pa.Table
    chunks: Path
    enriched: Path
    rejects: list[Reject]
    rebuilt: set[str]  # doc_ids extracted this run
    reused: set[str]  # doc_ids in scope taken over unchanged
    file_keys: dict[str, str] = field(default_factory=dict)
    lineage: Path | None = None  # the version's lineage.parquet, written by enrich_version


@dataclass
class Prepared:
    """What a run must read: every file's key, the documents it can reuse, the files left to extract."""

    keys: dict[str, str]
    reused: set[str]
    pending: list[Path]
    commits: dict[str, str] = field(default_factory=dict)  # each git source → the commit read now
    repealed: dict[str, str] = field(default_factory=dict)  # doc_id → the date its folder was deleted (ISO)
    notes: list[str] = field(default_factory=list)  # what the run's report should say of its sources
    shares: list[RepealShare] = field(default_factory=list)  # what each git source's deletions repeal


@dataclass(frozen=True)
class RepealShare:
    """What the deletions in one git source would repeal: the gate's input (:func:`runs.changes.check_repeals`)."""

    root: Path
    acts: int  # the published acts read from this source
    repealed: tuple[str, ...]  # those whose folders are gone
    commits: tuple[str, ...]  # the commits that deleted them (HEAD when the history was rewritten)
    emptied: bool  # the source holds no file any more


def prepare(scope: Scope, previous: Published | None, only: tuple[str, ...] = ()) -> Prepared:
    """Every file's key (a git source's untouched files keep their recorded keys unread), the documents that
    can be reused, the files left to read, and the acts a git source deleted (repealed, not dropped)."""
    git = _git_sources(scope, previous)
    recorded = previous.manifest.file_keys if previous else {}
    keys = {str(f): recorded[str(f)] if git.untouched(f, recorded) else file_key(f) for f in scope.files}
    reused = set() if only else _reusable(scope, previous, keys) - _restored(previous, git)
    unreadable = set() if only else _still_rejected(previous, keys)
    pending = [f for f in scope.files if str(f) not in unreadable and _needs_reading(f, reused, previous)]
    repealed = _repealed(scope, previous, git) if not only else {}
    shares = repeal_shares(scope, previous, git, repealed)
    return Prepared(keys, reused, pending, git.commits, repealed, git.notes, shares)


@dataclass
class _GitSources:
    """The git sources among a run's roots: what changed in each since the commit the last version read."""

    changes: dict[Path, Changes | None] = field(default_factory=dict)  # root → changes (None: rewritten history)
    repos: dict[Path, Path] = field(default_factory=dict)  # root → its repository
    commits: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def root_of(self, path: Path) -> Path | None:
        return next((r for r in self.repos if path == r or path.is_relative_to(r)), None)

    def untouched(self, path: Path, recorded: dict[str, str]) -> bool:
        """git says the file did not change since the recorded commit, and its key was recorded."""
        root = self.root_of(path)
        found = self.changes.get(root) if root is not None else None
        return found is not None and str(path) in recorded and found.untouched(path)


def _git_sources(scope: Scope, previous: Published | None) -> _GitSources:
    out = _GitSources()
    recorded = previous.manifest.source_commits if previous else {}
    for root in scope.roots:
        try:
            repo = repository(root)
        except GitRefused as exc:  # read as a plain folder: git is never run on it
            out.notes.append(f"{root}: {exc}; read as a plain folder")
            continue
        if repo is None:
            continue
        try:
            now = head(repo)
        except GitError as exc:
            out.notes.append(f"{root}: {exc}; compared by content")
            continue
        out.repos[root], out.commits[str(root)] = repo, now.sha
        since = recorded.get(str(root))
        if since is None:
            out.changes[root] = None
            continue
        found = changes(repo, since)
        out.changes[root] = found
        if found is None:
            out.notes.append(
                f"{root}: the commit the last version read ({since[:12]}) is no longer in the history "
                f"(a rebuilt, force-pushed upstream): files compared by content"
            )
        else:
            out.notes.append(
                f"{root}: {since[:12]}..{now.sha[:12]}: {len(found.changed)} files changed, "
                f"{len(found.deleted)} deleted, {len(found.moved)} moved"
            )
    return out


def _repealed(scope: Scope, previous: Published | None, git: _GitSources) -> dict[str, str]:
    """Published acts every source file of which lay in a git source and is gone from it now: deleted
    folders, which the kazakhstan-law history makes its repeals. The date is the deleting commit's (HEAD's,
    when the history was rewritten)."""
    if previous is None or not git.repos:
        return {}
    out = {}
    for doc_id, files in previous.doc_files().items():
        paths = [Path(f) for f in files]
        roots = {git.root_of(p) for p in paths}
        if not paths or None in roots or any(p.exists() for p in paths):
            continue
        dates = []
        for path in paths:
            root = git.root_of(path)
            found = git.changes.get(root) if root is not None else None
            if found is not None and path in found.moved:
                break  # moved, not deleted: the act is read from its new place
            commit = found.deleted.get(path) if found is not None else None
            dates.append(commit.date if commit else head(git.repos[root]).date if root else None)  # type: ignore[index]
        else:  # a commit dated out of range (year 10 000, before 1970) has no date: the run's day stands for it
            out[doc_id] = max((d for d in dates if d is not None), default=dt.date.today()).isoformat()
    return out


def repeal_shares(
    scope: Scope, previous: Published | None, git: _GitSources, repealed: dict[str, str]
) -> list[RepealShare]:
    """Per git source with acts repealed by deletion: how many acts it had, which are repealed, by which commits,
    and whether its tree is now empty."""
    if previous is None or not repealed:
        return []
    by_root: dict[Path, list[str]] = {}
    for doc_id, files in previous.doc_files().items():
        roots = {git.root_of(Path(f)) for f in files}
        if len(roots) == 1 and None not in roots:
            by_root.setdefault(roots.pop(), []).append(doc_id)  # type: ignore[arg-type]
    shares = []
    for root, acts in sorted(by_root.items()):
        gone = tuple(sorted(d for d in acts if d in repealed))
        if not gone:
            continue
        deleted = found.deleted if (found := git.changes.get(root)) is not None else {}
        deleting = [deleted[Path(f)] for d in gone for f in previous.doc_files()[d] if Path(f) in deleted]
        commits = tuple(dict.fromkeys(c.sha for c in deleting)) or (git.commits.get(str(root), ""),)
        emptied = not any(f.is_relative_to(root) for f in scope.files)
        shares.append(RepealShare(root, len(acts), gone, commits, emptied))
    return shares


def _restored(previous: Published | None, git: _GitSources) -> set[str]:
    """Repealed acts a commit since the last version added back (a deleted folder restored, as a rebuilt upstream
    does): read again, so the act is what its text says, not the repeal its deletion made (its files' content, and
    so their keys, are what they were)."""
    if previous is None or not git.changes:
        return set()
    added = {str(p) for found in git.changes.values() if found is not None for p in found.changed}
    if not added:
        return set()
    status = dict(zip(*(previous.registry.column(c).to_pylist() for c in ("doc_id", "status")), strict=True))
    return {d for d, files in previous.doc_files().items() if status.get(d) == "repealed" and set(files) & added}


def _reusable(scope: Scope, previous: Published | None, keys: dict[str, str]) -> set[str]:
    """Published documents in scope whose every source file is here, unchanged, read by the same code."""
    if previous is None:
        return set()
    recorded = previous.manifest.file_keys
    candidates = previous.doc_files() if scope.is_full else {d: previous.doc_files()[d] for d in scope.touched}
    return {d for d, files in candidates.items() if files and all(keys.get(f) == recorded.get(f) for f in files)}


def _still_rejected(previous: Published | None, keys: dict[str, str]) -> set[str]:
    """Files the last version rejected when extracting them, unchanged since (the same content, companions and
    code: the same key): reading them again would give the same reject, which :func:`carry_rejects` keeps. A
    reject of a later stage (an identity another document claims…) depends on other files, and is read again."""
    if previous is None or not previous.rejects.num_rows:
        return set()
    recorded = previous.manifest.file_keys
    rejects = previous.rejects.select(["source_file", "stage"]).to_pylist()
    failed = {r["source_file"] for r in rejects if r["stage"] == "extract" and r["source_file"]}
    later = {r["source_file"] for r in rejects if r["stage"] != "extract"}
    owned = previous.file_owners()
    return {f for f in failed - later if f not in owned and f in keys and recorded.get(f) == keys[f]}


def _needs_reading(path: Path, reused: set[str], previous: Published | None) -> bool:
    owners = previous.file_owners().get(str(path), set()) if previous else set()
    return not owners or not owners <= reused


def _carried(
    scope: Scope, previous: Published | None, rebuilt: set[str], reused: set[str], failed: set[str]
) -> set[str]:
    """Published documents that stay as they are: reused ones, those outside a scoped run, and those whose
    file failed to extract this time (a bad file is a reject; what it published before is not lost)."""
    if previous is None:
        return set()
    published = set(previous.doc_files())
    outside = set() if scope.is_full else published - scope.touched
    owners = previous.file_owners()
    kept = {d for f in failed for d in owners.get(f, set())}
    return (reused | outside | kept) - rebuilt


def carry_rejects(previous: Published | None, built: Built, scope: Scope) -> pa.Table:
    """This run's rejects, plus the published ones about files it did not read again (unchanged or out
    of scope) and that still exist."""
    table = reject_table(built.rejects)
    if previous is None or not previous.rejects.num_rows:
        return table
    read = {r.source_file for r in built.rejects} | {
        f for d in built.rebuilt for f in (previous.doc_files().get(d) or [])
    }
    carried_docs = set(built.registry.column("doc_id").to_pylist()) - built.rebuilt
    in_scope = {str(f) for f in scope.files}
    keep = []
    for row in previous.rejects.to_pylist():
        source = row["source_file"]
        if row["stage"] == "history":  # versions the history left out: carried with the history (runs.stages)
            continue
        if source in read or (row["doc_id"] and row["doc_id"] not in carried_docs and row["stage"] != "extract"):
            continue
        if scope.is_full and source not in in_scope:
            continue
        keep.append(row)
    return pa.concat_tables([table_from_rows(keep, REJECT_SCHEMA, "rejects"), table])


def skipped_rejects(run_id: str, skipped: list[tuple[str, str]]) -> list[Reject]:
    """Rejects for the files a scan did not read (a symlink out of the source folder, a FIFO…)."""
    return [Reject(run_id, "discover", path, None, reason, error="Skipped") for path, reason in skipped]


__all__ = ["ENRICHED_CHUNK_SCHEMA", "Built", "RunError", "Scope", "carry_rejects", "plan_scope"]
