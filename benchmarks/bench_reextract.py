"""Re-extract benchmark on a generated corpus (default 400 laws × 50 articles = 20 000 chunks), as ratios.

Prints: full build time, unchanged re-run time, metadata-only re-run time (every document's status flips,
so every chunk gets a metadata-only update and nothing is embedded), and their ratios to the full build.
Goals: unchanged re-run ≤ 3% of the full build, metadata-only ≤ 20%. The write ceiling (zan's index stage
against a raw upsert) moved to ``bench_scale.py``, on the real-shaped corpus.

The corpus is generated, and that is why: the re-run goals are set at exactly 100 000 chunks in documents of
one size, and a status flip must reach every document (the real-shaped comparison of the same re-runs, beside
LangChain's, is ``bench_langchain.py``).

Each run is ``zan run`` in its own process, as users and Airflow tasks run it.

Usage: ``uv run python benchmarks/bench_reextract.py [--docs 400] [--articles 50]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import line, zan_run  # noqa: E402
from corpus import WORDS  # noqa: E402  (the generator's word list; its own realistic corpus is corpus.py)
from sample_adilet import adilet_page  # noqa: E402

GOAL_CHUNKS = 100_000  # the size the issue sets the re-run goals at


def article_text(doc: int, article: int) -> str:
    words = [WORDS[(doc * 7 + article * 13 + k * 5) % len(WORDS)] for k in range(80)]
    return f"{article}. " + " ".join(words).capitalize() + "."


def write_corpus(folder: Path, docs: int, articles: int) -> None:
    for d in range(docs):
        adilet_id = f"Z{26:02d}{d + 1:08d}"
        blocks: list[tuple[str, str]] = []
        for a in range(1, articles + 1):
            blocks += [("art", f"Статья {a}. Положение {a} закона {d + 1}"), ("p", article_text(d, a))]
        page = adilet_page(adilet_id, "rus", f"О безопасности труда {d + 1}", "Действующий",
                           f"Закон Республики Казахстан от 1 марта 2026 года № {d + 1}-VIII ЗРК.", blocks)  # fmt: skip
        (folder / f"{adilet_id}.html").write_text(page, "utf-8")


def timed(label: str, source: Path | None, home: Path, stages: dict[str, float] | None = None) -> float:
    """One ``zan run`` in its own process, as users and Airflow tasks run it (wall time, process start and
    imports included). Measured: in one long-lived process, a metadata-only re-run right after the full
    build spent 6.3 s in Chroma's ``update`` for 20 000 records, where a fresh process spends 2.5 s."""
    run = zan_run(["--home", str(home), *(["--source", str(source)] if source else [])])
    info = run.info
    if stages is not None:
        stages.update(info["seconds"])
    print(
        f"{label:<24} {run.seconds:7.1f} s  chunks {info['chunks']:>6}  added {info['added']:>6}  metadata_changed "
        f"{info['metadata_changed']:>6}  unchanged {info['unchanged']:>6}  embedded {info['embedded']:>6}  "
        f"vector_writes {info['vector_writes']:>6}  status {info['status']}"
    )
    top = sorted(info["seconds"].items(), key=lambda kv: -kv[1])[:6]
    print("    " + ", ".join(f"{stage} {s:.2f} s" for stage, s in top))
    return run.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--articles", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus, home = Path(tmp) / "corpus", Path(tmp) / "home"
        corpus.mkdir()
        write_corpus(corpus, args.docs, args.articles)
        full_stages: dict[str, float] = {}
        full = timed("full build", corpus, home, full_stages)
        unchanged = timed("unchanged re-run", None, home)
        for page in corpus.glob("*.html"):
            page.write_text(page.read_text("utf-8").replace("Действующий", "Утративший силу"), "utf-8")
        metadata = timed("metadata-only re-run", None, home)
    baseline = f"full build {full:.1f} s"
    # The re-run goals are the issue's, at 100 000 chunks: below that a run's fixed cost (interpreter start,
    # imports, the embedded index's health check: ~1.3 s) weighs more than the work, so the ratio is printed
    # and not judged.
    judged = args.docs * args.articles >= GOAL_CHUNKS
    print(line("unchanged re-run / full build", f"{unchanged / full:.1%} ({unchanged:.1f} s)", baseline,
               "≤ 3% @100k", unchanged / full <= 0.03 if judged else None))  # fmt: skip
    print(line("metadata-only re-run / full build", f"{metadata / full:.1%} ({metadata:.1f} s)", baseline,
               "≤ 20% @100k", metadata / full <= 0.20 if judged else None))  # fmt: skip
    if not judged:
        print(f"    (re-run ratios judged at ≥ {GOAL_CHUNKS:,} chunks: --docs 2000 --articles 50)")


if __name__ == "__main__":
    main()
