# Every target sets itself up on a fresh machine: it installs uv if missing, syncs the locked
# environment, then runs. `make run` indexes the bundled corpus; `make test` runs the test suite.
SHELL := /bin/bash
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
HOME_DIR ?= data
export UV_PYTHON_DOWNLOADS := never
# Installed packages are compiled to bytecode once, at setup: without it every `zan` process compiles
# chromadb's sources again (~0.8 s of a lookup), and PYTHONDONTWRITEBYTECODE keeps it from caching them.
export UV_COMPILE_BYTECODE := 1

.PHONY: run test test-deploy browser-deps deploy-deps secrets requirements test-fast lint check setup sample clean bench bench-tiny bench-cli

.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install --quiet "uv==$(UV_VERSION)"

# zan's own packages are an editable install, which UV_COMPILE_BYTECODE leaves alone: compiled here too (only what
# changed since), or with PYTHONDONTWRITEBYTECODE set every zan process compiles them again (~0.2 s a process).
PACKAGES := cli dags runs vectors lookup enrich extractors schemas serve deploy clients/python/zan_client

setup: $(if $(filter .tools/bin/uv,$(UV)),.tools/bin/uv)
	$(UV) sync --frozen
	$(UV) run --no-sync python -m compileall -q -j 0 $(PACKAGES)

run: setup  ## extract, build the registry, enrich and index the bundled corpus into ./data
	$(UV) run zan run --home $(HOME_DIR)
	$(UV) run zan sql "SELECT doc_id, doc_type, issuer, order_number, law_zrk, intl_org, intl_section FROM registry ORDER BY doc_id" --home $(HOME_DIR)
	$(UV) run zan lookup "приказ 211" --home $(HOME_DIR) --k-per-doc 1

test: setup  ## the test suite on both cores (the same command CI runs; CI must stay under 30 min); the deployment test is `make test-deploy`
	$(UV) run pytest -q -n 2 -m "not deploy"

browser-deps:  ## Debian's Chromium and its driver: the pages' real-browser test (no browser download)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver; }

deploy-deps:  ## Debian's PostgreSQL, Redis and nginx (the native stack, Chroma's token proxy), docker-compose
	@if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || ! command -v redis-server >/dev/null \
			|| ! { command -v nginx >/dev/null || test -x /usr/sbin/nginx; }; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			postgresql redis-server nginx-light; fi
	@command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose

secrets: setup  ## .env with random secrets for docker compose (kept when there; `--rotate` to replace them)
	$(UV) run python -m deploy secrets

requirements: setup  ## deploy/requirements.txt, what the Docker image installs, exported from uv.lock
	$(UV) export --frozen --no-hashes --no-default-groups --group airflow --group models --no-emit-project --no-emit-workspace --no-header --quiet -o deploy/requirements.txt

test-deploy: setup deploy-deps  ## the native Airflow stack end to end through the REST API, with its faults
	$(UV) run pytest -q -m deploy tests/deploy

test-fast: setup  ## the inner loop: no Airflow runs, no chroma server, no subprocess fault injection, no stack
	$(UV) run pytest -q -n 2 -m "not airflow and not server and not slow and not deploy"

bench: setup  ## every benchmark at its default size, each figure beside its same-run baseline and goal (88 min on 2 cores, measured once whole)
	$(UV) run python benchmarks/run_all.py

bench-tiny: setup  ## the same suite at a tiny size: it runs end to end (CI runs it as a test), timings mean nothing
	$(UV) run python benchmarks/run_all.py --size tiny

bench-cli: setup  ## how fast the zan command itself starts (help, a lookup), with the import breakdown
	$(UV) run python benchmarks/bench_cli.py

lint: setup  ## ruff (incl. the AIR rules on dags/) and mypy on the packages
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run mypy $(PACKAGES)

check: test lint

sample: setup  ## regenerate data/sample from scripts/sample_*.py
	$(UV) run python scripts/build_sample.py

clean:
	rm -rf .venv .tools data/*.parquet data/chroma data/.staging data/versions data/CURRENT data/runs data/vectors data/work .airflow
