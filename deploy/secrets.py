"""The deployment's secrets: one ``.env`` file beside docker-compose.yml, made with strong random values.

``python -m deploy secrets`` (``make secrets``; the deployment targets run it) writes ``.env`` when it is
missing, or adds the values it lacks; ``--rotate`` replaces them all. The file is readable by its owner only
and git ignores it. docker-compose.yml takes every secret from it with ``${VAR:?…}``: compose refuses to
start without one, and nothing in the repository is a usable password, key or token. The native stack makes
the same values for its own folder.

Rotating: run ``python -m deploy secrets --rotate``, then restart the stack. The Fernet key encrypts
connections and variables in Airflow's database: rotating it makes those unreadable unless the old key is
kept first in ``AIRFLOW__CORE__FERNET_KEY`` (comma-separated, newest first) until ``airflow rotate-fernet-key``
has re-encrypted them.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from deploy.settings import ROOT

ENV_FILE = ROOT / ".env"


def write_private(path: Path, text: str, *, atomic: bool = False) -> None:
    """Write ``text`` to ``path`` readable and writable by its owner only (0600 whatever the file was before):
    every file that holds a secret (``.env``, the stack's state, the proxy's and Redis's settings, Postgres's
    password file). ``atomic``: through a temporary file beside it, then renamed over it, so a reader sees the
    old file or the new one, never half of one."""
    target = path.with_name(f".{path.name}.{os.getpid()}.tmp") if atomic else path
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode is not applied to a file that already exists
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    if atomic:
        os.replace(target, path)


def _urlsafe(size: int) -> str:
    """A random url-safe value that never starts with ``-``: a command line would read it as an option."""
    while (value := secrets.token_urlsafe(size)).startswith("-"):
        pass
    return value


def _token() -> str:
    return _urlsafe(32)


def _signing_key() -> str:
    return _urlsafe(64)  # HS512 wants a key of 64 bytes or more (RFC 7518 3.2)


def _fernet_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii")


# Every secret the deployment needs, and how to make a fresh one.
SECRETS = {
    "AIRFLOW__API_AUTH__JWT_SECRET": _signing_key,  # signs the API's tokens: one value for every component
    "AIRFLOW__API__SECRET_KEY": _token,  # the API server's session key
    "AIRFLOW__CORE__FERNET_KEY": _fernet_key,  # encrypts connections and variables in the database
    "POSTGRES_PASSWORD": _token,  # the airflow role (scram-sha-256; never trust)
    "REDIS_PASSWORD": _token,  # the Celery broker (requirepass)
    "_AIRFLOW_WWW_USER_PASSWORD": _token,  # the API and UI admin user
    "ZAN_CHROMA_TOKEN": _token,  # the bearer token the Chroma proxy requires and zan's client sends
    "ZAN_SERVE_TOKEN": _token,  # the bearer token zan serve requires of Lumi and of people's browsers' proxy
}


def fresh() -> dict[str, str]:
    """A full set of new secrets."""
    return {name: make() for name, make in SECRETS.items()}


def read_env(path: Path = ENV_FILE) -> dict[str, str]:
    """``NAME=value`` lines of an env file (comments and blank lines skipped)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            out[name.strip()] = value.strip()
    return out


def ensure(path: Path = ENV_FILE, rotate: bool = False) -> list[str]:
    """Write ``path`` with every secret it lacks (all of them with ``rotate``), keeping its other lines;
    returns the names written. The file is created readable by its owner only."""
    held = {} if rotate else read_env(path)
    made = {name: make() for name, make in SECRETS.items() if not held.get(name)}
    if not made:
        return []
    kept = [
        line
        for line in (path.read_text("utf-8").splitlines() if path.exists() else [])
        if line.partition("=")[0].strip() not in made
    ]
    body = [*kept, *(f"{name}={value}" for name, value in made.items())]
    head = "# zan deployment secrets: made by `python -m deploy secrets`; never commit this file\n"
    lines = "\n".join(line for line in body if not line.startswith("# zan deployment secrets")) + "\n"
    write_private(path, head + lines, atomic=True)
    return sorted(made)


_SAFE = re.compile(r"[A-Za-z0-9_=-]{16,512}")


def safe(value: str) -> bool:
    """The one rule for a secret: 16 to 512 URL-safe characters (it goes into connection URLs, config files and
    nginx's regexes, where it must stay a literal)."""
    return bool(_SAFE.fullmatch(value))


def check(values: Mapping[str, str]) -> None:
    """Every secret present is long enough and URL-safe (:func:`safe`)."""
    bad = [name for name in SECRETS if values.get(name) and not safe(values[name])]
    if bad:
        raise ValueError(f"secrets must be 16 to 512 URL-safe characters: {', '.join(bad)}")


def missing(values: Mapping[str, str]) -> list[str]:
    """The secrets ``values`` lacks (empty counts as missing)."""
    return [name for name in SECRETS if not values.get(name)]
