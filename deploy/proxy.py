"""Chroma behind a token: Debian's nginx on loopback, in front of a ``chroma run`` server.

The Chroma 1.x server (Rust) authenticates nothing: its auth provider is a no-op (chroma-core/chroma#3750,
#4965), and the 0.x ``CHROMA_SERVER_AUTH*`` settings are ignored. So every deployment puts this proxy in
front of it: a request must carry the token (``Authorization: Bearer <token>``, or ``X-Chroma-Token``) or it
gets 401 and never reaches Chroma. zan's client sends ``ZAN_CHROMA_TOKEN`` (:func:`vectors.index.open_client`).

In docker-compose the Chroma container publishes no port and sits on a network only the proxy shares; in the
native stack Chroma listens on a loopback port of its own and the proxy on the port zan is given.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from deploy.secrets import safe, write_private

# What the proxy does, inside nginx's ``http`` block: the same text for both deployments (docker-compose
# mounts it as deploy/chroma-proxy.conf.template, where the nginx image fills in ${ZAN_CHROMA_TOKEN}).
SERVER = """# nginx compares map strings ignoring case: a case-sensitive regex instead (tokens are URL-safe characters)
map $http_authorization $zan_bearer {{ default 0; "~^Bearer {token}$" 1; }}
map $http_x_chroma_token $zan_header {{ default 0; "~^{token}$" 1; }}
server {{
    listen {listen};
    client_max_body_size 0;  # an upsert of thousands of chunks is one request
    location / {{
        set $zan_allowed "$zan_bearer$zan_header";
        if ($zan_allowed = "00") {{ return 401 "a token is required (ZAN_CHROMA_TOKEN)\\n"; }}
        proxy_pass http://{upstream};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_request_buffering off;  # streamed both ways: no temp files
        proxy_buffering off;
        proxy_read_timeout 600s;
        proxy_send_timeout 600s;
    }}
}}
"""

# The native stack's whole configuration: a foreground nginx with every path under the stack's folder.
TEMPLATE = """# zan: Chroma behind a bearer token (deploy/proxy.py); readable by its owner only
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{server}}}
"""

COMPOSE_TEMPLATE = Path(__file__).resolve().parent / "chroma-proxy.conf.template"


def server_block(listen: str, upstream: str, token: str) -> str:
    return SERVER.format(listen=listen, upstream=upstream, token=token)


def compose_template() -> str:
    """The text of deploy/chroma-proxy.conf.template (tests/test_compose.py keeps the file equal to it)."""
    head = "# made from deploy/proxy.py SERVER (do not edit): the nginx image fills in the token at start\n"
    return head + server_block("8000", "chroma:8000", "${ZAN_CHROMA_TOKEN}")


def nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        raise FileNotFoundError("nginx is not installed: apt-get install nginx-light (make deploy-deps)")
    return found


def write_config(folder: Path, listen: str, upstream: str, token: str) -> Path:
    """The proxy's configuration under ``folder`` (mode 0600: it holds the token); returns its path."""
    if not safe(token):  # also what keeps it a literal inside nginx's regex
        raise ValueError("the Chroma token must be 16 to 512 URL-safe characters")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / sub).mkdir(exist_ok=True)
    path = folder / "nginx.conf"
    lines = server_block(listen, upstream, token).splitlines()
    server = "".join(f"    {line}\n" if line else "\n" for line in lines)
    write_private(path, TEMPLATE.format(folder=folder, server=server))  # it holds the token
    return path


def command(config: Path) -> list[str]:
    """How to run the proxy in the foreground (its own prefix: no system paths written)."""
    return [nginx(), "-p", str(config.parent), "-c", str(config), "-e", str(config.parent / "error.log")]
