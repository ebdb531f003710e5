"""``zan migrate`` (issue 46): a HOME written by an older zan is refused by every reader and by runs with one
line naming ``zan migrate``; the migrate rewrites it once into the current format (versions with word indexes,
vectors as NumPy parts, manifests that say their format and embedder), after which the same questions get the
same answers; a second migrate does nothing.

The older HOMEs are made from a real run on the bundled corpus, taken back to what format 1 held: a version
without ``lexical/`` or ``format_version`` or ``embedder_spec``, vectors in parquet parts (``text_hash`` +
``vector``), and the layout before versions (published files directly under HOME)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lookup.route import Lookup
from runs.migrate import FIRST_LAYOUT, MigrateError, migrate
from runs.pipeline import run
from schemas.published import FORMAT_VERSION, OUTPUTS, FormatError, home_format, read_manifest
from tests.conftest import SAMPLE, zan
from vectors.documents import CENTROIDS
from vectors.lexical import LEXICAL
from vectors.store import VectorStore

QUESTIONS = ("ст. 156 ТК РК", "Приказ МТСЗН №211", "испытательный срок сколько месяцев", "29 CFR 1910.146")


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """A HOME in the current format and what it answers to :data:`QUESTIONS`."""
    home = tmp_path_factory.mktemp("format2") / "home"
    run([SAMPLE], home)
    return home, answers(home)


def answers(home: Path) -> dict[str, object]:
    lookup = Lookup.open(home)
    return {q: lookup.route(q).as_dict() for q in QUESTIONS}


def copy_of(home: Path, to: Path, format_1: bool = True) -> Path:
    """A copy of ``home`` at ``to``, taken back to format 1 (:func:`to_format_1`) unless told not to."""
    shutil.copytree(home, to)
    if format_1:
        to_format_1(to)
    return to


def vectors_of(home: Path) -> dict[str, np.ndarray]:
    (folder,) = (home / "vectors").iterdir()
    store = VectorStore.at(folder)
    return store.get(store.hashes().to_pylist())


def to_format_1(home: Path) -> None:
    """``home`` as format 1 left it: its versions' manifests without format or spec, no word indexes or
    document centroids, and every vector part in parquet."""
    for manifest in (home / "versions").glob("v*/manifest.json"):
        data = json.loads(manifest.read_text("utf-8"))
        del data["format_version"], data["embedder_spec"]
        manifest.write_text(json.dumps(data), "utf-8")
        shutil.rmtree(manifest.parent / LEXICAL)
        shutil.rmtree(manifest.parent / CENTROIDS)
    for keys in (home / "vectors").glob("*/part-*.keys.npy"):
        name = keys.name.removesuffix(".keys.npy")
        vectors = np.load(keys.with_name(name + ".f32.npy"))
        hashes = np.load(keys).astype(str).tolist()
        table = pa.table({"text_hash": hashes, "vector": [v.tolist() for v in vectors]}, schema=FIRST_LAYOUT)
        pq.write_table(table, keys.with_name(name + ".parquet"))
        keys.unlink()
        keys.with_name(name + ".f32.npy").unlink()


def test_an_older_home_is_refused_by_readers_and_runs_until_migrated_then_answers_the_same(
    current: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    source, before = current
    vectors = vectors_of(source)
    home = copy_of(source, tmp_path / "home")
    assert home_format(home) == 1
    with pytest.raises(FormatError, match=r"older zan \(format 1; this zan reads format 2\): run `zan migrate"):
        Lookup.open(home)
    for args in (
        ("lookup", "ст. 156 ТК РК"),
        ("sql", "SELECT count(*) FROM registry"),
        ("run", "--source", str(SAMPLE)),
    ):
        done = zan(*args, "--home", str(home))
        assert done.returncode == 1 and f"zan migrate --home {home}" in done.stderr, (args, done.stderr)
    assert len(list(home.glob("versions/v*"))) == 1  # the refused run wrote nothing

    done = zan("migrate", "--home", str(home), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["format_before"], report["format_after"]) == (1, FORMAT_VERSION)
    assert any("word indexes built" in s for s in report["steps"])
    assert any("document centroids built" in s for s in report["steps"])
    assert any("vectors rewritten as NumPy parts" in s for s in report["steps"])
    assert any("embedder spec recorded (hash)" in s for s in report["steps"])
    manifest = read_manifest(home / "versions" / "v000001")
    assert (manifest.format_version, manifest.embedder_spec) == (FORMAT_VERSION, "hash")
    assert not list(home.glob("vectors/*/*.parquet"))
    got = vectors_of(home)
    assert set(got) == set(vectors) and all(np.array_equal(got[h], vectors[h]) for h in vectors)
    assert answers(home) == before

    again = zan("migrate", "--home", str(home), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["steps"] == []
    assert zan("run", "--source", str(SAMPLE), "--home", str(home)).returncode == 0  # a run reads it again


def test_the_layout_before_versions_becomes_a_version(current: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    source, before = current
    home = copy_of(source, tmp_path / "home")
    folder = home / "versions" / "v000001"
    for name in OUTPUTS:  # what that layout held
        (folder / name).replace(home / name)
    shutil.rmtree(home / "versions")
    (home / "CURRENT").unlink()
    assert home_format(home) == 1
    assert zan("lookup", "ст. 156 ТК РК", "--home", str(home)).returncode == 1

    done = migrate(home)
    assert done.steps[0].startswith("moved the files published directly under HOME into versions/v000001")
    assert done.format_after == FORMAT_VERSION and not (home / "registry.parquet").exists()
    assert read_manifest(folder).chunks == pq.ParquetFile(folder / "enriched_chunks.parquet").metadata.num_rows
    assert answers(home) == before


def test_a_newer_format_and_an_unknown_embedder_are_refused_with_what_to_do(
    current: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    source, _ = current
    newer = copy_of(source, tmp_path / "newer", format_1=False)
    path = newer / "versions" / "v000001" / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text("utf-8")) | {"format_version": FORMAT_VERSION + 1}), "utf-8")
    with pytest.raises(FormatError, match="newer zan"):
        Lookup.open(newer)
    with pytest.raises(MigrateError, match="upgrade zan"):
        migrate(newer)

    other = copy_of(source, tmp_path / "other")
    path = other / "versions" / "v000001" / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text("utf-8")) | {"embedder": "e5-small-q4-0123"}), "utf-8")
    with pytest.raises(MigrateError, match="give --embedder"):
        migrate(other)
    with pytest.raises(MigrateError, match="makes 'hash-"):
        migrate(other, "hash")
    assert home_format(other) == 1  # refused before its manifest was stamped: still refused by readers


def test_migrate_on_a_fresh_home_says_there_is_nothing_to_do(tmp_path: Path) -> None:
    done = zan("migrate", "--home", str(tmp_path / "empty"))
    assert done.returncode == 0 and "nothing published" in done.stderr
