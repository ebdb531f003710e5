"""Every version of every part of every act read from git: a version's ``history.parquet``.

The kazakhstan-law repositories hold one commit per version of an act. A run walks the commits of each git
source since the one the last version read (all of them, the first time), reads each act a commit touched as
that commit had it (``meta.yaml``, ``rus.md``/``kaz.md`` and their parts, through ``git cat-file --batch``:
one process for the whole walk), parses it with the same rules as today's text
(:func:`extractors.kazlaw.parse_act`), and keeps a row for every part (an article, a chapter, a пункт's
section: the chunks' own structural paths, :func:`enrich.chunking.unit_paths`) whose text changed:

``doc_id, language, unit, version_date`` (the act's ``version_date`` in that language, else the commit's
date), ``commit``, ``committed`` (its date), ``event`` (``text``, or ``repealed`` for the commit that deleted
the act), ``text_hash``, ``text``.

Past versions are never embedded: the history answers «the text in force on a date» for an act a question
names (:mod:`lookup.history`), where ranking is by the named document and article, not by meaning. The
previous version's rows are carried over whole, so a run's cost follows the commits it has not seen.

Upstream history cannot be changed by us, so no past commit may stop a run: a version whose blob is over the
size limit (``ZAN_MAX_FILE_MB``, checked from git's header before a byte is read), whose metadata is over the
bounds of :mod:`extractors.bounded_yaml`, or whose commit has no real date (year 10 000, before 1970) is left out
of the history and becomes a reject row (stage ``history``, the act's folder ``@`` the commit, the reason); the
rest of the history is read and the run publishes. The rejects are carried to the next version, and a version
they name is not read again (by commit and folder), so no run pays for it twice.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from enrich.chunking import text_hash, unit_paths
from enrich.history_file import HistoryFile
from enrich.registry import IdentityError, doc_id_for
from extractors.bounded import Refused, max_file_bytes, over_limit
from extractors.bounded_yaml import load_mapping
from extractors.kazlaw import MAX_PARTS, META, parse_act
from extractors.model import Document, ExtractError
from runs.gitcmd import TIMEOUT, GitError, check_config, command, environment, git
from runs.gitsource import COMMIT_FORMAT, Commit, parse_commit
from runs.history_merge import GROUP_ROWS, count_rows, link_or_copy, merge_sorted, sorted_runs
from schemas.arrow import HISTORY_SCHEMA as HISTORY_SCHEMA
from schemas.arrow import Reject
from schemas.parquet import iter_parquet, write_parquet_stream

TEXT_FILES = ("rus.md", "kaz.md")


@dataclass(frozen=True)
class _Touched:
    commit: Commit
    folder: str  # the act's folder, relative to the repository
    deleted: bool


def build_history(
    sources: dict[Path, tuple[Path, str | None]],
    previous: Path | None,
    out: Path,
    run_id: str = "",
    known_bad: frozenset[str] = frozenset(),
) -> tuple[int, list[Reject]]:
    """``out``: the previous history's rows and the rows of every commit each git source has that the last
    version did not read (``sources``: root → (its repository, the commit the last version read or None)),
    sorted by act (:data:`SORT_KEY`) in row groups of :data:`GROUP_ROWS` rows, so a lookup reads an act's one or two
    row groups (:class:`enrich.history_file.HistoryFile`). Returns the rows written and the versions left out
    (rejects of run ``run_id``; ``known_bad``: the versions earlier runs left out, not read again).

    The new rows are made act by act (each act's commits in order), so memory holds one act's state, not the
    corpus's; what an act already has is read from the previous history, its rows only. The sort is act by
    act (:func:`merge_sorted`): memory is one act's rows."""
    prior = HistoryFile.open(previous.parent) if previous is not None and previous.exists() else None
    fresh = out.with_name(out.name + ".fresh")
    walk = _Walk(run_id, known_bad)

    def batches() -> Iterator[pa.Table]:
        rows: list[dict] = []  # type: ignore[type-arg]
        for root, (repo, since) in sorted(sources.items()):
            for row in _rows(repo, root, since, prior, walk):
                rows.append(row)
                if len(rows) >= GROUP_ROWS:
                    yield pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)
                    rows = []
        if rows:
            yield pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)

    try:
        added = write_parquet_stream(batches(), fresh, HISTORY_SCHEMA, "history")
        inputs = [p for p, n in ((previous, count_rows(previous)), (fresh, added)) if p is not None and n]
        if not inputs:
            write_parquet_stream([], out, HISTORY_SCHEMA, "history")
            return 0, walk.rejects
        if inputs == [previous]:  # nothing new: the previous file, as it is (a version's files never change)
            link_or_copy(previous, out)  # type: ignore[arg-type]
            return count_rows(out), walk.rejects
        runs = sorted_runs(fresh, out) if added else []
        merge_sorted([p for p in inputs if p != fresh] + runs, out)
        return count_rows(out), walk.rejects
    finally:
        fresh.unlink(missing_ok=True)
        for run in out.parent.glob(f"{out.name}.run-*"):
            run.unlink(missing_ok=True)


@dataclass
class _Walk:
    """The versions a history walk leaves out: those it meets (:attr:`rejects`) and those known before."""

    run_id: str
    known_bad: frozenset[str]
    rejects: list[Reject] = field(default_factory=list)

    def left_out(self, key: str, reason: str, error: str, doc_id: str | None = None) -> None:
        if key not in {r.source_file for r in self.rejects}:
            self.rejects.append(Reject(self.run_id, "history", key, doc_id, reason, error=error))


def version_key(repo: Path, folder: str, sha: str) -> str:
    """How a version of an act is named in a reject: the act's folder, ``@``, the commit."""
    return f"{repo / folder}@{sha}"


def _rows(repo: Path, root: Path, since: str | None, prior: HistoryFile | None, walk: _Walk) -> Iterator[dict]:  # type: ignore[type-arg]
    """The rows of every act the commits after ``since`` touched under ``root``: act by act, each act's
    commits oldest first (a version already recorded, as after a rebuilt upstream's replay, is not recorded
    twice)."""
    within = root.resolve().relative_to(repo) if root.resolve() != repo else None
    span = f"{since}..HEAD" if since else "HEAD"
    args = ["log", "--reverse", "--no-ext-diff", f"--format=%x01{COMMIT_FORMAT}", "--name-status", "--no-renames", span]
    if within is not None:
        args += ["--", str(within)]
    by_folder: dict[str, list[_Touched]] = defaultdict(list)
    for touched in _touched(git(repo, *args)):
        by_folder[touched.folder].append(touched)
    with _Blobs(repo) as blobs:
        for folder in sorted(by_folder):
            state = _ActState(prior)
            for touched in by_folder[folder]:
                key = version_key(repo, folder, touched.commit.sha)
                if key in walk.known_bad:
                    continue
                if touched.commit.date is None:
                    reason = f"commit {touched.commit.sha[:12]} has no real date (before 1970 or after 9999)"
                    walk.left_out(key, f"{reason}: this version is left out of the history", "BadCommitDate")
                    continue
                yield from _act_rows(blobs, touched, state, walk, key)


class _ActState:
    """What one act's history already holds: each part's latest text hash and every version recorded (read
    from the previous history when the act is first met, its rows only)."""

    def __init__(self, prior: HistoryFile | None) -> None:
        self.prior = prior
        self.loaded: set[str] = set()
        self.last: dict[tuple[str, str, str], str] = {}  # (doc, language, unit) → the text hash of its latest row
        self.seen: set[tuple[str, str, str, dt.date, str]] = set()

    def load(self, doc_id: str) -> None:
        if doc_id in self.loaded:
            return
        self.loaded.add(doc_id)
        if self.prior is None:
            return
        for (language, unit), versions in self.prior.rows_of(doc_id).items():
            for row in versions:
                digest = row.text_hash if row.event == "text" else "repealed"
                self.last[(doc_id, language, unit)] = digest or ""
                self.seen.add((doc_id, language, unit, row.version_date, digest or ""))


def _touched(log: str) -> Iterator[_Touched]:
    for entry in log.split("\x01"):
        if not entry.strip():
            continue
        header, _, names = entry.partition("\n")
        commit = parse_commit(header)
        folders: dict[str, bool] = {}
        for line in names.splitlines():
            status, _, name = line.partition("\t")
            path = PurePosixPath(name)
            if path.name not in (META, *TEXT_FILES) and path.parent.name not in ("rus", "kaz"):
                continue
            folder = str(path.parent if path.name in (META, *TEXT_FILES) else path.parent.parent)
            folders[folder] = folders.get(folder, False) or (status == "D" and path.name == META)
        for folder, deleted in folders.items():
            yield _Touched(commit, folder, deleted)


def _act_rows(blobs: _Blobs, touched: _Touched, state: _ActState, walk: _Walk, key: str) -> Iterator[dict]:  # type: ignore[type-arg]
    """The rows one commit makes for one act (each language in turn; a language whose files are over a bound is
    left out, with a reject for the version ``key``)."""
    sha = f"{touched.commit.sha}^" if touched.deleted else touched.commit.sha  # deleted: its parent's text
    last, seen = state.last, state.seen
    for name in TEXT_FILES:
        try:
            read = _version(blobs, sha, touched, name)
        except Refused as exc:
            walk.left_out(key, f"{exc.source_file}: {exc.reason}: this version is left out of the history", "Refused")
            continue
        if read is None:
            continue
        document, doc_id, version, caused = read
        state.load(doc_id)
        if touched.deleted:
            part = (doc_id, document.language, "")
            if last.get(part) != "repealed":
                last[part] = "repealed"
                yield _row(doc_id, document.language, "", None, version, touched, "repealed", None)
            continue
        for unit_path, text, heading in _units(document):
            digest = text_hash(text)
            part = (doc_id, document.language, unit_path)
            if last.get(part) == digest or (*part, version, digest) in seen:
                continue
            last[part] = digest
            seen.add((*part, version, digest))
            yield _row(doc_id, document.language, unit_path, heading, version, touched, "text", text, digest, caused)


def _version(blobs: _Blobs, sha: str, touched: _Touched, name: str) -> tuple[Document, str, dt.date, str | None] | None:
    """One language of an act as commit ``sha`` had it: the document, its doc_id, the version's date (for a
    deletion, the deleting commit's) and the amending act; None when that commit has no such text or it cannot be
    read (its run says why, if it is current); :class:`Refused` when a file is over a bound."""
    folder = touched.folder
    data = blobs.read(sha, f"{folder}/{name}")
    if data is None:
        return None

    refused: list[Refused] = []

    def companion(rel: str) -> bytes | None:
        try:
            return blobs.read(sha, f"{folder}/{rel}")
        except Refused as exc:  # a part over the limit reads as missing to the parser; here it refuses the version
            refused.append(exc)
            raise

    try:
        where = f"{folder}/{name}@{touched.commit.sha[:12]}"
        document = parse_act(data, where, name, PurePosixPath(folder).name, companion)
        doc_id = doc_id_for(document.requisites)
    except Refused:
        raise
    except (ExtractError, IdentityError):
        return None
    if refused:
        raise refused[0]
    committed = touched.commit.date
    assert committed is not None  # a commit without a date is left out before (_rows)
    if touched.deleted:
        return document, doc_id, committed, None
    version, caused = _version_meta(blobs, sha, folder, document.language)
    return document, doc_id, version or committed, caused


def _row(
    doc_id: str,
    language: str,
    unit: str,
    heading: str | None,
    version: dt.date,
    touched: _Touched,
    event: str,
    text: str | None,
    digest: str | None = None,
    caused: str | None = None,
) -> dict:  # type: ignore[type-arg]
    return {
        "doc_id": doc_id,
        "language": language,
        "unit": unit,
        "heading": heading,
        "version_date": version,
        "commit": touched.commit.sha,
        "committed": touched.commit.date,
        "event": event,
        "text_hash": digest,
        "text": text,
        "caused_by": caused,
    }


def _units(document: Document) -> Iterator[tuple[str, str, str | None]]:
    """(structural path, text, heading) of each part, as the chunks name them."""
    for unit, path in zip(document.units, unit_paths(document), strict=True):
        text = "\n".join(p for p in unit.paragraphs if p)
        if text.strip():
            yield path, text, unit.heading


def _version_meta(blobs: _Blobs, sha: str, folder: str, language: str) -> tuple[dt.date | None, str | None]:
    """The version's date in ``language`` and the amending act that made it, as that commit's meta.yaml says
    (read within the bounds every meta.yaml is read within)."""
    raw = blobs.read(sha, f"{folder}/{META}")
    if raw is None:
        return None, None
    try:
        meta = load_mapping(raw, f"{folder}/{META}@{sha[:12]}")
    except Refused:
        raise
    except ExtractError:
        return None, None
    stated = meta.get("version_date")
    if isinstance(stated, dict):
        stated = stated.get(language)
    caused = meta.get("caused_by")
    requisite = caused.get("requisite") if isinstance(caused, dict) else None
    return (stated if isinstance(stated, dt.date) else None), (requisite[:500] if isinstance(requisite, str) else None)


def disagreements(history: Path, lineage: Path, limit: int = 50) -> list[str]:
    """Where the notes' lineage and the commits' disagree: a version whose amending act (``caused_by``) no
    note of the act names, and a note whose act made no version, for the acts read from git (from the first
    version the history holds on)."""
    from extractors.requisites import parse_requisites

    if not history.exists() or not lineage.exists():
        return []
    versions: dict[str, set[tuple[dt.date, str]]] = {}
    first: dict[str, dt.date] = {}
    columns = ["doc_id", "version_date", "caused_by"]
    acts: dict[str, tuple[dt.date, str] | None] = {}  # each amending act's sentence parsed once: every part of
    for table in iter_parquet(history, 50_000, columns):  # a version repeats it
        for doc, version, caused in zip(*(table.column(c).to_pylist() for c in columns), strict=True):
            first[doc] = min(first.get(doc, version), version)
            if caused and caused not in acts:
                act = parse_requisites(caused)
                acts[caused] = (act.date_approved, act.order_number) if act.date_approved and act.order_number else None
            made = acts.get(caused) if caused else None
            if made is not None:
                versions.setdefault(doc, set()).add(made)
    noted: dict[str, set[tuple[dt.date, str]]] = {}
    for table in iter_parquet(lineage, 50_000, ["doc_id", "by_date", "by_number"]):
        for doc, date, number in zip(
            *(table.column(c).to_pylist() for c in ("doc_id", "by_date", "by_number")), strict=True
        ):
            if doc in first and date and number and date >= first[doc] - dt.timedelta(days=366):
                noted.setdefault(doc, set()).add((date, number))
    out = []
    for doc in sorted(set(versions) | set(noted)):
        for date, number in sorted(versions.get(doc, set()) - noted.get(doc, set())):
            out.append(f"{doc}: the version made by № {number} of {date:%d.%m.%Y} has no note naming that act")
        for date, number in sorted(noted.get(doc, set()) - versions.get(doc, set())):
            if date >= first[doc]:
                out.append(
                    f"{doc}: a note names № {number} of {date:%d.%m.%Y}; no version of the history was made by it"
                )
    return out[:limit]


class _Blobs:
    """Files as a commit had them, through one ``git cat-file --batch-command`` process (run as
    :mod:`runs.gitcmd` runs git): each blob's size is asked first and its content read only when it is within
    the size limit, so an oversized past blob costs one header line."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.process: subprocess.Popen[bytes] | None = None
        self.limit = max_file_bytes()

    def __enter__(self) -> _Blobs:
        check_config(self.repo)
        self.process = subprocess.Popen(
            command(self.repo, "cat-file", "--batch-command"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment(),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def read(self, sha: str, path: str) -> bytes | None:
        """The blob at ``path`` in commit ``sha`` (None: not there); :class:`Refused` when it is over the limit."""
        if ".." in PurePosixPath(path).parts or "\n" in path or len(PurePosixPath(path).parts) > MAX_PARTS:
            return None
        size = self._ask(f"info {sha}:{path}")
        if size is None:
            return None
        if size > self.limit:
            raise Refused(f"{path}@{sha[:12]}", over_limit(size, self.limit))
        if self._ask(f"contents {sha}:{path}") != size:
            raise GitError(f"git cat-file in {self.repo}: {path} at {sha[:12]} changed size between two reads")
        assert self.process is not None and self.process.stdout is not None
        data = self.process.stdout.read(size)
        self.process.stdout.read(1)  # the newline after the content
        return data

    def _ask(self, line: str) -> int | None:
        """Send one command; the size its header states (None: "missing", or not a blob)."""
        assert self.process is not None and self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError as exc:
            raise GitError(f"git cat-file in {self.repo} ended") from exc
        header = self.process.stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or header[1] != "blob" or not header[2].isdigit():
            if not header:
                raise GitError(f"git cat-file in {self.repo} ended")
            return None  # "<name> missing": not in that commit
        return int(header[2])


def history_rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows if path.exists() else 0
