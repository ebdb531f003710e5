"""``zan serve``: the lookup API and the registry browser over HTTP (:mod:`serve.app`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli.common import ChromaUrlOption, EmbedderOption, HomeOption, failing


def serve_command(
    home: HomeOption = Path("data"),
    host: Annotated[str, typer.Option("--host", help="Address to bind; beyond loopback needs ZAN_SERVE_TOKEN.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8787,
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Threads for blocking work.")] = 8,
) -> None:
    """Serve lookups (GET /api/lookup?q=…, the same JSON as `zan lookup --json`) and the registry pages,
    read-only, following each newly published version without a restart.

    Example: `zan serve --home ./data --port 8787` then open http://127.0.0.1:8787/?q=приказ+211
    """
    from serve.app import TOKEN_ENV, serve
    from serve.served import ServeConfig

    token = os.environ.get(TOKEN_ENV) or None
    with failing("serve"):
        serve(ServeConfig(home, chroma_url, embedder, token, workers), host, port)
