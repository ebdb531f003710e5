"""URLs that come from sources are data, not markup.

A source (a zan.gov.kz record's ``url``, a kazakhstan-law ``meta.yaml``'s ``source``) may hold anything:
``javascript:alert(1)//adilet.zan.kz/…``, ``data:text/html,…``, ``VbScript:…``, an entity-encoded scheme
(``javascript&#58;…``), credentials before the host (``https://adilet.zan.kz@evil.example/``), a bare
``//host``. Only an absolute ``http``/``https`` URL on an expected host (:data:`LINK_HOSTS`, or a sub-domain of
one; more with ``ZAN_LINK_HOSTS``, comma-separated) is kept as a link: :func:`link_problem` says why anything
else is not, and the extractors keep such a value as text in the document's notices instead of ``source_url``.
The pages check again before writing an ``href`` (:func:`safe_link`), so a registry written before this rule
cannot put a script behind a link either.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

# The hosts zan's sources publish on; a link elsewhere is kept as text, never as a link.
LINK_HOSTS = (
    "adilet.zan.kz",
    "zan.gov.kz",
    "legalacts.egov.kz",
    "ecfr.gov",
    "govinfo.gov",
    "osha.gov",
    "eec.eaeunion.org",
    "docs.eaeunion.org",
    "api.org",
    "nfpa.org",
    "iso.org",
    "iogp.org",
    "github.com",  # the kazakhstan-law repositories
)
HOSTS_ENV = "ZAN_LINK_HOSTS"
MAX_URL_CHARS = 2000
# Anything a browser strips or decodes before it reads the scheme: controls, white space, quotes, angle
# brackets, backslashes (read as "/" by browsers), and "&" (an entity) never belong in a link we write.
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f\"'<>\\`&\u00a0\u1680\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\ufeff]")
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+")


def link_hosts() -> tuple[str, ...]:
    extra = [h.strip().lower() for h in os.environ.get(HOSTS_ENV, "").split(",") if h.strip()]
    return (*LINK_HOSTS, *extra)


def link_problem(url: str, hosts: tuple[str, ...] | None = None) -> str | None:
    """Why ``url`` may not be written as a link, or None when it may."""
    if len(url) > MAX_URL_CHARS:
        return f"longer than {MAX_URL_CHARS} characters"
    bad = _UNSAFE.search(url)
    if bad:
        return f"holds {bad.group()!r}, which a link may not hold"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not url.lower().startswith(parts.scheme.lower() + "://"):
        return f"scheme {parts.scheme or 'none'!r} is not http(s)"
    if parts.username is not None or parts.password is not None:
        return "names a user before the host"
    host = (parts.hostname or "").lower()
    if not _HOST.fullmatch(host):
        return f"host {host!r} is not a domain name"
    if port not in (None, 80, 443):
        return f"port {port} is not a web port"
    allowed = hosts if hosts is not None else link_hosts()
    if not any(host == h or host.endswith("." + h) for h in allowed):
        return f"host {host} is not one of the expected hosts ({HOSTS_ENV} adds more)"
    return None


def safe_link(url: object) -> str | None:
    """``url`` when it may be written as a link (:func:`link_problem`), else None."""
    return url if isinstance(url, str) and url and link_problem(url) is None else None
