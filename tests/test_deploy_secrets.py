"""The deployment's secrets (:mod:`deploy.secrets`): ``python -m deploy secrets`` writes a ``.env`` only its
owner reads, with strong random values, keeps what is there, replaces everything on ``--rotate``, and git
ignores the file."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.secrets import SECRETS, check, ensure, missing, read_env, write_private
from tests.conftest import ROOT


def test_a_fresh_env_file_has_every_secret_readable_by_its_owner_only(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    assert sorted(ensure(env)) == sorted(SECRETS)
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    values = read_env(env)
    assert missing(values) == [] and len(set(values.values())) == len(SECRETS)  # each its own value
    check(values)
    assert len(values["AIRFLOW__API_AUTH__JWT_SECRET"]) >= 86  # 64 random bytes: what HS512 wants
    assert all(len(v) >= 43 for v in values.values())  # 32 random bytes or more
    from cryptography.fernet import Fernet

    key = values["AIRFLOW__CORE__FERNET_KEY"]
    assert Fernet(key.encode()).decrypt(Fernet(key.encode()).encrypt(b"conn")) == b"conn"


def test_no_secret_starts_with_a_dash_that_a_command_line_would_read_as_an_option() -> None:
    # `airflow users create --password -t9K…` failed in CI: argparse took the password for a flag
    from deploy.secrets import fresh

    drawn = [value for _ in range(300) for name, value in fresh().items() if name != "AIRFLOW__CORE__FERNET_KEY"]
    assert len(drawn) == 300 * (len(SECRETS) - 1)  # ~2 100 values: a 1-in-64 leading dash would show many times
    assert not [value for value in drawn if value.startswith("-")]


def test_existing_values_and_other_lines_are_kept_and_rotate_replaces_them(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("ZAN_PUBLISH_ADDRESS=10.0.0.5\nPOSTGRES_PASSWORD=kept-by-the-operator-000\n", "utf-8")
    written = ensure(env)
    assert "POSTGRES_PASSWORD" not in written and len(written) == len(SECRETS) - 1
    values = read_env(env)
    assert values["POSTGRES_PASSWORD"] == "kept-by-the-operator-000" and values["ZAN_PUBLISH_ADDRESS"] == "10.0.0.5"
    assert ensure(env) == []  # nothing lacking: nothing written
    assert read_env(env) == values
    assert sorted(ensure(env, rotate=True)) == sorted(SECRETS)
    rotated = read_env(env)
    assert all(rotated[name] != values[name] for name in SECRETS)
    assert rotated["ZAN_PUBLISH_ADDRESS"] == "10.0.0.5"


def test_unsafe_values_are_refused() -> None:
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        check({"POSTGRES_PASSWORD": "p@ss word"})
    with pytest.raises(ValueError, match="ZAN_CHROMA_TOKEN"):
        check({"ZAN_CHROMA_TOKEN": "short"})


def test_the_command_and_git_ignore(tmp_path: Path) -> None:
    env = tmp_path / "deploy.env"
    done = subprocess.run([sys.executable, "-m", "deploy", "secrets", "--env-file", str(env)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "ZAN_CHROMA_TOKEN" in done.stderr, done.stderr
    assert missing(read_env(env)) == []
    assert read_env(env)["ZAN_CHROMA_TOKEN"] not in done.stdout + done.stderr  # names, never values
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT)
    assert ignored.returncode == 0, ".env is not ignored by git"
    assert ".env" in (ROOT / ".dockerignore").read_text("utf-8").splitlines()  # never in an image's build context


def test_every_secret_file_is_written_owner_only_even_over_a_readable_one(tmp_path: Path) -> None:
    loose = tmp_path / "redis.conf"
    loose.write_text("requirepass old\n", "utf-8")
    loose.chmod(0o644)
    write_private(loose, "requirepass new\n")
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600 and loose.read_text("utf-8") == "requirepass new\n"
    state = tmp_path / "stack.json"
    write_private(state, "{}", atomic=True)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["redis.conf", "stack.json"]  # no temporary file left
