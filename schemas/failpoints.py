"""Named points where a fault-injection test can stop or break a run (``extract``, ``index_check`` while the
embedded index is checked, ``index_begin`` before the index is first written, ``index`` after each batch
written, ``centroids`` in the helper that takes the documents' centroids beside the last write, ``publish``,
``delete``).

``ZAN_FAILPOINT=<name>`` arms one point; ``ZAN_FAILPOINT_ACTION`` says what happens there:

- ``sleep`` (default): write ``ZAN_FAILPOINT_FILE`` (when set) and sleep, so a test can ``kill -9`` the
  process exactly there (or stop a Chroma server under it) and prove the published version survived;
- ``enospc``: raise ``OSError(ENOSPC)`` as a full disk would;
- ``fill``: fill the file system of ``ZAN_FAILPOINT_FILL`` (a file path) until it is full, then go on, so the
  run's next writes (Chroma's included) meet a real full disk.

With the variable unset (always, in production) a failpoint is one environment lookup.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path


def failpoint(name: str) -> None:
    if os.environ.get("ZAN_FAILPOINT") != name:
        return
    action = os.environ.get("ZAN_FAILPOINT_ACTION", "sleep")
    marker = os.environ.get("ZAN_FAILPOINT_FILE")
    if marker:
        Path(marker).write_text(f"{os.getpid()} {name}\n", "utf-8")
    if action == "enospc":
        raise OSError(errno.ENOSPC, f"No space left on device (failpoint {name})")
    if action == "fill":
        _fill(Path(os.environ["ZAN_FAILPOINT_FILL"]))
        return
    time.sleep(float(os.environ.get("ZAN_FAILPOINT_SLEEP", "120")))


def _fill(path: Path) -> None:
    block = b"\0" * (1 << 16)
    try:
        with path.open("ab") as handle:
            while True:
                handle.write(block)
                handle.flush()
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
