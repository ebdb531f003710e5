"""A hostile corpus, generated here, run beside the bundled one in one `zan run`: every case has the outcome it
must have (read, rejected with its reason, skipped without being opened, or set aside for the real act it
impersonates), nothing crashes the run, and every good document is published exactly as a clean run would."""

from __future__ import annotations

import codecs
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from enrich.query import connect
from runs.pipeline import run
from schemas.published import published_file
from tests.conftest import SAMPLE

ADILET = "adilet/rus"


def page(
    body: str,
    title: str = "Об испытаниях",
    requisites: str = "Приказ Министра финансов Республики Казахстан от 1 марта 2024 года № 5",
) -> str:
    return (
        "<html><head><title>Әділет</title></head><body><div class='container_alpha slogan'><h1>" + title + "</h1>"
        f"<span class='status status_new'>Новый</span><p>{requisites}</p></div><article>{body}</article></body></html>"
    )


def record(**fields: object) -> bytes:
    number = str(fields.get("_id", "990001"))[-6:]
    base: dict[str, object] = {"_id": "990001", "title": "О проверке", "text": "О проверке\n1. Текст.",
                               "requisites": f"Приказ Министра финансов Республики Казахстан от 1 марта 2024 года № {number}"}  # fmt: skip
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}, ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


@dataclass(frozen=True)
class Case:
    path: str
    make: Callable[[Path], None]
    outcome: str  # read, rejected, skipped, displaced
    reason: str = ""  # a piece of the reject's reason


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda p: p.write_bytes(data)


def _text(text: str) -> Callable[[Path], None]:
    return lambda p: p.write_text(text, "utf-8")


def _link(target: str) -> Callable[[Path], None]:
    return lambda p: p.symlink_to(target)


def _fifo(p: Path) -> None:
    os.mkfifo(p)


JUNK = bytes(range(256)) * 8
DEEP = "<div>" * 350 + "<p>Статья 1. Глубоко</p>" + "</div>" * 350
DEEPER = "<div>" * 2100 + "<p>Статья 1. Глубже</p>" + "</div>" * 2100
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
    '<DIV8 N="1910.999" TYPE="SECTION"><HEAD>§ 1910.999 Laughs.</HEAD><P>(a) &lol3;</P></DIV8>'
)
XXE = (
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    '<DIV8 N="1910.998" TYPE="SECTION"><HEAD>§ 1910.998 External.</HEAD><P>(a) &xxe; text</P></DIV8>'
)
CASES: list[Case] = [
    # empty and junk files, in every format
    *[Case(f"junk/empty{s}", _bytes(b""), "rejected", "") for s in (".html", ".json", ".xml", ".txt", ".md", ".pdf")],
    Case(f"{ADILET}/V2499000001.html", _bytes(b""), "rejected", "empty file"),
    *[Case(f"junk/binary{s}", _bytes(JUNK), "rejected", "") for s in (".html", ".json", ".xml", ".txt", ".md", ".pdf")],
    Case(
        "junk/cp1251.html",
        _bytes(page("<p>Статья 1. Текст</p>").replace("Әділет", "Adilet").encode("cp1251")),
        "rejected",
        "not UTF-8",
    ),
    Case("junk/utf16.html", _bytes(page("<p>Статья 1. Текст</p>").encode("utf-16")), "rejected", "not UTF-8"),
    Case("junk/nul.md", _bytes(b"# \x00\x00\n\x00"), "rejected", ""),
    # adilet pages: odd but real markup is read; broken or hostile markup is a reject, never a partial read
    Case(f"{ADILET}/V2499000002.html", _text(page("<!-- a comment --><p>Статья 1. Текст.</p>")), "read"),
    Case(
        f"{ADILET}/V2499000003.html", _text(page("<p>Статья 1. Текст.</p><p>Статья 3000000000. Огромная.</p>")), "read"
    ),
    Case(f"{ADILET}/V2499000004.html", _text(page(DEEP)), "rejected", "nested deeper than"),
    Case(f"{ADILET}/V2499000005.html", _text(page(DEEPER)), "rejected", "stopped early"),
    Case(f"{ADILET}/V2499000006.html", _text(page("")), "rejected", "holds no text"),
    Case(
        f"{ADILET}/V2499000007.html",
        _text("<html><body><p>404 Not Found</p></body></html>"),
        "rejected",
        "no <article>",
    ),
    # one text node over libxml2's 10 MB default: read whole (limits raised on purpose, the file is bounded)
    Case(f"{ADILET}/V2499000008.html", _text(page("<p>" + "а" * 5_300_000 + "</p>")), "read"),
    Case(f"{ADILET}/V2499000009.html", _text(page("<script>alert(1)</script><style>p{}</style><p>Текст</p>")), "read"),
    Case(f"{ADILET}/V2499000010.html", _text(page("<p>Статья 1</p>" * 3000)), "read"),
    Case(f"{ADILET}/V2499000011.html", _text(page("<table>" + "<tr><td>x</td></tr>" * 5000 + "</table>")), "read"),
    Case(f"{ADILET}/V2499000012.html", _text(page("<p>" + "«" * 5000 + "Статья 2. Текст</p>")), "read"),
    Case(
        f"{ADILET}/V2499000013.html",
        _text(page("<p>Текст</p>", requisites="Приказ от 31 февраля 2024 года № 0")),
        "read",
    ),
    Case(f"{ADILET}/V2499000014.html", _text(page("<p>Текст</p>", requisites="")), "read"),
    Case(f"{ADILET}/V2499000015.html", _text(page("<p>Текст</p>", requisites="№ " * 4000)), "read"),
    Case(f"{ADILET}/V2499000016.html", _text(page("<p>\u202e\u200bТекст\ufeff</p>")), "read"),
    Case(f"{ADILET}/V2499000017.html", _text(page("<p>Текст</p>") + "<article>второй</article>" * 3), "read"),
    Case(f"{ADILET}/V2499000018.html", _text(page("<sup>1</sup><sup>x</sup><p>Статья 1<sup>2</sup></p>")), "read"),
    Case(f"{ADILET}/V2499000019.html", _text(page("<p>Текст</p>", title="<b>" * 300 + "Заголовок")), "read"),
    Case(f"{ADILET}/not-an-id.html", _text(page("<p>Текст</p>").replace("Әділет", "")), "rejected", "no adilet id"),
    Case("junk/no-article.html", _text("<html><body><h1>Нечто</h1><p>Текст</p></body></html>"), "rejected", "tried"),
    Case("junk/truncated.html", _bytes(page("<p>Статья 1. Текст</p>").encode()[:200]), "rejected", ""),
    # identity: files that claim an act another file carries better are set aside, naming the winner
    Case(
        f"{ADILET}/К1500000414.html",
        _text(page("<p><b>Статья 156. Копия</b></p><p>Урезано.</p>", "Трудовой кодекс")),
        "displaced",
        "the same act",
    ),
    Case(
        "impostor/saved.html",
        _text(
            "<!-- saved from url=(0044)https://adilet.zan.kz/rus/docs/V2400035612 -->"
            + page("<p>Подмена.</p>", "Подделка", "Приказ № 2119")
        ),
        "displaced",
        "order_number 211 (kept) vs 2119",
    ),
    Case(
        "standards/iso/ISO_45001_copy.txt",
        _text("ISO 45001:2018\nA copy\n\n1 Scope\nShort."),
        "displaced",
        "the same act",
    ),
    Case(  # a stub in the format the parsers prefer, beside the real text: the text with substance wins
        "standards/iso/ISO_45001_stub.html",
        _text("<html><head><title>ISO 45001</title></head><body><h1>ISO 45001</h1><p>ISO 45001</p></body></html>"),
        "displaced",
        "vs 0, 9, standard_html",
    ),
    Case(
        "standards/osha/copy.xml",
        _text('<DIV8 N="1910.146" TYPE="SECTION"><HEAD>§ 1910.146 Copy.</HEAD><P>(a) Short.</P></DIV8>'),
        "displaced",
        "the same act",
    ),
    # zan.gov.kz records: every field checked against its type
    Case("zan/t1.json", _bytes(record(title=123)), "rejected", "field 'title' must be str"),
    Case("zan/t2.json", _bytes(record(url={})), "rejected", "field 'url' must be str"),
    Case("zan/t3.json", _bytes(record(url=123)), "rejected", "field 'url' must be str"),
    Case("zan/t4.json", _bytes(record(act_types=["ПРИК"])), "rejected", "field 'act_types'"),
    Case("zan/t5.json", _bytes(b'{"_id": NaN, "title": "t", "text": "t"}'), "rejected", "NaN"),
    Case("zan/t6.json", _bytes(record(_id=True)), "rejected", "field '_id'"),
    Case("zan/t7.json", _bytes(record(title="О\ud800")), "rejected", "surrogate"),
    Case("zan/t8.json", _bytes(b"[" * 100_000 + b"]" * 100_000), "rejected", ""),
    Case("zan/t9.json", _bytes(record(text="")), "rejected", "lacks text"),
    Case("zan/t10.json", _bytes(record(text=["a"])), "rejected", "field 'text'"),
    Case("zan/t11.json", _bytes(b"[1, 2]"), "rejected", "JSON object"),
    Case("zan/t12.json", _bytes(b'"just a string"'), "rejected", "JSON object"),
    Case("zan/t13.json", _bytes(record(_id=10**400)), "read"),
    Case("zan/t14.json", _bytes(record(_id="990014", status=None, language=None)), "read"),
    Case("zan/t15.json", _bytes(record(_id="990015", status="???")), "read"),
    Case("zan/t16.json", _bytes(b'{"_id": "1", "_id": "2", "title": "t", "text": "t\\n1. x"}'), "read"),
    Case("zan/t17.json", _bytes(record(_id="990017", requisites="Приказ № " + "9" * 5000)), "read"),
    Case("zan/t18.json", _bytes(record(_id="990018", text="Статья 1. " + "а" * 300_000)), "read"),
    Case("zan/t19.json", _bytes(codecs.BOM_UTF8 + record(_id="990019")), "read"),
    Case("zan/t20.json", _bytes(record(_id="990020", requisites=1.5)), "rejected", "field 'requisites'"),
    Case("zan/t21.json", _bytes(record(_id="990021", date={"$date": 1})), "rejected", "field 'date'"),
    Case("zan/t22.json", _bytes(b"{"), "rejected", "invalid JSON"),
    # XML: no entity is expanded, no external entity is read
    Case("standards/osha/laughs.xml", _text(LAUGHS), "read"),
    Case("standards/osha/xxe.xml", _text(XXE), "read"),
    Case(
        "standards/osha/malformed.xml",
        _text("<DIV8 TYPE='SECTION'><HEAD>x</HEAD><P>(a) open"),
        "rejected",
        "invalid XML",
    ),
    Case("standards/osha/nodiv.xml", _text("<ROOT><P>(a) text</P></ROOT>"), "rejected", "no eCFR section"),
    # PDFs
    Case("standards/iogp/broken.pdf", _bytes(b"%PDF-1.4 garbage"), "rejected", ""),
    Case("standards/iogp/empty-pages.pdf", _bytes(b"%PDF-1.4\n%%EOF"), "rejected", ""),
    # text and markdown
    Case(
        "standards/api/memo.txt", _text("A memo\nabout nothing\n\n1 Scope\ntext"), "rejected", "no standard designation"
    ),
    Case("standards/api/title-only.txt", _text("API RP 999\n"), "rejected", ""),
    Case("standards/api/API_RP_998.txt", _text("API RP 998\nLong line\n\n1 Scope\n" + "word " * 200_000), "read"),
    Case("kzlaws/rus/990001.md", _text("no title here\nСтатья 1. Текст"), "rejected", "no level-1"),
    Case("kzlaws/rus/notanid.md", _text("# О законе\n\nСтатья 1. Текст"), "rejected", "no identity"),
    Case("kzlaws/rus/990002.md", _text("# О законе\n\nСтатья 1. Первая\n\nСтатья 3000000000. Вторая\n"), "read"),
    Case("kzlaws/rus/990003.md", _text("# О законе\n\n" + "| a | b |\n" * 20_000), "read"),
    Case(
        "kzlaws/rus/990004.md",
        _text("url: https://adilet.zan.kz/rus/docs/../../etc/passwd\n# О законе\n\nТекст"),
        "read",
    ),
    Case("kzlaws/rus/990005.md", _text("##  СОДЕРЖАНИЕ\n\nСтатья 1. Оглавление\n"), "rejected", "no level-1"),
    Case("kzlaws/kaz/990006.md", _text("# Заң\n\n1-бап. Бірінші\n\n" + "ә" * 100_000), "read"),
    # the file system: nothing outside a source folder is followed, nothing special is opened
    Case("links/passwd.txt", _link("/etc/passwd"), "skipped", "outside the source folder"),
    Case("links/environ.html", _link("/proc/self/environ"), "skipped", "outside the source folder"),
    Case(
        "links/outside.html", _link(str(SAMPLE / "adilet/rus/V2400035612.html")), "skipped", "outside the source folder"
    ),
    Case("links/loop.html", _link("loop.html"), "skipped", "cannot be followed"),
    Case("links/dangling.json", _link("nowhere.json"), "skipped", "cannot be followed"),
    Case("links/inside.html", _link("../impostor/saved.html"), "displaced", "the same act"),  # inside: followed
    Case("special/pipe.html", _fifo, "skipped", "not a regular file"),
    Case("special/big.txt", _text("API RP 997\nBig\n\n1 Scope\n" + "x" * (13 * 1024 * 1024)), "rejected", "over the"),
    # odd names are just names
    Case("names/with space.html", _text(page("<p>Текст</p>")), "rejected", "no adilet id"),
    Case("names/юникод «имя».json", _bytes(record(_id="990031")), "read"),
    Case("names/" + "д" * 100 + ".json", _bytes(record(_id="990032")), "read"),
    Case("names/.hidden.json", _bytes(record(_id="990033")), "read"),
    Case("names/UPPER.JSON", _bytes(record(_id="990034")), "read"),
    Case("names/semi;colon'quote\".json", _bytes(record(_id="990035")), "read"),
    Case("names/readme.md", _text("# README\n"), "ignored"),
]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("hostile")
    src = root / "src"
    for case in CASES:
        path = src / case.path
        path.parent.mkdir(parents=True, exist_ok=True)
        case.make(path)
    clean, dirty = root / "clean", root / "dirty"
    os.environ["ZAN_MAX_FILE_MB"] = "12"
    try:
        run([SAMPLE], clean)
        info = run([SAMPLE, src], dirty)
    finally:
        del os.environ["ZAN_MAX_FILE_MB"]
    return src, clean, dirty, info


def _outcomes(src: Path, home: Path) -> dict[str, tuple[str, str]]:
    with connect(home) as con:
        read = {f for (files,) in con.sql("SELECT source_files FROM registry").fetchall() for f in files}
        rejects = con.sql("SELECT source_file, stage, reason FROM rejects").fetchall()
    out: dict[str, tuple[str, str]] = {}
    for source, stage, reason in rejects:
        kind = {"discover": "skipped", "extract": "rejected"}.get(
            stage, "displaced" if "the same act" in reason else stage
        )
        out[source] = (kind, reason)
    for case in CASES:
        path = str(src / case.path)
        if path in read and path not in out:
            out[path] = ("read", "")
    return out


def test_hostile_corpus_every_case_has_its_outcome_and_nothing_crashes(hostile_run) -> None:  # type: ignore[no-untyped-def]
    src, _, dirty, info = hostile_run
    outcomes = _outcomes(src, dirty)
    tally = {"tried": len(CASES), "read": 0, "rejected": 0, "skipped": 0, "displaced": 0, "ignored": 0, "crashed": 0}
    wrong = []
    for case in CASES:
        got = outcomes.get(str(src / case.path), ("ignored", ""))
        if got[0] not in tally:
            tally["crashed"] += 1
        else:
            tally[got[0]] += 1
        if got[0] != case.outcome or case.reason not in got[1]:
            wrong.append((case.path, case.outcome, case.reason, got))
    print(f"hostile corpus: {tally}")
    assert info.status == "published" and tally["crashed"] == 0
    assert len(CASES) >= 80 and not wrong, wrong


def test_good_documents_are_published_as_a_clean_run_publishes_them(hostile_run) -> None:  # type: ignore[no-untyped-def]
    _, clean, dirty, _ = hostile_run

    def chunks(home: Path) -> dict[str, str]:
        table = pq.read_table(
            published_file(home, "enriched_chunks.parquet"), columns=["chunk_id", "text_hash", "doc_id"]
        )
        return dict(zip(table["chunk_id"].to_pylist(), table["text_hash"].to_pylist(), strict=True))

    good, mixed = chunks(clean), chunks(dirty)
    assert {c: mixed.get(c) for c in good} == good  # every chunk of the good corpus, with the same text


def test_no_file_outside_a_source_folder_was_read(hostile_run) -> None:  # type: ignore[no-untyped-def]
    _, _, dirty, _ = hostile_run
    with connect(dirty) as con:
        texts = con.sql("SELECT text FROM chunks WHERE text LIKE '%root:x:0:0%' OR text LIKE '%PATH=%'").fetchall()
        xxe = con.sql("SELECT text FROM chunks WHERE doc_id = 'osha-1910.998'").fetchall()
    assert texts == [] and xxe and "root:" not in xxe[0][0]


def test_the_first_run_of_the_issue_no_longer_aborts(tmp_path: Path) -> None:
    """`mkdir -p r/adilet/rus; : > r/adilet/rus/V2499000001.html; zan run --source data/sample --source r`"""
    r = tmp_path / "r" / "adilet" / "rus"
    r.mkdir(parents=True)
    (r / "V2499000001.html").write_bytes(b"")
    shutil.copy(SAMPLE / "adilet/rus/V2400035612.html", r.parent.parent / "V2400035612.html")
    info = run([SAMPLE, tmp_path / "r"], tmp_path / "home")
    assert info.status == "published" and info.documents == 15


def test_conflicting_requisites_are_in_the_run_report(hostile_run) -> None:  # type: ignore[no-untyped-def]
    _, _, dirty, _ = hostile_run
    report = json.loads((dirty / "versions" / "v000001" / "report.json").read_text("utf-8"))
    conflicts = report["extraction"]["conflicts"]
    assert any(c["doc_id"] == "v2400035612" and "order_number 211 (kept) vs 2119" in c["reason"] for c in conflicts)


# --- issue 23: what a hostile file or query must never do to what is already published ---------------------

LAW_224 = "adilet/rus/Z1400000224.html"  # a real law of 10 articles with notes (shared corpus)


def _law_224_with(tmp_path: Path, edit: Callable[[str], str]) -> tuple[Path, Path, str]:
    """A source folder holding the real law 224-V (published once, unchanged), a home, and the page text;
    ``edit`` is applied to the page for the second run."""
    from tests.conftest import corpus_file

    page = corpus_file(LAW_224)
    src = tmp_path / "src" / "adilet" / "rus"
    src.mkdir(parents=True)
    shutil.copy(SAMPLE / "adilet/rus/V2400035612.html", src / "V2400035612.html")
    target = src / page.name
    text = page.read_text("utf-8")
    target.write_text(text, "utf-8")
    home = tmp_path / "home"
    assert run([tmp_path / "src"], home).status == "published"
    target.write_text(edit(text), "utf-8")
    return tmp_path / "src", home, text


def _articles(home: Path, doc_id: str) -> list[str]:
    with connect(home) as con:
        rows = con.sql(f"SELECT DISTINCT unnest(list_concat(article_labels, annex_articles)) FROM chunks "
                       f"WHERE doc_id = '{doc_id}'").fetchall()  # fmt: skip
    return sorted((str(r[0]) for r in rows), key=int)


def test_a_note_naming_a_5000_digit_number_does_not_fail_its_act(tmp_path: Path) -> None:
    note = ('<p class="note">Сноска. Статья 1 с изменениями, внесенными Законом РК от 01.01.2020 № '
            + "9" * 5000 + '-VI (вводится в действие с 01.01.2021).</p>')  # fmt: skip

    def edit(text: str) -> str:
        at = text.index("</p>", text.index("Статья 1</h3>")) + 4
        return text[:at] + note + text[at:]

    src, home, _ = _law_224_with(tmp_path, edit)
    info = run([src], home)
    assert info.status == "published" and info.deleted == 0 and info.rejected == 0
    assert _articles(home, "z1400000224") == [str(n) for n in range(1, 11)]


def test_an_act_that_fails_at_the_registry_stage_keeps_its_published_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes one act fail after extraction (here: building its registry row raises), the act stays
    published exactly as before, the run publishes the rest, and the rejects say why."""
    import runs.build

    src, home, _ = _law_224_with(tmp_path, lambda text: text.replace("Статья 10</h3>", "Статья 10</h3><p>Новое.</p>"))
    before = _articles(home, "z1400000224")
    real = runs.build.registry_row

    def failing(entry, **made):  # type: ignore[no-untyped-def]
        if entry.doc_id == "z1400000224":
            raise ValueError("a fault no test foresaw")
        return real(entry, **made)

    monkeypatch.setattr(runs.build, "registry_row", failing)
    info = run([src], home)
    assert info.status in ("published", "unchanged") and info.deleted == 0
    assert _articles(home, "z1400000224") == before
    with connect(home) as con:
        reasons = con.sql("SELECT stage, reason FROM rejects WHERE doc_id = 'z1400000224'").fetchall()
    assert reasons and all(s == "registry" and "a fault no test foresaw" in r for s, r in reasons)


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda p: p.write_bytes(b""), id="extract: emptied"),
        pytest.param(lambda p: (p.unlink(), p.symlink_to("/etc/passwd")), id="discover: a link out of the folder"),
    ],
)
def test_an_act_whose_file_breaks_at_any_stage_stays_published(tmp_path: Path, broken: Callable[[Path], None]) -> None:
    src, home, _ = _law_224_with(tmp_path, lambda text: text)
    before = _articles(home, "z1400000224")
    broken(src / LAW_224)
    info = run([src], home)
    assert info.deleted == 0 and _articles(home, "z1400000224") == before


def test_an_unclosed_note_is_cut_at_the_next_heading_and_reported(tmp_path: Path) -> None:
    """`<span class="note">` left open before article 2: without the cut, articles 2–10 became note text."""

    def edit(text: str) -> str:
        at = text.rindex("<p", 0, text.index("Статья 2</h3>"))
        return text[:at] + '<span class="note">Сноска. Статья 1 с изменениями' + text[at:]

    src, home, _ = _law_224_with(tmp_path, edit)
    info = run([src], home)
    assert info.status == "published" and info.deleted == 0
    assert _articles(home, "z1400000224") == [str(n) for n in range(1, 11)]
    from enrich.audit import audit_home, format_audit

    audit = audit_home(home)
    law = next(d for d in audit.documents if d.doc_id == "z1400000224")
    assert any("did not close" in n for n in law.notices)
    assert "did not close" in format_audit(audit)


def _note(acts: int, articles: int = 1) -> str:
    labels = ", ".join(str(n) for n in range(1, articles + 1))
    named = "; ".join(f"от {1 + n % 28:02d}.01.20{10 + n % 10} № {n + 1}-VI (вводится в действие с 01.01.2021)"
                      for n in range(acts))  # fmt: skip
    return f"Сноска. Статьи {labels} с изменениями, внесенными законами РК {named}."


@pytest.mark.slow
def test_a_note_is_parsed_in_time_linear_in_its_length() -> None:
    import time

    from extractors.notes import parse_note

    def cpu(note: str) -> float:
        started = time.process_time()
        parse_note(note)
        return time.process_time() - started

    small, large = _note(400), _note(2000)  # 29 KB and 120 KB: quadratic took 0.9 s and 15 s
    ratio = min(cpu(large) for _ in range(3)) / max(min(cpu(small) for _ in range(3)), 1e-4)
    assert len(parse_note(large)) == 2000 and ratio < 12, ratio  # ×5 length: linear ≈ ×5, quadratic ≈ ×25


def test_a_note_stating_too_many_relations_is_bounded_and_rejected_never_aborts_the_run(tmp_path: Path) -> None:
    """«Статьи 1…600» changed by 600 acts: 360 000 relations (the run died at 7.3 GB); now the first
    MAX_RELATIONS are kept, the note is a reject that says so, and the run publishes."""
    from extractors.notes import MAX_RELATIONS

    note = f'<p class="note">{_note(600, 600)}</p>'

    def edit(text: str) -> str:
        at = text.index("</p>", text.index("Статья 1</h3>")) + 4
        return text[:at] + note + text[at:]

    src, home, _ = _law_224_with(tmp_path, edit)
    info = run([src], home)
    assert info.status == "published" and info.deleted == 0
    with connect(home) as con:
        rows = con.sql("SELECT count(*) FROM lineage WHERE doc_id = 'z1400000224'").fetchall()[0]
        rejects = con.sql("SELECT stage, reason FROM rejects WHERE error = 'NoteTooLarge'").fetchall()
    assert MAX_RELATIONS <= rows[0] < MAX_RELATIONS + 100
    assert rejects == [("lineage", rejects[0][1])] and "states 360000 relations" in rejects[0][1]


def test_invisible_and_variant_characters_in_files_make_no_second_act(tmp_path: Path) -> None:
    """The bundled МТСЗН order saved again under its id typed in fullwidth digits, with invisible characters
    in its number and text: one act, one registry row, and «Приказ МТСЗН №211 от 25.12.2024» stays exact."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLE, src)
    order = (src / "adilet/rus/V2400035612.html").read_text("utf-8")
    twin = order.replace("№ 211", "№ 2\u200b1\u00ad1").replace("Статья", "Стат\u200bья", 1)
    (src / "adilet/rus/V2400035612.html").unlink()
    (src / "adilet/rus/V２４０００３５６１２.html").write_text(twin, "utf-8")
    (src / "zan/nul.json").write_bytes(record(_id="99\\u00000041", title="О\\u0000проверке"))
    home = tmp_path / "home"
    run([src], home)
    with connect(home) as con:
        rows = con.sql("SELECT doc_id, order_number FROM registry WHERE doc_id LIKE 'v24%'").fetchall()
        ids = [r[0] for r in con.sql("SELECT doc_id FROM registry").fetchall()]
        titles = [r[0] for r in con.sql("SELECT doc_title FROM registry").fetchall()]
        nul = con.sql("SELECT reason FROM rejects WHERE source_file LIKE '%nul.json'").fetchall()
    assert rows == [("v2400035612", "211")]
    assert all(i.isascii() and i.isprintable() and " " not in i for i in ids)
    assert not any("\x00" in (t or "") for t in titles)
    assert nul and "holds characters an id cannot" in nul[0][0]
    from lookup.route import Lookup

    assert Lookup.open(home).route("Приказ МТСЗН №211 от 25.12.2024").doc_ids == ["v2400035612"]
