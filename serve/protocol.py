"""uvicorn's h11 connection, bounded before any code of ours runs (:class:`~serve.limits.ServeLimits`).

uvicorn reads request headers without a size limit when it uses httptools (one 100 MB header took 12 s of the
event loop), has no deadline for the headers (a client sending a byte a second is held for ever) and no cap on
open connections (~21 000 slow clients exhausted the process's files). This protocol, handed to uvicorn as its
``http`` class (its documented extension point), adds:

- **header bytes**: h11 stops buffering an incomplete request head at ``max_header_bytes``; the answer is
  ``431 Request Header Fields Too Large`` (uvicorn said 400), and the connection is closed;
- **a header deadline**: from the connection's start, or the end of the previous response, a client has
  ``header_timeout`` seconds to finish its request head, then gets ``408`` and is closed, however slowly it
  trickles (uvicorn's keep-alive timer restarts with every byte; this one does not);
- **a connection cap**: beyond ``max_connections`` open ones, a new connection is answered ``503`` with
  ``Retry-After`` and closed at once, so the process keeps files for the clients it serves.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from serve.limits import ServeLimits

LINGER_SECONDS = 2.0
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)


class _Connection(h11.Connection):
    """h11's connection, remembering the error it raised (its ``error_status_hint`` says 431 for a head over
    the size limit, which uvicorn's handler does not read)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.last_error = exc
            raise


def raw_response(status: int, reason: str, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    """A whole ``Connection: close`` response, written without h11 (no request may have been read)."""
    body = message.encode()
    head = [
        f"HTTP/1.1 {status} {reason}".encode(),
        b"content-type: text/plain; charset=utf-8",
        b"content-length: " + str(len(body)).encode(),
        b"connection: close",
        *(name + b": " + value for name, value in (*SECURITY_HEADERS, *extra)),
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the bounds of :attr:`limits` (set by :func:`bounded_protocol`)."""

    limits = ServeLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn: _Connection = _Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        self._head_timer: asyncio.TimerHandle | None = None
        self._discarding = False  # refused: what the client still sends is read and dropped until the close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        if len(self.connections) > self.limits.max_connections:
            retry = (b"retry-after", str(self.limits.retry_after).encode())
            self._close_with(
                raw_response(503, "Service Unavailable", "too many open connections; retry later\n", (retry,)), linger=0
            )
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is read: its deadline is met
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head has its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """h11 refused the request: answer with the status it hints (431 for a head over the limit)."""
        error = self.conn.last_error
        if error is not None and error.error_status_hint == 431:
            message = f"the request line and headers are over {self.limits.max_header_bytes} bytes\n"
            self._close_with(raw_response(431, "Request Header Fields Too Large", message))
        else:
            self._close_with(raw_response(400, "Bad Request", f"{msg}\n"))

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # a head begun and not finished in time
            message = f"the request headers did not arrive within {self.limits.header_timeout:g} s\n"
            self._close_with(raw_response(408, "Request Timeout", message))
        else:
            self.transport.close()

    def _close_with(self, response: bytes, linger: float = LINGER_SECONDS) -> None:
        """Write ``response``, end our side, and close after ``linger`` seconds of reading and dropping what the
        client still sends: closing with its bytes unread would reset the connection, and a client still
        sending a 2 MB header would lose the 431 that says why (what nginx calls a lingering close)."""
        self._disarm()
        self._unset_keepalive_if_required()
        if self.transport.is_closing():
            return
        self.transport.write(response)
        if linger <= 0 or not self.transport.can_write_eof():
            self.transport.close()
            return
        self._discarding = True
        self.transport.write_eof()
        self.loop.call_later(linger, self.transport.close)


def bounded_protocol(limits: ServeLimits) -> type[BoundedH11Protocol]:
    """The protocol class uvicorn is given (``http=``), holding ``limits``."""
    return type("ZanH11Protocol", (BoundedH11Protocol,), {"limits": limits})
