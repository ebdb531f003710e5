"""The ``zan`` command: one thin module per command group, each command a few lines over the library.

Command modules import only typer at the top; the library (and chromadb, duckdb, pyarrow, numpy, pypdf
behind it) is imported inside the command that needs it, so ``zan --help`` starts fast.
"""

from __future__ import annotations

import os
import sys

import typer

from cli import adopt, fetch, lookup, query, run, serve

app = typer.Typer(
    name="zan",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: starts in a fraction of the time rich formatting takes
    help="Identifier-aware document ETL for legal and safety retrieval.\n\nExample: `zan run --home ./data`",
)


def _version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("zan")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        sys.stdout.write(f"zan {found}\n")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version, help="Print the version."),
) -> None:
    """Identifier-aware document ETL for legal and safety retrieval."""


app.command("run")(run.run_command)
app.command("versions")(run.versions_command)
app.command("rollback")(run.rollback_command)
app.command("migrate")(run.migrate_command)
app.command("enrich-collection")(adopt.enrich_collection_command)
app.command("fetch")(fetch.fetch_command)
app.command("sql")(query.sql_command)
app.command("lookup")(lookup.lookup_command)
app.command("eval")(lookup.eval_command)
app.command("tune")(lookup.tune_command)
app.command("history")(lookup.history_command)
app.command("audit")(query.audit_command)
app.command("serve")(serve.serve_command)
app.command("mcp")(serve.mcp_command)


def main() -> None:
    """The ``zan`` entry point: a command that fails prints one line naming the cause (``--debug`` or
    ``ZAN_DEBUG=1`` shows the traceback instead)."""
    debug = "--debug" in sys.argv or os.environ.get("ZAN_DEBUG") == "1"
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("zan: interrupted\n")
        raise SystemExit(130) from None
    except Exception as exc:
        if debug:
            raise
        sys.stderr.write(f"zan failed: {type(exc).__name__}: {exc} (--debug shows where)\n")
        raise SystemExit(1) from None
    finally:
        _exit_without_collecting()


def _exit_without_collecting() -> None:
    """Spare the interpreter's shutdown its garbage collections: everything still alive when a command ends
    (the modules of chromadb, pyarrow, lxml and zan, ~100 000 objects) is frozen, so the collections that
    shutdown runs while it clears the modules no longer walk it. After ``zan run`` they took ~0.3 s of the
    process's life (benchmarks/README.md, "zan against LangChain"). Memory is the system's again at exit
    anyway; every file zan writes is closed by then (each is written in a ``with`` block), and the standard
    streams are flushed by the shutdown itself."""
    import gc

    gc.freeze()
