"""Peak memory of each stage of one full build, in one process, to find what grows with the corpus.

The high-water mark is reset before each stage (``/proc/self/clear_refs``, Linux only), and a thread samples
the anonymous RSS and the bytes Arrow's pool holds, so each line says how high that stage went and how much
of it was Arrow. ``--noop-index`` replaces the Chroma collection by one that accepts writes and keeps
nothing, which separates zan's own memory from the Chroma client's (validate then has nothing to read back,
so the run stops after ``index``). Without it, pass ``--chroma-url`` of a ``chroma run`` server.

    python benchmarks/probe_stages.py 20000 --noop-index
    python benchmarks/probe_stages.py 100000 --chroma-url http://127.0.0.1:8799
    python benchmarks/probe_stages.py 40 --shaped --noop-index   # 40 copies of the real corpus
    python benchmarks/probe_stages.py 130 --shaped --noop-index --split-lexical   # the BM25 build apart
    python benchmarks/probe_stages.py 40 --shaped --noop-index --split-enrich     # each step of enrich
    python benchmarks/probe_stages.py 20000 --kazlaw --noop-index --split-lexical  # a git scope of 20 000 acts
    python benchmarks/probe_stages.py 20000 --kazlaw --noop-index --own-processes  # as a large zan run does

``--own-processes`` runs the registry and enrich stages each in a spawned process, as ``zan run`` does from
``runs.pipeline.OWN_PROCESS_FROM`` files: their lines then give the child's own peak and this process's RSS
beside it (their sum is what the machine held).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import process_tree, status_mb  # noqa: E402
from corpus import write_corpus  # noqa: E402

import runs  # noqa: E402,F401  (first: it picks Arrow's allocator before pyarrow loads)


def status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) // 1024
    return 0


class NoopCollection:
    metadata: dict[str, Any] = {}

    def upsert(self, **_: Any) -> None: ...

    def update(self, **_: Any) -> None: ...


def apart(stage: Any, *args: Any) -> Any:
    """``stage(state, *args)`` in a spawned process (``runs.child.in_own_process``, fresh, as ``zan run`` runs a
    large run's stages)."""
    from runs.child import in_own_process

    return children(lambda state: in_own_process(stage, state, *args, what=f"the {stage.__name__} stage", fresh=True))


def children(call: Any) -> Any:
    """``call``, printing the peak of the processes it starts and what this one holds beside them."""

    def watched(state: Any) -> Any:
        seen: dict[int, int] = {}
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                for pid in process_tree(os.getpid())[1:]:  # the processes below this one
                    with contextlib.suppress(OSError):
                        seen[pid] = max(seen.get(pid, 0), int(status_mb(pid, "VmHWM:")))
                done.wait(0.01)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            return call(state)
        finally:
            done.set()
            watcher.join()
            print(
                f"  its own process: peak {max(seen.values(), default=0)} MB; this one holds {status('VmRSS')} MB",
                flush=True,
            )

    return watched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chunks", type=int)
    parser.add_argument("--noop-index", action="store_true", help="a collection that keeps nothing")
    parser.add_argument("--chroma-url", help="a chroma run server (else the embedded index under the home)")
    parser.add_argument("--shaped", action="store_true", help="CHUNKS is copies of the real corpus (shaped.py)")
    parser.add_argument("--kazlaw", action="store_true", help="CHUNKS is acts of a kazakhstan-law git scope "
                        "(kazlaw_scope.py, 200 commits of history)")  # fmt: skip
    parser.add_argument("--split-lexical", action="store_true", help="the BM25 build's own peak, apart from enrich")
    parser.add_argument("--split-enrich", action="store_true", help="each step of the enrich stage's own peak")
    parser.add_argument(
        "--own-processes",
        action="store_true",
        help="registry and enrich in spawned processes "
        "(with --split-enrich, only registry: the split watches this process)",
    )
    parser.add_argument("--corpus", type=Path, help="make the corpus here, or reuse the one made there before")
    args = parser.parse_args()
    import pyarrow as pa

    from runs import indexing, stages
    from runs.memory import lean_arrow_memory
    from vectors.embed import HashingEmbedder

    lean_arrow_memory()
    peak = {"arrow": 0, "anon": 0}

    def sample() -> None:
        while True:
            peak["arrow"] = max(peak["arrow"], pa.total_allocated_bytes() >> 20)
            peak["anon"] = max(peak["anon"], status("RssAnon"))
            time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()
    if args.split_lexical:
        build = stages.build_word_indexes

        def timed_build(*given: Any) -> int:
            print(f"  enrich without BM25: peak {status('VmHWM')} MB", flush=True)
            Path("/proc/self/clear_refs").write_text("5")
            built = build(*given)
            print(f"  BM25 build: peak {status('VmHWM')} MB, after {status('VmRSS')} MB", flush=True)
            return built

        stages.build_word_indexes = timed_build  # type: ignore[assignment]
    if args.split_enrich:  # each step of the enrich stage on its own line, its own high-water mark
        from runs import build
        from vectors import words

        def watched(module: Any, name: str) -> None:
            inner = getattr(module, name)

            def call(*given: Any, **named: Any) -> Any:
                Path("/proc/self/clear_refs").write_text("5")
                peak.update(arrow=0)
                out = inner(*given, **named)
                print(f"  {name:<20} peak {status('VmHWM'):5} MB  after {status('VmRSS'):5} MB  "
                      f"Arrow {peak['arrow']:4} MB", flush=True)  # fmt: skip
                return out

            setattr(module, name, call)

        for module, name in ((build, "join_files"), (build, "combine_files"), (build, "write_parquet_stream"),
                             (stages, "carry_rejects"), (stages, "_history"), (stages, "disagreements"),
                             (stages, "same_tables"), (stages, "write_small_tables"),
                             (stages, "_live_keys"), (stages, "build_word_indexes"), (words, "build_cards"),
                             (words, "build_bridge")):  # fmt: skip
            watched(module, name)
    url = args.chroma_url
    if args.noop_index:
        url = "http://127.0.0.1:9"  # never contacted: the client below stands in for it
        indexing.LazyClient = lambda *_: type("C", (), {"get": lambda self: None})()  # type: ignore[misc,assignment]
        indexing.get_collection = lambda *_: NoopCollection()
        indexing.collection_embedder = lambda *_: None
    with tempfile.TemporaryDirectory(prefix="zan-probe-") as name:
        tmp = Path(name)
        corpus = args.corpus or tmp / "corpus"
        if corpus.exists():
            print(f"corpus {corpus} (made before)", flush=True)
        elif args.kazlaw:
            import kazlaw_scope

            kazlaw_scope.build(corpus, args.chunks, 200)
        elif args.shaped:
            from shaped import write

            write(corpus, args.chunks)
        else:
            write_corpus(corpus, args.chunks)
        embedder = HashingEmbedder()
        state = stages.begin(tmp / "home", [corpus], None, url, embedder="hash", embedder_id=embedder.id,
                             holder="process")  # fmt: skip
        steps: list[tuple[str, Any]] = [
            ("extract", lambda s: [stages.extract_shard(s, n) for n in range(len(stages.RunState.load(s).shards))]),
            ("registry", apart(stages.registry) if args.own_processes else stages.registry),
        ]
        if args.own_processes and not args.split_enrich:  # as runs.pipeline.run does for a large run
            from runs.lexical import lexical_apart

            lexical = children(lambda s: lexical_apart(s, fresh=True))
            steps += [("enrich", apart(stages.enrich, False)), ("lexical", lexical)]
        else:
            steps.append(("enrich", stages.enrich))
        steps.append(("index", lambda s: stages.index(s, embedder)))
        if not args.noop_index:
            steps += [("validate", stages.validate), ("publish", stages.publish), ("report", stages.report)]
        for stage, call in steps:
            Path("/proc/self/clear_refs").write_text("5")
            peak.update(arrow=0, anon=0)
            started = time.perf_counter()
            call(state)
            print(f"{stage:<9} peak {status('VmHWM'):5} MB  after {status('VmRSS'):5} MB  anonymous {peak['anon']:5} MB"
                  f"  Arrow {peak['arrow']:4} MB  {time.perf_counter() - started:6.1f} s", flush=True)  # fmt: skip
        stages.finish(state)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
