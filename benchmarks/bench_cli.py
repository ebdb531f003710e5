"""How fast the ``zan`` command itself starts: ``zan --help`` and one ``zan lookup`` on the bundled home, each
the median of several fresh processes, with where the time goes (``python -X importtime``, by top-level
package) and each figure beside its goal and a bare ``python -c pass`` measured in the same run.

    python benchmarks/bench_cli.py [--home DIR] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOALS = {"help": 0.3, "lookup": 1.5, "refusal": 1.5}


def wall(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def imports(args: list[str]) -> Counter[str]:
    """Cumulative import seconds per top-level package, from ``-X importtime`` lines
    ``import time: self | cumulative | name`` where a nested import's name is indented."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=ROOT, capture_output=True, text=True)
    by_package: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if cumulative.strip().isdigit() and name[1:2] != " ":  # not indented: imported by the command itself
            by_package[name.strip().split(".")[0]] += int(cumulative) / 1e6
    return by_package


def bytecode_state() -> str:
    """Whether the installed packages carry compiled bytecode: without it (a venv synced without
    ``UV_COMPILE_BYTECODE`` where ``PYTHONDONTWRITEBYTECODE`` is set) every process compiles chromadb again."""
    import importlib.util

    spec = importlib.util.find_spec("chromadb")
    if spec is None or spec.origin is None:
        return "chromadb not installed"
    cached = Path(spec.origin).parent / "__pycache__"
    return "compiled (make setup)" if any(cached.glob("*.pyc")) else "NOT compiled: run `make setup`"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a built home (default: build the bundled corpus in a temp dir)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = args.home
    if home is None:
        from runs.pipeline import run

        home = Path(tempfile.mkdtemp(prefix="zan-bench-cli-"))
        run([ROOT / "data" / "sample"], home)
    python = wall([sys.executable, "-c", "pass"], args.runs)
    commands = {
        "help": ["-m", "cli", "--help"],
        "lookup": ["-m", "cli", "lookup", "ст. 182 ТК РК", "--home", str(home)],
        "refusal": ["-m", "cli", "lookup", "Приказ №999", "--home", str(home)],  # nothing to fetch: no chromadb
    }
    print(f"bare python start: {python:.3f} s (median of {args.runs}); installed packages: {bytecode_state()}")
    for name, command in commands.items():
        seconds = wall([sys.executable, *command], args.runs)
        verdict = "pass" if seconds < GOALS[name] else "FAIL"
        ratio = seconds / python
        print(f"zan {name:<7} {seconds:6.3f} s  = {ratio:5.1f}× bare python   goal < {GOALS[name]} s  {verdict}")
        top = imports(command).most_common(6)
        print("   imports: " + ", ".join(f"{pkg} {sec:.2f} s" for pkg, sec in top))


if __name__ == "__main__":
    main()
