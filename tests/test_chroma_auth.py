"""Chroma behind its token: the real proxy (Debian's nginx, :mod:`deploy.proxy`) in front of a real ``chroma
run`` server, as docker-compose and the native stack run it. A request without the token, or with a wrong one,
never reaches Chroma; ``zan run --chroma-url`` works with ``ZAN_CHROMA_TOKEN`` and fails clearly without it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from deploy.secrets import fresh
from tests.conftest import SAMPLE, guarded_chroma, zan
from vectors.index import COLLECTION, IndexRefused, open_client

pytestmark = pytest.mark.server


def test_the_proxy_answers_only_with_the_token(tmp_path: Path) -> None:
    token = fresh()["ZAN_CHROMA_TOKEN"]
    with guarded_chroma(tmp_path, token) as url:
        heartbeat = f"{url}/api/v2/heartbeat"
        assert httpx.get(heartbeat).status_code == 401
        for wrong in ("x", token[:-1], token + "x", "Bearer", token.upper()):
            assert httpx.get(heartbeat, headers={"Authorization": f"Bearer {wrong}"}).status_code == 401, wrong
            assert httpx.get(heartbeat, headers={"X-Chroma-Token": wrong}).status_code == 401, wrong
        assert httpx.get(heartbeat, headers={"Authorization": token}).status_code == 401  # the scheme is part of it
        created = httpx.post(f"{url}/api/v2/tenants/default_tenant/databases/default_database/collections",
                             json={"name": "intruder"})  # fmt: skip
        assert created.status_code == 401
        assert httpx.get(heartbeat, headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert httpx.get(heartbeat, headers={"X-Chroma-Token": token}).status_code == 200
        with pytest.raises(IndexRefused, match="ZAN_CHROMA_TOKEN is not set"):
            open_client(chroma_url=url, token="")
        with pytest.raises(IndexRefused, match="was refused"):
            open_client(chroma_url=url, token=token + "x")
        assert [c.name for c in open_client(chroma_url=url, token=token).list_collections()] == []  # no intruder


def test_zan_run_against_an_authenticated_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = fresh()["ZAN_CHROMA_TOKEN"]
    home = tmp_path / "home"
    sources = str(SAMPLE / "standards")
    with guarded_chroma(tmp_path, token) as url:
        monkeypatch.delenv("ZAN_CHROMA_TOKEN", raising=False)
        refused = zan("run", "--source", sources, "--home", str(home), "--chroma-url", url, "--embedder", "hash")
        assert refused.returncode != 0
        assert "refused zan: ZAN_CHROMA_TOKEN is not set" in refused.stderr, refused.stderr[-800:]
        assert "Traceback" not in refused.stderr
        monkeypatch.setenv("ZAN_CHROMA_TOKEN", "not-" + token)
        wrong = zan("run", "--source", sources, "--home", str(home), "--chroma-url", url, "--embedder", "hash")
        assert wrong.returncode != 0 and "the token in ZAN_CHROMA_TOKEN was refused" in wrong.stderr
        assert not (home / "CURRENT").exists()  # nothing published by a run that could not index

        monkeypatch.setenv("ZAN_CHROMA_TOKEN", token)
        done = zan("run", "--source", sources, "--home", str(home), "--chroma-url", url, "--embedder", "hash", "--json")
        assert done.returncode == 0, done.stderr[-800:]
        collection = open_client(chroma_url=url, token=token).get_collection(COLLECTION)
        assert collection.count() > 0
        found = zan("lookup", "29 CFR 1910.146", "--home", str(home), "--chroma-url", url, "--json")
        assert found.returncode == 0 and '"status": "exact"' in found.stdout, found.stdout[:500]
