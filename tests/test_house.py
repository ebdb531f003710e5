"""The house rules a newcomer relies on: packages that import only downwards and never in a cycle, modules a
person can read, a CLI that starts without the heavy libraries, and run statuses that say what happened."""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from runs.pipeline import RunOptions, run
from runs.state import RunStatus
from tests.conftest import ROOT, SAMPLE, free_port

PACKAGES = ("cli", "dags", "deploy", "serve", "lookup", "runs", "vectors", "enrich", "extractors", "schemas")
# Floors from top to ground (STYLE.md): a package imports only packages below it.
FLOORS = {
    "deploy": 7,  # the stack's supervisor: a top floor of its own that imports no other package of the house
    "cli": 7,
    "dags": 7,
    "serve": 6,
    "lookup": 5,
    "runs": 5,
    "vectors": 4,
    "enrich": 3,
    "extractors": 2,
    "schemas": 1,
}
HEAVY = ("chromadb", "duckdb", "pyarrow", "numpy", "pypdf", "lxml", "httpx")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """module → the project modules it imports anywhere in its file (top level, in functions, for typing)."""
    known = {_module(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            mod = _module(path)
            graph[mod] |= {n for n in _imported(path) if n in known and n != mod}
    return graph


def _parse(text: str) -> ast.Module:
    """``ast.parse(text)``: here, or in a fresh interpreter where this one's parser fails (CPython 3.11.7 can be
    left raising ``SystemError: AST constructor recursion depth mismatch`` by a deep recursion earlier in the
    same process: the hostile-markup tests may run in the same xdist worker)."""
    try:
        return ast.parse(text)
    except SystemError:
        code = "import ast, pickle, sys; sys.stdout.buffer.write(pickle.dumps(ast.parse(sys.stdin.read())))"
        done = subprocess.run([sys.executable, "-c", code], input=text.encode("utf-8"), capture_output=True, check=True)
        tree = pickle.loads(done.stdout)  # our own child's answer, about our own source
        assert isinstance(tree, ast.Module)
        return tree


def _names(source: str) -> list[str]:
    """The absolute module names ``source`` imports (and ``module.name`` for each name it imports from one)."""
    names: list[str] = []
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def _imported(path: Path) -> list[str]:
    """:func:`_names` of ``path``."""
    return _names(path.read_text("utf-8"))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_files_or_packages() -> None:
    graph = _imports()
    packages: dict[str, set[str]] = defaultdict(set)
    for mod, deps in graph.items():
        packages[mod.split(".")[0]] |= {d.split(".")[0] for d in deps} - {mod.split(".")[0]}
    assert _cycles(graph) == [] and _cycles(packages) == []


def test_each_package_imports_only_the_floors_below_it() -> None:
    upward = [
        (mod, dep)
        for mod, deps in _imports().items()
        for dep in deps
        if FLOORS[dep.split(".")[0]] >= FLOORS[mod.split(".")[0]] and dep.split(".")[0] != mod.split(".")[0]
    ]
    assert upward == []


def test_serve_stands_over_lookup_and_parquet_io_is_not_one_stage_s() -> None:
    """The server reads what runs wrote through lookup's readers (the run history included), never the run
    machinery; the parquet I/O every layer uses lives on the ground floor (``schemas.parquet``), so no package
    imports ``enrich`` to read or write a file."""
    graph = _imports()
    assert {(m, d) for m, deps in graph.items() if m.startswith("serve") for d in deps if d.startswith("runs")} == set()
    storage = {
        (m, d) for m, deps in graph.items() for d in deps if d.startswith("enrich") and not m.startswith("enrich")
    }
    assert {(m, d) for m, d in storage if "storage" in d or "parquet" in d} == set()
    assert "schemas.parquet" in graph["runs.stages"] and "schemas.parquet" in graph["lookup.registry_index"]


def test_a_parser_left_broken_by_an_earlier_test_parses_in_a_fresh_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> ast.Module:
        raise SystemError("AST constructor recursion depth mismatch")

    monkeypatch.setattr(ast, "parse", broken)  # this process's only: the fresh interpreter parses
    assert _names("import os\nfrom runs import stages\n") == ["os", "runs", "runs.stages"]


def test_the_library_never_imports_airflow_or_the_cli() -> None:
    offenders = []
    for pkg in ("lookup", "runs", "vectors", "enrich", "extractors", "schemas"):
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(_parse(path.read_text("utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                offenders += [(str(path), n) for n in names if n.split(".")[0] in ("airflow", "cli", "dags", "typer")]
    assert offenders == []


def test_deploy_imports_nothing_of_the_house() -> None:
    """deploy/ starts and checks the stack an operator runs (Airflow, Chroma, the proxy): it reaches zan through
    its API and its containers, never by importing the ETL (a broken library must not break the supervisor)."""
    graph = _imports()
    outside = {
        (m, d) for m, deps in graph.items() if m.startswith("deploy") for d in deps if not d.startswith("deploy")
    }
    assert outside == set()


def test_the_client_imports_nothing_of_the_house() -> None:
    """clients/python is the ground floor of another building: the typed answer and the retrievers a chatbot
    installs import no package of the ETL (the server imports them, never the other way)."""
    offenders = []
    for path in (ROOT / "clients" / "python" / "zan_client").rglob("*.py"):
        for node in ast.walk(_parse(path.read_text("utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [(path.name, n) for n in names if n.split(".")[0] in PACKAGES]
    assert offenders == []


def test_every_module_has_its_line_in_the_map_of_tests() -> None:
    """tests/README.md says where each module is tested: a new module cannot be left out of it."""
    mapped = (ROOT / "tests" / "README.md").read_text("utf-8")
    modules = [p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).glob("*.py")
               if p.name not in ("__init__.py", "__main__.py")]  # fmt: skip
    assert [m for m in modules if f"`{m}`" not in mapped] == []


def test_what_callers_send_is_bounded_by_lookup_limits_not_by_literals() -> None:
    # max_length=200 in one route and doc_id[:200] in another drifted apart before: every bound is a name
    import re

    literal = re.compile(r"max_length=\d|\b(?:q|doc_id|label|issuer)\[:\d|max=\d+,\s*help=\"Chunks")
    found = {str(p.relative_to(ROOT)): m.group(0) for pkg in ("serve", "cli") for p in (ROOT / pkg).glob("*.py")
             for m in [literal.search(p.read_text("utf-8"))] if m}  # fmt: skip
    assert found == {}


def test_no_module_is_over_500_lines() -> None:
    files = [p for pkg in (*PACKAGES, "tests", "benchmarks", "scripts") for p in (ROOT / pkg).rglob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text("utf-8").splitlines())) > 500}
    assert long == {}


def test_zan_help_imports_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "cli", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "zan" in done.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))
    assert not imported & {"runs", "vectors", "lookup", "enrich", "extractors"}


def test_a_zan_command_ends_with_what_is_alive_frozen_and_its_output_written(tmp_path: Path) -> None:
    # the shutdown's collections then skip it (~0.3 s after a run); a failing command ends the same way
    report = "import atexit, gc, sys; atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))"
    for args, code, said in ((["--version"], 0, "zan "), (["lookup", "--home", str(tmp_path), "ст. 156"], 1, "")):
        done = subprocess.run([sys.executable, "-c", f"{report}; sys.argv = ['zan', *{args!r}]; import cli; cli.main()"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
        assert done.returncode == code and done.stdout.startswith(said), done.stderr
        frozen = int(done.stderr.split("frozen ")[-1])
        assert frozen > 10_000, done.stderr  # every module zan, typer and click brought in


def test_every_command_group_has_help_with_an_example() -> None:
    runner = CliRunner()
    commands = ["run", "versions", "rollback", "enrich-collection", "fetch", "sql", "lookup", "eval", "audit"]
    for name in commands:
        done = runner.invoke(app, [name, "--help"])
        assert done.exit_code == 0 and "Example:" in done.output, name


def test_statuses_say_what_happened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runner = CliRunner()
    first = runner.invoke(app, ["run", "--home", str(home), "--source", str(SAMPLE)])
    assert first.exit_code == 0 and "published v000001:" in first.output
    again = runner.invoke(app, ["run", "--home", str(home)])
    assert again.exit_code == 0 and "unchanged, v000001 stays published:" in again.output
    assert "published v000002" not in again.output
    forced = run(None, home, options=RunOptions(only=("nfpa-652",), force_reembed=True))
    assert (forced.status, forced.version, forced.embedded > 0) == (RunStatus.PUBLISHED, "v000001", True)
    status = runner.invoke(app, ["sql", "SELECT status FROM runs ORDER BY run_id", "--home", str(home), "--format",
                                 "csv"])  # fmt: skip
    assert status.output.split()[1:] == ["published", "unchanged", "published"]


@pytest.mark.parametrize(
    "command", [["enrich-collection", "--collection", "lumi_docs"], ["lookup", "требования охраны труда"]]
)
def test_an_unreachable_chroma_server_is_one_line(sample_run, command: list[str]) -> None:  # type: ignore[no-untyped-def]
    url = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run([sys.executable, "-m", "cli", *command, "--home", str(sample_run[1]), "--chroma-url", url],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot be reached" in done.stderr and len(done.stderr.strip().splitlines()) <= 3, done.stderr


def test_a_lookup_by_number_answers_while_the_chroma_server_is_down(sample_run) -> None:  # type: ignore[no-untyped-def]
    """A question that names a document is answered from the published version's files, not the index."""
    url = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run([sys.executable, "-m", "cli", "lookup", "приказ МТСЗН 211", "--json", "--home",
                           str(sample_run[1]), "--chroma-url", url], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)  # fmt: skip
    answer = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0 and answer["status"] == "exact" and answer["chunks"], done.stderr


def test_document_types_are_checked_where_they_enter() -> None:
    from schemas.kinds import DOC_TYPES, as_doc_type
    from schemas.reference import codes

    assert as_doc_type("order") == "order" and as_doc_type(None) is None
    with pytest.raises(ValueError, match="unknown document type 'ordr'"):
        as_doc_type("ordr")
    assert {c.doc_type for c in codes()} <= set(DOC_TYPES)


def test_a_refusal_never_imports_chromadb(sample_run) -> None:  # type: ignore[no-untyped-def]
    """The index opens on the first fetch: a lookup that refuses (nothing to fetch) does not load chromadb."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "cli", "lookup", "Приказ №999", "--home",
                           str(sample_run[1])], capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "status: not_found" in done.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "chromadb" not in imported


def test_docs_point_only_to_files_and_modules_that_exist() -> None:
    """tests/README.md, the READMEs and every docstring name files and modules a newcomer can open: a path that
    starts at one of the repository's folders exists, and a ``:mod:`` names a module of the house."""
    import re

    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    path = re.compile(r"(?<![\w/.$-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|jsonl?|ya?ml|toml|html|css|txt|sh))\b")
    module = re.compile(r":mod:`~?([\w.]+)`")
    modules = {_module(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    readmes = (ROOT / "README.md", ROOT / "tests" / "README.md", ROOT / "benchmarks" / "README.md")
    texts = {doc: doc.read_text("utf-8") for doc in readmes}
    for source in [p for pkg in (*PACKAGES, "benchmarks") for p in (ROOT / pkg).rglob("*.py")]:
        tree = _parse(source.read_text("utf-8"))
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        texts[source] = "\n".join(ast.get_docstring(n) or "" for n in ast.walk(tree) if isinstance(n, kinds))
    broken = [
        (str(doc.relative_to(ROOT)), found)
        for doc, text in texts.items()
        for found in path.findall(text)
        if found.split("/")[0] in folders and not ((ROOT / found).exists() or (doc.parent / found).exists())
    ]
    broken += [
        (str(doc.relative_to(ROOT)), name)
        for doc, text in texts.items()
        for name in module.findall(text)
        if name.split(".")[0] in PACKAGES and name not in modules
    ]
    assert broken == []
