"""The server's logs: one JSON object a line on stderr (what log collectors parse), or plain text for a
person at a terminal. Every request is one ``zan.access`` line with its id (``X-Request-Id``), method, path,
status and milliseconds; the query string is never logged (questions are the users' words)."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Literal

LogFormat = Literal["json", "text"]


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        request = getattr(record, "request", None)
        if isinstance(request, dict):
            line |= request
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(fmt: LogFormat = "json", level: int = logging.INFO) -> None:
    """Send the ``zan`` loggers to stderr in ``fmt`` (once per process: a second call replaces the handler)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else logging.Formatter("%(asctime)s %(name)s %(message)s"))
    for name, at in (("zan", level), ("mcp", logging.WARNING)):  # the MCP SDK's own lines, in the same form
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(at)
        logger.propagate = False
