"""``zan fetch``: adilet pages into the landing zone (:mod:`extractors.fetch`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.common import err, failing, print_json


def fetch_command(
    landing: Annotated[Path, typer.Option("--landing", help="Landing zone folder (re-extract reads LANDING/adilet).")],
    adilet_id: Annotated[
        list[str] | None, typer.Option("--id", help="Adilet id to fetch (repeatable), e.g. V2400035612.")
    ] = None,
    rss: Annotated[str | None, typer.Option("--rss", help="RSS index URL listing new and changed acts.")] = None,
    base_url: Annotated[str, typer.Option("--base-url", help="Site root.")] = "https://adilet.zan.kz",
    min_interval: Annotated[float, typer.Option("--min-interval", help="Seconds between requests.")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Fetch adilet.zan.kz pages (rus, kaz and /info) politely into a content-addressed landing zone.

    Example: `zan fetch --landing ./landing --id V2400035612 --id K1500000414 && zan run --source ./landing/adilet`
    """
    from extractors.fetch import fetch_into_landing

    with failing("fetch"):
        summary = fetch_into_landing(landing, adilet_id or [], rss, base_url, min_interval=min_interval)
    if as_json:
        print_json(summary.as_dict())
    else:
        err().print(
            f"{summary.requested} acts: {summary.landed} pages ({summary.changed} new or changed, "
            f"{summary.not_modified} not modified), {len(summary.missing)} missing, {len(summary.failed)} failed"
        )
    if summary.requested and not summary.landed:
        raise typer.Exit(1)
