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
  ``Retry-After`` and closed at once, so the process keeps files for the clients it serves;
- **whole requests only**: a request reaches the app (and takes one of its ``max_in_flight`` places) only once its
  body has arrived whole; until then it holds a connection and nothing else, so clients that send their bodies a
  byte a second cannot keep anyone else waiting. The body has ``body_timeout`` seconds from the end of the
  headers, and one more for every ``min_body_rate`` bytes sent, then the client gets ``408`` and is closed; a body
  over ``max_body_bytes`` gets ``413``. ``Expect: 100-continue`` is answered when the headers are read.
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
    the size limit, which uvicorn's handler does not read), and holding each request back until its body is whole:
    uvicorn, which starts the app at the request's head, sees the head, the body and its end at once."""

    last_error: h11.RemoteProtocolError | None = None

    def __init__(self, *args: Any, max_body: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_body = max_body
        self.held: h11.Request | None = None  # a request whose body is still arriving
        self.body = bytearray()
        self._ready: list[Any] = []  # the held request's body and end, handed on after it

    def next_event(self) -> Any:
        if self._ready:
            return self._ready.pop(0)
        while True:
            event = self._next()
            if self.held is None:
                if not isinstance(event, h11.Request):
                    return event
                self.held, self.body = event, bytearray()
            elif isinstance(event, h11.Data):
                self.body += event.data
                if len(self.body) > self.max_body:
                    self.held, self.body = None, bytearray()
                    self.last_error = h11.RemoteProtocolError("request body too large", error_status_hint=413)
                    raise self.last_error
            elif isinstance(event, h11.EndOfMessage):
                request, body = self.held, bytes(self.body)
                self.held, self.body = None, bytearray()
                self._ready = [h11.Data(data=body), event] if body else [event]
                return request
            else:  # NEED_DATA: the body goes on arriving
                return event

    def _next(self) -> Any:
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
        self.conn: _Connection = _Connection(
            h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes, max_body=self.limits.max_body_bytes
        )
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_started = 0.0
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
        if self.conn.held is None:
            self._disarm_body()
        elif self._body_timer is None and not self.transport.is_closing():  # its body has its own deadline
            self._body_started = self.loop.time()
            self._body_timer = self.loop.call_later(self.limits.body_timeout, self._body_too_slow)
            if self.conn.they_are_waiting_for_100_continue:
                self.transport.write(
                    self.conn.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
                )

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head has its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._disarm_body()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """h11 refused the request: answer with the status it hints (431 for a head over the limit)."""
        error = self.conn.last_error
        if error is not None and error.error_status_hint == 431:
            message = f"the request line and headers are over {self.limits.max_header_bytes} bytes\n"
            self._close_with(raw_response(431, "Request Header Fields Too Large", message))
        elif error is not None and error.error_status_hint == 413:
            message = f"the request body is over {self.limits.max_body_bytes} bytes\n"
            self._close_with(raw_response(413, "Content Too Large", message))
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

    def _disarm_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_too_slow(self) -> None:
        """The held request's body is late: past ``body_timeout`` and the seconds its bytes so far bought, 408."""
        self._body_timer = None
        if self.transport.is_closing() or self.conn.held is None:
            return
        deadline = self._body_started + self.limits.body_timeout + len(self.conn.body) / self.limits.min_body_rate
        left = deadline - self.loop.time()
        if left > 0:
            self._body_timer = self.loop.call_later(left, self._body_too_slow)
            return
        message = f"the request body did not arrive within {self.limits.body_timeout:g} s\n"
        self._close_with(raw_response(408, "Request Timeout", message))

    def _close_with(self, response: bytes, linger: float = LINGER_SECONDS) -> None:
        """Write ``response``, end our side, and close after ``linger`` seconds of reading and dropping what the
        client still sends: closing with its bytes unread would reset the connection, and a client still
        sending a 2 MB header would lose the 431 that says why (what nginx calls a lingering close)."""
        self._disarm()
        self._disarm_body()
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
