"""Real git repositories and a real git HTTP server for the hostile-git tests, all local: commits made here (with any
date, even one git's own tools would never write), and ``git http-backend`` (git's smart HTTP protocol) behind a
server on 127.0.0.1 that asks for a credential."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

IDENTITY = {"GIT_AUTHOR_NAME": "zan", "GIT_AUTHOR_EMAIL": "zan@example.org", "GIT_COMMITTER_NAME": "zan",
            "GIT_COMMITTER_EMAIL": "zan@example.org"}  # fmt: skip


def needs_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")


def git(repo: Path, *args: str, when: str = "2026-01-15T10:00:00", stdin: str | None = None) -> str:
    env = {**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True,
                          input=stdin)  # fmt: skip
    return done.stdout.strip()


def commit(repo: Path, message: str, when: str = "2026-01-15T10:00:00") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


SIGNATURE = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n"


def raw_commit(repo: Path, message: str, stamp: str, signed: bool = False) -> str:
    """Commit the work tree as it is with a committer line of ``stamp`` (``253402300800 +0000``: year 10 000;
    ``-100 +0000``: before 1970), written as an object by hand: what an upstream's broken build can push;
    ``signed``: with a (made-up) signature, which a clone set to check signatures hands to its GPG program."""
    git(repo, "add", "-A")
    tree, parent = git(repo, "write-tree"), git(repo, "rev-parse", "HEAD")
    body = (f"tree {tree}\nparent {parent}\nauthor zan <zan@example.org> {stamp}\n"
            f"committer zan <zan@example.org> {stamp}\n{SIGNATURE if signed else ''}\n{message}\n")  # fmt: skip
    sha = git(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body)
    git(repo, "update-ref", "refs/heads/main", sha)
    return sha


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


@dataclass
class GitHTTP:
    """``git http-backend`` for the bare repositories under :attr:`root`, at :attr:`url`, answering only requests
    that carry :attr:`authorization` (401 otherwise); :attr:`seen` holds each request's Authorization header."""

    root: Path
    authorization: str
    url: str = ""
    seen: list[str | None] = field(default_factory=list)


def basic(login: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{secret}".encode()).decode()


@contextlib.contextmanager
def git_http(root: Path, authorization: str) -> Iterator[GitHTTP]:
    server_state = GitHTTP(root, authorization)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._backend()

        def do_POST(self) -> None:
            self._backend()

        def _backend(self) -> None:
            given = self.headers.get("Authorization")
            server_state.seen.append(given)
            if given != server_state.authorization:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="zan"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(server_state.root), "GIT_HTTP_EXPORT_ALL": "1",
                   "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                   "REMOTE_ADDR": "127.0.0.1", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=False)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        server.shutdown()
        server.server_close()
