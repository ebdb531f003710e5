"""zan.gov.kz portal records (JSON) → :class:`Document`.

A record carries ``requisites`` («Приказ Министра финансов … от 17 марта 2026 года № 193»), ``act_types``
(«ПРИК, ИЗМ, ДОП»), ``status`` (``exe`` = in force) and the full ``text``. Its ``url`` is built from the
numeric portal id, not an adilet id, so it is kept as the portal's address and never read as an adilet id.
"""

from __future__ import annotations

import json

from extractors.model import Document, ExtractError
from extractors.requisites import parse_requisites
from extractors.structure import Line, build_units
from schemas.identifiers import normalize_space

_STATUS = {"exe": "in_force", "new": "in_force", "upd": "updated", "ref": "repealed", "rep": "repealed"}
_LANGUAGE = {"ru": "rus", "rus": "rus", "kz": "kaz", "kk": "kaz", "kaz": "kaz", "en": "eng", "eng": "eng"}
_ACT_TYPES = {
    "ПРИК": "order",
    "ПОСТ": "resolution",
    "ЗАК": "law",
    "КОД": "code",
    "УКАЗ": "decree",
    "РЕШ": "decision",
    "НПОС": "ruling",
    "РАСП": "instruction",
}
_REQUIRED = ("_id", "title", "text", "requisites")


def parse_zan_record(raw: str | bytes, source_file: str) -> Document:
    """Parse one record. Raises :class:`ExtractError` naming the missing field or the JSON error."""
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ExtractError(source_file, f"invalid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(record, dict):
        raise ExtractError(source_file, "a zan.gov.kz record must be a JSON object")
    missing = [key for key in _REQUIRED if not record.get(key)]
    if missing:
        raise ExtractError(source_file, f"zan.gov.kz record lacks {', '.join(missing)}")
    requisites = parse_requisites(record["requisites"])
    first_type = str(record.get("act_types") or "").split(",")[0].strip()
    requisites.doc_type = requisites.doc_type or _ACT_TYPES.get(first_type)
    requisites.doc_title = normalize_space(record["title"])
    requisites.portal_id = str(record["_id"])
    requisites.language = _LANGUAGE.get(str(record.get("language", "ru")).lower(), "rus")
    requisites.status = _STATUS.get(str(record.get("status", "")).lower(), "unknown")
    requisites.source_url = record.get("url")
    units = build_units(_lines(record["text"], requisites.doc_title))
    if not units:
        raise ExtractError(source_file, "the record's text is empty")
    return Document(requisites=requisites, units=units, source_file=source_file, language=requisites.language)


def _lines(text: str, title: str) -> list[Line]:
    lines = [normalize_space(line) for line in text.splitlines()]
    if lines and lines[0] == title:  # the text repeats the title as its first line
        lines = lines[1:]
    return [Line(line, heading=len(line) < 200) for line in lines if line]
