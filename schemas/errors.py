"""One base for every error zan raises on purpose, so a caller (the CLI, an Airflow task) can decide from
the error itself: ``transient`` errors (a busy data directory, a full disk, an unreachable Chroma server or
network) are worth retrying; the others (bad input, a refused shrink, a failed validation) are not, and
retrying them would only repeat the failure."""

from __future__ import annotations


class ZanError(Exception):
    """An error zan raises with a message meant for a person; ``transient`` says whether a retry may help."""

    transient: bool = False


class TransientError(ZanError):
    """A failure of something outside zan that may pass (a server, the network, the disk)."""

    transient = True
