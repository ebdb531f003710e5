"""``zan serve`` under load: latency p50/p99 and throughput for exact and plain-words questions, beside a bare
Chroma ``query(where={"doc_id": …})`` on the same collection, in the same window.

Two homes, each published to a ``chroma run`` server and served by a ``zan serve`` process (as Lumi calls it):

- the bundled corpus (``data/sample``), embedded by the real model (multilingual-e5-small, 384-d) served by
  an embeddings service in its own process (:mod:`e5_service`; ``--embedder e5-inprocess``: the model inside
  ``zan serve``, as the compose file's default ``ZAN_EMBEDDER=e5`` runs it) — the plain-words goal is judged
  with it;
- ``--docs`` documents (50 000 by default): generated zan.gov.kz records, one short order each with its own
  number and ministry, because the real corpus has a few dozen acts and the cost that grows with the registry
  is resolving a number among that many; a run embeds them with the hashed n-grams (the real model would take
  hours on 2 cores), so the plain-words figure at that size is printed, not judged.

Rounds alternate: zan exact (questions that only name documents: no model call), bare Chroma, zan exact +
words (the same identifiers with a question to rank by: one model call when a named document or article has
more chunks than the answer takes, none when all of them are answered; the count is printed), zan plain
words, bare Chroma, each ``--seconds`` long with ``--clients`` concurrent clients; each line gives the p99 of
every round (min / median / max), the median p50 and the requests per second. The bare query gets a vector
computed beforehand (it has no question to parse, no registry, no ranking): it is the floor a filtered fetch
cannot go under.

Goals (issue 27, on this 2-core machine): exact p99 ≤ 50 ms — the registry path, no model; plain words
p99 ≤ 300 ms with the real model. A question with words that needs the model is judged by the model's goal:
the service embeds every question anew (:mod:`e5_service`), and e5-small alone takes 15–30 ms of these
cores per question, so four clients queue on it.

    python benchmarks/bench_serve.py                       # bundled (e5) + 50 000 documents (hash)
    python benchmarks/bench_serve.py --docs 300 --embedder hash --seconds 2 --rounds 1   # the tiny size
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import chroma_server, embedder_process, free_port, line, load, spread, zan_run  # noqa: E402

ROOT = HERE.parent
EXACT_GOAL_MS = 50.0
PLAIN_GOAL_MS = 300.0
SAMPLE_EXACT = ["ст. 182 ТК РК", "приказ 211 2015 года", "ГОСТ 12.0.004-2015", "ISO 45001", "NFPA 652",
                "Приказ МТСЗН №211", "ҚР ЕК 156"]  # fmt: skip
TAILS = [": сколько дней длится отпуск", " — кто отвечает за обучение работников", ": какие сроки проверки знаний",
         " — обязанности работодателя"]  # fmt: skip
PLAIN = ["обучение работников безопасности труда", "Может ли работодатель уволить беременную?",
         "как проводить оценку профессиональных рисков", "сверхурочная работа оплата",
         "жұмыс беруші жүкті әйелді жұмыстан шығара ала ма"]  # fmt: skip
ISSUERS = [("Министра труда и социальной защиты населения", "МТСЗН"), ("Министра по чрезвычайным ситуациям", "МЧС"),
           ("Министра энергетики", "МЭ"), ("Министра здравоохранения", "МЗ"),
           ("Министра индустрии и инфраструктурного развития", "МИИР")]  # fmt: skip
TOPICS = ["охраны труда", "пожарной безопасности", "промышленной безопасности", "обучения работников",
          "медицинских осмотров", "электробезопасности", "работ на высоте", "средств защиты"]  # fmt: skip


def write_records(folder: Path, docs: int, seed: int = 11) -> list[int]:
    """``docs`` zan.gov.kz records of orders numbered 1..docs (ministries rotate); returns the numbers."""
    rng = random.Random(seed)
    out = folder / "zan"
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, docs + 1):
        ministry, _ = ISSUERS[n % len(ISSUERS)]
        topic = TOPICS[rng.randrange(len(TOPICS))]
        year, month, day = 2015 + n % 10, 1 + n % 12, 1 + n % 28
        title = f"Об утверждении Правил {topic} (№ {n})"
        body = (f"{title}\n\nВ соответствии с Трудовым кодексом Республики Казахстан ПРИКАЗЫВАЮ:\n"
                f"1. Утвердить прилагаемые Правила {topic}.\n2. Настоящий приказ вводится в действие по истечении "
                f"десяти календарных дней после дня его первого официального опубликования.")  # fmt: skip
        record = {"_id": str(700000 + n), "_source": "KZ/Adilet", "_type": "legislation", "title": title,
                  "date": f"{year}-{month:02d}-{day:02d}", "url": f"https://adilet.zan.kz/rus/docs/{700000 + n}",
                  "language": "ru", "code": str(700000 + n), "status": "exe", "act_types": "ПРИК",
                  "requisites": f"Приказ {ministry} Республики Казахстан от {day} января {year} года № {n}.",
                  "text": body}  # fmt: skip
        (out / f"{700000 + n}_rus.json").write_text(json.dumps(record, ensure_ascii=False), "utf-8")
    return list(range(1, docs + 1))


class Served:
    """``zan serve`` over a home, in its own process, until closed."""

    def __init__(self, home: Path, chroma_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--home", str(home), "--port",
                                         str(self.port), "--chroma-url", chroma_url], cwd=ROOT,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("zan serve did not start")
            time.sleep(0.2)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def hammer(call: Callable[[int], None], clients: int, seconds: float) -> tuple[list[float], int]:
    """``clients`` threads calling ``call(i)`` for ``seconds``; returns latencies (ms) and failures."""
    latencies: list[float] = []
    failures = [0]
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def client(k: int) -> None:
        i = k
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                call(i)
                took = (time.perf_counter() - started) * 1e3
                with lock:
                    latencies.append(took)
            except Exception:
                with lock:
                    failures[0] += 1
            i += clients

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, failures[0]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(name: str, home: Path, chroma_url: str, exact: list[str], args: argparse.Namespace, judged: bool) -> None:
    from lookup.route import Lookup

    served = Served(home, chroma_url)
    lookup = Lookup.open(home, chroma_url)
    collection = lookup.collection
    snap = lookup.snapshot()
    doc_ids = sorted(snap.registry.docs)
    vectors = lookup.embedder.embed_queries(PLAIN)
    local = threading.local()

    def http() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=served.url, timeout=60)
        return local.client

    def ask(questions: list[str]) -> Callable[[int], None]:
        def call(i: int) -> None:
            r = http().get("/api/lookup", params={"q": questions[i % len(questions)]})
            r.raise_for_status()

        return call

    def bare(i: int) -> None:
        collection.query(query_embeddings=[vectors[i % len(vectors)]], n_results=5,
                         where={"doc_id": doc_ids[i % len(doc_ids)]})  # fmt: skip

    worded = [q + t for q in exact for t in TAILS]  # the same identifiers with words to rank by
    with httpx.Client(base_url=served.url, timeout=60) as once:  # which of them need the model
        modelled = sum(any(c["vector"] is not None for c in once.get("/api/lookup", params={"q": q}).json()["chunks"])
                       for q in worded)  # fmt: skip
    ways = {"zan exact": ask(exact), "bare query(where)": bare, "zan exact + words": ask(worded),
            "zan plain words": ask(PLAIN)}  # fmt: skip
    order = ["zan exact", "bare query(where)", "zan exact + words", "zan plain words", "bare query(where)"]
    p99: dict[str, list[float]] = {w: [] for w in ways}
    p50: dict[str, list[float]] = {w: [] for w in ways}
    rate: dict[str, list[float]] = {w: [] for w in ways}
    failed: dict[str, int] = dict.fromkeys(ways, 0)
    try:
        for way in ways:  # warm: the version's files, the model, the HTTP connections
            hammer(ways[way], args.clients, 1.0)
        for _ in range(args.rounds):
            for way in order:
                latencies, failures = hammer(ways[way], args.clients, args.seconds)
                p99[way].append(percentile(latencies, 0.99))
                p50[way].append(percentile(latencies, 0.50))
                rate[way].append(len(latencies) / args.seconds)
                failed[way] += failures
    finally:
        served.close()
    print(f"\n{name}: {len(doc_ids)} documents, {snap.chunks.file.metadata.num_rows if snap.chunks else 0} chunks, "
          f"{args.clients} clients, {args.rounds} × {args.seconds:.0f} s per way; {load()}")  # fmt: skip
    for way in ways:
        print(f"  {way:<20} p99 {spread(p99[way], ' ms'):<28} p50 {statistics.median(p50[way]):6.1f} ms  "
              f"{statistics.median(rate[way]):7.1f} req/s  failed {failed[way]}")  # fmt: skip
    bare_p99 = statistics.median(p99["bare query(where)"])
    exact_p99 = statistics.median(p99["zan exact"])
    plain_p99 = statistics.median(p99["zan plain words"])
    worded_p99 = statistics.median(p99["zan exact + words"])
    print(line(f"serve exact p99, {name}", f"{exact_p99:.1f} ms", f"bare query(where) {bare_p99:.1f} ms",
               f"≤ {EXACT_GOAL_MS:.0f} ms", exact_p99 <= EXACT_GOAL_MS and not failed["zan exact"]))  # fmt: skip
    print(f"  exact + words: {modelled} of {len(worded)} questions ask the model (the rest: every chunk answered)")
    worded_ok = worded_p99 <= PLAIN_GOAL_MS and not failed["zan exact + words"] if judged else None
    print(line(f"serve exact + words p99, {name}", f"{worded_p99:.1f} ms", f"bare query(where) {bare_p99:.1f} ms",
               f"≤ {PLAIN_GOAL_MS:.0f} ms (a model call)" + ("" if judged else " (not judged: hashed vectors)"),
               worded_ok))  # fmt: skip
    verdict = plain_p99 <= PLAIN_GOAL_MS and not failed["zan plain words"] if judged else None
    print(line(f"serve plain-words p99, {name}", f"{plain_p99:.1f} ms", f"bare query(where) {bare_p99:.1f} ms",
               f"≤ {PLAIN_GOAL_MS:.0f} ms" + ("" if judged else " (not judged: hashed vectors)"), verdict))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=50_000, help="generated documents in the large home")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0, help="per way per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--embedder",
        choices=["e5", "e5-inprocess", "hash"],
        default="e5",
        help="the bundled home's: e5 through a service process, the model in zan's process, or hash (tiny)",
    )
    parser.add_argument("--homes", nargs="+", choices=["bundled", "large"], default=["bundled", "large"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zan-bench-serve-") as name:
        tmp = Path(name)
        if "bundled" in args.homes:
            bundled(tmp, args)
        if "large" in args.homes:
            large(tmp, args)


def bundled(tmp: Path, args: argparse.Namespace) -> None:
    kind = "hash" if args.embedder == "hash" else "e5"
    with embedder_process(kind) as spec, chroma_server(tmp / "chroma-sample") as (url, _):
        spec = "e5" if args.embedder == "e5-inprocess" else spec
        home = tmp / "sample-home"
        zan_run(["--home", str(home), "--source", str(ROOT / "data" / "sample"), "--chroma-url", url,
                 "--embedder", spec])  # fmt: skip
        measure("bundled corpus", home, url, SAMPLE_EXACT, args, judged=args.embedder != "hash")


def large(tmp: Path, args: argparse.Namespace) -> None:
    numbers = write_records(tmp / "records", args.docs)
    rng = random.Random(3)
    issuers = [short for _, short in ISSUERS]
    exact = [f"приказ {issuers[n % len(issuers)]} № {n}" for n in rng.sample(numbers, min(200, len(numbers)))]
    with chroma_server(tmp / "chroma-large") as (url, _):
        home = tmp / "large-home"
        built = zan_run(["--home", str(home), "--source", str(tmp / "records"), "--chroma-url", url,
                         "--embedder", "hash"])  # fmt: skip
        print(f"\nbuilt {args.docs} generated documents in {built.seconds:.0f} s")
        measure(f"{args.docs} documents", home, url, exact, args, judged=False)


if __name__ == "__main__":
    main()
