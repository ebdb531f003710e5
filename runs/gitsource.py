"""Sources that are git clones (the kazakhstan-law scopes): what changed since the commit a run last read.

The kazakhstan-law organisation publishes one repository per scope and one commit per version of an act; a
repeal is the commit that deletes the act's folder. A run records, per source, the commit it read
(``Manifest.source_commits``). The next run asks git what changed between that commit and HEAD
(``git diff --name-status -M``: edits, additions, deletions, renames and moves), so files git says are
untouched keep their recorded keys without being read or hashed, and the acts whose folders were deleted
become ``repealed`` on the date of the commit that deleted them, kept in the registry and lineage.

The upstream is rebuilt and force-pushed: the same versions reappear under new commits and the recorded one
may be gone. Then :func:`changes` says so (``None``) and the run compares file contents instead (every file
hashed, the same versions carried over, nothing re-embedded), and its report says which.

git is run with a fixed argument list (never a shell), in the source's own folder, with a timeout; a path
git reports outside the source is ignored.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from schemas.errors import ZanError

TIMEOUT = 120.0  # seconds any one git command may take
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}


class GitError(ZanError):
    """git could not answer about a source (not installed, a broken repository): the run compares contents."""

    transient = True


@dataclass(frozen=True)
class Commit:
    sha: str
    date: dt.date


@dataclass
class Changes:
    """What changed in a repository between a recorded commit and HEAD."""

    since: str
    head: Commit
    changed: set[Path] = field(default_factory=set)  # added, modified, or the new side of a rename
    deleted: dict[Path, Commit] = field(default_factory=dict)  # each with the commit that deleted it
    moved: dict[Path, Path] = field(default_factory=dict)  # old path → new path (a rename or a move)

    def untouched(self, path: Path) -> bool:
        return path not in self.changed and path not in self.deleted and path not in self.moved


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            env={**os.environ, **_ENV},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} in {repo}: {type(exc).__name__}: {exc}") from exc
    if done.returncode != 0:
        raise GitError(f"git {args[0]} in {repo}: {done.stderr.decode('utf-8', 'replace').strip()[:300]}")
    return done.stdout.decode("utf-8", "surrogateescape")


def repository(source: Path) -> Path | None:
    """The work tree ``source`` lies in (itself or a folder above it), or None when it is not in one."""
    if not (source / ".git").exists() and not any((p / ".git").exists() for p in source.resolve().parents):
        return None
    try:
        return Path(_git(source, "rev-parse", "--show-toplevel").strip()).resolve()
    except GitError:
        return None


def head(repo: Path) -> Commit:
    sha, day = _git(repo, "log", "-1", "--format=%H%x00%cs", "HEAD").strip().split("\0")
    return Commit(sha, dt.date.fromisoformat(day))


def knows(repo: Path, sha: str) -> bool:
    """True when ``sha`` is a commit of this repository's history (not lost to a force-push)."""
    if not sha or not all(c in "0123456789abcdef" for c in sha) or len(sha) < 7:
        return False
    try:
        _git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
        _git(repo, "merge-base", "--is-ancestor", sha, "HEAD")
    except GitError:
        return False
    return True


def changes(repo: Path, since: str) -> Changes | None:
    """What changed from ``since`` to HEAD, or None when ``since`` is not in the history (a rebuilt upstream)."""
    if not knows(repo, since):
        return None
    now = head(repo)
    out = Changes(since, now)
    listed = _git(repo, "diff", "--name-status", "-M", "-z", since, now.sha).split("\0")
    n = 0
    while n < len(listed) - 1:
        status = listed[n]
        if status.startswith(("R", "C")):
            old, new = repo / listed[n + 1], repo / listed[n + 2]
            out.moved[old], n = new, n + 3
            out.changed.add(new)
            continue
        path = repo / listed[n + 1]
        n += 2
        if status == "D":
            out.deleted[path] = now
        elif status:
            out.changed.add(path)
    if out.deleted:
        _deleting_commits(repo, since, out)
    return out


def _deleting_commits(repo: Path, since: str, out: Changes) -> None:
    """The commit that deleted each deleted path (the newest one, when a path was deleted, restored and
    deleted again)."""
    log = _git(repo, "log", "--diff-filter=D", "--name-only", "--format=%x01%H%x00%cs", f"{since}..HEAD").split("\x01")
    seen: set[Path] = set()
    for entry in log:
        if not entry.strip():
            continue
        header, _, names = entry.partition("\n")
        sha, day = header.split("\0")
        commit = Commit(sha, dt.date.fromisoformat(day))
        for name in names.splitlines():
            path = repo / name
            if path in out.deleted and path not in seen:  # newest first: the first seen is the last deletion
                out.deleted[path] = commit
                seen.add(path)


@dataclass(frozen=True)
class Updated:
    """What updating a scope's clone did."""

    path: Path
    before: str | None  # the commit the clone was at (None: cloned now)
    after: Commit
    rewritten: bool  # the upstream's history was rebuilt: the clone was reset to it, not fast-forwarded

    def as_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "before": self.before,
            "after": self.after.sha,
            "date": self.after.date.isoformat(),
            "rewritten": self.rewritten,
        }


def update(remote: str, path: Path, branch: str = "main") -> Updated:
    """Bring the clone of a scope at ``path`` up to ``remote``'s ``branch``: clone it when missing, else fetch
    and fast-forward; when the upstream was rebuilt and force-pushed (no fast-forward exists), reset the clone
    to it (a clone zan reads, never edits). ``remote`` is a URL git understands (``https://…``, ``file://…``);
    a token, if any, travels in it, never in the logs (errors name the path, not the URL)."""
    if not (path / ".git").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _git(path.parent, "clone", "--quiet", "--branch", branch, "--single-branch", remote, str(path))
        return Updated(path, None, head(path), False)
    before = head(path).sha
    _git(path, "fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/upstream/{branch}")
    try:
        _git(path, "merge", "--ff-only", "--quiet", f"upstream/{branch}")
        rewritten = False
    except GitError:
        _git(path, "reset", "--quiet", "--hard", f"upstream/{branch}")
        rewritten = True
    return Updated(path, before, head(path), rewritten)
