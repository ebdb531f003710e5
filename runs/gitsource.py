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

git is run as :mod:`runs.gitcmd` runs it (a fixed argument list, no hooks, filters or helpers, a deadline); a path
git reports outside the source is ignored. A commit's date is read as git stores it (seconds and offset) and kept
only when it is a real date (1970 to 9999): a commit dated year 10 000 or before 1970 has no date
(:attr:`Commit.date` None), and whoever needs one says so instead of failing.

A scope to keep up to date (:class:`GitScope`, ``name=remote@path[#branch]``) is checked when it is read: a remote,
path or branch git could take for an option is refused then, a remote's transport must be one git may use, and
credentials in the URL are taken out of it (:func:`update` sends them as a header, never into ``.git/config``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from runs.gitcmd import Credential, GitError, GitRefused, checked_sha, checked_value, git, protocols, redact

# the fields of a commit as the log formats below give them: sha, seconds since 1970, the date with its offset
COMMIT_FORMAT = "%H%x00%ct%x00%ci"


@dataclass(frozen=True)
class Commit:
    sha: str
    date: dt.date | None  # None: the commit's date is not a real one (year 10 000, before 1970, unreadable)


def commit_date(seconds: str, shown: str) -> dt.date | None:
    """The committer's calendar day (as ``%cs`` gives it) from git's seconds and the offset that ends its ``%ci``
    (``2026-01-15 10:00:00 +0500``), or None when it is out of range."""
    if not seconds.strip().isdigit() or len(seconds.strip()) > 12:
        return None
    m = re.search(r"([+-])(\d\d)(\d\d)$", shown.strip())
    shift = (
        dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))) * (1 if m.group(1) == "+" else -1)
        if m
        else dt.timedelta()
    )
    try:
        return (dt.datetime.fromtimestamp(int(seconds), dt.UTC) + shift).date()
    except (OverflowError, ValueError, OSError):
        return None


def parse_commit(header: str) -> Commit:
    """A :data:`COMMIT_FORMAT` line as a :class:`Commit`."""
    sha, seconds, shown = (header.split("\0") + ["", ""])[:3]
    return Commit(checked_sha(sha.strip()), commit_date(seconds, shown))


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


def repository(source: Path) -> Path | None:
    """The work tree ``source`` lies in (itself or a folder above it), or None when it is not in one (or git
    cannot say); :class:`GitRefused` when that repository's configuration would make git run a program."""
    if not (source / ".git").exists() and not any((p / ".git").exists() for p in source.resolve().parents):
        return None
    try:
        return Path(git(source, "rev-parse", "--show-toplevel").strip()).resolve()
    except GitRefused:
        raise
    except GitError:
        return None


def head(repo: Path) -> Commit:
    return parse_commit(git(repo, "log", "-1", f"--format={COMMIT_FORMAT}", "HEAD").strip())


def knows(repo: Path, sha: str) -> bool:
    """True when ``sha`` is a commit of this repository's history (not lost to a force-push)."""
    if not sha or not all(c in "0123456789abcdef" for c in sha) or len(sha) < 7:
        return False
    try:
        git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
        git(repo, "merge-base", "--is-ancestor", sha, "HEAD")
    except GitError:
        return False
    return True


def changes(repo: Path, since: str) -> Changes | None:
    """What changed from ``since`` to HEAD, or None when ``since`` is not in the history (a rebuilt upstream)."""
    if not knows(repo, since):
        return None
    now = head(repo)
    out = Changes(since, now)
    listed = git(repo, "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-M", "-z", since, now.sha)
    parts = listed.split("\0")
    n = 0
    while n < len(parts) - 1:
        status = parts[n]
        if status.startswith(("R", "C")):
            old, new = repo / parts[n + 1], repo / parts[n + 2]
            out.moved[old], n = new, n + 3
            out.changed.add(new)
            continue
        path = repo / parts[n + 1]
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
    log = git(repo, "log", "--no-ext-diff", "--diff-filter=D", "--name-only", f"--format=%x01{COMMIT_FORMAT}",
              f"{since}..HEAD")  # fmt: skip
    seen: set[Path] = set()
    for entry in log.split("\x01"):
        if not entry.strip():
            continue
        header, _, names = entry.partition("\n")
        commit = parse_commit(header)
        for name in names.splitlines():
            path = repo / name
            if path in out.deleted and path not in seen:  # newest first: the first seen is the last deletion
                out.deleted[path] = commit
                seen.add(path)


_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?:(?P<user>[^@/\s]*)@)?(?P<rest>[^\s]+)", re.I)
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+")  # git@github.com:kazakhstan-law/ministerial.git


@dataclass(frozen=True)
class GitScope:
    """A kazakhstan-law scope to keep up to date: ``name=remote@path`` (``#branch`` after the path; ``main``).
    ``remote`` holds no credentials: those found in it are :attr:`credential`."""

    name: str
    remote: str
    path: Path
    branch: str = "main"
    credential: Credential | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, entry: str) -> GitScope:
        """One ``ZAN_GIT_SCOPES`` entry, checked (:class:`GitRefused` with the reason, credentials never in it)."""
        name, _, rest = entry.strip().partition("=")
        remote, _, place = rest.rpartition("@")
        place, _, branch = place.partition("#")
        remote, place, branch = remote.strip(), place.strip(), branch.strip() or "main"
        if not (name and remote and place):
            raise GitRefused(f"ZAN_GIT_SCOPES entry {redact(entry)[:120]!r} is not name=remote@path")
        if not _NAME.fullmatch(name.strip()):
            raise GitRefused(f"scope name {name[:40]!r}: use lower-case letters, digits, '-' and '_'")
        checked_value("path", place)
        if not Path(place).is_absolute():
            raise GitRefused(f"the clone path {place[:80]!r} of scope {name} is not an absolute path")
        checked_value("branch", branch)
        if not _BRANCH.fullmatch(branch) or ".." in branch or branch.endswith((".lock", "/")):
            raise GitRefused(f"the branch {branch[:80]!r} of scope {name} is not a plain branch name")
        url, credential = _remote(remote, name)
        return cls(name.strip(), url, Path(place), branch, credential)


def _remote(remote: str, name: str) -> tuple[str, Credential | None]:
    """The remote without user information, and the credential it held; refused when git could read it as an
    option or its transport is not one git may use (``ZAN_GIT_PROTOCOLS``)."""
    checked_value("remote", remote)
    allowed = protocols().split(":")
    m = _URL.fullmatch(remote)
    if m:
        scheme = m.group("scheme").lower()
        kind, url, credential = scheme, f"{scheme}://{m.group('rest')}", None
        if m.group("user") and scheme in ("http", "https"):
            login, _, secret = m.group("user").partition(":")
            credential = Credential(unquote(login) or "x-access-token", unquote(secret)) if secret else None
            if credential is None:  # a login alone, no secret: kept in the URL (ssh-style user name)
                url = remote
        elif m.group("user"):
            url = remote
    elif "::" in remote:
        raise GitRefused(f"the remote of scope {name} names a transport helper («::»): refused")
    elif _SCP.fullmatch(remote):
        kind, url, credential = "ssh", remote, None
    elif Path(remote).is_absolute():
        kind, url, credential = "file", remote, None
    else:
        raise GitRefused(f"the remote of scope {name} is neither a URL, user@host:path nor an absolute path")
    if kind not in allowed:
        raise GitRefused(f"the remote of scope {name} uses {kind}, not one of ZAN_GIT_PROTOCOLS ({':'.join(allowed)})")
    return url, credential


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
            "date": self.after.date.isoformat() if self.after.date else None,
            "rewritten": self.rewritten,
        }


def update(scope: GitScope, credential: Credential | None = None) -> Updated:
    """Bring the scope's clone up to its remote's branch: clone it when missing, else fetch and fast-forward; when
    the upstream was rebuilt and force-pushed (no fast-forward exists), reset the clone to it (a clone zan reads,
    never edits). ``credential`` (an Airflow connection's) wins over one the configured URL held; either travels
    as a header of each command (:class:`runs.gitcmd.Credential`), so the clone's configuration never holds it,
    and a URL left with one by an earlier zan is cleaned."""
    credential = credential or scope.credential
    path, branch, url = scope.path, scope.branch, scope.remote
    if not path.is_absolute():  # a scope not made by GitScope.parse: git must never see a relative one
        raise GitRefused(f"the clone path {str(path)[:80]!r} of scope {scope.name} is not an absolute path")
    if not (path / ".git").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        clone = ["clone", "--quiet", "--no-recurse-submodules", "--branch", branch, "--single-branch"]
        git(path.parent, *clone, "--", url, str(path), credential=credential, url=url, inspect=False)
        return Updated(path, None, head(path), False)
    _clean_remote_urls(path)
    before = head(path).sha
    refspec = f"+refs/heads/{branch}:refs/remotes/upstream/{branch}"
    git(path, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--", url, refspec,
        credential=credential, url=url)  # fmt: skip
    try:
        git(path, "merge", "--ff-only", "--quiet", "--no-verify", f"upstream/{branch}")
        rewritten = False
    except GitError:
        git(path, "reset", "--quiet", "--hard", f"upstream/{branch}")
        rewritten = True
    return Updated(path, before, head(path), rewritten)


def _clean_remote_urls(clone: Path) -> None:
    """Take user information with a secret out of every remote URL the clone's configuration holds."""
    try:
        listed = git(clone, "config", "--local", "--get-regexp", r"^remote\..*\.url$")
    except GitError:  # none
        return
    for line in listed.splitlines():
        key, _, value = line.partition(" ")
        m = _URL.fullmatch(value.strip())
        if m and m.group("user") and ":" in m.group("user"):
            git(clone, "config", "--local", key, f"{m.group('scheme')}://{m.group('rest')}")


__all__ = ["Commit", "GitError", "GitRefused", "GitScope", "Updated", "update"]
