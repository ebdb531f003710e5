"""``zan serve``: the lookup API and the registry browser over HTTP (:mod:`serve.app`)."""

from __future__ import annotations

import logging
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
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections", min=1, max=100_000, help="Open connections; one more is answered 503 and closed."
        ),
    ] = 1000,
    max_in_flight: Annotated[
        int,
        typer.Option(
            "--max-in-flight", min=1, max=10_000, help="Requests answered at once; beyond it 503 with Retry-After."
        ),
    ] = 64,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout", min=0.1, max=600, help="Seconds a client has to send its request headers (then 408)."
        ),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            min=0.1,
            max=600,
            help="Seconds a client has to send its request body, one more per --min-body-rate bytes (then 408).",
        ),
    ] = 10.0,
    min_body_rate: Annotated[
        int, typer.Option("--min-body-rate", min=1, max=1 << 30, help="Bytes of body that buy one second more.")
    ] = 16 * 1024,
    keep_alive: Annotated[
        int, typer.Option("--keep-alive", min=1, max=600, help="Seconds an idle connection stays open.")
    ] = 5,
    max_header_bytes: Annotated[
        int,
        typer.Option("--max-header-bytes", min=4096, max=1 << 20, help="Request line and headers together (then 431)."),
    ] = 64 * 1024,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option("--cors-origin", help="An origin browsers may call the API from (repeat; none by default)."),
    ] = None,
    log_format: Annotated[
        str, typer.Option("--log-format", help="Logs on stderr: json (one object a line) or text.")
    ] = "json",
) -> None:
    """Serve lookups (GET /api/lookup?q=…, the same JSON as `zan lookup --json`) and the registry pages,
    read-only, following each newly published version without a restart. MCP clients connect at /mcp
    (streamable HTTP, the same token); /livez and /readyz are for the orchestrator.

    Example: `zan serve --home ./data --port 8787` then open http://127.0.0.1:8787/?q=приказ+211
    """
    from serve.app import TOKEN_ENV, serve
    from serve.limits import ServeLimits
    from serve.served import ServeConfig

    token = os.environ.get(TOKEN_ENV) or None
    if log_format not in ("json", "text"):
        raise typer.BadParameter(f"{log_format[:20]!r}: use json or text", param_hint="--log-format")
    with failing("serve"):
        limits = ServeLimits(
            max_header_bytes=max_header_bytes,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            min_body_rate=min_body_rate,
            keep_alive=keep_alive,
            max_connections=max_connections,
            max_in_flight=max_in_flight,
        )
        config = ServeConfig(
            home, chroma_url, embedder, token, workers, limits=limits, host=host, cors_origins=tuple(cors_origin or ())
        )
        serve(config, host, port, "json" if log_format == "json" else "text")


def mcp_command(
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Serve zan's tools (lookup, search, read, document, history) to an MCP client over stdio: the client
    starts this command and talks to it on stdin/stdout. Over HTTP, `zan serve` has the same tools at /mcp.

    Example: in a client's config, `{"command": "zan", "args": ["mcp", "--home", "/srv/zan/data"]}`
    """
    from lookup.route import Lookup
    from lookup.run_history import RunHistory
    from serve.logs import configure
    from serve.mcp import build_mcp

    configure("text", logging.WARNING)  # stdout is the protocol's: every log line goes to stderr
    with failing("mcp"):
        lookup = Lookup.open(home, chroma_url, embedder)
    build_mcp(lambda: (lookup, lookup.snapshot()), RunHistory(Path(home))).run("stdio")
