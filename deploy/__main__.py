"""``python -m deploy up|down|status``: the native stack (see :mod:`deploy.stack`).

python -m deploy up --folder /tmp/zan-stack --workers 2 --var ZAN_SOURCES=/data/acts
python -m deploy status --folder /tmp/zan-stack
python -m deploy down --folder /tmp/zan-stack
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deploy.stack import Stack, StackError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--folder", type=Path, required=True, help="where the stack keeps its data and logs")
    parser.add_argument("--workers", type=int, default=2, help="Celery workers (default 2)")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable docker-compose.yml interpolates (as in .env), e.g. ZAN_SHARDS=8")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            variables = dict(v.split("=", 1) for v in args.var)
            stack = Stack(args.folder.resolve(), args.workers, variables)
            stack.up()
            print(json.dumps({"api": stack.api_url, "chroma": stack.chroma_url, "pids": stack.pids}))
        elif args.action == "down":
            Stack.load(args.folder.resolve()).down()
        else:
            stack = Stack.load(args.folder.resolve())
            print(json.dumps({"api": stack.api_url, "chroma": stack.chroma_url, "pids": stack.pids}))
    except (StackError, FileNotFoundError) as exc:
        print(f"deploy {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
