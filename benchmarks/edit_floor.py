"""The floor under any run that reads changed files whole, for ``bench_langchain``'s 1 % text edit (issue 44).

``bench_langchain.edit_text`` gives one body paragraph in a hundred a word. On the real-shaped corpus that
touches every copy of the Labour Code, so the files it changes hold about half the corpus's bytes. Any indexer
that re-reads a changed file whole pays at least three things on that edit, whatever else it does or skips:

- a fresh process and the imports a run needs (``import runs.pipeline``);
- extracting the changed files, in ``--workers`` spawned processes as ``zan run --workers`` does (parse only:
  no chunks, no registry, no tables);
- Chroma's own writes of the records whose text changed, on a copy of the index as it was before the edit:
  open the collection, delete the changed ids, upsert them with their new texts, vectors and metadata (the
  calls ``zan run`` makes; LangChain's ``index()`` makes the same kind).

Each part runs in its own process, ``--reps`` times, min / median / max printed; the last two count from after
their imports (chromadb's import, which a run can make while it waits, is left out: the floor is a lower
bound). Their sum is compared with
0.3× LangChain's time on the same step, which ``bench_langchain.py`` prints (``--langchain-seconds``).

    uv run python benchmarks/edit_floor.py [--copies 18] [--reps 3] [--langchain-seconds 15.8]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import shaped  # noqa: E402
from bench_langchain import WORKERS, edit_text  # noqa: E402
from common import load, spread, zan_run  # noqa: E402

# each part prints its own seconds, counted from after its imports (the imports are the first part's)
_EXTRACT = """
import multiprocessing, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from extractors.discover import extract_file
def read(paths):
    return sum(extract_file(Path(p)).document is not None for p in paths)
if __name__ == "__main__":
    started = time.perf_counter()
    files = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if l]
    n = int(sys.argv[2])
    shards = [files[i::n] for i in range(n)]
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        read_ = sum(pool.map(read, shards))
    if read_ < len(files) * 0.9:
        raise SystemExit(f"only {read_} of {len(files)} files gave a document")
    print(time.perf_counter() - started)
"""

_CHROMA = """
import sys, time
import chromadb
import numpy as np
import pyarrow.parquet as pq
from enrich.metadata import metadata_dicts
from vectors.index import COLLECTION, open_client
started = time.perf_counter()
folder, enriched, ids_file = sys.argv[1:4]
ids = set(open(ids_file, encoding="utf-8").read().split())
table = pq.read_table(enriched)
table = table.filter(np.isin(np.asarray(table.column("chunk_id").to_pylist(), dtype=object), list(ids)))
collection = open_client(folder).get_collection(COLLECTION)
dim = len(collection.get(limit=1, include=["embeddings"])["embeddings"][0])
vectors = np.random.default_rng(0).standard_normal((table.num_rows, dim)).astype(np.float32)
chunk_ids = table.column("chunk_id").to_pylist()
for start in range(0, len(chunk_ids), 1000):
    collection.delete(ids=chunk_ids[start : start + 1000])
for start in range(0, len(chunk_ids), 1000):
    part = table.slice(start, 1000)
    collection.upsert(ids=part.column("chunk_id").to_pylist(), embeddings=vectors[start : start + 1000],
                      documents=part.column("text").to_pylist(), metadatas=metadata_dicts(part))
print(time.perf_counter() - started)
"""


def timed(args: list[str]) -> float:
    """The seconds a part prints (its work after its imports), or the whole process's when it prints none."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}  # the parts are scripts in a scratch folder
    done = subprocess.run(args, capture_output=True, text=True, cwd=HERE.parent, env=env)
    if done.returncode:
        raise RuntimeError(f"{args[1]} failed: {done.stderr[-2000:]}")
    return float(done.stdout.split()[-1]) if done.stdout.strip() else time.perf_counter() - started


def digests(corpus: Path) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus.rglob("*") if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=18)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--langchain-seconds", type=float, default=15.8,
                        help="LangChain index() on the 1 % text edit, from bench_langchain.py")  # fmt: skip
    args = parser.parse_args()
    shaped.require_corpus()
    print(load())
    with tempfile.TemporaryDirectory(prefix="zan-edit-floor-") as name:
        tmp = Path(name)
        corpus, home = tmp / "corpus", tmp / "home"
        shaped.write(corpus, args.copies)
        zan_run(["--source", str(corpus), "--home", str(home), "--embedder", "hash", "--workers", str(WORKERS)])
        shutil.copytree(home / "chroma", tmp / "chroma-before")
        before = digests(corpus)
        print(f"edited {edit_text(corpus)} paragraphs")
        after = digests(corpus)
        changed = sorted(str(p) for p in after if before.get(p) != after[p])
        size = sum(Path(p).stat().st_size for p in changed)
        total = sum(p.stat().st_size for p in after)
        print(f"files changed: {len(changed)} of {len(after)}, {size / 1e6:.1f} of {total / 1e6:.1f} MB")
        (tmp / "files.txt").write_text("\n".join(changed), "utf-8")
        run = zan_run(["--source", str(corpus), "--home", str(home), "--embedder", "hash", "--workers", str(WORKERS)])
        print(f"zan run of the edit: {run.seconds:.1f} s {run.info['seconds']}")
        import pyarrow.parquet as pq

        from schemas.published import published_file, read_manifest, versions_dir

        enriched = published_file(home, "enriched_chunks.parquet")
        new = pq.read_table(enriched, columns=["chunk_id", "text_hash"]).to_pylist()
        parent = read_manifest(enriched.parent).parent  # the version the edit's run started from
        assert parent is not None
        old_folder = versions_dir(home) / parent
        rows = pq.read_table(old_folder / "enriched_chunks.parquet", columns=["chunk_id", "text_hash"]).to_pylist()
        old = {r["chunk_id"]: r["text_hash"] for r in rows}
        ids = [r["chunk_id"] for r in new if old.get(r["chunk_id"]) != r["text_hash"]]
        (tmp / "ids.txt").write_text("\n".join(ids), "utf-8")
        (tmp / "extract.py").write_text(_EXTRACT, "utf-8")  # a file: spawned workers import their function from it
        (tmp / "chroma.py").write_text(_CHROMA, "utf-8")
        print(f"records whose text changed or is new: {len(ids)}")
        parts: dict[str, list[float]] = {
            "start, a run's imports": [],
            "extract the changed files": [],
            "Chroma writes": [],
        }
        for _ in range(args.reps):
            parts["start, a run's imports"].append(timed([sys.executable, "-c", "import runs.pipeline, cli.run"]))
            parts["extract the changed files"].append(
                timed([sys.executable, str(tmp / "extract.py"), str(tmp / "files.txt"), str(WORKERS)])
            )
            shutil.rmtree(tmp / "chroma-copy", ignore_errors=True)
            shutil.copytree(tmp / "chroma-before", tmp / "chroma-copy")
            parts["Chroma writes"].append(
                timed(
                    [
                        sys.executable,
                        str(tmp / "chroma.py"),
                        str(tmp / "chroma-copy"),
                        str(enriched),
                        str(tmp / "ids.txt"),
                    ]
                )
            )
        for part, values in parts.items():
            print(f"  {part:<28} {spread(values, ' s')}")
        floor = sum(statistics.median(v) for v in parts.values())
        goal = 0.3 * args.langchain_seconds
        print(f"floor (sum of medians) {floor:.1f} s; 0.3× LangChain's {args.langchain_seconds:.1f} s = {goal:.1f} s: "
              f"{'reachable' if floor <= goal else 'below the floor'}")  # fmt: skip
    print(load())


if __name__ == "__main__":
    main()
