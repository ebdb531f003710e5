"""Task wiring shared by the zan DAGs: each task resolves its settings and calls one library function.

Heavy imports (the ``enrich`` library, Chroma, DuckDB, pyarrow) happen inside the tasks, never at parse
time; nothing here touches the network, the metadata database or Variables while a DAG file is parsed.
Paths, not data, travel through XCom: the run's state file, shard files, the report path.

Settings (environment of the workers; defaults fit the docker-compose deployment):
``ZAN_HOME`` data directory (/opt/zan/data) · ``ZAN_SOURCES`` source folders, ``:``-separated ·
``ZAN_LANDING`` landing zone of the fetcher · ``ZAN_FETCH_IDS`` adilet ids to fetch, comma-separated ·
``ZAN_FETCH_RSS`` an RSS index URL · ``ZAN_SOURCE_ROOTS`` more folders a backfill's ``sources`` may name (it
may name only folders under these, ``ZAN_SOURCES`` and the landing zone) · ``ZAN_ADILET_URL`` site root ·
``ZAN_CHROMA_URL`` Chroma server (else embedded under ZAN_HOME) ·
``ZAN_GOLDEN`` the golden set the ``zan_eval`` DAG checks after each publish (default: the image's copy of
``data/golden/golden.jsonl``, else the repository's) ·
``ZAN_EMBEDDER`` ``e5`` (default: multilingual-e5-small in-process), ``hash``, ``st:/models/x`` or
``openai:URL?model=NAME`` · ``ZAN_SHARDS`` extract shards · ``ZAN_EMBED_SHARDS`` embed shards (ZAN_SHARDS) ·
``ZAN_EMBED_CONCURRENCY`` the slots of the ``zan_embed`` pool (2): embed tasks at once, each with that share
of a host's cores ·
``ZAN_GIT_SCOPES`` kazakhstan-law scopes to keep up to date and read, ``;``-separated ``name=remote@path[#branch]``
(``ministerial=https://github.com/kazakhstan-law/ministerial.git@/opt/zan/scopes/ministerial``); a scope's
credentials, if any, come from the Airflow connection ``zan_git_<name>`` (its password: a token for https), sent
as a header, never written into the clone · ``ZAN_GIT_PROTOCOLS`` the transports git may use (https:ssh:file).

Airflow Connections, where defined, win over those variables (which stay the local default): ``zan_chroma``
the Chroma server (host, port, ``schema`` http/https; its password: the proxy's bearer token, else
``ZAN_CHROMA_TOKEN``) · ``zan_embeddings`` an OpenAI-compatible embeddings service (host, port; extra
``{"path": "/v1", "model": "bge-m3", "mode": "prefix", "batch": "32"}``; its password: the API key, else
``ZAN_EMBED_API_KEY``). Connections are read when a task runs, never at parse time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from airflow.sdk import Asset, chain, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from runs.memory import prefer_jemalloc
from schemas.published import COLLECTION

prefer_jemalloc()  # Arrow's C++ pool is chosen when pyarrow is first imported, inside a task

T = TypeVar("T")


def setting(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def home() -> Path:
    return Path(setting("ZAN_HOME", "/opt/zan/data"))


def task_failed(context: Any) -> None:
    """Every zan task's failure callback: a task that failed for good (its retries spent, or a terminal error)
    is written where zan's operators look, ``ZAN_HOME/runs/task_failures.jsonl``, which ``zan serve`` shows on
    its ``/runs`` page and in ``/api/runs`` (:func:`lookup.run_history.record_task_failure`): a golden-set drop
    or a scope that did not update leaves no run report of its own."""
    import datetime as dt

    from lookup.run_history import record_task_failure

    ti, error = context.get("ti") or context.get("task_instance"), context.get("exception")
    record_task_failure(
        home(),
        {
            "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "dag_id": getattr(ti, "dag_id", None),
            "task_id": getattr(ti, "task_id", None),
            "run_id": getattr(ti, "run_id", None),
            "map_index": getattr(ti, "map_index", None),
            "try_number": getattr(ti, "try_number", None),
            "log_url": getattr(ti, "log_url", None),
            "error": f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error,
        },
    )


# The published registry: ``CURRENT`` names the version a publish made current (every reader resolves the
# registry through it: ``schemas.published``). The index: the Chroma server's collection, or the embedded one
# under the home. Read from the environment at parse time; a ``zan_chroma`` connection, read when the task
# runs, may name another server, and each event's extra says which home, version and server it was.
REGISTRY_ASSET = Asset(name="zan_registry", uri=(home() / "CURRENT").as_uri())
INDEX_ASSET = Asset(
    name="zan_index",
    uri=f"{setting('ZAN_CHROMA_URL').rstrip('/')}/{COLLECTION}"
    if setting("ZAN_CHROMA_URL")
    else (home() / "chroma").as_uri(),
)
DEFAULT_ARGS = {"owner": "zan", "retries": 2, "retry_exponential_backoff": True, "on_failure_callback": task_failed}
# The embed tasks share one embedding service or one host's cores: at most the pool's slots run at once
# (docker-compose.yml and deploy/ create it with ZAN_EMBED_CONCURRENCY slots), each with the cores ÷ slots
# threads of an in-process model (runs.embedding.with_threads).
EMBED_POOL = "zan_embed"


def embed_concurrency() -> int:
    return max(1, int(setting("ZAN_EMBED_CONCURRENCY", "2")))


def connection(conn_id: str) -> Any | None:
    """The Airflow connection ``conn_id``, or None where none is defined (then the environment decides)."""
    try:
        from airflow.sdk import BaseHook

        return BaseHook.get_connection(conn_id)
    except Exception:  # not defined (AirflowNotFoundException), or no way to ask: the local default applies
        return None


def _url(conn: Any) -> str:
    scheme = conn.schema if conn.schema in ("http", "https") else "https" if conn.conn_type == "https" else "http"
    port = f":{conn.port}" if conn.port else ""
    return f"{scheme}://{conn.host}{port}{str(conn.extra_dejson.get('path') or '').rstrip('/')}"


def chroma_url() -> str | None:
    """The Chroma server: the ``zan_chroma`` connection, else ``ZAN_CHROMA_URL``, else None (embedded)."""
    conn = connection("zan_chroma")
    return _url(conn) if conn is not None and conn.host else setting("ZAN_CHROMA_URL") or None


def embedder_spec() -> str:
    """The embedder: the ``zan_embeddings`` connection (an OpenAI-compatible service), else ``ZAN_EMBEDDER``."""
    from urllib.parse import urlencode

    conn = connection("zan_embeddings")
    if conn is None or not conn.host:
        return setting("ZAN_EMBEDDER", "e5")
    extra = conn.extra_dejson
    query = urlencode({k: str(extra[k]) for k in ("model", "mode", "batch", "dimensions") if extra.get(k)})
    return f"openai:{_url(conn)}" + (f"?{query}" if query else "")


def use_connection_secrets() -> None:
    """The tokens the library reads from its environment, taken from the connections' passwords where set."""
    for conn_id, variable in (("zan_chroma", "ZAN_CHROMA_TOKEN"), ("zan_embeddings", "ZAN_EMBED_API_KEY")):
        conn = connection(conn_id)
        if conn is not None and conn.password:
            os.environ[variable] = conn.password


def terminal(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the library. An error that says it is terminal (``ZanError.transient`` false: bad input, a refused
    shrink, a failed validation) fails the task at once with the reason in the log; a transient one (a busy
    lease, a full disk, an unreachable Chroma server) and anything unexpected are left to Airflow's retries."""
    from runs.memory import lean_arrow_memory
    from schemas.errors import ZanError

    lean_arrow_memory()
    use_connection_secrets()
    try:
        return call(*args, **kwargs)
    except ZanError as exc:
        if exc.transient:
            raise
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc


@task
def fetch() -> dict[str, Any]:
    """Fetch the configured acts into the landing zone; with no network the landing zone is read as it is."""
    from extractors.fetch import fetch_into_landing

    ids = [i for i in setting("ZAN_FETCH_IDS").split(",") if i.strip()]
    rss, landing = setting("ZAN_FETCH_RSS") or None, setting("ZAN_LANDING")
    if not landing or not (ids or rss):
        return {"requested": 0, "skipped": "no ZAN_LANDING, ZAN_FETCH_IDS or ZAN_FETCH_RSS configured"}
    summary = fetch_into_landing(Path(landing), ids, rss, setting("ZAN_ADILET_URL", "https://adilet.zan.kz"))
    return summary.as_dict()


def git_scopes() -> list[str]:
    """The names of the configured kazakhstan-law scopes (``ZAN_GIT_SCOPES``, ``name=remote@path[#branch]`` each,
    ``;``-separated; read from the environment: no network, no database at parse time). Only the name travels to
    the mapped task, so a remote with a token in it never reaches XCom or the task's arguments."""
    return [s.strip().partition("=")[0].strip() for s in setting("ZAN_GIT_SCOPES").split(";") if s.strip()]


def _scope(name: str) -> Any:
    """The scope ``name`` as configured, checked (:class:`runs.gitsource.GitScope`: a remote, path or branch that
    git could take for an option is refused here, terminally)."""
    from runs.gitsource import GitRefused, GitScope

    for entry in setting("ZAN_GIT_SCOPES").split(";"):
        if entry.strip() and entry.strip().partition("=")[0].strip() == name:
            try:
                return GitScope.parse(entry)
            except GitRefused as exc:
                raise AirflowFailException(f"ZAN_GIT_SCOPES: {exc}") from exc
    raise AirflowFailException(f"no scope {name[:60]!r} in ZAN_GIT_SCOPES")


@task(trigger_rule="none_failed")
def update_scope(scope: str) -> dict[str, Any]:
    """git fetch + fast-forward one scope's clone (cloned when missing; reset when the upstream was rebuilt), with
    the credential of the connection ``zan_git_<name>`` when there is one (its login, default x-access-token, and
    its password; extra ``{"auth": "bearer"}`` for a bearer token): sent as a header, never written to disk."""
    from runs.gitcmd import Credential
    from runs.gitsource import update

    configured = _scope(scope)
    conn = connection(f"zan_git_{configured.name}")
    credential = None
    if conn is not None and conn.password:
        scheme = "bearer" if str(conn.extra_dejson.get("auth", "")).lower() == "bearer" else "basic"
        credential = Credential(conn.login or "x-access-token", conn.password, scheme)
    return terminal(update, configured, credential).as_dict()


def sources(extra: list[str] | None = None) -> list[Path]:
    folders = [Path(p) for p in setting("ZAN_SOURCES").split(os.pathsep) if p]
    folders += [_scope(name).path for name in git_scopes()]
    landing = setting("ZAN_LANDING")
    if landing and (Path(landing) / "adilet").is_dir():
        folders.append(Path(landing) / "adilet")
    return folders + [Path(p) for p in extra or []]


@task(trigger_rule="none_failed")
def plan(fetched: dict[str, Any] | None = None, updated: list[dict[str, Any]] | None = None) -> list[str]:
    """Take the lease and plan the run (scope, files to read, shards); returns one ``state#shard`` reference
    per shard (at least one). Params, when the DAG has them, scope the run."""
    from runs import stages
    from runs.scope import confined_sources
    from runs.state import RunOptions

    params = get_current_context()["params"]
    options = RunOptions(
        only=tuple(params.get("doc_ids") or ()),
        since=_date(params.get("since")),
        dry_run=bool(params.get("dry_run", False)),
        force_reembed=bool(params.get("force_reembed", False)),
        allow_shrink=bool(params.get("allow_shrink", False)),
    )
    scoped = [str(p) for p in params.get("sources") or []]
    roots = sources([p for p in setting("ZAN_SOURCE_ROOTS").split(os.pathsep) if p])
    chosen = terminal(confined_sources, scoped, roots) if scoped else [] if options.only or options.since else sources()
    state = terminal(
        stages.begin,
        home(),
        chosen,
        options,
        chroma_url(),
        embedder_spec(),
        int(setting("ZAN_SHARDS", "4")),
    )
    return [f"{state}#{n}" for n in range(len(stages.RunState.load(state).shards))]


def _date(value: Any) -> Any:
    import datetime as dt

    return dt.date.fromisoformat(value) if value else None


def _state_of(shard_ref: str) -> str:
    return shard_ref.rsplit("#", 1)[0]


@task
def extract(shard_ref: str) -> str:
    """Extract one shard of the run's files (mapped: one task instance per shard)."""
    from runs import stages

    state, shard = shard_ref.rsplit("#", 1)
    return str(terminal(stages.extract_shard, state, int(shard)))


@task
def registry(shard_files: list[str]) -> str:
    """Merge every shard's documents into registry rows and chunks; returns the run's state file."""
    from runs import stages

    state = str(Path(shard_files[0]).parent / "state.json")
    terminal(stages.registry, state)
    return state


@task
def enrich(state: str) -> str:
    """Join the identifier fields onto the chunks (DuckDB) and stage the version's tables."""
    from runs import stages

    terminal(stages.enrich, state)
    return state


@task
def plan_embed(state: str) -> list[str]:
    """The texts the version needs vectors for, split into ``ZAN_EMBED_SHARDS`` shards (one ``state#n`` each)."""
    from runs.embedding import plan_embedding

    return list(terminal(plan_embedding, state, int(setting("ZAN_EMBED_SHARDS", setting("ZAN_SHARDS", "4")))))


@task(pool=EMBED_POOL)
def embed(shard_ref: str) -> int:
    """Embed one shard into the vector store (mapped: shards run on any worker at once, never colliding; at
    most :data:`EMBED_POOL`'s slots at a time, each with its share of the host's cores)."""
    from runs.embedding import embed_shard, threads_each

    state, shard = shard_ref.rsplit("#", 1)
    return int(terminal(embed_shard, state, int(shard), threads_each(embed_concurrency())))


@task
def index(state: str) -> dict[str, Any]:
    from runs import stages

    return terminal(stages.index, state).as_dict()


@task
def validate(state: str) -> dict[str, Any]:
    from runs import stages

    return terminal(stages.validate, state).as_dict()


@task(outlets=[REGISTRY_ASSET, INDEX_ASSET])
def publish(state: str) -> dict[str, Any]:
    """Publish the version; downstream DAGs scheduled on the registry/index assets run after it."""
    from runs import stages

    terminal(stages.publish, state)
    info = stages.RunState.load(state).run_info()
    events = get_current_context()["outlet_events"]
    for asset in (REGISTRY_ASSET, INDEX_ASSET):
        events[asset].extra = {
            "version": info.version,
            "status": info.status,
            "home": str(home()),
            "chroma": chroma_url() or "embedded",
        }
    return info.as_dict()


@task
def report(state: str) -> str | None:
    from runs import stages

    path = terminal(stages.report, state)
    return str(path) if path else None


def golden_set() -> Path:
    given = setting("ZAN_GOLDEN")
    if given:
        return Path(given)
    image = Path("/opt/zan/golden/golden.jsonl")
    return image if image.exists() else Path(__file__).resolve().parent.parent / "data" / "golden" / "golden.jsonl"


@task
def check_golden() -> dict[str, Any]:
    """Evaluate the published version on the golden set and compare with the last check (kept in
    ``ZAN_HOME/runs/golden.json``, beside the run reports): a drop fails the task, loudly, and the baseline
    stays the last good one (:func:`lookup.evaluate.check`)."""
    from lookup.evaluate import check
    from lookup.route import Lookup

    golden = golden_set()
    if not golden.is_file():
        raise AirflowFailException(f"no golden set at {golden}: set ZAN_GOLDEN to a golden JSON Lines file")
    lookup = terminal(Lookup.open, home(), chroma_url())
    return terminal(check, lookup, golden, home() / "runs" / "golden.json")


@task
def finish(shard_refs: list[str]) -> dict[str, Any]:
    """The teardown (always runs): releases the lease and removes work files; a failed run is recorded in its report."""
    from runs import stages

    return stages.finish(_state_of(shard_refs[0])).as_dict()


def wire(fetched: Any = None, updated: Any = None) -> None:
    """plan → extract (mapped over shards) → registry → enrich → plan_embed → embed (mapped over shards) →
    index → validate → publish → report; the finish teardown last."""
    # TaskFlow calls take and return XComArgs at parse time, which the tasks' own signatures do not say
    planned: Any = plan(fetched, updated)
    shards: Any = extract.expand(shard_ref=planned)
    merged: Any = registry(shards)
    state: Any = enrich(merged)
    embedded: Any = embed.expand(shard_ref=plan_embed(state))
    chain(
        embedded,
        index(state),
        validate(state),
        publish(state),
        report(state),
        finish(planned).as_teardown(setups=planned),
    )
