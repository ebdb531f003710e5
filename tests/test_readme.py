"""The README runs as written: every local command in its ``bash`` blocks, pasted into a shell where
``source .venv/bin/activate`` was run, from a folder laid out like the repository after ``make run`` (a copy of
the bundled corpus with two published versions, so a rollback has somewhere to go).

Commands that need what a test machine does not have are left out, each for a stated reason."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runs.pipeline import run
from tests.conftest import CORPUS, ROOT, SAMPLE

pytestmark = pytest.mark.slow

NOT_HERE = {
    "make ": "sets up and runs everything itself (CI runs make test; make run is the first command a user runs)",
    "export ": "Airflow's environment: `airflow dags test` is run by tests/test_dags.py",
    "airflow ": "run by tests/test_dags.py::test_airflow_dags_test_cli_as_the_readme_says",
    "docker ": "no Docker engine on the test machines",
    "AIRFLOW__": "docker compose",
    "chroma run": "a server: tests/test_pipeline.py starts one on 127.0.0.1",
    "zan serve": "a server: tests/test_serve.py starts one on 127.0.0.1 and queries every endpoint shown here",
    "curl ": "queries zan serve: tests/test_serve.py asks the same addresses",
    "zan fetch": "needs the network",
    "zan mcp": "an MCP server on stdio: tests/test_plugin.py starts it and talks to it with the SDK's client",
    "git clone https": "needs the network: tests/test_kazlaw_git.py clones a local repository",
    "--chroma-url": "needs a running Chroma server",
    "--embedder st:": "needs a local model folder",
    "./landing": "the landing zone zan fetch fills",
    ".tools/bin/uv": "installs an optional extra",
    "python -m deploy": "the native Airflow stack: make test-deploy brings it up (tests/deploy/test_stack.py)",
    "bench_deploy.py": "brings the native Airflow stack up twice (a benchmark, not a test)",
    "/tmp/e5": "the real corpus embedded by the real model (3 minutes): tests/test_plain_words.py does the same",
    "gpu-box": "an embeddings service on another machine: tests/test_embedders.py starts a real one on 127.0.0.1",
    "/srv/zan": "the GPU host's home, built by the `gpu-box` run above (tests/test_plain_wide.py tunes and evaluates)",
}


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    lines = [line for block in re.findall(r"```bash\n(.*?)```", text, re.S) for line in block.splitlines()]
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _skipped(command: str) -> str | None:
    return next((why for marker, why in NOT_HERE.items() if marker in command), None)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    ws = root / "repo"
    data = ws / "data"
    shutil.copytree(SAMPLE, data / "sample")
    shutil.copytree(ROOT / "data" / "golden", data / "golden")
    run([data / "sample"], data)
    order = data / "sample" / "adilet" / "rus" / "V2100022334.html"
    order.write_text(order.read_text("utf-8").replace("Действующий", "Утративший силу"), "utf-8")
    assert run(None, data).version == "v000002"
    if CORPUS.exists():  # ../shared/corpus from the repository root, as in the README
        (root / "shared").symlink_to(CORPUS.parent)
    return ws


def test_the_readme_names_commands_to_run() -> None:
    commands = _commands()
    runnable = [c for c in commands if not _skipped(c)]
    assert len(runnable) >= 20 and any(c.startswith("zan lookup") for c in runnable)


@pytest.mark.parametrize("command", [c for c in _commands() if not _skipped(c)])
def test_a_readme_command_runs_as_written(workspace: Path, command: str) -> None:
    if "../shared/corpus" in command and not CORPUS.exists():
        pytest.skip(f"real corpus {CORPUS} is absent")
    scratch = workspace.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    venv = ROOT / ".venv"
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = str(ROOT)  # the activated venv has zan installed from ROOT; python -c needs no more
    script = command.replace("source .venv/bin/activate", f"source {venv}/bin/activate")
    script = script.replace("/tmp/", f"{scratch}/")  # the README's scratch homes, kept inside the test's folder
    done = subprocess.run(["bash", "-c", script], cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
