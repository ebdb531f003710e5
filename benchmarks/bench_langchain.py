"""zan against LangChain's indexing API on the same chunks, same Chroma, same embedder (an optional extra).

The corpus is generated (``benchmarks/corpus.py``); zan builds it from the pages, LangChain is handed zan's
own chunks and metadata (pre-chunked: the comparison favours LangChain). Both write to an embedded Chroma
with the offline HashingEmbedder. Three runs each: full build, unchanged re-run, metadata-only re-run (every
document's status flips). LangChain's ``index(..., cleanup="full")`` with an ``InMemoryRecordManager``.

Needs ``langchain-core`` and ``langchain-chroma`` (not in zan's lock); without them it says so and exits 0:

    uv pip install langchain-core langchain-chroma && python benchmarks/bench_langchain.py --chunks 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, line, zan_run  # noqa: E402
from corpus import write_corpus  # noqa: E402

sys.path.insert(0, str(ROOT))


def langchain_runs(home: Path, tmp: Path) -> list[float]:
    import pyarrow.parquet as pq
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.indexing import InMemoryRecordManager, index

    from enrich.metadata import chunk_metadata
    from schemas.published import published_file
    from vectors.embed import HashingEmbedder

    class Hashing(Embeddings):
        def __init__(self) -> None:
            self.inner = HashingEmbedder()

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.inner.embed_passages(texts).tolist()  # LangChain's Embeddings interface is lists of floats

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    rows = pq.read_table(published_file(home, "enriched_chunks.parquet")).to_pylist()

    def documents(status: str | None = None) -> list[Any]:
        out = []
        for r in rows:
            meta = chunk_metadata(r) | {"source": r["doc_id"]}
            if status:
                meta["status"] = status
            out.append(Document(page_content=r["text"], metadata=meta, id=r["chunk_id"]))
        return out

    store = Chroma("langchain-bench", embedding_function=Hashing(), persist_directory=str(tmp / "lc-chroma"))
    manager = InMemoryRecordManager(namespace="chroma/lc")
    manager.create_schema()
    seconds = []
    for docs in (documents("in_force"), documents("in_force"), documents("repealed")):
        start = time.perf_counter()
        result = index(docs, manager, store, cleanup="full", source_id_key="source", key_encoder="sha256",
                       batch_size=1000)  # fmt: skip
        seconds.append(time.perf_counter() - start)
        print(f"LangChain index(): {seconds[-1]:.1f} s {dict(result)}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    args = parser.parse_args()
    try:
        import langchain_chroma  # noqa: F401
        import langchain_core.indexing  # noqa: F401
    except ImportError as exc:
        print(f"skipped: LangChain is not installed here ({exc.name}); it is an optional comparison, not in the lock")
        return
    with tempfile.TemporaryDirectory(prefix="zan-bench-lc-") as name:
        tmp = Path(name)
        corpus, home = tmp / "corpus", tmp / "home"
        write_corpus(corpus, args.chunks)
        zan = [zan_run(["--source", str(corpus), "--home", str(home)]).seconds, zan_run(["--home", str(home)]).seconds]
        for page in corpus.glob("*.html"):
            page.write_text(page.read_text("utf-8").replace("Действующий", "Утративший силу"), "utf-8")
        zan.append(zan_run(["--home", str(home)]).seconds)
        lc = langchain_runs(home, tmp)
    for label, z, other in zip(("full build", "unchanged re-run", "metadata-only re-run"), zan, lc, strict=True):
        print(line(f"zan {label} ({z:.1f} s)", f"{other / z:.1f}× faster", f"LangChain index() {other:.1f} s",
                   "≥ 1×", other >= z))  # fmt: skip


if __name__ == "__main__":
    main()
