"""``zan enrich-collection``: adopt an index another tool built (:mod:`vectors.adopt`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.common import ChromaUrlOption, HomeOption, err, failing, print_json


def enrich_collection_command(
    collection: Annotated[str, typer.Option("--collection", help="Name of the Chroma collection to enrich.")],
    home: HomeOption = Path("data"),
    chroma_url: ChromaUrlOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be updated; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Add the registry's identifier fields to a collection indexed by another tool (metadata-only updates).

    Example: `zan enrich-collection --collection lumi_docs --chroma-url http://127.0.0.1:8000 --home ./data`
    """
    from vectors.adopt import enrich_collection

    with failing("enrich-collection"):
        info = enrich_collection(home, collection, chroma_url, dry_run)
    if as_json:
        print_json(info.as_dict())
        return
    err().print(
        f"{info.records} records: {info.matched} matched ({info.updated} updated, {info.unchanged} already "
        f"enriched), {info.unmatched} unmatched {info.unmatched_sources[:3]}"
    )
