"""Legal lineage read from the real documents' editorial notes: every note of the Labour Code (Russian and
Kazakh), the Constitution and the anti-corruption law becomes lineage rows; rows read by hand from the pages
are there; a repealed act is never presented as in force; lineage fields change by metadata-only updates."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

import pytest

from enrich.query import connect
from extractors.notes import TARGETS, parse_note
from lookup.route import Lookup
from runs.pipeline import run
from tests.conftest import SAMPLE, corpus_file
from vectors.index import COLLECTION, open_client

D = dt.date


def _sql(home: Path, query: str) -> list[tuple]:  # type: ignore[type-arg]
    with connect(home) as con:
        return con.sql(query).fetchall()


def test_note_targets_read_their_own_examples() -> None:
    for target in TARGETS:
        for example in target.examples:
            assert target.pattern.match(example), (target.name, example)


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        (
            "Сноска. Статья 53 в редакции Закона РК от 21.05.2007 № 254-III (вводится в действие со дня его "
            "официального опубликования); с изменением, внесенным Законом РК от 10.03.2017 № 51-VI.",
            [
                ("new_edition", "53", "law", "254-III", D(2007, 5, 21)),
                ("amended", "53", "law", "51-VI", D(2017, 3, 10)),
            ],
        ),
        (
            "Сноска. Глава 10 дополнена статьей 127-2 в соответствии с Законом РК от 02.01.2023 № 184-VII.",
            [("added", "127-2", "law", "184-VII", D(2023, 1, 2))],
        ),
        (
            "Ескерту. 1-бапқа өзгерістер енгізілді - ҚР 23.11.2015 № 414-V Кодексімен (01.01.2017 бастап "
            "қолданысқа енгізіледі); 24.05.2018 № 156-VІ (…) Заңымен.",
            [("amended", "1", "code", "414-V", D(2015, 11, 23)), ("amended", "1", "law", "156-VI", D(2018, 5, 24))],
        ),
        (
            "Сноска. Утpатил силу Указом Пpезидента РК от 18.07.1995 № 2367.",
            [("repealed", None, "decree", "2367", D(1995, 7, 18))],
        ),
        ("Примечание ИЗПИ! Пункт 8 предусматривается в редакции Закона РК от 04.07.2023 № 15-VIII.", []),
        ("Примечание. См. нормативное постановление Конституционного Суда РК от 03.12.2024 № 54-НП.", []),
    ],
)
def test_a_note_is_read_as_the_relations_it_states(note: str, expected: list[tuple]) -> None:  # type: ignore[type-arg]
    got = [(r.relation, r.article, r.by_type, r.by_number, r.by_date) for r in parse_note(note)]
    assert got == expected


@pytest.mark.parametrize(
    ("relative", "doc_id", "language", "word"),
    [
        ("adilet/rus/K1500000414.html", "k1500000414", "rus", "Сноска"),
        ("adilet/rus/K950001000_.html", "k950001000_", "rus", "Сноска"),
        ("adilet/rus/Z1500000410.html", "z1500000410", "rus", "Сноска"),
        ("kzlaws/kaz/95666.md", "k1500000414", "kaz", "Ескерту"),
    ],
)
def test_every_note_of_the_page_becomes_lineage_rows(
    corpus_run, relative: str, doc_id: str, language: str, word: str
) -> None:  # type: ignore[no-untyped-def]
    in_page = len(re.findall(word, corpus_file(relative).read_text("utf-8")))
    rows = _sql(corpus_run[1], f"SELECT count(DISTINCT chunk_id || ':' || note_index) FROM lineage "
                               f"WHERE doc_id = '{doc_id}' AND language = '{language}'")  # fmt: skip
    assert rows[0][0] == in_page > 20


# read by hand from the pages: (doc_id, language, article, relation, acting law, its date, takes effect)
BY_HAND = [
    ("k1500000414", "rus", "15", "amended", "321-VI", D(2020, 5, 4), None),
    ("k1500000414", "rus", "15", "amended", "223-VII", D(2023, 4, 19), None),
    ("k1500000414", "rus", "15", "amended", "49-VIII", D(2023, 12, 21), D(2024, 1, 1)),
    ("k1500000414", "rus", "17", "new_edition", "116-VIII", D(2024, 7, 8), None),  # «Заголовок статьи 17 - в редакции»
    ("k1500000414", "rus", "18", "amended", "73-VI", D(2017, 6, 15), D(2019, 1, 1)),
    ("k1500000414", "rus", "141", "new_edition", "174-VII", D(2022, 12, 29), None),  # «Сноска Статья 141 -» (no period)
    ("k1500000414", "rus", "1", "amended", "414-V", D(2015, 11, 23), D(2017, 1, 1)),  # «статьей 204 Трудового кодекса»
    ("k1500000414", "kaz", "117", "amended", "483-V", D(2016, 4, 6), None),
    ("k1500000414", "kaz", "117", "amended", "171-VI", D(2018, 7, 4), None),
    ("k950001000_", "rus", "53", "new_edition", "254-III", D(2007, 5, 21), None),
    ("k950001000_", "rus", "53", "amended", "51-VI", D(2017, 3, 10), None),
    ("k950001000_", "rus", "48", "new_edition", "284-I", D(1998, 10, 7), None),
    ("z1500000410", "rus", "11", "amended", "157-VII", D(2022, 11, 5), D(2023, 1, 1)),
]


def test_rows_read_by_hand_are_in_the_lineage(corpus_run) -> None:  # type: ignore[no-untyped-def]
    rows = set(
        _sql(corpus_run[1], "SELECT doc_id, language, article, relation, by_number, by_date, takes_effect FROM lineage")
    )
    assert [r for r in BY_HAND if r not in rows] == []


def test_the_articles_an_amending_law_changed(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """The issue's query: `zan sql "SELECT article, by_number, takes_effect FROM lineage WHERE doc_id='k1500000414'
    AND by_number='321-VI'"`; articles 1, 15, 17, 18 and 100 carry «№ 321-VІ» in their notes (read by hand)."""
    rows = _sql(corpus_run[1], "SELECT article, by_number, takes_effect FROM lineage WHERE doc_id='k1500000414' "
                               "AND by_number='321-VI'")  # fmt: skip
    assert {"1", "15", "17", "18", "100"} <= {a for a, _, _ in rows} and {n for _, n, _ in rows} == {"321-VI"}
    lookup = Lookup.open(corpus_run[1])
    routed = lookup.route("закон 321-VI")
    assert routed.status == "not_found" and not routed.chunks  # not in the registry: refused, nothing fetched
    assert {"15", "100"} <= {c["article"] for c in routed.changed["321-VI"]} and "вносил изменения" in routed.hint


def test_chunks_and_registry_carry_lineage_fields(corpus_run) -> None:  # type: ignore[no-untyped-def]
    home = corpus_run[1]
    chunk = _sql(home, "SELECT last_amended, amended_by FROM chunks WHERE chunk_id = 'k1500000414:art15:0'")
    assert chunk == [(D(2023, 12, 21), ["321-VI", "223-VII", "49-VIII"])]
    meta = open_client(home / "chroma").get_collection(COLLECTION).get(ids=["k1500000414:art15:0"])["metadatas"][0]
    assert (meta["last_amended"], meta["amended_by"]) == ("2023-12-21", ["321-VI", "223-VII", "49-VIII"])
    repealed = _sql(home, "SELECT doc_id, status, repealed_by, repealed_on FROM registry WHERE doc_id = 'zan-104044'")
    assert repealed == [("zan-104044", "repealed", "Указ РК от 18.07.1995 № 2367", D(1995, 7, 18))]  # kz-laws note


def test_a_repealed_act_is_never_presented_as_in_force(corpus_run) -> None:  # type: ignore[no-untyped-def]
    from lookup.hint import hint_line
    from lookup.identifier import Identifier
    from lookup.registry_index import Match

    home = corpus_run[1]
    lookup = Lookup.open(home)
    repealed = _sql(home, "SELECT doc_id, adilet_id FROM registry WHERE status = 'repealed'")
    assert len(repealed) >= 3
    for doc_id, adilet_id in repealed:  # every repealed row, as the hint would state an exact hit on it
        line = hint_line(Match(Identifier("adilet_id", doc_id, doc_id, (0, 1)), (doc_id,)), lookup.registry.docs)
        assert line.startswith("⚠") and "УТРАТИЛ СИЛУ" in line and "не цитируй как действующий" in line, line
        if adilet_id:  # and through the whole route, by its own id
            routed = lookup.route(adilet_id)
            assert routed.status == "exact" and not routed.hint.startswith("✓") and "УТРАТИЛ СИЛУ" in routed.hint


OLD_CODE = (
    "<html><head><title>Әділет</title></head><body><div class='container_alpha slogan'><h1>Трудовой кодекс Республики "
    "Казахстан</h1><span class='status status_yts'>Утративший силу</span><p>Кодекс Республики Казахстан от 15 мая 2007 "
    "года № 251-III.</p></div><article><p class='note'>Сноска. Утратил силу Кодексом РК от 23.11.2015 № 414-V "
    "(вводится в действие с 01.01.2016).</p><p><b>Статья 1. Основные понятия</b></p><p>Текст прежнего кодекса.</p>"
    "</article></body></html>"
)


def test_a_repealed_act_names_its_replacement_and_fetches_it_beside(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLE, src)
    (src / "adilet" / "rus" / "K070000251_.html").write_text(OLD_CODE, "utf-8")
    home = tmp_path / "home"
    run([src], home)
    row = _sql(home, "SELECT status, repealed_by, repealed_on, replaced_by FROM registry WHERE doc_id = 'k070000251_'")
    assert row == [("repealed", "Кодекс РК от 23.11.2015 № 414-V", D(2016, 1, 1), "k1500000414")]
    routed = Lookup.open(home).route("K070000251_", k_per_doc=2)
    assert routed.status == "exact" and routed.hint.startswith("⚠")
    assert "УТРАТИЛ СИЛУ с 01.01.2016 (Кодекс РК от 23.11.2015 № 414-V)" in routed.hint
    assert "Вместо него действует: Трудовой кодекс" in routed.hint
    beside = [c for c in routed.chunks if c.doc_id == "k1500000414"]
    assert beside and all(c.replaces == "k070000251_" for c in beside)
    assert all(c.replaces is None for c in routed.chunks if c.doc_id == "k070000251_")


def test_a_new_note_is_a_metadata_only_update(tmp_path: Path) -> None:
    src, home = tmp_path / "src", tmp_path / "home"
    shutil.copytree(SAMPLE, src)
    run([src], home)
    page = src / "adilet" / "rus" / "K1500000414.html"
    text = page.read_text("utf-8")
    edited = text.replace("от 30.12.2022 № 179-VII", "от 30.12.2022 № 179-VII; от 01.07.2025 № 200-VIII")
    assert edited != text
    page.write_text(edited, "utf-8")
    again = run(None, home)
    assert (again.embedded, again.text_changed, again.vector_writes) == (0, 0, 0) and again.metadata_changed >= 1
    assert _sql(home, "SELECT last_amended, amended_by FROM chunks WHERE chunk_id = 'k1500000414:art156:0'") == [
        (D(2025, 7, 1), ["179-VII", "200-VIII"])
    ]


def test_an_amending_act_says_what_it_amends(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """Read by hand: kzlaws/rus/10326.md «Внести в Закон … от 2 августа 1999 г. …: 1) в статье 1: … 7) часть
    первую пункта 4 статьи 13 … 11) дополнить статьей 25-1 …»; Z1500000330 «статью 7-1 изложить в следующей
    редакции», «статью 18 изложить …»; Z1900000213 «статьи 28, 28-1, …, 28-5 и 28-6 исключить»."""
    rows = _sql(
        corpus_run[1], "SELECT by_doc_id, article, relation, affected FROM lineage WHERE source = 'amending_text'"
    )
    by_doc: dict[str, set[tuple[str, str]]] = {}
    for doc, article, relation, affected in rows:
        by_doc.setdefault(doc, set()).add((article, relation))
        assert affected and " от " in affected
    assert {("1", "amended"), ("13", "amended"), ("25-1", "added"), ("26", "amended")} <= by_doc["zan-10326"]
    assert ("4", "amended") in by_doc["zan-10189"]
    assert {("7-1", "new_edition"), ("18", "new_edition")} <= by_doc["z1500000330"]
    assert {(a, "excluded") for a in ("28", "28-1", "28-6")} <= by_doc["z1900000213"]
    assert not [r for r in rows if r[1] in ("311-2",) and r[2] != "added"]  # a quoted new «Статья 311-2.» is text
    routed = Lookup.open(corpus_run[1]).route("закон 330-V")
    assert routed.status == "exact" and {c["article"] for c in routed.changed["330-V"]} >= {"7-1", "18"}
    assert "О карантине растений" in routed.hint


def test_the_real_corpus_lineage_golden_set(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """`zan eval data/golden/lineage_real.jsonl --home <a run over ../shared/corpus>`: repealed acts, articles'
    editions, amending laws → the articles they changed; every check passes and no answer is another document."""
    from lookup.evaluate import evaluate, read_golden
    from tests.conftest import ROOT

    report = evaluate(Lookup.open(corpus_run[1]), read_golden(ROOT / "data" / "golden" / "lineage_real.jsonl"))
    assert report["lineage"]["n"] >= 8 and report["lineage"]["passed"] == report["lineage"]["n"], report["failures"]
    assert report["wrong_document"] == 0 and report["lookup"]["L_lineage"]["hit@5"] == 1.0


def test_lineage_streamed_in_batches_is_the_lineage_of_the_whole(corpus_run) -> None:  # type: ignore[no-untyped-def]
    """The run writes lineage batch by batch (a version has a lineage row per noted chunk: holding them all
    grew zan's peak 2.5× from 14k to 140k chunks); the rows, the overflows and the repeals it finds are
    those of the whole table at once, in the same order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from enrich.lineage import NOTE_COLUMNS, Found, lineage_batches, lineage_table, note_rows, with_replacements
    from schemas.arrow import LINEAGE_SCHEMA
    from schemas.published import published_file

    chunks = pq.read_table(published_file(corpus_run[1], "chunks.parquet"), columns=list(NOTE_COLUMNS))
    noted = chunks.filter(pa.compute.not_equal(chunks.column("notes"), ""))
    registry = pq.read_table(published_file(corpus_run[1], "registry.parquet"))
    whole, _ = lineage_table(noted, registry)
    rows, _ = note_rows(noted.to_pylist())
    unresolved = pa.Table.from_pylist(rows, schema=LINEAGE_SCHEMA)
    assert unresolved.column("by_doc_id").null_count == unresolved.num_rows  # resolved only once the registry is
    found = Found()
    batches = [unresolved.slice(start, 97) for start in range(0, unresolved.num_rows, 97)]
    streamed = pa.concat_tables(list(lineage_batches(batches, registry, found)))
    assert streamed.num_rows == whole.num_rows > 500 and streamed.equals(whole)
    assert streamed.column("by_doc_id").null_count < streamed.num_rows
    assert with_replacements(registry, found.repeals).equals(with_replacements(registry, whole))
    published = pq.read_table(published_file(corpus_run[1], "lineage.parquet"))
    assert published.num_rows == whole.num_rows  # what the run wrote, streamed from the version's chunks


def _corpus_note_lines() -> list[str]:
    """Every editorial note line of the real adilet pages (both languages), as the run reads them."""
    from extractors.discover import extract_file
    from extractors.notes import NOTE_START

    folder = corpus_file("adilet/rus/K1500000414.html").parent.parent
    lines = []
    for page in sorted(folder.glob("*/*.html")):
        document = extract_file(page).document
        for unit in document.units if document else []:
            lines += [line for note in unit.notes for line in note.split("\n") if NOTE_START.match(line)]
    return lines


def test_gated_note_scans_find_what_each_phrase_finds_alone() -> None:
    """The relation phrases and the type words are found in one gated scan each (``schemas.regex_gate``):
    on every note of the real pages, the same clauses with the same relations, the same type words and the
    same Kazakh «…мен» words as the rows' own patterns, one at a time and ungated, find."""
    from extractors import notes

    lines = [notes.fold_dashes(notes.normalize_space(line)) for line in _corpus_note_lines()]
    assert len(lines) > 100, "the Labour Code alone has over a hundred notes"
    plain = re.compile("|".join(f"(?:{p.pattern})" for _, p in notes.RELATIONS), re.I)
    kz_plain = re.compile(notes._KZ_INSTRUMENTAL.pattern.split(")", 1)[1])  # without its look-behind
    kinds = {"relations": set(), "types": set()}  # type: ignore[var-annotated]
    for line in lines:
        want = [(m.span(), next(k for k, p in notes.RELATIONS if p.fullmatch(m[0]))) for m in plain.finditer(line)]
        assert [(m.span(), m.lastgroup) for m in notes._ANY_RELATION.finditer(line)] == want, line
        types = sorted((m.start(), kind) for kind, p in notes._TYPE_WORDS for m in p.finditer(line))
        assert [(m.start(), m.lastgroup) for m in notes._ANY_TYPE.finditer(line)] == types, line
        assert [m.span() for m in notes._KZ_INSTRUMENTAL.finditer(line)] == [m.span() for m in kz_plain.finditer(line)]
        kinds["relations"] |= {k for _, k in want}
        kinds["types"] |= {k for _, k in types}
    assert kinds["relations"] >= {"amended", "new_edition", "added", "excluded", "repealed"}, kinds
    assert kinds["types"] >= {"law", "code", "decree"}, kinds


def test_repeal_reads_only_notes_about_the_whole_act() -> None:
    """``repeal_of`` parses only the notes whose head is about the whole act (``note_target``); on the real
    pages' notes it finds what parsing every note finds, and a repeal note is found among article notes."""
    from enrich.lineage import act_written, note_relations, repeal_of
    from extractors.notes import note_target

    lines = _corpus_note_lines()
    every = next((r for r in note_relations(lines) if r.relation == "repealed" and r.target_kind == "act"), None)
    got = repeal_of(lines)
    assert got["repealed_by"] == (act_written(every) if every else None)
    assert {note_target(line) for line in lines} >= {"article", "act"} or every is None
    repeal = "Сноска. Утратил силу Указом Президента РК, имеющим силу Закона от 18.07.1995 № 2367."
    assert note_target(repeal) == "act" and note_target(lines[0]) != "act"
    found = repeal_of([*lines[:50], repeal, *lines[50:100]])
    assert found == {"repealed_by": "Указ РК от 18.07.1995 № 2367", "repealed_on": D(1995, 7, 18)}


AUDIT_RULES = "kazlaw/ministerial/07-ministerial/103003000000-qriim"  # an order of 2015 and the one of 2017 amending it
RULES_2015 = "2015/0213-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-87811"
RULES_2017 = "2017/0403-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-111943"


def test_an_unchanged_acts_lineage_is_carried_and_its_acting_acts_resolved_in_the_new_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An act a run carries (its files did not change) keeps its lineage rows without its notes being parsed
    again; the acts they name are resolved in the new registry: once the amending order of 2017 is read, the
    2015 order's notes point to it, as in a full run over the same files, row for row."""
    import pyarrow.parquet as pq

    from enrich import lineage
    from schemas.published import published_file

    scope = tmp_path / "src" / AUDIT_RULES
    shutil.copytree(corpus_file(f"{AUDIT_RULES}/{RULES_2015}/rus.md").parent, scope / RULES_2015)
    home = tmp_path / "home"
    run([tmp_path / "src"], home)
    rows = pq.read_table(published_file(home, "lineage.parquet")).to_pylist()
    assert rows and not any(r["by_doc_id"] for r in rows if r["doc_id"] == "v1500010492")

    parsed: list[str] = []
    counted = lineage.parse_note_counted
    monkeypatch.setattr(lineage, "parse_note_counted", lambda line: parsed.append(line) or counted(line))
    shutil.copytree(corpus_file(f"{AUDIT_RULES}/{RULES_2017}/rus.md").parent, scope / RULES_2017)
    incremental = run([tmp_path / "src"], home)
    assert incremental.status == "published" and incremental.added > 0
    carried_notes = [r["note"] for r in rows if r["doc_id"] == "v1500010492"]
    assert not set(carried_notes) & set(parsed)  # the 2015 order's notes were not parsed again
    after = pq.read_table(published_file(home, "lineage.parquet"))
    resolved = {r["by_doc_id"] for r in after.to_pylist() if r["doc_id"] == "v1500010492" and r["by_number"]}
    assert "v1700015099" in resolved

    monkeypatch.setattr(lineage, "parse_note_counted", counted)
    full = tmp_path / "full"
    run([tmp_path / "src"], full)
    assert after.equals(pq.read_table(published_file(full, "lineage.parquet")))


def test_a_runs_note_lines_are_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry stage parses each note line of an act once: the chunks' lineage fields and their lineage
    rows come from the same parse, and the enrich stage only resolves the acting acts."""
    import pyarrow.parquet as pq

    from enrich import lineage
    from schemas.published import published_file

    parsed: list[str] = []
    counted = lineage.parse_note_counted
    monkeypatch.setattr(lineage, "parse_note_counted", lambda line: parsed.append(line) or counted(line))
    (tmp_path / "src").mkdir()
    shutil.copy(corpus_file("adilet/rus/Z1400000224.html"), tmp_path / "src")  # a law of 2014 with notes
    run([tmp_path / "src"], tmp_path / "home")
    rows = pq.read_table(published_file(tmp_path / "home", "lineage.parquet")).to_pylist()
    notes = {r["note"] for r in rows if r["source"] == "note"}
    assert notes and notes <= set(parsed)
    assert sorted(parsed) == sorted(set(parsed))  # no line twice
    chunks = pq.read_table(published_file(tmp_path / "home", "chunks.parquet")).to_pylist()
    amended = {r["chunk_id"] for r in rows if r["relation"] in ("amended", "new_edition") and r["by_date"]}
    assert amended and all(c["last_amended"] for c in chunks if c["chunk_id"] in amended)
