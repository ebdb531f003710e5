#!/usr/bin/env bash
# Packaging smoke, per Python (3.11, 3.12, 3.13 from pyenv, or PYTHONS="…" paths): in a fresh venv
# `pip install .` (pip, not uv), `zan --version`, `zan run` on the bundled corpus and a lookup;
# in another fresh venv the client alone with its extras, which must import without any of the ETL's packages.
# Needs the package index (not run by `make test`, which stays offline). Usage: scripts/smoke_pythons.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pythons=${PYTHONS:-"$HOME/.pyenv/versions/3.11.7/bin/python $HOME/.pyenv/versions/3.12.1/bin/python $HOME/.pyenv/versions/3.13.0/bin/python"}
for python in $pythons; do
  version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  echo "== Python $version: the ETL with pip"
  "$python" -m venv "$work/etl-$version"
  "$work/etl-$version/bin/pip" install -q "$root" 2>&1 | grep -v "^WARNING: Location" || true
  "$work/etl-$version/bin/zan" --version
  ran="$("$work/etl-$version/bin/zan" run --home "$work/home-$version" --source "$root/data/sample" 2>&1)"
  grep "^published" <<<"$ran"
  found="$("$work/etl-$version/bin/zan" lookup "ст. 182 ТК РК" --home "$work/home-$version" --k-per-doc 1 2>&1)"
  grep -q "^status: exact" <<<"$found" && echo "lookup: ст. 182 ТК РК → exact"
  echo "== Python $version: the client alone, with its extras"
  "$python" -m venv "$work/client-$version"
  "$work/client-$version/bin/pip" install -q "$root/clients/python[langchain,llamaindex]" 2>&1 | grep -v "^WARNING: Location" || true
  (cd / && "$work/client-$version/bin/python" -) <<'PY'
import importlib.util, sys
import zan_client, zan_client.langchain, zan_client.llamaindex  # noqa: F401
etl = [m for m in ("chromadb", "duckdb", "pyarrow", "lookup", "runs", "enrich", "vectors", "serve", "airflow")
       if importlib.util.find_spec(m) is not None]
print("client ok; ETL packages installed beside it:", etl or "none")
sys.exit(1 if etl else 0)
PY
done
