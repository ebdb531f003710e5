"""A page read again where it changed (extractors.blocks, runs.blockmemo): what a page's blocks gave is
remembered, and a read that uses it gives exactly the document a whole read gives, on the bundled pages, the
real corpus's adilet pages and pages built to break it; in a run, through real parquet and embedded Chroma."""

from __future__ import annotations

import dataclasses
import pickle
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from extractors import blocks
from extractors.blocks import BlockMemo, remembering
from extractors.detect import extract
from runs.blockmemo import BLOCKS, BlockStore
from runs.pipeline import RunOptions, run
from schemas.published import published_file
from tests.conftest import CORPUS, SAMPLE

LABOUR_CODE = Path("adilet/rus/K1500000414.html")
EDITED = "Сторонами коллективного договора являются работодатель"  # in the bundled page and the real one
PAGE = """<html><head><title>t</title></head><body>
<div class="container_alpha slogan"><h1>Об охране труда</h1>
<p>Приказ Министра труда и социальной защиты населения Республики Казахстан от 28 декабря 2015 года № 1019.
Зарегистрирован в Министерстве юстиции Республики Казахстан 29 января 2016 года № 12999.</p></div>
<span class="status status_new">Действующий</span>
<article>
{body}
</article></body></html>"""


@pytest.fixture(autouse=True)
def _every_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page uses the memo here, however small (the bundled pages are under MIN_BYTES)."""
    monkeypatch.setattr(blocks, "MIN_BYTES", 0)


def _as_dict(document: object) -> dict[str, object]:
    return dataclasses.asdict(document)  # type: ignore[call-overload,no-any-return]


def _read(path: Path, data: bytes, memo: BlockMemo | None = None) -> dict[str, object]:
    if memo is None:
        return _as_dict(extract(path, data))
    with remembering(memo):
        return _as_dict(extract(path, data))


def _warm(path: Path, data: bytes) -> BlockMemo:
    """A memo that has read ``data`` once."""
    memo = BlockMemo()
    _read(path, data, memo)
    return BlockMemo(memo.fresh)


def _pages() -> list[Path]:
    found = sorted((SAMPLE / "adilet").rglob("*.html"))
    if (CORPUS / "adilet").is_dir():
        found += sorted((CORPUS / "adilet").rglob("*.html"))
    return found


def test_every_page_read_with_a_memo_is_the_page_read_whole() -> None:
    checked = 0
    for path in _pages():
        data = path.read_bytes()
        try:
            whole = _read(path, data)
        except Exception:  # noqa: BLE001 - a page zan rejects is not this test's (its rejects are tested elsewhere)
            continue
        cold = BlockMemo()
        assert _read(path, data, cold) == whole, path
        again = BlockMemo(cold.fresh)
        assert _read(path, data, again) == whole, path
        assert again.read == 0 and again.fresh == cold.fresh, f"{path}: a page read twice is read from memory"
        checked += 1
    assert checked >= 8


def _edited_labour_code() -> tuple[Path, bytes, bytes]:
    path = CORPUS / LABOUR_CODE
    if not path.exists():
        path = SAMPLE / LABOUR_CODE
    data = path.read_bytes()
    text = data.decode("utf-8")
    assert EDITED in text
    return path, data, text.replace(EDITED, EDITED + " (редакция)", 1).encode("utf-8")


def test_an_edited_paragraph_is_the_only_block_read_again() -> None:
    path, before, after = _edited_labour_code()
    memo = _warm(path, before)
    assert _read(path, after, memo) == _read(path, after)
    # the edited block, the one before it (its source runs to the line the edited one starts on) and any that
    # share those lines
    assert 1 <= memo.read <= 4, f"{memo.read} blocks read again for one edited paragraph"
    assert len(memo.fresh) > 20


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("<p>Второй пункт.</p>", "<p>Второй пункт, в новой редакции.</p>"),  # a paragraph edited
        ("<p>Второй пункт.</p>", ""),  # a block removed
        ("<p>Второй пункт.</p>", "<p>Второй пункт.</p>\n<p><b>Статья 3. Новая</b></p>\n<p>Её текст.</p>"),  # added
        ("<p>Второй пункт.</p>", '<p>Второй пункт.</p><span class="note">Сноска. Статья 2 с изменением'),  # unclosed
        ("\n", " "),  # every block on one source line
    ],
)
def test_an_edit_of_any_kind_reads_as_the_whole_page_does(tmp_path: Path, old: str, new: str) -> None:
    body = "\n".join(
        [
            "<p><b>Статья 1. Цель</b></p>",
            "<p>1. Первый пункт.</p>",
            '<span class="note">Сноска. Статья 1 с изменением, внесенным приказом от 01.01.2020 № 1.</span>',
            "<a name='z2'></a><p><b>Статья 2. Сфера</b></p>",
            "<p>Второй пункт.</p>",
            "<table><tr><td>Президент</td><td>Н. НАЗАРБАЕВ</td></tr></table>",
            "<p>Приложение 1 к приказу</p>",
            "<h3>Правила охраны труда</h3>",
            "<p>1. Настоящие правила.</p><br><p>2. Второй.</p>",
        ]
    )
    path = tmp_path / "V1600012999.html"
    before = PAGE.format(body=body).encode("utf-8")
    after = before.replace(old.encode(), new.encode(), 1) if old != "\n" else before.replace(b"\n", b" ")
    assert after != before
    memo = _warm(path, before)
    assert _read(path, after, memo) == _read(path, after)


def test_blocks_past_the_parsers_last_line_number_are_read_as_they_are(tmp_path: Path) -> None:
    # libxml2 numbers lines up to 65 535: a child from there on has no line of its own to be known by
    lines = [f"<p>{n}. Пункт номер {n}.</p>" for n in range(1, 70_001)]
    path = tmp_path / "V1600012999.html"
    before = PAGE.format(body="<p><b>Статья 1. Цель</b></p>\n" + "\n".join(lines)).encode("utf-8")
    after = before.replace("Пункт номер 69000.".encode(), "Пункт номер 69000, изменённый.".encode())
    memo = _warm(path, before)
    assert len(memo.known) < 65_540  # the blocks from line 65 535 on are not keyed
    assert _read(path, after, memo) == _read(path, after)


def test_a_memo_from_other_code_or_damaged_is_no_memo(tmp_path: Path) -> None:
    store = BlockStore(tmp_path)
    source = str(SAMPLE / LABOUR_CODE)
    store.folder.mkdir(parents=True)
    store.path(source).write_bytes(pickle.dumps({"fingerprint": "other", "source": source, "blocks": {b"k": 1}}))
    assert store._load(source) == {}
    store.path(source).write_bytes(b"\x80\x05 not a pickle")
    assert store._load(source) == {}
    with store.reading(SAMPLE / LABOUR_CODE) as memo:
        extract(SAMPLE / LABOUR_CODE, (SAMPLE / LABOUR_CODE).read_bytes())
    assert memo.fresh and store._load(source) == memo.fresh  # written again, by this code


def _chunks(home: Path) -> dict[str, str]:
    table = pq.read_table(published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text"])
    return dict(zip(*(table.column(c).to_pylist() for c in ("chunk_id", "text")), strict=True))


def test_a_run_reads_an_edited_page_where_it_changed_and_publishes_what_a_whole_read_does(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLE / "adilet", src / "adilet")
    home = tmp_path / "home"
    run([src], home)
    memos = sorted((home / BLOCKS).glob("*.pickle"))
    assert len(memos) == len(list(src.rglob("*.html")))  # one per page
    page = src / LABOUR_CODE
    page.write_text(page.read_text("utf-8").replace(EDITED, EDITED + " (редакция)", 1), "utf-8")
    other = src / "adilet/rus/V2400035612.html"
    store = BlockStore(home)
    store.path(str(other)).write_bytes(b"damaged")  # a damaged memo only means the page is read whole
    other.write_text(other.read_text("utf-8").replace("</article>", "<p>Новый пункт.</p></article>", 1), "utf-8")
    (src / "adilet/rus/V2100022239.html").unlink()
    run([src], home, options=RunOptions(allow_shrink=True))
    fresh = tmp_path / "fresh"
    run([src], fresh)
    assert _chunks(home) == _chunks(fresh)
    assert any("(редакция)" in text for text in _chunks(home).values())
    assert not store.path(str(src / "adilet/rus/V2100022239.html")).exists()  # a page gone: its memo too
    assert store._load(str(other)), "the damaged memo was written again"
