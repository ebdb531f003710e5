"""The bounds ``zan serve`` holds every client to, before any code of ours runs (:mod:`serve.protocol`) and
around each request (:class:`serve.app.GuardAndMeasure`). Each is a ``zan serve`` option; the README's
security paragraph lists them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeLimits:
    max_header_bytes: int = 64 * 1024  # the request line and every header together → 431, closed
    max_header_line: int = 16 * 1024  # one header field, name and value → 431
    max_headers: int = 100  # header fields in one request → 431
    header_timeout: float = 10.0  # seconds a client has to send its request line and headers → 408, closed
    body_timeout: float = 10.0  # seconds a client has to send its request body, from the end of its headers …
    min_body_rate: int = 16 * 1024  # … and one second more for every this many bytes it sent → 408, closed
    max_body_bytes: int = 128 * 1024  # a request body (an MCP call is at most 64 KB) → 413, closed
    keep_alive: int = 5  # seconds an idle connection stays open between requests
    max_connections: int = 1000  # open connections; one more is answered 503 (Retry-After) and closed
    max_in_flight: int = 64  # requests being answered at once; beyond it 503 (Retry-After), health exempt
    retry_after: int = 1  # seconds, in the Retry-After of a 503 said for load

    def __post_init__(self) -> None:
        for name in (
            "max_header_bytes",
            "max_header_line",
            "max_headers",
            "max_connections",
            "max_in_flight",
            "max_body_bytes",
            "min_body_rate",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.header_timeout <= 0 or self.body_timeout <= 0 or self.keep_alive < 1:
            raise ValueError("header_timeout and body_timeout must be over 0, keep_alive at least 1 second")
