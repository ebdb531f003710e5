"""Named points where a fault-injection test can stop a run (and then ``kill -9`` it).

Setting ``ZAN_FAILPOINT=<name>`` makes the run write ``ZAN_FAILPOINT_FILE`` (when set) and sleep at that
point, so a test can kill the process exactly there and prove the published version survived. With the
variable unset (always, in production) a failpoint is one environment lookup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

POINTS = ("extract", "index", "publish", "delete")


def failpoint(name: str) -> None:
    if os.environ.get("ZAN_FAILPOINT") != name:
        return
    marker = os.environ.get("ZAN_FAILPOINT_FILE")
    if marker:
        Path(marker).write_text(f"{os.getpid()} {name}\n", "utf-8")
    time.sleep(float(os.environ.get("ZAN_FAILPOINT_SLEEP", "120")))
