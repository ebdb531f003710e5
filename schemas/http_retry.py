"""One HTTP retry policy for every client zan runs against a server it does not own: the adilet fetcher
(:mod:`extractors.fetch`) and the embeddings service client (:mod:`vectors.service`).

What is worth another try: an answer of 429 or 5xx (:func:`transient_status`), a timeout, a dropped connection
or a truncated body; the caller raises one of its own errors carrying :attr:`Retryable.retry_after`. How long to
wait before it (:meth:`RetryPolicy.wait`): the server's ``Retry-After`` in seconds when it sent one
(:func:`retry_after`), else an exponential step from ``backoff`` (1, 2, 4 … times), both capped at
``max_wait``; with ``jitter`` half the step is drawn at random, so workers that failed together do not come
back together. The tries themselves are tenacity's (:meth:`RetryPolicy.retrying`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt


class Retryable(Protocol):
    """An error worth another try, with the server's ``Retry-After`` in seconds (None when it sent none)."""

    retry_after: float | None


class _Headers(Protocol):
    def get(self, key: str, default: str) -> str: ...


class _Response(Protocol):
    @property
    def headers(self) -> _Headers: ...


def transient_status(status: int) -> bool:
    """429 (too many requests) and 5xx: the server may answer on another try."""
    return status == 429 or status >= 500


def retry_after(response: _Response) -> float | None:
    """The ``Retry-After`` header in seconds (the HTTP-date form is not honoured: None, so backoff applies)."""
    value = response.headers.get("Retry-After", "")
    return float(value) if value.replace(".", "", 1).isdigit() else None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    backoff: float = 1.0
    max_wait: float = 60.0
    jitter: bool = False

    def wait(self, attempt: int, error: BaseException | None) -> float:
        """Seconds to wait after try number ``attempt`` (from 1) failed with ``error``."""
        after = getattr(error, "retry_after", None)
        if after is not None:
            return float(min(self.max_wait, after))
        step = float(min(self.max_wait, self.backoff * 2 ** (attempt - 1)))
        return step / 2 + random.uniform(0, step / 2) if self.jitter else step

    def retrying(
        self,
        retry_on: type[BaseException],
        wait: Callable[[RetryCallState], float] | None = None,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> Retrying:
        """tenacity's loop: up to :attr:`attempts` tries, again only on ``retry_on``, the last error raised as
        it is; ``wait`` (default :meth:`wait` of the try's error) may log or check a deadline first."""
        return Retrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=wait or self._wait,
            retry=retry_if_exception_type(retry_on),
            sleep=sleep,
            reraise=True,
        )

    def _wait(self, state: RetryCallState) -> float:
        return self.wait(state.attempt_number, state.outcome.exception() if state.outcome else None)
