"""How fast the ``zan`` command itself starts: ``zan --help`` and one ``zan lookup`` on a home built from the
real corpus (``../shared/corpus`` and the bundled sample; the sample alone when the corpus is absent), each
over several fresh processes (min / median / max), with where the time goes (``python -X importtime``, by
top-level package) and each figure beside its goal and a bare ``python -c pass`` measured in the same run,
the commands alternating run by run.

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
sys.path.insert(0, str(ROOT / "benchmarks"))

import shaped  # noqa: E402
from common import load, spread  # noqa: E402

GOALS = {"help": 0.3, "lookup": 1.5, "refusal": 1.5}


def walls(commands: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Wall seconds of each command over ``runs`` fresh processes, the commands taking turns (A B C, A B C…)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, args in commands.items():
            started = time.perf_counter()
            subprocess.run(args, cwd=ROOT, capture_output=True, check=True)
            times[name].append(time.perf_counter() - started)
    return times


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
    parser.add_argument("--home", type=Path, help="a built home (default: build the real corpus in a temp dir)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = args.home
    if home is None:
        from runs.pipeline import run

        home = Path(tempfile.mkdtemp(prefix="zan-bench-cli-"))
        sources = [p for p in (shaped.CORPUS, ROOT / "data" / "sample") if p.is_dir()]
        info = run(sources, home)
        print(f"home: {', '.join(str(s) for s in sources)}: {info.documents} documents, {info.chunks} chunks")
    commands = {
        "help": ["-m", "cli", "--help"],
        "lookup": ["-m", "cli", "lookup", "ст. 182 ТК РК", "--home", str(home)],
        "refusal": ["-m", "cli", "lookup", "Приказ №999", "--home", str(home)],  # nothing to fetch: no chromadb
    }
    everything = {"python": ["-c", "pass"]} | commands
    times = walls({name: [sys.executable, *c] for name, c in everything.items()}, args.runs)
    python = statistics.median(times["python"])
    print(f"{load()}; bare python start: {spread(times['python'], ' s')} (min / median / max of {args.runs}); "
          f"installed packages: {bytecode_state()}")  # fmt: skip
    for name, command in commands.items():
        seconds = statistics.median(times[name])
        verdict = "pass" if seconds < GOALS[name] else "FAIL"
        ratio = seconds / python
        print(f"zan {name:<7} {spread(times[name], ' s'):>22}  median = {ratio:5.1f}× bare python   "
              f"goal < {GOALS[name]} s  {verdict}")  # fmt: skip
        top = imports(command).most_common(6)
        print("   imports: " + ", ".join(f"{pkg} {sec:.2f} s" for pkg, sec in top))


if __name__ == "__main__":
    main()
