"""How zan runs git: never through a shell, never with a value that could be read as an option, and never with a
setting that runs a program.

A clone zan reads may have had its ``.git/config`` or hooks written by someone else, and a configured remote, path
or branch comes from outside. So every git command

- gets a fixed argument list; values that come from outside go after ``--`` (or are refused when they start with
  ``-``: :func:`checked_value`), and shas are checked to be shas;
- runs with the repository's hooks off (``core.hooksPath=/dev/null``), the file-system monitor off, no credential
  helper, no pager or editor, no signature checks, no submodules, command-line settings outranking the clone's;
- reads no system or global configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``) and none of
  the caller's ``GIT_*`` variables but those for ssh, TLS and tracing;
- may use only the transports in ``ZAN_GIT_PROTOCOLS`` (default ``https:ssh:file``; ``ext::`` and ``git://``
  never unless named): ``GIT_ALLOW_PROTOCOL``, which outranks any configuration;
- refuses a repository whose own configuration names a program git would run under a name no fixed setting can
  switch off (a clean/smudge filter, a diff or merge driver, an included file, a rewritten URL, a remote's
  upload-pack, a GPG program): :class:`GitError` naming the setting, never its value;
- has a deadline (:data:`TIMEOUT`); its error messages pass through :func:`redact` (a credential never shows).

Credentials for an https remote travel as an ``http.<url>.extraHeader`` in ``GIT_CONFIG_*`` variables of that one
process (:class:`Credential`): never in the URL, so never in ``.git/config``, a log or an error.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from schemas.errors import ZanError

TIMEOUT = 120.0  # seconds any one git command may take
PROTOCOLS = "https:ssh:file"
# Settings every command carries: on git's command line they outrank the repository's own configuration.
OVERRIDES = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=ssh",  # GIT_SSH_COMMAND, the operator's, still outranks it
    "core.askPass=",
    "core.pager=cat",
    "core.editor=true",
    "credential.helper=",  # an empty helper empties the list: none runs
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "pull.verifySignatures=false",
    "diff.external=",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "protocol.allow=never",
)
# A repository's settings that name a program under a name of its own choosing (so no fixed setting above can
# switch them off), or send git elsewhere: zan runs no git command on a repository that has one.
_REFUSED = re.compile(
    r"""(?:filter\..*\.(?:clean|smudge|process)
        |diff\..*\.(?:command|textconv)
        |merge\..*\.driver|mergetool\..*|difftool\..*
        |gpg\..*|credential\..*helper
        |include\.path|includeif\..*
        |url\..*\.(?:insteadof|pushinsteadof)
        |remote\..*\.(?:uploadpack|receivepack|vcs)|uploadpack\..*
        |core\.(?:worktree|alternaterefscommand|gitproxy)
        |sequence\.editor|protocol\..*)""",
    re.X | re.I,
)
_KEPT_ENV = frozenset({"GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSH_VARIANT", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
                       "GIT_SSL_NO_VERIFY", "GIT_TRACE", "GIT_TRACE_CURL", "GIT_TRACE_PACKET"})  # fmt: skip
_SHA = re.compile(r"[0-9a-f]{7,64}")


class GitError(ZanError):
    """git could not answer about a source (not installed, a broken repository): the run compares contents."""

    transient = True


class GitRefused(GitError):
    """A repository, remote, path or branch zan will not hand to git (it would run a program, or read as an
    option): terminal, a person must change it."""

    transient = False


@dataclass(frozen=True)
class Credential:
    """A login and secret for an https remote, sent as an ``Authorization`` header by that command only."""

    login: str
    secret: str = field(repr=False)
    scheme: str = "basic"  # or "bearer"

    def header(self) -> str:
        if self.scheme == "bearer":
            return f"Authorization: Bearer {self.secret}"
        pair = base64.b64encode(f"{self.login}:{self.secret}".encode()).decode("ascii")
        return f"Authorization: Basic {pair}"

    def hidden(self) -> tuple[str, ...]:
        """Every form the secret could take in a message."""
        from urllib.parse import quote

        return tuple(s for s in {self.secret, quote(self.secret, safe=""), self.header().split(" ", 2)[2]} if s)


def protocols() -> str:
    """The transports git may use (``ZAN_GIT_PROTOCOLS``, ``:``-separated), each a plain word."""
    raw = os.environ.get("ZAN_GIT_PROTOCOLS", PROTOCOLS)
    chosen = [p.strip().lower() for p in raw.replace(",", ":").split(":") if p.strip()]
    if not chosen or not all(re.fullmatch(r"[a-z][a-z0-9+.-]{0,30}", p) for p in chosen):
        raise GitRefused(f"ZAN_GIT_PROTOCOLS {raw[:80]!r} is not a list of transports such as {PROTOCOLS}")
    return ":".join(chosen)


def environment(credential: Credential | None = None, url: str | None = None) -> dict[str, str]:
    """The environment of one git command (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_ENV}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ALLOW_PROTOCOL=protocols(),
        GIT_PAGER="cat",
        GIT_EDITOR="true",
        LC_ALL="C",
    )
    if credential is not None and url:
        pairs = [(f"http.{url}.extraHeader", credential.header()), ("http.followRedirects", "false")]
        env["GIT_CONFIG_COUNT"] = str(len(pairs))
        for n, (key, value) in enumerate(pairs):
            env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env


def command(repo: Path, *args: str) -> list[str]:
    """The argument list of ``git args`` in ``repo``, with the overrides."""
    overrides = [item for setting in OVERRIDES for item in ("-c", setting)]
    return ["git", *overrides, "-C", str(repo), *args]


def git(
    repo: Path, *args: str, credential: Credential | None = None, url: str | None = None, inspect: bool = True
) -> str:
    """Run ``git args`` in ``repo`` and return its output. The repository ``repo`` lies in is checked first
    (:func:`check_config`) unless ``inspect`` is False (a clone, which reads no repository's configuration)."""
    if inspect:
        check_config(repo)
    try:
        done = subprocess.run(
            command(repo, *args),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            env=environment(credential, url),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(redact(f"git {args[0]} in {repo}: {type(exc).__name__}: {exc}", credential)) from exc
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[:300]
        raise GitError(redact(f"git {args[0]} in {repo}: {said}", credential))
    return done.stdout.decode("utf-8", "surrogateescape")


def redact(message: str, credential: Credential | None = None) -> str:
    """``message`` with any URL's user information and the credential's secret replaced by ``***``."""
    message = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1***@", message)
    for hidden in credential.hidden() if credential else ():
        message = message.replace(hidden, "***")
    return message


def check_config(folder: Path) -> None:
    """Refuse the repository ``folder`` lies in when its configuration names a program no override switches off
    (:data:`_REFUSED`); nothing to check outside a repository."""
    for config in _config_files(folder):
        stat = config.stat()
        _check_file(str(config), stat.st_mtime_ns, stat.st_size, stat.st_ino)


def _config_files(folder: Path) -> list[Path]:
    """The configuration files of the repository git would find from ``folder`` (itself or the nearest folder
    above it with a ``.git``)."""
    start = folder.resolve()
    repo = next((p for p in (start, *start.parents) if (p / ".git").exists()), None)
    if repo is None:
        return []
    gitdir = repo / ".git"
    if gitdir.is_file():  # a worktree's or submodule's «gitdir: …» pointer
        text = gitdir.read_text("utf-8", "replace")[:4096].strip()
        gitdir = (repo / text.removeprefix("gitdir:").strip()).resolve()
    common = gitdir
    if (gitdir / "commondir").is_file():  # a worktree: the configuration lies in the main repository's folder
        common = (gitdir / (gitdir / "commondir").read_text("utf-8", "replace")[:4096].strip()).resolve()
    return [f for f in (common / "config", gitdir / "config.worktree") if f.is_file()]


@functools.lru_cache(maxsize=256)
def _check_file(config: str, mtime_ns: int, size: int, inode: int) -> None:
    """One configuration file's keys read by git's own parser (reading a file runs nothing), checked once per
    version of the file."""
    try:
        done = subprocess.run(
            ["git", "config", "--file", config, "--no-includes", "--name-only", "--list", "-z"],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            env=environment(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git config of {config}: {type(exc).__name__}") from exc
    if done.returncode != 0:
        raise GitError(f"{config} cannot be read as git configuration: {done.stderr.decode('utf-8', 'replace')[:200]}")
    keys = [k for k in done.stdout.decode("utf-8", "replace").split("\0") if k]
    refused = sorted({k for k in keys if _REFUSED.fullmatch(k)})
    if refused:
        raise GitRefused(
            f"{config} sets {', '.join(refused[:5])}: a program git would run, or another place it would read; "
            "zan runs no git command on this repository (remove the setting, or clone it again)"
        )


def checked_value(what: str, value: str) -> str:
    """A remote, path or branch from outside: refused when git could read it as an option or it holds a control
    character."""
    if not value or value.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise GitRefused(f"the git {what} {value[:80]!r} starts with '-' or holds a control character: refused")
    return value


def checked_sha(sha: str) -> str:
    if not _SHA.fullmatch(sha or ""):
        raise GitError(f"{sha[:80]!r} is not a commit id")
    return sha
