"""What an amending act says it changes, read from its own text (the other half of legal lineage).

«Внести в Закон Республики Казахстан от 2 августа 1999 г. "О государственном … долге" (Ведомости …)
следующие изменения и дополнения: 1) в статье 1: … 11) дополнить статьей 25-1 следующего содержания: …
12) статью 26 дополнить подпунктом 4) …» gives, per act named: the act as written (its type, date and title)
and one operation per article: ``amended`` («в статье 1:», «в пункте 2 статьи 4:»), ``new_edition``
(«статью 5 изложить в следующей редакции»), ``added`` («дополнить статьей 25-1»), ``excluded`` («статью 7
исключить»). Operations are read only at the start of a line (where the act enumerates them) and never
inside quoted new text («"Статья 25-1. …"» is what is added, not an operation).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from extractors.notes import RelationKind
from schemas.identifiers import ARTICLE_LABEL, canonical_article_label, fold_dashes, normalize_space
from schemas.kinds import DocType
from schemas.reference import parse_date

_ART = ARTICLE_LABEL
_ARTS = rf"(?P<arts>{_ART}(?:\s*(?:,|и)\s*{_ART})*)"
# «Внести в Закон … следующие изменения» / «1. В Кодекс … внести следующие изменения»
_ACT_HEAD = re.compile(
    r"(?:^|\n)\s*(?:\d+\.\s*)?(?:Внести\s+в|В)\s+(?P<act>(?P<type>Конституционный\s+закон|Закон|Кодекс|Указ|"
    r"постановление|приказ)\b[^\n(]{0,400}?)\s*(?:\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)\s*)?"
    r"(?:(?:внести\s+)?следующ\w*\s+(?:изменени|дополнени)[^\n:]*:|:\s*(?=\n|$))",
    re.I,
)
_ENUM = r"(?:^|\n)\s*(?:\d+(?:-\d+)?\)\s*|[а-я]\)\s*)?"
_OPERATION_ROWS: tuple[tuple[RelationKind, str], ...] = (
    ("new_edition", rf"(?:заголовок\s+)?стать(?:ю|и)\s+{_ARTS}\s+изложить\s+в\s+(?:следующей|новой)\s+редакции"),
    ("excluded", rf"стать(?:ю|и)\s+{_ARTS}\s+исключить"),
    ("added", rf"(?:(?:глав\w*|раздел\w*|параграф\w*)\s+\S+\s+)?дополнить\s+стать(?:ей|ями)\s+{_ARTS}"),
    ("amended", rf"в\s+(?:(?:под)?пункт\w*\s+\S+\s+|част\w*\s+\S+\s+)*стать(?:е|ях|и)\s+{_ARTS}"),
    ("amended", rf"стать(?:ю|и)\s+{_ARTS}\s+дополнить"),
    (
        "amended",
        rf"(?:(?:абзац|част|пункт|подпункт)\w*\s+\S+\s+)+стать(?:и)\s+{_ARTS}\s+[^\n]{{0,200}}?"
        r"(?:изложить|исключить|дополнить|заменить)",
    ),
)
_OPERATIONS: tuple[tuple[RelationKind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(_ENUM + regex, re.I)) for kind, regex in _OPERATION_ROWS
)


_QUOTED = re.compile(r"«[^«»]*»|\"[^\"\n]{0,5000}\"|“[^”]*”", re.S)
_TYPES: dict[str, DocType] = {
    "закон": "law",
    "конституционный закон": "law",
    "кодекс": "code",
    "указ": "decree",
    "постановление": "resolution",
    "приказ": "order",
}


@dataclass(frozen=True)
class Amendment:
    """One operation on one article of an act another act amends."""

    relation: RelationKind
    act_written: str  # «Закон Республики Казахстан от 24 марта 1998 г. "О нормативных правовых актах"»
    act_type: DocType | None
    act_date: dt.date | None
    act_title: str | None  # the quoted title, or a code's name («Кодекс … об административных правонарушениях»)
    article: str


def amendments(text: str) -> list[Amendment]:
    """Every article operation of every act ``text`` amends, in order (none for a text that amends nothing)."""
    text = fold_dashes(text)
    heads = list(_ACT_HEAD.finditer(text))
    out: list[Amendment] = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        block = _QUOTED.sub(lambda m: " " * len(m.group(0)), text[head.end() : end])  # new text is not an operation
        written = normalize_space(head.group("act"))
        act_type = _TYPES.get(normalize_space(head.group("type")).lower())
        title = _title(written)
        found = sorted((m.start(), kind, m.group("arts")) for kind, p in _OPERATIONS for m in p.finditer(block))
        seen: set[tuple[str, str]] = set()
        for _, kind, arts in found:
            for written_label in re.split(r"\s*(?:,|и)\s*", arts):
                article = canonical_article_label(written_label) if written_label else ""
                if article and (kind, article) not in seen:
                    seen.add((kind, article))
                    out.append(Amendment(kind, written[:400], act_type, parse_date(written), title, article))
    return out


def _title(written: str) -> str | None:
    quoted = re.search(r"[«\"“]([^»\"”]{3,300})[»\"”]", written)
    if quoted:
        return normalize_space(quoted.group(1))
    code = re.match(r"(Кодекс\s+Республики\s+Казахстан(?:\s+(?:об?|о)\s+[^,(]{3,120}?)?)(?=\s+от\b|\s*\(|$)", written)
    return normalize_space(code.group(1)) if code else None
