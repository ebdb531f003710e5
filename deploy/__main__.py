"""``python -m deploy secrets|up|down|status``: the deployment's secrets and the native stack.

python -m deploy secrets                 # .env beside docker-compose.yml, random values, mode 0600
python -m deploy secrets --rotate        # new values for all of them (then restart; see deploy/secrets.py)
python -m deploy up --folder /tmp/zan-stack --workers 2 --var ZAN_SOURCES=/data/acts
python -m deploy status --folder /tmp/zan-stack
python -m deploy down --folder /tmp/zan-stack
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deploy.secrets import ENV_FILE, ensure
from deploy.stack import Stack, StackError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["secrets", "up", "down", "status"])
    parser.add_argument("--folder", type=Path, help="the native stack's data and logs (up, down, status)")
    parser.add_argument("--workers", type=int, default=2, help="Celery workers (default 2)")
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable docker-compose.yml interpolates (as in .env), e.g. ZAN_SHARDS=8",
    )
    parser.add_argument("--env-file", type=Path, default=ENV_FILE, help=f"secrets: the file (default {ENV_FILE})")
    parser.add_argument("--rotate", action="store_true", help="secrets: replace every secret with a new value")
    args = parser.parse_args(argv)
    if args.action == "secrets":
        written = ensure(args.env_file, rotate=args.rotate)
        said = ", ".join(written) if written else "nothing: every secret is there"
        print(f"{args.env_file}: wrote {said}", file=sys.stderr)
        return 0
    if args.folder is None:
        parser.error(f"{args.action} needs --folder")
    try:
        if args.action == "up":
            variables = dict(v.split("=", 1) for v in args.var)
            stack = Stack(args.folder.resolve(), args.workers, variables)
            stack.up()
            print(json.dumps(stack.describe()))
        elif args.action == "down":
            Stack.load(args.folder.resolve()).down()
        else:
            print(json.dumps(Stack.load(args.folder.resolve()).describe()))
    except (StackError, FileNotFoundError) as exc:
        print(f"deploy {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
