"""Acts in the kazakhstan-law layout (git repositories of the law, one folder an act) → :class:`Document`.

The public ``kazakhstan-law`` organisation publishes Kazakhstan's acts as git repositories, one per scope, one
commit per version of an act. Two layouts are read:

- **current**: ``<scope>/<issuer-code>-<issuer>/<YYYY>/<MMDD>-<slug>-<act_code>/`` holding ``meta.yaml`` and
  ``rus.md`` / ``kaz.md``. ``meta.yaml`` states the act: ``act_code`` (the zan.gov.kz id), ``requisite`` (the
  whole requisites sentence: issuer, date, number, the Ministry of Justice registration, «Утратил силу …»),
  ``title`` per language, ``form`` and ``type_codes``, ``approved_on``, ``version_date`` and ``source`` per
  language, and, when the version was made by an amending act, ``caused_by``; ``replaces`` names the acts it
  replaced.
- **older**: ``<issuer>/<YYYYMMDD>-<slug>-<code>/rus.md`` with the same facts in a YAML front matter at the top
  of ``rus.md`` (``registry_number``, ``approval_date``); ``kaz.md`` carries only its ``source``.

A large act is split: its ``rus.md`` ends in «## Части документа» with a table linking ``rus/<part>.md``; the
parts are read in the table's order, each confined to the act's folder. A part the table names but the folder
lacks makes the text incomplete (:attr:`Document.incomplete`): its identity is whole, so the act is published
with the text that is there and the run lists the file among its rejects — unless a whole version of the act
was published before, which then stays (:mod:`runs.build`). Refusing the act outright made a lookup by its
number answer «not found», the worst answer there is.

Identity: the adilet id when the requisites allow it (an order registered with the Ministry of Justice is
``V<yy><registration number, 8 digits>``: «Зарегистрирован … 24 февраля 2015 года № 10325» → V1500010325),
so the act read from adilet pages, zan.gov.kz records or here is one registry row; else ``zan-<act_code>``.
Requisites come from the requisites sentence (:func:`extractors.requisites.parse_requisites`), the type from
``form``, titles per language from the meta. The body is the markdown act's (headings, notes in blockquotes,
numbered пункты), with the ``<a id="p12">`` citation anchors taken out of the text.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from extractors.bounded import Refused, read_source
from extractors.bounded_yaml import MAX_BYTES as MAX_META_BYTES
from extractors.bounded_yaml import load_mapping
from extractors.markdown import _lines
from extractors.model import Document, ExtractError, Requisites
from extractors.requisites import parse_requisites
from extractors.structure import build, count_heading_like
from schemas.identifiers import normalize_space
from schemas.kinds import DocType
from schemas.reference import parse_date
from schemas.statuses import INCOMPLETE_TEXT, says_repealed

META = "meta.yaml"
MAX_PARTS = 500
LANGUAGES = ("rus", "kaz")
_FORMS: dict[str, DocType] = {  # zan.gov.kz's act forms
    "ПРИК": "order",
    "ПОСТ": "resolution",
    "РЕШ": "decision",
    "РАСП": "instruction",
    "УКАЗ": "decree",
    "ЗАК": "law",
    "КЗАК": "law",
    "КОД": "code",
    "КОНС": "constitution",
    "НПОС": "ruling",
}
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)
_ANCHOR = re.compile(r"<a\s+id=\"[A-Za-z0-9_-]{1,40}\"\s*>\s*</a>")
_PARTS_HEADING = re.compile(r"^##\s+Части документа\s*$", re.M)
_PART_LINK = re.compile(r"\]\(([^()\s]{1,300})\)")
_SOURCE_CODE = re.compile(r"zan\.gov\.kz/client/#!/doc/(\d{1,9})/(rus|kaz)")
_REGISTERED = re.compile(r"Зарегистрирован\w*\s+в\s+Министерстве\s+юстиции", re.I)
_FOLDER_CODE = re.compile(r"-(\d{1,9})$")
_LAPSED = re.compile(r"Утратил\w*\s+силу|Күші\s+жойыл\w*|күшін\s+жой", re.I)
_LAPSE_CLAUSE = re.compile(r"(?:Утратил\w*\s+силу|Күші\s+жойыл\w*)[^\n]{0,400}", re.I)


def is_kazlaw_file(path: Path) -> bool:
    """A ``rus.md``/``kaz.md`` with ``meta.yaml`` beside it, or a markdown file opening with the older front
    matter (an ``act_code`` or a zan.gov.kz ``source``)."""
    return path.name in ("rus.md", "kaz.md") and (path.parent / META).is_file()


def companions(path: Path) -> list[Path]:
    """The other files a kazakhstan-law act's text is read with (its ``meta.yaml``, the ``rus.md`` whose front
    matter an older ``kaz.md`` borrows, its parts): a change in any of them means the text must be read again."""
    if path.suffix.lower() != ".md" or path.name not in ("rus.md", "kaz.md"):
        return []
    folder = path.parent
    found = [folder / META, folder / "rus.md"] if path.name == "kaz.md" else [folder / META]
    parts = folder / path.stem
    if parts.is_dir() and not parts.is_symlink():
        found += sorted(parts.glob("*.md"))[:MAX_PARTS]
    return [f for f in found if f.is_file() or f.is_symlink()]  # a link is hashed as its refusal, never followed out


def opens_with_front_matter(head: str) -> bool:
    m = _FRONT.match(head)
    return m is not None and ("act_code:" in m.group(1) or "zan.gov.kz/client" in m.group(1))


# A file of the act's folder by its name there: None when it is not there, :class:`Refused` (with the reason) when
# it is there but is not read (a link out of the folder, not a regular file, over the size limit).
Reader = Callable[[str], bytes | None]


def folder_reader(folder: Path) -> Reader:
    """The act's folder on disk, each file read through :func:`extractors.bounded.read_source` confined to it."""

    def read(name: str) -> bytes | None:
        path = folder / name
        if not path.exists() and not path.is_symlink():
            return None
        try:
            return read_source(path, folder)
        except FileNotFoundError:
            return None

    return read


def parse_kazlaw(data: bytes, source_file: str) -> Document:
    """Parse one language's text of an act in the kazakhstan-law layout (its folder on disk)."""
    path = Path(source_file)
    return parse_act(data, source_file, path.name, path.parent.name, folder_reader(path.parent))


def parse_act(data: bytes, source_file: str, name: str, folder_name: str, read: Reader) -> Document:
    """Parse one language's text of an act whose folder's other files ``read`` gives (on disk, or as a past
    commit had them: :mod:`lookup.run_history`)."""
    path = Path(folder_name) / name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExtractError(source_file, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    meta, body = _meta_and_body(name, text, source_file, read)
    language = _language(path, meta)
    if read(META) is not None:
        other = "kaz.md" if language == "rus" else "rus.md"
        if read(other) is None:
            raise ExtractError(source_file, f"the act's folder holds {name} only: {other} is missing")
    missing: list[str] = []
    if _PARTS_HEADING.search(body):
        body, missing = _with_parts(body, source_file, read)
    body = _ANCHOR.sub("", body)
    requisites = _requisites(meta, language, path, source_file)
    lines = body.splitlines()
    start = next((n + 1 for n, line in enumerate(lines) if line.startswith("# ")), 0)
    if not requisites.doc_title and start:
        requisites.doc_title = normalize_space(lines[start - 1][2:])
    if not requisites.doc_title:
        raise ExtractError(source_file, "no title: neither the meta nor a '# ' heading names the act")
    units, tally = build(_lines([_plain(line) for line in lines[start:]]))
    if not units:
        raise ExtractError(source_file, "the act's text is empty")
    tally.in_source = count_heading_like(line.lstrip("#") for line in lines)
    document = Document(requisites=requisites, units=units, source_file=source_file, language=language)
    document.headings = tally
    if missing:  # its identity is whole: published with the text that is there, unless a whole one was before
        named = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        document.incomplete = f"part {named} is named in «Части документа» but missing: {INCOMPLETE_TEXT}"
        document.notices.append(document.incomplete)  # the registry keeps it; a lookup's hint says so
    lapse = _LAPSE_CLAUSE.search(_text(meta.get("requisite"), language) or "")
    if lapse:  # the requisites say what repealed it: an editorial note, as adilet prints one (enrich.lineage)
        units[0].notes.insert(0, f"Сноска. {_numeric_dates(lapse.group(0)).strip(' .')}.")
    opening = [n for u in units[:2] for n in u.notes]
    if requisites.status != "repealed" and any(says_repealed(n) for n in opening):
        requisites.status = "repealed"
    caused = meta.get("caused_by")
    if isinstance(caused, dict) and isinstance(caused.get("requisite"), str):
        document.notices.append(f"this version was made by: {normalize_space(caused['requisite'])[:400]}")
    return document


_QUOTE = re.compile(r"^\s*>\s?")
_EMPHASIS = re.compile(r"^\*{1,2}(.*?)\*{1,2}\s*$")


def _plain(line: str) -> str:
    """A markdown line as the act's own text: blockquotes (how notes and approval stamps are rendered) and
    emphasis marks off, escaped list markers («9\\.») read as written, so «> *Сноска. …*» is the note it is."""
    text = _QUOTE.sub("", line)
    emphasised = _EMPHASIS.match(text.strip())
    if emphasised and not text.lstrip().startswith("#"):
        text = emphasised.group(1)
    return text.replace("\\.", ".")


def _meta_and_body(name: str, text: str, source_file: str, read: Reader) -> tuple[dict[str, Any], str]:
    """The act's facts (``meta.yaml`` beside the file, or the file's own front matter; for an older layout's
    ``kaz.md``, the ``rus.md`` beside it adds what its own front matter lacks) and the text after them."""
    own = _FRONT.match(text)
    body = text[own.end() :] if own else text
    meta: dict[str, Any] = {}
    beside = read(META)
    if beside is not None:
        meta = load_mapping(beside, f"{source_file} ({META})")
    elif own:
        meta = load_mapping(own.group(1).encode("utf-8"), source_file)
        sibling = read("rus.md") if name == "kaz.md" and "act_code" not in meta else None
        if sibling is not None:
            found = _FRONT.match(sibling[:MAX_META_BYTES].decode("utf-8", errors="replace"))
            if found:
                meta = {**load_mapping(found.group(1).encode("utf-8"), f"{source_file} (rus.md)"), **meta}
    else:
        raise ExtractError(source_file, f"no {META} beside it and no front matter: not a kazakhstan-law act")
    return meta, body


def _language(path: Path, meta: dict[str, Any]) -> str:
    stem = path.stem.removesuffix("_head")
    for language in LANGUAGES:
        if stem == language or stem.endswith("_" + language) or path.parent.name == language:
            return language
    stated = meta.get("language")
    return stated if stated in LANGUAGES else "rus"


def _text(value: Any, language: str) -> str | None:
    """A meta value given once or per language."""
    if isinstance(value, dict):
        value = value.get(language)
    return normalize_space(str(value)) if isinstance(value, str | int) and str(value).strip() else None


def _requisites(meta: dict[str, Any], language: str, path: Path, source_file: str) -> Requisites:
    sentence = _text(meta.get("requisite"), language)
    requisites = parse_requisites(sentence) if sentence else Requisites(jurisdiction="KZ")
    if sentence is None and "requisite" in meta:
        raise ExtractError(source_file, "the requisite is not a sentence")
    if sentence and requisites.date_approved is None and not (requisites.order_number or requisites.law_zrk):
        raise ExtractError(source_file, f"the requisite states no date and no number: {sentence[:200]!r}")
    form = meta.get("form")
    if isinstance(form, str) and form.strip().upper() in _FORMS:
        requisites.doc_type = _FORMS[form.strip().upper()]
    requisites.doc_title = _text(meta.get("title"), language)
    requisites.language = language
    code = _act_code(meta, path)
    if code is None:
        raise ExtractError(source_file, "no act_code: the meta, the source URL and the folder name state none")
    requisites.portal_id = code
    if requisites.adilet_id is None:
        requisites.adilet_id = derived_adilet_id(sentence or "", requisites)
    source = _text(meta.get("source"), language)
    requisites.source_url = source
    if requisites.status is None:  # «… № 10492. Утратил силу приказом …» after the registration clause too
        requisites.status = "repealed" if sentence and _LAPSED.search(sentence) else "in_force"
    requisites.replaces = _replaced(meta.get("replaces"))
    if requisites.date_approved is None:
        approved = meta.get("approved_on") or meta.get("approval_date")
        if isinstance(approved, dt.date):
            requisites.date_approved = approved
    return requisites


def _replaced(value: Any) -> list[str]:
    """The doc_ids of the acts a ``replaces:`` list names (each by its requisites sentence, else its code)."""
    out = []
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, dict):
            continue
        sentence = _text(entry.get("requisite"), "rus")
        found = derived_adilet_id(sentence, parse_requisites(sentence)) if sentence else None
        code = entry.get("code")
        if found:
            out.append(found.lower())
        elif isinstance(code, str | int) and str(code).strip().isdigit():
            out.append(f"zan-{str(code).strip()}")
    return out[:50]


def _act_code(meta: dict[str, Any], path: Path) -> str | None:
    code = meta.get("act_code")
    if isinstance(code, str | int) and str(code).strip().isdigit():
        return str(code).strip()
    for value in (meta.get("source"),):
        for text in value.values() if isinstance(value, dict) else [value]:
            m = _SOURCE_CODE.search(str(text or ""))
            if m:
                return m.group(1)
    m = _FOLDER_CODE.search(path.parent.name if path.parent.name not in LANGUAGES else path.parent.parent.name)
    return m.group(1) if m else None


_WORDED_DATE = re.compile(r"\b(\d{1,2})\s+([а-яё]+)\s+(\d{4})\s+года\b", re.I)


def _numeric_dates(clause: str) -> str:
    """«от 3 апреля 2017 года» → «от 03.04.2017»: the dates of an editorial note as adilet writes them."""

    def numeric(m: re.Match[str]) -> str:
        date = parse_date(m.group(0))
        return f"{date:%d.%m.%Y}" if date else m.group(0)

    return _WORDED_DATE.sub(numeric, clause)


def derived_adilet_id(sentence: str, requisites: Requisites) -> str | None:
    """The adilet id of an act registered with the Ministry of Justice: ``V``, the registration's year (two
    digits) and its number (eight): the form adilet gives every registered departmental act."""
    number, date = requisites.registration_number, requisites.registration_date
    if not (number and date and number.isdigit() and len(number) <= 8 and _REGISTERED.search(sentence)):
        return None
    return f"V{date.year % 100:02d}{int(number):08d}"


def _with_parts(body: str, source_file: str, read: Reader) -> tuple[str, list[str]]:
    """The index's text before «## Части документа», then every part it links, in its order, and the parts
    it names that are not there; a link that leaves the act's folder or names no markdown file is refused."""
    head, table = _PARTS_HEADING.split(body, maxsplit=1)
    links = list(dict.fromkeys(_PART_LINK.findall(table)))[:MAX_PARTS]
    texts, missing = [head], []
    for link in links:
        parts = PurePosixPath(link).parts
        if not link.endswith(".md") or link.startswith("/") or ".." in parts or "\\" in link:
            raise ExtractError(source_file, f"part {link[:100]} lies outside the act's folder or is not markdown")
        try:
            found = read(link)
        except Refused as exc:  # there, but not read: as good as missing, with the reason
            missing.append(f"{link} ({exc.reason})")
            continue
        if found is None:
            missing.append(link)
            continue
        texts.append(_ANCHOR.sub("", found.decode("utf-8", errors="strict")))
    return "\n\n".join(texts), missing
