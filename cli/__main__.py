"""``python -m cli``: the zan command."""

from cli import main

main()
