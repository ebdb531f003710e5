"""The published chunk ids a reader may see are read on demand, a row group at a time (not loaded whole
when a lookup opens): the answers must equal the whole table's, for ids inside, between and outside the
row groups, for a file not in chunk id order, and for the real corpus's published version."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lookup.published import GROUPS_KEPT, PublishedChunks
from lookup.version import Snapshot
from schemas.published import published_file


def _file(tmp_path: Path, ids: list[str], row_group_size: int) -> Path:
    path = tmp_path / "enriched_chunks.parquet"
    table = pa.table({"chunk_id": ids, "text_hash": [f"h-{i}" for i in ids], "text": ["…"] * len(ids)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_every_id_is_found_in_its_row_group_and_no_other_id_is(tmp_path: Path) -> None:
    ids = sorted(f"v{d:010d}:p{p}:0" for d in range(0, 400, 3) for p in range(1, 8))
    published = PublishedChunks(_file(tmp_path, ids, row_group_size=50))
    assert published._firsts is not None and len(published._firsts) == -(-len(ids) // 50)
    assert all(published.get(i) == f"h-{i}" for i in ids)
    absent = ["", "a", "v0000000001:p1:0", ids[0][:-1], ids[49] + "x", ids[-1] + "0", "zzz"]
    assert all(published.get(i) is None and i not in published for i in absent)
    assert len(published) == len(ids) and list(published) == ids
    assert len(published._groups) <= GROUPS_KEPT


def test_a_file_not_in_chunk_id_order_is_read_whole_and_answers_the_same(tmp_path: Path) -> None:
    ids = [f"k{n:04d}:art{n}:0" for n in range(300)]
    random.Random(3).shuffle(ids)
    published = PublishedChunks(_file(tmp_path, ids, row_group_size=40))
    assert published._firsts is None
    assert all(published[i] == f"h-{i}" for i in ids) and published.get("k9999:art1:0") is None


def test_the_real_corpus_version_answers_as_the_whole_table(corpus_run) -> None:  # type: ignore[no-untyped-def]
    home = corpus_run[1]
    table = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash"])
    whole = dict(zip(table["chunk_id"].to_pylist(), table["text_hash"].to_pylist(), strict=True))
    published = Snapshot.open(home).published
    assert published is not None and dict(published) == whole
    # read by hand: article 156 of the Labour Code (K1500000414) is published
    assert published.get("k1500000414:art156:0") == whole["k1500000414:art156:0"]


def _reference_ranking(chunks, docs, vector, k, store, lexical, language):  # type: ignore[no-untyped-def]
    """The ranking as it was written before it moved to NumPy: every row a Python object, one sort."""
    import numpy as np

    from lookup.chunks import _fused

    rows = chunks.rows(docs)
    stored = store.get(rows.column("text_hash").to_pylist())
    matrix = np.stack([stored[h] for h in rows.column("text_hash").to_pylist()])
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0)
    cosine = matrix @ vector / np.where(norms == 0, 1.0, norms)
    bm25 = lexical(chunks.positions(rows)) if lexical else None
    fused = _fused(cosine, bm25)
    ids, owners = rows.column("chunk_id").to_pylist(), rows.column("doc_id").to_pylist()
    languages = rows.column("language").to_pylist()
    order = sorted(range(len(ids)), key=lambda n: (-fused[n], ids[n]))
    if language is not None:
        spoken = {d for d, lang in zip(owners, languages, strict=True) if lang == language}
        order = [n for n in order if owners[n] not in spoken or languages[n] == language] + [
            n for n in order if owners[n] in spoken and languages[n] != language
        ]
    kept: dict[str, int] = {}
    best = []
    for n in order:
        if kept.get(owners[n], 0) < k:
            kept[owners[n]] = kept.get(owners[n], 0) + 1
            best.append(ids[n])
    return best


def test_ranking_inside_documents_is_the_reference_ranking_on_the_real_corpus(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """The NumPy ranking (one matrix from the store, lexsort, the question's language first, k per
    document) picks exactly what the plain Python ranking picked, ties included (a zero question vector
    makes every cosine equal: chunk id order decides), for one document and several, both languages."""
    import numpy as np

    from lookup.chunks import rank_in_version
    from lookup.route import Lookup, _row_scores
    from lookup.version import Narrowing

    lookup = Lookup.open(corpus_run[1])
    snap = lookup.snapshot()
    assert snap.chunks is not None
    cases = [(["k1500000414"], "Может ли работодатель уволить беременную?", "rus"),
             (["k1500000414"], "Жыл сайынғы ақылы еңбек демалысының ұзақтығы қанша?", "kaz"),
             (["k1500000414", "z1500000410", "k950001000_"], "ответственность за коррупцию", "rus"),
             (["z1500000410", "k1500000414"], "", None)]  # fmt: skip
    for docs, question, language in cases:
        for vector in (lookup.embedder.embed_queries([question or "труд"])[0], np.zeros(lookup.embedder.dim)):
            lexical = _row_scores(snap, question) if question else None
            got = rank_in_version(snap.chunks, docs, Narrowing(), vector, 3, lookup.store.matrix,
                                  lookup.embedder.embed_passages, lexical, language)  # fmt: skip
            expected = _reference_ranking(snap.chunks, docs, vector, 3, lookup.store, lexical, language)
            assert [c.chunk_id for c in got] == expected and len(expected) == 3 * len(docs), (docs, question)
