"""zan.gov.kz portal records (JSON) → :class:`Document`, in both layouts met so far.

- The first layout: ``_id`` (numeric portal id), ``title``, ``text``, ``requisites`` («Приказ Министра
  финансов … от 17 марта 2026 года № 193»), ``act_types`` («ПРИК, ИЗМ, ДОП»), ``status`` (``exe`` = in
  force) and a ``url`` built from the numeric id (so never read as an adilet id).
- The newer layout carries the adilet id in ``code``, ``_id`` or ``url`` («V2600038180»), numbers like
  «81-НП», and may have no ``status`` field: the status is then read from the text's opening notes
  («Сноска. Утратил силу …») or set to ``unknown``, and the run report says so.

Every field is checked against its type at this boundary: a record whose ``title`` is a number, whose
``url`` is an object or whose text holds a lone surrogate is rejected with the field named, never passed on.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from extractors.model import Document, ExtractError
from extractors.requisites import parse_requisites
from extractors.structure import Line, build, count_heading_like, is_editorial_note
from schemas.identifiers import ADILET_ID, canonical_adilet_id, normalize_space
from schemas.kinds import DocType
from schemas.links import link_problem
from schemas.statuses import says_repealed, status_of
from schemas.text import clean_text

_LANGUAGE = {"ru": "rus", "rus": "rus", "kz": "kaz", "kk": "kaz", "kaz": "kaz", "en": "eng", "eng": "eng"}
_ACT_TYPES: dict[str, DocType] = {
    "ПРИК": "order",
    "ПОСТ": "resolution",
    "ЗАК": "law",
    "КОД": "code",
    "УКАЗ": "decree",
    "РЕШ": "decision",
    "НПОС": "ruling",
    "РАСП": "instruction",
}
# field → the JSON types it may have (bool is excluded from int on purpose: ``true`` is not an id)
_TYPES: dict[str, tuple[type, ...]] = {
    "_id": (str, int),
    "code": (str, int),
    "title": (str,),
    "text": (str,),
    "requisites": (str,),
    "url": (str,),
    "language": (str,),
    "status": (str,),
    "act_types": (str,),
    "date": (str,),
}
_REQUIRED = ("title", "text")
_ADILET = re.compile(rf"(?:^|/)({ADILET_ID})(?:$|[/?#])")
# The portal's text has no markup: a short line is taken as a heading only if it reads like one.
_HEADING_HINT = re.compile(
    r"^(?:Статья|СТАТЬЯ|Глава|ГЛАВА|Раздел|РАЗДЕЛ|Параграф|Приложение|ПРИЛОЖЕНИЕ|УТВЕРЖДЕН|Утвержден|"
    r"\d+(?:-\d+)?\s*-?\s*(?:бап|тарау|бөлім)|ПРАВИЛА|Правила|ПОЛОЖЕНИЕ|Положение|ПЕРЕЧЕНЬ|Перечень|\d{1,2}\.\s*\S[^.;:]*$)"
)
_REQUISITES_LINE = re.compile(
    r"^(?:Приказ|Постановление|Нормативное постановление|Решение|Закон|Указ|Распоряжение)\b.{0,200}?\bот\s+\d"
)


def parse_zan_record(raw: str | bytes, source_file: str) -> Document:
    """Parse one record. Raises :class:`ExtractError` naming the missing or mistyped field or the JSON error."""
    record = _load(raw, source_file)
    requisites_text = record.get("requisites") or _requisites_in_text(record["text"])
    requisites = parse_requisites(requisites_text) if requisites_text else parse_requisites("")
    first_type = str(record.get("act_types") or "").split(",")[0].strip()
    requisites.doc_type = requisites.doc_type or _ACT_TYPES.get(first_type)
    requisites.doc_title = normalize_space(record["title"])
    identifier = record.get("_id", record.get("code"))
    requisites.portal_id = str(identifier) if identifier is not None else None
    requisites.adilet_id = _adilet_id(record)
    requisites.language = _LANGUAGE.get(str(record.get("language", "ru")).lower(), "rus")
    requisites.source_url = record.get("url")
    units, tally = build(_lines(record["text"], requisites.doc_title))
    if not units:
        raise ExtractError(source_file, "the record's text is empty")
    tally.in_source = count_heading_like(record["text"].splitlines())
    document = Document(requisites=requisites, units=units, source_file=source_file, language=requisites.language)
    document.headings = tally
    _status(document, record)
    return document


def _load(raw: str | bytes, source_file: str) -> dict[str, Any]:
    try:
        record = json.loads(raw, parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
        msg = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ExtractError(source_file, f"invalid JSON: {msg}") from exc
    if not isinstance(record, dict):
        raise ExtractError(source_file, "a zan.gov.kz record must be a JSON object")
    for key, types in _TYPES.items():
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types) or (isinstance(value, float) and math.isnan(value)):
            wanted = " or ".join(t.__name__ for t in types)
            raise ExtractError(source_file, f"field {key!r} must be {wanted}, not {type(value).__name__}")
        if isinstance(value, str) and _has_surrogate(value):
            raise ExtractError(source_file, f"field {key!r} holds an unpaired surrogate (not valid Unicode text)")
        if isinstance(value, str):
            record[key] = clean_text(value)
    missing = [key for key in _REQUIRED if not record.get(key)]
    if record.get("_id") is None and record.get("code") is None:
        missing.append("_id")
    if missing:
        raise ExtractError(source_file, f"zan.gov.kz record lacks {', '.join(missing)}")
    return record


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def _adilet_id(record: dict[str, Any]) -> str | None:
    """The adilet id, where the newer layout puts it: ``code``, ``_id`` or the ``url`` path (of a link on an
    expected host only: ``https://evil.example/rus/docs/V2400035612`` names no act)."""
    for key in ("code", "_id", "url"):
        value = record.get(key)
        if value is None or (key == "url" and link_problem(str(value)) is not None):
            continue
        m = _ADILET.search(canonical_adilet_id(str(value)) if key != "url" else str(value))
        if m and re.fullmatch(ADILET_ID, canonical_adilet_id(m.group(1))):
            return canonical_adilet_id(m.group(1))
    return None


def _requisites_in_text(text: str) -> str | None:
    for line in text.splitlines()[:15]:
        line = normalize_space(line)
        if _REQUISITES_LINE.match(line):
            return line
    return None


def _status(document: Document, record: dict[str, Any]) -> None:
    label = record.get("status")
    status = status_of(label)
    opening = [n for u in document.units[:2] for n in u.notes] + document.units[0].paragraphs[:3]
    why = f"status {label!r} is not a known code" if label else "no status field"
    if status is None and (document.requisites.status == "repealed" or any(says_repealed(n) for n in opening)):
        status = "repealed"
        document.notices.append(f"{why}; «утратил силу» read from the text")
    if status is None:
        document.notices.append(f"{why}; status set to unknown")
    document.requisites.status = status or "unknown"


def _lines(text: str, title: str) -> list[Line]:
    lines = [normalize_space(line) for line in text.splitlines()]
    if lines and lines[0] == title:  # the text repeats the title as its first line
        lines = lines[1:]
    return [
        Line(
            line,
            heading=len(line) < 200 and bool(_HEADING_HINT.match(line)),
            note=is_editorial_note(line),
            normalized=True,
        )
        for line in lines
        if line
    ]
