"""What every ``zan`` command shares: the options written once, the error line, the progress bar.

Nothing heavy is imported here or at the top of any command module: ``zan --help`` starts in a fraction of
a second, and each command imports the library it calls when it runs.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from schemas.limits import MAX_K_PER_DOC

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def _home(raw: str) -> Path:
    """``--home ""`` is an error, never the current directory."""
    if not str(raw).strip():
        raise typer.BadParameter("is empty: give the data directory (default ./data)")
    return Path(raw)


HomeOption = Annotated[
    Path,
    typer.Option("--home", help="Data directory (parquet files and embedded Chroma).", envvar="ZAN_HOME", parser=_home),
]
ChromaUrlOption = Annotated[
    str | None,
    typer.Option(
        "--chroma-url", help="Chroma server URL; default: embedded Chroma under HOME/chroma.", envvar="ZAN_CHROMA_URL"
    ),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="`hash`, `e5`, `st:/local/model` or `openai:URL?model=NAME`; default: the published version's "
        "(`hash` for a new HOME).",
        envvar="ZAN_EMBEDDER",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON (one line).")]
KPerDocOption = Annotated[
    int, typer.Option("--k-per-doc", min=1, max=MAX_K_PER_DOC, help="Chunks per matched document.")
]


def err() -> Console:
    """The console for messages (stderr); stdout carries only results."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)  # an error is one line, however long


@contextlib.contextmanager
def failing(command: str) -> Iterator[None]:
    """Turn the errors a command expects (zan's own, bad paths and values) into one line and exit code 1."""
    from schemas.errors import ZanError

    try:
        yield
    except (ZanError, OSError, ValueError) as exc:
        err().print(f"[red]zan {command} failed:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def progress() -> Progress:
    """A progress bar on stderr (rich); it disappears when stderr is not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = err()
    return Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=not console.is_terminal,
    )


def reporter(bar: Progress) -> Callable[[str, int, int], None]:
    """A ``(stage, done, total)`` callback that drives one bar per stage."""
    tasks: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return report
