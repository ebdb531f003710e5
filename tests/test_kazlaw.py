"""Acts in the kazakhstan-law git layout (issue 44, part 1): every act of ../shared/corpus/kazlaw read with
its facts right (read by hand from each meta.yaml and text), both languages one registry row, found by its own
number and title; the older front-matter layout; split acts read part by part; bad metadata rejected with the
file and the reason."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from enrich.query import connect
from lookup.route import Lookup
from runs.pipeline import run
from tests.conftest import CORPUS, corpus_file

KAZLAW = CORPUS / "kazlaw"
MINISTERIAL = "kazlaw/ministerial/07-ministerial/103003000000-qriim"
ACCIDENTS = f"{MINISTERIAL}/2015/0123-ob-utverzhdenii-pravil-rassledovaniia-avarii-bedstvii-katastrof-86979"
GAS = f"{MINISTERIAL}/2017/1009-ob-utverzhdenii-trebovanii-po-bezopasnosti-obektov-sistem-gazosn-116006"

# doc_id: (doc_type, issuer, number, approved, registration number, status, replaced by, title begins)
FACTS = {
    "v1500010325": ("order", "МВД", "46", dt.date(2015, 1, 23), "10325", "in_force", None,
                    "Об утверждении Правил расследования аварий"),
    "v1500010492": ("order", "МВД", "111", dt.date(2015, 2, 13), "10492", "repealed", "v1700015099",
                    "Об утверждении Правил проведения аудита в области пожарной"),
    "v1700015099": ("order", "МВД", "240", dt.date(2017, 4, 3), "15099", "in_force", None,
                    "Об утверждении Правил проведения аудита в области пожарной"),
    "v1800017233": ("order", "МВД", "507", dt.date(2018, 7, 11), "17233", "in_force", None,
                    "Об утверждении Правил аттестации и переаттестации спасателей"),
    # split: its index names annex parts (rus/an000.md …) the copy lacks; published with the order's own text
    "v1700015986": ("order", "МВД", "673", dt.date(2017, 10, 9), "15986", "in_force", None,
                    "Об утверждении Требований по безопасности объектов систем газоснабжения"),
    "v1800016515": ("order", "МВД", "86", dt.date(2018, 2, 2), "16515", "in_force", None,
                    "Об утверждении нормативов нагрузки и численности работников"),
    "v1500010155": ("order", "МВД", "910", dt.date(2014, 12, 18), "10155", "repealed", None,
                    "Об утверждении Правил проведения профилактических работ"),
    "v0200001840": ("order", "МЮ", "177", dt.date(2002, 4, 1), "1840", "repealed", None,
                    "Об утверждении Правил исчисления стажа работы"),
    "zan-1576": ("decision", "аким", "4-96", dt.date(1997, 4, 4), None, "repealed", None,
                 "О мерах по обеспечению противопожарной безопасности на лесных массивах"),
}  # fmt: skip


@pytest.fixture(scope="module")
def kazlaw_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus_file(f"{ACCIDENTS}/meta.yaml")
    home = tmp_path_factory.mktemp("kazlaw-home")
    run([KAZLAW], home)
    return home


def test_every_whole_act_is_read_with_its_facts_and_both_languages_are_one_row(kazlaw_home: Path) -> None:
    with connect(kazlaw_home) as con:
        rows = {r[0]: r[1:] for r in con.sql(
            "SELECT doc_id, doc_type, issuer, order_number, date_approved, registration_number, status, "
            "replaced_by, doc_title, languages, portal_id FROM registry").fetchall()}  # fmt: skip
        rejects = con.sql("SELECT source_file, reason, error FROM rejects").fetchall()
    assert set(rows) == set(FACTS)
    for doc_id, (kind, issuer, number, approved, registration, status, replaced, title) in FACTS.items():
        got = rows[doc_id]
        assert got[:7] == (kind, issuer, number, approved, registration, status, replaced), doc_id
        assert got[7].startswith(title) and sorted(got[8]) == ["kaz", "rus"], doc_id
        assert got[9] == doc_id.removeprefix("zan-") or got[9].isdigit()
    # the split act: its index names parts the copy does not hold: published, and listed with the file and reason
    assert sorted(Path(f).name for f, *_ in rejects if "116006" in f) == ["kaz.md", "rus.md"]
    assert all("rus/an000.md" in why or "kaz/an000.md" in why for f, why, _ in rejects if "116006" in f)
    assert {(error, "but missing: the text is incomplete" in why) for f, why, error in rejects} == {
        ("Incomplete", True)
    }


def test_an_act_is_found_by_its_own_number_and_title_and_a_repeal_names_its_successor(kazlaw_home: Path) -> None:
    lookup = Lookup.open(kazlaw_home)
    assert lookup.route("приказ МВД № 507").doc_ids == ["v1800017233"]
    gas = lookup.route("приказ МВД № 673 от 9 октября 2017 года")  # split, its annexes missing: found all the same
    assert gas.status == "exact" and gas.doc_ids == ["v1700015986"] and gas.chunks
    assert "текст в источнике неполный" in gas.hint  # the answer says its annexes are not there
    assert "неполный" not in lookup.route("приказ МВД № 507").hint
    titled = lookup.route("Требования по безопасности объектов систем газоснабжения").chunks[:5]
    assert "v1700015986" in [c.doc_id for c in titled]  # its rules are in the missing parts: only the order is there
    assert lookup.route("Правила аттестации и переаттестации спасателей").chunks[0].doc_id == "v1800017233"
    repealed = lookup.route("приказ МВД № 111 от 13.02.2015")
    assert repealed.status == "exact" and "УТРАТИЛ СИЛУ с 03.04.2017" in repealed.hint
    assert any(c.replaces == "v1500010492" and c.doc_id == "v1700015099" for c in repealed.chunks)
    kazakh = lookup.route("Құтқарушыларды аттестаттау қағидалары")
    assert kazakh.chunks[0].doc_id == "v1800017233" and kazakh.chunks[0].language == "kaz"


def _act_copy(tmp_path: Path, relative: str) -> Path:
    source = corpus_file(relative)
    target = tmp_path / "src" / "ministerial" / relative.split("/", 2)[2]
    shutil.copytree(source, target)
    return target


def test_a_split_act_is_read_part_by_part_and_a_part_outside_its_folder_is_refused(tmp_path: Path) -> None:
    act = _act_copy(tmp_path, GAS)
    rules = corpus_file(f"{ACCIDENTS}/rus.md").read_text("utf-8")
    kazakh = corpus_file(f"{ACCIDENTS}/kaz.md").read_text("utf-8")
    for language, text in (("rus", rules), ("kaz", kazakh)):
        (act / language).mkdir()
        index = (act / f"{language}.md").read_text("utf-8")
        for n, part in enumerate(("an000", "an001", "an005", "an008", "an015", "an022-3")):
            (act / language / f"{part}.md").write_text(f"## Часть {part}\n\n{n + 1}. {text[:400]}\n", "utf-8")
        assert f"({language}/an000.md)" in index
    home = tmp_path / "home"
    info = run([tmp_path / "src"], home)
    assert info.documents == 1 and info.rejected == 0
    with connect(home) as con:
        text = " ".join(r[0] for r in con.sql("SELECT text FROM chunks WHERE language = 'rus'").fetchall())
    assert "Часть an000" in text and "Часть an022-3" in text and text.index("an000") < text.index("an022-3")
    # a part lost after a whole version was published: that version stays, and the file is listed as incomplete
    (act / "rus" / "an005.md").unlink()
    lost = run([tmp_path / "src"], home)
    assert lost.rejected == 1
    with connect(home) as con:
        assert "Часть an005" in " ".join(r[0] for r in con.sql("SELECT text FROM chunks").fetchall())
        assert con.sql("SELECT error, reason FROM rejects").fetchall() == [
            ("Incomplete", "part rus/an005.md is named in «Части документа» but missing: the text is incomplete")
        ]
    # never published whole: published with the text that is there
    fresh = run([tmp_path / "src"], tmp_path / "home-fresh")
    assert fresh.documents == 1 and fresh.rejected == 1
    with connect(tmp_path / "home-fresh") as con:
        text = " ".join(r[0] for r in con.sql("SELECT text FROM chunks WHERE language = 'rus'").fetchall())
    assert "Часть an000" in text and "Часть an005" not in text
    (act / "rus" / "an005.md").write_text("## Часть an005\n\n3. восстановлена\n", "utf-8")
    index = (act / "rus.md").read_text("utf-8").replace("(rus/an001.md)", "(rus/../../../../outside.md)")
    (act / "rus.md").write_text(index, "utf-8")
    (tmp_path / "outside.md").write_text("# secret\n", "utf-8")
    again = run([tmp_path / "src"], tmp_path / "home2")
    assert again.rejected == 1
    with connect(tmp_path / "home2") as con:
        assert "outside the act's folder" in con.sql("SELECT reason FROM rejects").fetchall()[0][0]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda act: (act / "meta.yaml").write_text("act_code: [unclosed\n", "utf-8"), "malformed metadata"),
        (lambda act: (act / "kaz.md").unlink(), "kaz.md is missing"),
        (lambda act: (act / "meta.yaml").write_text(
            (act / "meta.yaml").read_text("utf-8").replace("от 23 января 2015 года № 46", "без даты и номера")
            .replace("24 февраля 2015 года № 10325", ""), "utf-8"), "states no date and no number"),
    ],
)  # fmt: skip
def test_bad_metadata_or_a_missing_language_rejects_the_act_and_its_last_good_version_stays(
    tmp_path: Path,
    damage,
    reason,  # type: ignore[no-untyped-def]
) -> None:
    act = _act_copy(tmp_path, ACCIDENTS)
    _act_copy(
        tmp_path, f"{MINISTERIAL}/2018/0711-ob-utverzhdenii-pravil-attestatsii-i-pereattestatsii-spasatelei-123851"
    )
    home = tmp_path / "home"
    assert run([tmp_path / "src"], home).documents == 2
    damage(act)
    again = run([tmp_path / "src"], home)
    assert again.rejected >= 1
    with connect(home) as con:
        rejects = con.sql("SELECT source_file, reason FROM rejects").fetchall()
        kept = con.sql("SELECT doc_id FROM registry ORDER BY 1").fetchall()
    assert any("86979" in f and reason in why for f, why in rejects), rejects
    assert kept == [("v1500010325",), ("v1800017233",)]  # the damaged act's published version is kept


def test_the_older_layout_with_a_front_matter_is_one_act_in_two_languages(tmp_path: Path) -> None:
    folder = tmp_path / "src" / "103002000000-minfin" / "20150603-ob-utverzhdenii-formata-xml-91965"
    folder.mkdir(parents=True)
    shutil.copy(corpus_file("snippets/zangovmd_91965_rus_head.md"), folder / "rus.md")
    shutil.copy(corpus_file("snippets/zangovmd_91965_kaz_head.md"), folder / "kaz.md")
    home = tmp_path / "home"
    info = run([tmp_path / "src"], home)
    assert info.documents == 1 and info.rejected == 0
    with connect(home) as con:
        row = con.sql("SELECT doc_id, order_number, registration_number, status, languages FROM registry").fetchall()[0]
    assert row[:4] == ("v1500011569", "345", "11569", "repealed") and sorted(row[4]) == ["kaz", "rus"]


def test_a_successors_replaces_names_the_act_it_replaced(tmp_path: Path) -> None:
    """The ``replaces:`` list of a successor's meta.yaml (the format kazakhstan-law/mcp reads) links the two acts
    even where the predecessor's own requisites say nothing of its repeal."""
    old = _act_copy(
        tmp_path, f"{MINISTERIAL}/2015/0213-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-87811"
    )
    new = _act_copy(
        tmp_path, f"{MINISTERIAL}/2017/0403-ob-utverzhdenii-pravil-provedeniia-audita-v-oblasti-pozharnoi-be-111943"
    )
    meta = (old / "meta.yaml").read_text("utf-8")
    quiet = meta.split(". Утратил силу")[0]  # the predecessor's requisite without its repeal clause
    (old / "meta.yaml").write_text(quiet + "\n" + meta.split("\n", 2)[2], "utf-8")
    (new / "meta.yaml").write_text((new / "meta.yaml").read_text("utf-8") + (
        "replaces:\n- code: '87811'\n  requisite: Приказ Министра внутренних дел Республики Казахстан от 13 февраля 2015 "
        "года № 111. Зарегистрирован в Министерстве юстиции Республики Казахстан 18 марта 2015 года № 10492\n"
        "  link: https://zan.gov.kz/client/#!/doc/87811/rus\n"), "utf-8")  # fmt: skip
    home = tmp_path / "home"
    run([tmp_path / "src"], home)
    with connect(home) as con:
        rows = dict(con.sql("SELECT doc_id, replaced_by FROM registry").fetchall())
        replaces = con.sql("SELECT replaces FROM registry WHERE doc_id = 'v1700015099'").fetchall()[0][0]
    assert replaces == ["v1500010492"] and rows == {"v1500010492": "v1700015099", "v1700015099": None}
