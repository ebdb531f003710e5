"""Hostile git sources and operators (issue 67), with real acts, real commits and real git: local repositories,
``file://`` and git's smart HTTP protocol on 127.0.0.1. No bad past commit stops a run and no mass deletion
empties a scope; no configured remote, path or branch is read as an option, no clone's configuration or hooks run
a program (each tried against a marker file), and a credential never lands in ``.git/config`` or a message."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from enrich.query import connect
from runs.errors import ShrinkRefused
from runs.gitcmd import Credential, GitError, GitRefused
from runs.gitsource import GitScope, update
from runs.pipeline import RunOptions, run
from schemas.published import current_version
from tests.git_servers import basic, commit, git, git_http, needs_git, new_repo, raw_commit
from tests.test_kazlaw import ACCIDENTS
from tests.test_kazlaw_git import RESCUERS

BOMB = "\n".join(
    ["bomb0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"bomb{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
)  # nine levels of nine aliases: 387 420 489 values once walked


def _acts(repo: Path, *relative: str) -> dict[str, Path]:
    from tests.conftest import corpus_file

    out = {}
    for act in relative:
        out[act] = repo / act.split("/", 2)[2]
        shutil.copytree(corpus_file(act), out[act])
    return out


def _registry(home: Path) -> dict[str, tuple[object, ...]]:
    with connect(home) as con:
        return {r[0]: r[1:] for r in con.sql("SELECT doc_id, status, repealed_on FROM registry").fetchall()}


def _history_rejects(home: Path) -> list[tuple[str, str, str, str]]:
    with connect(home) as con:
        return con.sql(
            "SELECT run_id, source_file, error, reason FROM rejects WHERE stage = 'history' ORDER BY source_file"
        ).fetchall()


# --- 3. no bad old version stops a run ----------------------------------------------------------------------


def test_a_bad_past_version_or_date_is_a_reject_and_every_later_run_publishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An oversized past blob, a past meta.yaml bomb, and commits dated year 10 000, past 9999 and before 1970:
    each is a history reject naming the version; the run publishes, and so do the five after it, which carry the
    rejects without reading those versions again."""
    needs_git()
    monkeypatch.setenv("ZAN_MAX_FILE_MB", "1")  # the cap, small: a 2 MB past text stands for a 70 MB one
    repo = new_repo(tmp_path / "ministerial")
    acts = _acts(repo, ACCIDENTS, RESCUERS)
    accidents, rescuers = acts[ACCIDENTS], acts[RESCUERS]
    commit(repo, "two acts")
    home = tmp_path / "home"
    assert run([repo], home).documents == 2
    good_text, good_meta = (accidents / "rus.md").read_text("utf-8"), (rescuers / "meta.yaml").read_text("utf-8")
    (accidents / "rus.md").write_text(good_text + "\n\n" + "а" * (1 << 20), "utf-8")  # 2 MB of UTF-8
    (rescuers / "meta.yaml").write_text(good_meta + "\n" + BOMB + "\ncaused_by: {requisite: *a8}\n", "utf-8")
    big = commit(repo, "a broken build", when="2026-02-01T10:00:00")
    (accidents / "rus.md").write_text(good_text.replace("десяти рабочих дней", "пяти рабочих дней"), "utf-8")
    (rescuers / "meta.yaml").write_text(good_meta, "utf-8")
    commit(repo, "rebuilt", when="2026-02-02T10:00:00")
    dated = {}
    for n, stamp in enumerate(("253402300800 +0000", "99999999999999 +0000", "-100 +0000")):
        path = rescuers / "rus.md"
        path.write_text(path.read_text("utf-8") + f"\n\nПримечание {n}.\n", "utf-8")
        dated[stamp] = raw_commit(repo, f"odd date {n}", stamp)
    second = run([repo], home)
    assert second.status == "published" and second.documents == 2
    rejects = _history_rejects(home)
    assert {(Path(f).name, error) for _, f, error, _ in rejects} == {
        (f"{accidents.name}@{big}", "Refused"),
        (f"{rescuers.name}@{big}", "Refused"),
        *((f"{rescuers.name}@{sha}", "BadCommitDate") for sha in dated.values()),
    }
    why = {Path(f).name: reason for _, f, _, reason in rejects}
    assert "over the 1 MB limit" in why[f"{accidents.name}@{big}"]
    assert "aliases" in why[f"{rescuers.name}@{big}"]
    assert "no real date" in why[f"{rescuers.name}@{dated['-100 +0000']}"]
    with connect(home) as con:  # the good versions around them are in the history
        assert (
            con.sql(
                "SELECT count(*) FROM read_parquet(?) WHERE text LIKE '%пяти рабочих дней%'",
                params=[str(home / "versions" / current_version(home) / "history.parquet")],  # type: ignore[operator]
            ).fetchall()[0][0]
            >= 1
        )
    for n in range(5):  # five more commits: every run publishes, the rejects carried as the run that met them wrote
        path = accidents / "kaz.md"
        path.write_text(path.read_text("utf-8") + f"\n\nЕскерту {n}.\n", "utf-8")
        commit(repo, f"amend {n}", when=f"2026-03-0{n + 1}T10:00:00")
        later = run([repo], home)
        assert later.status == "published", later.error
        assert _history_rejects(home) == rejects
    assert {r[0] for r in rejects} == {second.run_id}


# --- 4. no mass deletion repeals a scope, and an empty tree is not a failure ---------------------------------


def _scope_of_twenty(repo: Path) -> list[Path]:
    from benchmarks.kazlaw_scope import templates, write_act

    try:
        real = templates()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    plan = [(c, t) for c in range(3) for t in range(len(real))][:20]
    return [write_act(repo, real[t], c, t) for c, t in plan]


def test_deleting_19_of_20_acts_or_all_of_them_repeals_nothing_without_allow_shrink(tmp_path: Path) -> None:
    needs_git()
    repo = new_repo(tmp_path / "scope")
    folders = _scope_of_twenty(repo)
    commit(repo, "twenty acts")
    home = tmp_path / "home"
    first = run([repo], home)
    assert first.documents == 20
    before = _registry(home)
    with connect(home) as con:
        homes = {Path(f).parent: d for d, files in con.sql("SELECT doc_id, source_files FROM registry").fetchall()
                 for f in files}  # fmt: skip
    keep = next(f for f in folders if before[homes[f]][0] == "in_force")
    for folder in folders:
        if folder != keep:
            shutil.rmtree(folder)
    nineteen = commit(repo, "a broken build", when="2026-03-01T09:00:00")
    with pytest.raises(ShrinkRefused, match=rf"commit {nineteen[:12]} deletes the folders of 19 of its 20 acts"):
        run([repo], home)
    assert current_version(home) == first.version and _registry(home) == before
    allowed = run([repo], home, options=RunOptions(allow_shrink=True))
    assert allowed.repealed == 19 and allowed.deleted == 0
    after = _registry(home)
    kept = [d for d, (s, _) in after.items() if s != "repealed"]
    assert kept == [homes[keep]]
    in_force = {d for d, (s, _) in before.items() if s == "in_force"} - set(kept)
    assert in_force and {after[d] for d in in_force} == {("repealed", dt.date(2026, 3, 1))}  # on its commit's date

    git(repo, "revert", "--no-edit", "HEAD", when="2026-03-02T09:00:00")  # the upstream rebuilt: all 20 are back
    back = run([repo], home)
    assert back.status == "published" and back.documents == 20
    for folder in folders:
        shutil.rmtree(folder)
    emptied = commit(repo, "an empty tree", when="2026-03-03T09:00:00")
    with pytest.raises(
        ShrinkRefused, match=rf"commit {emptied[:12]} leaves its tree empty and deletes the folders of 20"
    ):
        run([repo], home)
    assert current_version(home) == back.version
    everything = run([repo], home, options=RunOptions(allow_shrink=True))
    assert everything.repealed == 20 and everything.documents == 20
    final = _registry(home)
    assert all(s == "repealed" for s, _ in final.values())
    assert final[kept[0]] == ("repealed", dt.date(2026, 3, 3))


def test_one_act_repealed_by_deletion_needs_no_permission(tmp_path: Path) -> None:
    """The gate is for mass deletion: one folder deleted (an upstream repeal as it is published) goes through."""
    needs_git()
    repo = new_repo(tmp_path / "scope")
    folders = _scope_of_twenty(repo)
    commit(repo, "twenty acts")
    home = tmp_path / "home"
    run([repo], home)
    shutil.rmtree(folders[3])
    commit(repo, "repeal one", when="2026-04-01T09:00:00")
    assert run([repo], home).repealed == 1


# --- 5. no git option, no repository configuration or hook runs a program --------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        "m=--upload-pack=touch {marker}@{clone}",
        "m={bare}@--upload-pack=touch {marker}",
        "m={bare}@{clone}#--upload-pack=touch {marker}",
        "m=ext::sh -c touch% {marker}@{clone}",
        "m=file://{bare}@relative/path",
        "m=http://127.0.0.1:1/x.git@{clone}",  # http is not in ZAN_GIT_PROTOCOLS by default
    ],
)
def test_a_remote_path_or_branch_git_could_read_as_an_option_is_refused_when_configured(
    tmp_path: Path, entry: str
) -> None:
    needs_git()
    bare, clone, marker = tmp_path / "up.git", tmp_path / "clone", tmp_path / "MARKER"
    with pytest.raises(GitRefused) as refused:
        GitScope.parse(entry.format(bare=bare, clone=clone, marker=marker))
    assert str(refused.value) and not marker.exists()


def test_a_value_that_reads_as_an_option_is_never_an_option_even_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the configuration check too (a scope made by hand): values go after ``--``, so git takes them as a
    repository and a path, never as ``--upload-pack``."""
    needs_git()
    monkeypatch.chdir(tmp_path)  # where a relative path would land
    work = new_repo(tmp_path / "work")
    (work / "a.md").write_text("a", "utf-8")
    commit(work, "one")
    marker = tmp_path / "MARKER"
    for scope in (
        GitScope("m", f"--upload-pack=touch {marker}", tmp_path / "clone1"),
        GitScope("m", str(work), Path(f"--upload-pack=touch {marker}")),
    ):
        with pytest.raises(GitError):
            update(scope)
    assert not marker.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


HOSTILE_CONFIG = {
    "fsmonitor": ("[core]\n\tfsmonitor = {run}\n", None),
    "filter": ("[filter \"evil\"]\n\tsmudge = {run}\n\tclean = {run}\n", "filter.evil.clean"),
    "gpg": ("[gpg]\n\tprogram = {run}\n[log]\n\tshowSignature = true\n[merge]\n\tverifySignatures = true\n",
            "gpg.program"),
    "textconv": ("[diff \"evil\"]\n\ttextconv = {run}\n", "diff.evil.textconv"),
    "include": ("[include]\n\tpath = {elsewhere}\n", "include.path"),
}  # fmt: skip
HOOKS = ("post-merge", "post-checkout", "reference-transaction", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman")


@pytest.mark.parametrize("kind", [*HOSTILE_CONFIG, "hooks"])
def test_a_clones_own_configuration_and_hooks_run_nothing_in_a_run_or_an_update(tmp_path: Path, kind: str) -> None:
    """A clone whose ``.git/config`` or hooks someone else wrote: ``zan run`` and the scope update run none of
    it (a marker file would say so); a setting no override can switch off makes zan refuse the clone by name."""
    needs_git()
    work = new_repo(tmp_path / "work")
    _acts(work, ACCIDENTS)
    commit(work, "one act")
    bare = tmp_path / "up.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    clone = tmp_path / "clone"
    update(GitScope.parse(f"ministerial=file://{bare}@{clone}"))
    marker = tmp_path / "MARKER"
    run_it = tmp_path / "evil.sh"  # a program (gpg.program is run as one, a filter or fsmonitor through a shell)
    run_it.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n", "utf-8")
    run_it.chmod(0o755)
    (tmp_path / "elsewhere.conf").write_text(f"[core]\n\tfsmonitor = {run_it}\n", "utf-8")
    (clone / ".git" / "info").mkdir(exist_ok=True)
    (clone / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n", "utf-8")
    refused = None
    if kind == "hooks":
        hooks = clone / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        for hook in HOOKS:
            (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n", "utf-8")
            (hooks / hook).chmod(0o755)
    else:
        text, refused = HOSTILE_CONFIG[kind]
        with (clone / ".git" / "config").open("a", encoding="utf-8") as config:
            config.write(text.format(run=run_it, elsewhere=tmp_path / "elsewhere.conf"))
    for n in range(2):  # an upstream commit for the update to fast-forward (and check out) each time
        with (work / ACCIDENTS.split("/", 2)[2] / "kaz.md").open("a", encoding="utf-8") as text:
            text.write(f"\n\nЕскерту {n}.\n")
        raw_commit(work, f"amend {n}", f"{1_780_000_000 + n * 86_400} +0500", signed=True)
        git(work, "push", "-q", str(bare), "main")
        scope = GitScope.parse(f"ministerial=file://{bare}@{clone}")
        if refused:
            with pytest.raises(GitRefused, match=refused):
                update(scope)
        else:
            update(scope)
        info = run([clone], tmp_path / "home")
        assert info.status in ("published", "unchanged")
        if refused:
            assert any(refused in s and "read as a plain folder" in s for s in info.sources), info.sources
    assert not marker.exists()


def test_only_the_configured_transports_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_git()
    monkeypatch.setenv("ZAN_GIT_PROTOCOLS", "https")
    work = new_repo(tmp_path / "work")
    (work / "a.md").write_text("a", "utf-8")
    commit(work, "one")
    with pytest.raises(GitRefused, match="uses file, not one of ZAN_GIT_PROTOCOLS"):
        GitScope.parse(f"m=file://{work}@{tmp_path / 'clone'}")
    with pytest.raises(GitError, match="transport 'file' not allowed"):  # git itself refuses it too
        update(GitScope("m", f"file://{work}", tmp_path / "clone"))


# --- 6. credentials travel as a header, never into .git/config, a message or a lost port ---------------------


def test_a_credential_reaches_the_server_and_never_the_clone_or_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local git HTTP server on its own port that asks for a token: cloned and fetched with the token from a
    connection, from the URL itself, and from an old clone whose config held it; the token is in no file of the
    clone, the port is kept, and a wrong token's error does not show it."""
    needs_git()
    monkeypatch.setenv("ZAN_GIT_PROTOCOLS", "https:ssh:file:http")  # the local server speaks plain http
    token = "ghp_S3cr3tT0ken-xyz"
    work = new_repo(tmp_path / "work")
    _acts(work, ACCIDENTS)
    commit(work, "one act")
    served = tmp_path / "served"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(served / "ministerial.git"))
    with git_http(served, basic("zan-bot", token)) as server:
        remote = f"{server.url}/ministerial.git"
        port = remote.split(":")[2].split("/")[0]
        with pytest.raises(GitError) as unauthorised:  # no credential: refused by the server, no prompt
            update(GitScope.parse(f"ministerial={remote}@{tmp_path / 'nothing'}"))
        assert token not in str(unauthorised.value)
        clone = tmp_path / "clone"
        first = update(GitScope.parse(f"ministerial={remote}@{clone}"), Credential("zan-bot", token))
        assert first.before is None and first.after.sha == git(work, "rev-parse", "HEAD")
        in_url = update(GitScope.parse(f"ministerial=http://zan-bot:{token}@127.0.0.1:{port}/ministerial.git@"
                                       f"{tmp_path / 'from-url'}"))  # fmt: skip
        assert in_url.after.sha == first.after.sha
        (work / "note.md").write_text("новое", "utf-8")
        commit(work, "more", when="2026-02-01T10:00:00")
        git(work, "push", "-q", str(served / "ministerial.git"), "main")
        old = tmp_path / "old-clone"  # an earlier zan put the token in the URL: the next update takes it out
        shutil.copytree(clone, old)
        git(old, "config", "remote.origin.url", f"http://zan-bot:{token}@127.0.0.1:{port}/ministerial.git")
        fetched = update(GitScope.parse(f"ministerial={remote}@{old}"), Credential("zan-bot", token))
        assert fetched.after.sha == git(work, "rev-parse", "HEAD") and fetched.before == first.after.sha
        with pytest.raises(GitError) as wrong:
            update(GitScope.parse(f"ministerial=http://zan-bot:WRONG-{token}@127.0.0.1:{port}/ministerial.git@"
                                  f"{tmp_path / 'wrong'}"))  # fmt: skip
        assert token not in str(wrong.value) and "WRONG" not in str(wrong.value)
        assert basic("zan-bot", token) in server.seen
    for folder in (clone, tmp_path / "from-url", old):
        for path in (folder / ".git").rglob("*"):
            if path.is_file():
                assert token.encode() not in path.read_bytes(), path
        assert git(folder, "config", "remote.origin.url") == remote  # the port and the path as configured


def test_the_update_task_takes_its_credential_from_the_airflow_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``update_scope`` as the DAG calls it: the scope's name from ``ZAN_GIT_SCOPES``, the token from the connection
    ``zan_git_<name>``; the task's argument is the name alone, so no URL or token travels through XCom."""
    import json
    import sys

    from tests.test_dags import DAGS

    needs_git()
    monkeypatch.setenv("ZAN_GIT_PROTOCOLS", "https:ssh:file:http")
    token = "conn-t0ken-123"
    work = new_repo(tmp_path / "work")
    (work / "a.md").write_text("a", "utf-8")
    commit(work, "one")
    git(tmp_path, "clone", "-q", "--bare", str(work), str(tmp_path / "served" / "ministerial.git"))
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.delitem(sys.modules, "zan_tasks", raising=False)  # its settings are read from this environment
    import zan_tasks

    with git_http(tmp_path / "served", basic("x-access-token", token)) as server:
        clone = tmp_path / "scopes" / "ministerial"
        monkeypatch.setenv("ZAN_GIT_SCOPES", f"ministerial={server.url}/ministerial.git@{clone}")
        monkeypatch.setenv("AIRFLOW_CONN_ZAN_GIT_MINISTERIAL", json.dumps({"conn_type": "http", "password": token}))
        assert zan_tasks.git_scopes() == ["ministerial"]
        done = zan_tasks.update_scope.function("ministerial")
    assert done["after"] == git(work, "rev-parse", "HEAD") and token not in json.dumps(done)
    assert token not in (clone / ".git" / "config").read_text("utf-8")
    monkeypatch.setenv("ZAN_GIT_SCOPES", f"ministerial={server.url}/x.git@{clone}#--upload-pack=touch {tmp_path}/M")
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match="starts with '-'"):
        zan_tasks.update_scope.function("ministerial")
    assert not (tmp_path / "M").exists()
