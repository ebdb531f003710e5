"""What a native Celery worker calls itself in task instances (``[core] hostname_callable``).

Two workers on one machine share its hostname, so each records ``<ZAN_WORKER_NAME>@<host>`` instead: the
deployment test reads from the task instances which worker ran each mapped extract shard."""

from __future__ import annotations

import os
import socket


def worker_hostname() -> str:
    name = os.environ.get("ZAN_WORKER_NAME")
    host = socket.getfqdn()
    return f"{name}@{host}" if name else host
