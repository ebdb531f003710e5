"""A kazakhstan-law scope made from the real acts: a git repository of N acts and C commits, for ``bench_kazlaw.py``.

Every act is a copy of one of the real acts in ``../shared/corpus/kazlaw`` (their ``meta.yaml``, ``rus.md`` and
``kaz.md``: the real sizes, пункты, notes, annex forms and both languages). Copy ``c`` of an act is another act:
its ``act_code`` and folder become ``8<c:06d><t:02d>`` (``t`` numbers the real act), its order number gains ``c``,
its Ministry of Justice registration number becomes ``4<c:05d><t:02d>`` (so its derived adilet id is its own),
its titles and every body paragraph end with ``(копия c)`` / ``(көшірме c)``: distinct acts with distinct texts,
whose vectors :mod:`e5_service` still knows (it strips the marks).

History, as the upstream is built (one commit per change, dated one day apart):

- the first half of the commits add the acts, in equal batches;
- each later commit amends ``per_commit`` acts (one paragraph in each language gains ``(уточнено k)``, and
  ``version_date`` moves to the commit's date) and the *hot* act (copy 0 of the first registered order: it has
  an adilet id to ask for) besides, so it
  ends with one version per commit; every tenth such commit deletes an act and adds its successor, whose
  ``meta.yaml`` says ``replaces:``.

    python benchmarks/kazlaw_scope.py OUT --acts 2000 --commits 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("ZAN_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))
MARK = {"rus": "(копия {c:05d})", "kaz": "(көшірме {c:05d})"}
EDIT = " (уточнено {k:03d})"  # a mark e5_service strips: the amended paragraph's vector is the real one's
_PLAIN = re.compile(r"^(?![#>|<`\s-])(?!\d+\.\s*$).{20,}$")  # a body paragraph: not a heading, note, table, anchor
_NUMBER = re.compile(r"(№\s*)(\d+)")
_REGISTRATION = re.compile(r"(Зарегистрирован\w*\s+в\s+Министерстве\s+юстиции.*?№\s*)(\d+)", re.S)
START = dt.datetime(2024, 1, 1, 9, 0)


@dataclass(frozen=True)
class Template:
    folder: Path  # the real act's folder
    relative: Path  # its folder inside its scope (``07-ministerial/<issuer>/<year>/<MMDD>-<slug>-<code>``)
    meta: dict[str, Any]
    texts: dict[str, str]  # language → markdown


def templates(corpus: Path = CORPUS) -> list[Template]:
    """The real acts of the current layout (``meta.yaml`` beside ``rus.md``/``kaz.md``), in a fixed order."""
    found = []
    for meta in sorted((corpus / "kazlaw").glob("*/**/meta.yaml")):
        folder = meta.parent
        texts = {lang: (folder / f"{lang}.md").read_text("utf-8") for lang in ("rus", "kaz")}
        scope_root = folder.relative_to(corpus / "kazlaw").parts[0]
        found.append(Template(folder, folder.relative_to(corpus / "kazlaw" / scope_root),
                              yaml.safe_load(meta.read_text("utf-8")), texts))  # fmt: skip
    if not found:
        raise FileNotFoundError(f"no kazakhstan-law acts under {corpus / 'kazlaw'} (set ZAN_SHARED_CORPUS)")
    return found


def act_code(c: int, t: int) -> str:
    return f"8{c:06d}{t:02d}"


def copy_of(template: Template, c: int, t: int) -> tuple[Path, dict[str, str]]:
    """(folder inside the scope, {file name: text}) of copy ``c`` of one real act."""
    code, old = act_code(c, t), str(template.meta["act_code"])
    meta = dict(template.meta)
    meta["act_code"] = code
    sentence = _NUMBER.sub(lambda m: f"{m[1]}{m[2]}{c:05d}", str(meta["requisite"]), count=1)
    meta["requisite"] = _REGISTRATION.sub(lambda m: f"{m[1]}4{c:05d}{t:02d}", sentence, count=1)
    meta["title"] = {lang: f"{title} {MARK[lang].format(c=c)}" for lang, title in dict(meta["title"]).items()}
    meta["source"] = {lang: str(url).replace(f"/doc/{old}/", f"/doc/{code}/") for lang, url in
                      dict(meta.get("source") or {}).items()}  # fmt: skip
    files = {"meta.yaml": yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)}
    for lang, text in template.texts.items():
        mark = MARK[lang].format(c=c)
        files[f"{lang}.md"] = "\n".join(f"{line} {mark}" if _PLAIN.match(line) else line
                                        for line in text.split("\n"))  # fmt: skip
    folder = template.relative.parent / re.sub(r"-\d+$", f"-{code}", template.relative.name)
    return folder, files


def amend(folder: Path, k: int, when: dt.date, rng: random.Random) -> None:
    """One paragraph of each language gains ``(уточнено k)``; ``version_date`` becomes ``when``."""
    for lang in ("rus", "kaz"):
        path = folder / f"{lang}.md"
        lines = path.read_text("utf-8").split("\n")
        plain = [n for n, line in enumerate(lines) if _PLAIN.match(line)]
        if plain:
            n = rng.choice(plain)
            lines[n] += EDIT.format(k=k % 1000)
            path.write_text("\n".join(lines), "utf-8")
    meta = yaml.safe_load((folder / "meta.yaml").read_text("utf-8"))
    meta["version_date"] = {"rus": when, "kaz": when}
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True, sort_keys=False), "utf-8")


def git(repo: Path, *args: str, when: dt.datetime | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}  # fmt: skip
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@dataclass
class Scope:
    repo: Path
    folders: list[Path]  # every act's folder in the working tree, in order of addition
    hot: Path  # the act amended in every later commit
    commits: int
    rng: random.Random

    def commit(self, message: str) -> str:
        self.commits += 1
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message, when=START + dt.timedelta(days=self.commits))
        return git(self.repo, "rev-parse", "HEAD")

    def amend_some(self, count: int, hot: bool = True) -> list[Path]:
        """Amend ``count`` acts (and the hot act) in the working tree; the caller commits."""
        when = (START + dt.timedelta(days=self.commits + 1)).date()
        chosen = self.rng.sample([f for f in self.folders if f != self.hot], min(count, len(self.folders) - 1))
        for folder in [*chosen, *([self.hot] if hot else [])]:
            amend(folder, self.commits + 1, when, self.rng)
        return chosen


def build(out: Path, acts: int, commits: int, per_commit: int = 10, corpus: Path = CORPUS, seed: int = 44) -> Scope:
    """A git repository at ``out`` holding ``acts`` acts after ``commits`` commits (see the module's text)."""
    if shutil.which("git") is None:
        raise FileNotFoundError("git is not installed")
    real = templates(corpus)
    out.mkdir(parents=True)
    git(out, "init", "-q", "-b", "main")
    adding = max(1, commits // 2)
    plan = [(c, t) for c in range(-(-acts // len(real))) for t in range(len(real))][:acts]
    hot = next((t for t, r in enumerate(real) if _REGISTRATION.search(str(r.meta["requisite"]))), 0)
    scope = Scope(out, [], out / copy_of(real[hot], 0, hot)[0], 0, random.Random(seed))
    for batch in range(adding):
        for c, t in plan[batch * len(plan) // adding : (batch + 1) * len(plan) // adding]:
            scope.folders.append(write_act(out, real[t], c, t))
        scope.commit(f"add acts, batch {batch + 1} of {adding}")
    successors = 0
    while scope.commits < commits:
        scope.amend_some(per_commit)
        if (scope.commits - adding) % 10 == 9:  # a repeal and its successor
            gone = scope.rng.choice([f for f in scope.folders if f != scope.hot])
            meta = yaml.safe_load((gone / "meta.yaml").read_text("utf-8"))
            shutil.rmtree(gone)
            scope.folders.remove(gone)
            successors += 1
            c, t = 900_000 + successors, plan[0][1]
            new = write_act(out, real[t], c, t)
            extra = yaml.safe_load((new / "meta.yaml").read_text("utf-8"))
            extra["replaces"] = [{"code": str(meta["act_code"]), "requisite": meta["requisite"]}]
            (new / "meta.yaml").write_text(yaml.safe_dump(extra, allow_unicode=True, sort_keys=False), "utf-8")
            scope.folders.append(new)
        scope.commit(f"amend {per_commit} acts")
    return scope


def write_act(out: Path, template: Template, c: int, t: int) -> Path:
    folder, files = copy_of(template, c, t)
    target = out / folder
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text, "utf-8")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--acts", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    scope = build(args.out, args.acts, args.commits)
    print(f"{len(scope.folders)} acts, {scope.commits} commits in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
