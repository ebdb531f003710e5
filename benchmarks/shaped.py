"""A benchmark corpus made from the real documents: the real size mix, the real editorial notes, both languages.

Every copy is a copy of every real act zan reads from ``../shared/corpus`` and the bundled sample: the
adilet pages (the Labour Code of 684 chunks in two languages beside laws of a few dozen and orders of a few
points) and the kz-laws exports (Kazakh and Russian). So document sizes, paragraph lengths and the rate of
«Сноска» notes are the corpus's own, not drawn from a model of it. Copy ``c`` of an act is another act:

- its adilet id becomes ``<letter><yy><c:04><t:04>`` (``t`` numbers the real act; both editions of one act
  keep one id), its number gains ``c`` (``№ 414-V`` → ``№ 414007-V``), its title the mark ``(копия c)``,
  so the registry sees distinct acts, never one act read twice;
- every body paragraph that is not a heading or a note ends with ``(копия c)`` / ``(көшірме c)``, so its
  chunks are distinct texts (distinct text hashes, as a real corpus has), while structure, notes and lengths
  stay the real ones. Copy 0 is the real corpus unchanged.

``giant=N`` adds one code made of the real Labour Code's body N times over, articles renumbered (a code of
N × 374 chunks: the size of the Tax Code and beyond), for fetch timings inside a very large document.

The zan.gov.kz JSON records and the standards of the sample (a tenth of the real corpus's chunks, all short)
are left out: their identity is not an adilet id to rewrite. Vectors: :mod:`e5_service`.

    python benchmarks/shaped.py OUT --copies 12            # about 14 000 chunks
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__import__("os").environ.get("ZAN_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))
SAMPLE = ROOT / "data" / "sample"

MARK = {"rus": "(копия {c:03d})", "kaz": "(көшірме {c:03d})"}  # one width: chunks split alike in every copy
MARK_RE = re.compile(r" \((?:копия|көшірме|уточнено) \d+\)")  # what e5_service strips to find the real text's vector
_HEADING = re.compile(
    r"^\s*(?:Статья|Глава|Раздел|Параграф|Приложение|ГЛАВА|РАЗДЕЛ|\d+(?:-\d+)?-(?:бап|тарау|бөлім|параграф))\b"
)
_P = re.compile(r"(<p(?:\s+id=\"[^\"]*\")?>)(.*?)(</p>)", re.S)
# an act's number as its requisites write it: «№ 414-V», «N 1428», «№ ҚР ДСМ-26» (the digits gain the copy's)
_NUMBER = re.compile(r"((?:№|N)\s*(?:[^\W\d_]+[\s-]*)*?)(\d+)")
_RENUMBERED = re.compile(r"((?:Статья|Глава|Раздел|Параграф) )(\d{4,})")


def real_text(text: str) -> str:
    """The real corpus's text a copied chunk was made from: without its copy mark, and (in the giant code) its
    article numbers shifted back."""
    return _RENUMBERED.sub(lambda m: f"{m[1]}{int(m[2]) % 1000}", MARK_RE.sub("", text))


@dataclass(frozen=True)
class Template:
    path: Path
    kind: str  # "adilet" | "kzlaws"
    language: str
    act: str  # the adilet id (adilet) or the export's number (kz-laws)


def templates(corpus: Path = CORPUS) -> list[Template]:
    """The real acts this corpus copies, in a fixed order."""
    found = []
    for base in (corpus / "adilet", SAMPLE / "adilet"):
        for page in sorted(base.glob("*/*.html")):
            found.append(Template(page, "adilet", page.parent.name, page.stem))
    for export in sorted((corpus / "kzlaws").glob("*/*.md")):
        found.append(Template(export, "kzlaws", export.parent.name, export.stem))
    if not any(t.path.is_relative_to(corpus) for t in found):
        raise FileNotFoundError(f"no real documents under {corpus} (set ZAN_SHARED_CORPUS)")
    return found


def require_corpus(corpus: Path = CORPUS) -> None:
    """Exit 0 with a ``skipped:`` line when the real documents are absent (a clean clone without ../shared), as the
    tests skip; the summary of ``run_all.py`` lists the reason."""
    try:
        templates(corpus)
    except FileNotFoundError as exc:
        print(f"skipped: {exc}", flush=True)
        sys.exit(0)


def write(out: Path, copies: int, giant: int = 0, corpus: Path = CORPUS) -> dict[str, int]:
    """Copies 0..``copies``-1 of every real act under ``out`` (``adilet/<lang>/…``, ``kzlaws/<lang>/…``);
    returns counts of files and bytes."""
    acts = sorted({(t.kind, t.act) for t in templates(corpus)})
    index = {act: n for n, act in enumerate(acts)}
    files = size = 0
    for c in range(copies):
        for template in templates(corpus):
            name, text = copy_of(template, c, index[(template.kind, template.act)])
            target = out / template.kind / template.language / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if template.kind == "adilet" and template.path.is_relative_to(SAMPLE) and target.exists():
                continue  # the sample's own Labour Code page: the real page already stands for it
            target.write_text(text, "utf-8")
            files, size = files + 1, size + len(text.encode())
    if giant:
        text = giant_code(corpus / "adilet" / "rus" / "K1500000414.html", giant)
        target = out / "adilet" / "rus" / "K9999999999.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
        files, size = files + 1, size + len(text.encode())
    return {"files": files, "bytes": size}


def copy_of(template: Template, c: int, t: int) -> tuple[str, str]:
    """(file name, text) of copy ``c`` of one real act (``t``: the act's number among them)."""
    text = template.path.read_text("utf-8")
    if c == 0:
        return template.path.name, text
    mark = MARK.get(template.language, MARK["rus"]).format(c=c)
    if template.kind == "kzlaws":
        return f"{template.act}{c:04d}.md", _marked_markdown(text, mark)
    act = template.act
    new = f"{act[:3]}{c:04d}{t:04d}"
    head, body, tail = _split(text)
    head = head.replace(act, new).replace(act.lower(), new.lower())
    head = re.sub(r"(<h1>)(.*?)(</h1>)", lambda m: f"{m[1]}{m[2]} {mark}{m[3]}", head, count=1, flags=re.S)
    head = re.sub(r"(<div class=\"container_alpha slogan\">.*?</div>)", lambda m: _renumbered(m[1], c), head,
                  count=1, flags=re.S)  # fmt: skip
    return f"{new}.html", head + _marked_paragraphs(body, mark) + tail.replace(act, new)


def _renumbered(slogan: str, c: int) -> str:
    """An adilet page's head block with the act's number gaining ``c``: the number of its requisites line
    (the ``<p>`` under the title, «Постановление … от 3 декабря 2019 года № 900»), else the block's first.
    A title may name another act's number («О внесении изменений в постановление … № 1011»): changing that
    one left 18 copies of one act with the same requisites, which the registry rightly takes for one act."""

    def bump(m: re.Match[str]) -> str:
        return f"{m[1]}{m[2]}{c:03d}"

    line = re.search(r"<p>.*?</p>", slogan, re.S)
    if line and _NUMBER.search(line[0]):
        return slogan[: line.start()] + _NUMBER.sub(bump, line[0], count=1) + slogan[line.end() :]
    return _NUMBER.sub(bump, slogan, count=1)


def giant_code(page: Path, times: int) -> str:
    """The Labour Code page with its body ``times`` over, article/chapter/section numbers shifted by 1000 each
    time (from 1000: every number has one width, so long articles split alike in every repetition) so no chunk
    id repeats, under the id K9999999999 and the number 999999-V."""
    head, body, tail = _split(page.read_text("utf-8"))
    head = head.replace("K1500000414", "K9999999999").replace("k1500000414", "k9999999999")
    head = re.sub(r"(<h1>)(.*?)(</h1>)", r"\1Свод правил труда (большой кодекс)\3", head, count=1, flags=re.S)
    head = head.replace("414-V", "999999-V")
    parts = []
    for r in range(times):
        parts.append(re.sub(r"(>\s*(?:Статья|Глава|Раздел|Параграф) )(\d+)",
                            lambda m, r=r: f"{m[1]}{int(m[2]) + 1000 * (r + 1)}", body))  # fmt: skip
    return head + "".join(parts) + tail


def _split(page: str) -> tuple[str, str, str]:
    """(head, body, tail) of an adilet page: the body is the document's text block (an adilet page's
    ``container_gamma text`` … ``container_omega aftertext``; a saved article page's ``<article>`` …
    ``</article>``; else from the first paragraph to ``</body>``)."""
    for opening, closing in (('<div class="container_gamma text', '<div class="container_omega aftertext"'),
                             ("<article>", "</article>")):  # fmt: skip
        start = page.find(opening)
        if start >= 0:
            end = page.find(closing, start)
            return page[:start], page[start : end if end >= 0 else _end(page)], page[end if end >= 0 else _end(page) :]
    start = page.find("<p")
    return (page, "", "") if start < 0 else (page[:start], page[start : _end(page)], page[_end(page) :])


def _end(page: str) -> int:
    end = page.rfind("</body>")
    return end if end >= 0 else len(page)


def _marked_paragraphs(body: str, mark: str) -> str:
    def one(m: re.Match[str]) -> str:
        inner = m[2]
        plain = re.sub(r"<[^>]+>", "", inner)
        if len(plain.strip()) < 40 or "Сноска" in plain or "Ескерту" in plain or _HEADING.match(plain):
            return m[0]
        return f"{m[1]}{inner} {mark}{m[3]}"

    return _P.sub(one, body)


def _marked_markdown(text: str, mark: str) -> str:
    out = []
    for line in text.split("\n"):
        if line.startswith("# "):  # the title: another act's; other headings (the contents) as they are
            out.append(f"{line} {mark}")
        elif line.startswith("#"):
            out.append(line)
        elif len(line.strip()) >= 40 and not _HEADING.match(line) and not line.startswith(("Сноска", "Ескерту")):
            out.append(f"{line} {mark}")
        else:
            out.append(line)
    return "\n".join(out)


def sizes(corpus: Path = CORPUS) -> Iterator[tuple[str, int]]:
    """(template, bytes): what one copy holds."""
    for template in templates(corpus):
        yield str(template.path), template.path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--giant", type=int, default=0, help="add one code of the Labour Code's body N times over")
    args = parser.parse_args()
    print(write(args.out, args.copies, args.giant))


if __name__ == "__main__":
    sys.exit(main())
