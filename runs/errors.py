"""Why a run did not publish. Each is a :class:`~schemas.errors.ZanError`: terminal unless it says otherwise
(an Airflow task fails at once on these; it retries the transient ones: a busy lease, a full disk, an
unreachable Chroma server)."""

from __future__ import annotations

from schemas.errors import ZanError


class RunError(ZanError):
    """The run cannot publish (no source, no document, nothing in scope); nothing published was touched."""


class ShrinkRefused(RunError):
    """The run would delete more than the allowed share of documents or chunks."""


class ValidationFailed(RunError):
    """The staged version or the index writes do not check out; nothing was published."""
