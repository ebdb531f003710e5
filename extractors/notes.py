"""Editorial notes read as legal lineage: which act changed which part of a document, how, and from when.

adilet prints a note under every amended article, in Russian and in Kazakh:

- «Сноска. Статья 15 с изменениями, внесенными законами РК от 04.05.2020 № 321-VІ (вводится в действие по
  истечении десяти календарных дней …); от 21.12.2023 № 49-VIII (вводится в действие с 01.01.2024).»
- «Сноска. Статья 53 в редакции Закона РК от 21.05.2007 № 254-III (…); с изменением, внесенным Законом РК
  от 10.03.2017 № 51-VI (…).» (two relations in one note)
- «Сноска. Утратил силу Указом Президента РК, имеющим силу Закона от 18.07.1995 № 2367 (…).»
- «Ескерту. 117-бапқа өзгерістер енгізілді - ҚР 06.04.2016 № 483-V (…); 04.07.2018 № 171-VІ (…) заңдарымен.»

A note is parsed in three steps, each a table of rows with their own examples (the grammar style of
``lookup.grammar``): the **target** at its head (an article, an article's heading, a пункт, a chapter, the
whole act), then **clauses**, each opened by a relation phrase (``amended``, ``new_edition``, ``added``,
``excluded``, ``repealed``, ``suspended``), and in each clause the **acts** it names (date, number, and the
date or words of entry into force). A note that states no relation («Примечание ИЗПИ!», «См. …») gives none.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

from schemas.errors import ZanError
from schemas.identifiers import (
    ARTICLE_LABEL,
    POINT_LABEL,
    canonical_article_label,
    canonical_law_number,
    canonical_order_number,
    fold_dashes,
    normalize_space,
)
from schemas.kinds import DocType
from schemas.regex_gate import gate

RelationKind = Literal["amended", "new_edition", "added", "excluded", "repealed", "suspended"]
TargetKind = Literal["act", "article", "heading", "point", "chapter", "section", "annex", "toc"]


@dataclass(frozen=True)
class Relation:
    """One relation a note states: ``by_*`` is the acting act as written (its type, date and number)."""

    relation: RelationKind
    target_kind: TargetKind
    target: str  # as written: «Статья 15», «Заголовок статьи 17», «Пункт 1 статьи 5», «Глава 2»
    article: str | None  # the article affected (article, its heading or a пункт of it)
    by_type: DocType | None
    by_date: dt.date | None
    by_number: str | None  # canonical: 321-VI, 2367
    takes_effect: dt.date | None
    takes_effect_text: str | None  # when no date can be computed: «по истечении десяти календарных дней …»


NOTE_START = re.compile(r"^\s*(?:Сноск[аи]|Ескерту)\b\.?\s*")
_ART = ARTICLE_LABEL
_POINT = POINT_LABEL
_ARTS = rf"{_ART}(?:\s*(?:,|и)\s*{_ART})*"
_ROMAN_OR_NUM = r"[\dIVXLCІ]+(?:-\d+)?"


@dataclass(frozen=True)
class _Target:
    name: str
    kind: TargetKind
    pattern: re.Pattern[str]
    examples: tuple[str, ...]


def _t(name: str, kind: TargetKind, regex: str, *examples: str) -> _Target:
    return _Target(name, kind, re.compile(regex, re.I), examples)


# Order matters: the more specific first («Заголовок статьи 17» before «Статья 17»).
TARGETS: tuple[_Target, ...] = (
    _t(
        "heading_ru",
        "heading",
        rf"^Заголов\w*\s+(?P<of>стать\w*|глав\w*|раздел\w*|параграф\w*)\s+(?P<label>{_ROMAN_OR_NUM})",
        "Заголовок статьи 17 - в редакции Закона РК от 08.07.2024 № 116-VIII",
        "Заголовок раздела VII – в редакции",
    ),
    _t(
        "point_ru",
        "point",
        rf"^(?:Пункт|Подпункт|Часть)\s+(?P<point>{_POINT}\)?)\s+статьи\s+(?P<label>{_ART})",
        "Пункт 1 статьи 5 - с изменениями, внесенными Законом",
    ),
    _t(
        "chapter_added_ru",
        "article",
        rf"^(?:Глава|Раздел|Параграф)\s+\S+\s+дополнен\w*\s+стать\w*\s+(?P<labels>{_ARTS})",
        "Глава 2 дополнена статьей 18-1 в соответствии с Законом РК от 06.04.2016 № 483-V",
    ),
    _t(
        "act_added_ru",
        "article",
        rf"^(?:Конституция|Кодекс|Закон|Указ|Постановление|Положение)\s+дополнен\w*\s+стать\w*\s+(?P<labels>{_ARTS})",
        "Конституция дополнена статьей 83-1 в соответствии с Законом РК от 10.03.2017 № 51-VI",
    ),
    _t(
        "into_article_ru",
        "article",
        rf"^В\s+стать\w*\s+(?P<labels>{_ARTS})\s",
        "В статью 34 внесено изменение на казахском языке, текст на русском языке не изменяется Законом РК",
    ),
    _t("article_ru", "article", rf"^Стать(?:я|и)\s+(?P<labels>{_ARTS})(?!\d)", "Статья 15 с изменениями, внесенными"),
    _t(
        "chapter_ru",
        "chapter",
        rf"^(?P<word>Глава|Раздел|Параграф)\s+(?P<label>{_ROMAN_OR_NUM})",
        "Глава 5 с изменениями, внесенными Законом",
    ),
    _t("toc_ru", "toc", r"^Оглавлени\w*", "Оглавление исключено Законом РК от 06.04.2016 № 483-V"),
    _t("annex_ru", "annex", r"^(?:Положение|Правила|Приложение\s*\d*|Перечень)\b", "Положение в редакции Указа"),
    _t(
        "chapter_added_kz",
        "article",
        rf"^\d+-тарау\s+(?P<labels>{_ART})\s*-?\s*бап\w*\s+толықтырылды",
        "2-тарау 18-1-баппен толықтырылды - ҚР 06.04.2016 № 483-V Заңымен",
    ),
    _t(
        "heading_kz",
        "heading",
        rf"^(?P<label>{_ART})\s*-?\s*бапт\w*\s+тақырыб\w*",
        "17-баптың тақырыбы жаңа редакцияда",
    ),
    _t("article_kz", "article", rf"^(?P<labels>{_ART})\s*-?\s*бап\w*", "111-бапқа өзгеріс енгізілді - ҚР 06.04.2016"),
    _t("act", "act", r"^(?=Утр|Утp|Ут\s*р|Күші|Приостановлен)", "Утратил силу Указом Президента РК"),
)

# A clause opens with its relation phrase; the rest of the clause names the acts.
_RELATION_ROWS: tuple[tuple[RelationKind, str], ...] = (
    ("new_edition", r"в\s+редакции|жаңа\s+редакция\w*|редакция\w*\s+жазыл\w*"),
    ("repealed", r"утра?[тp]ил\w*\s+сил\w*|у[тp]pатил\w*\s+сил\w*|күші\s+жойыл\w*|күшін\s+жой\w*"),
    ("suspended", r"приостановлен\w*|тоқтатыл\w*"),
    ("excluded", r"исключен\w*|алып\s+тасталды"),
    ("added", r"дополнен\w*\s+стать\w*|толықтырылды"),
    (
        "amended",
        r"с\s+изменени\w*|с\s+дополнени\w*|внесен\w*\s+изменени\w*|внесен\w*\s+дополнени\w*|"
        r"өзгеріс\w*\s+енгізілді|өзгерістер\s+мен\s+толықтырулар\s+енгізілді",
    ),
)
RELATIONS: tuple[tuple[RelationKind, re.Pattern[str]], ...] = tuple((k, re.compile(r, re.I)) for k, r in _RELATION_ROWS)
# one scan for every phrase, all and each behind a look-ahead of their first letters (a position that starts
# none fails on one character class); the group that matched names the relation
_ANY_RELATION = re.compile(gate("|".join(f"(?P<{k}>{gate(r, re.I)})" for k, r in _RELATION_ROWS), re.I), re.I)

_DATE = r"\d{1,2}\.\d{1,2}\.\d{4}"
# an act inside a clause: «от 04.05.2020 № 321-VІ (вводится …)» or Kazakh «06.04.2016 № 483-V (…)»
_ACT = re.compile(
    rf"(?:\bот\s+|(?<![\d.])(?=\d{{1,2}}\.\d{{1,2}}\.\d{{4}}\s*(?:№|N\s)))(?P<date>{_DATE})(?:\s*года)?"
    rf"(?:\s*(?:№|N)\s*(?P<number>[0-9A-Za-zА-ЯЁа-яёІі]+(?:[-/ ][0-9A-Za-zА-ЯЁа-яёІі]+)*?)(?=[\s(;,.)]|$))?"
    r"(?:\s+(?P<kz_type>[А-ЯЁӘҒҚҢӨҰҮҺІа-яёәғқңөұүһі]+(?:мен|бен|пен)))?"  # Kazakh «№ 414-V Кодексімен (…)»
    r"(?P<paren>\s*\((?P<effect>[^()]*(?:\([^()]*\)[^()]*)*)\))?"
)
_TYPE_ROWS: tuple[tuple[DocType, str], ...] = (
    ("decree", r"\bуказ\w*|жарлығ\w*"),
    ("code", r"\bкодекс\w*"),
    ("resolution", r"\bпостановлени\w*|қаулы\w*"),
    ("law", r"\bзакон\w*|\bзаң\w*"),
    ("order", r"\bприказ\w*|бұйры\w*"),
)
_TYPE_WORDS: tuple[tuple[DocType, re.Pattern[str]], ...] = tuple((k, re.compile(r, re.I)) for k, r in _TYPE_ROWS)
_ANY_TYPE = re.compile(gate("|".join(f"(?P<{k}>{gate(r, re.I)})" for k, r in _TYPE_ROWS), re.I), re.I)  # as above
_EFFECT_DATE = re.compile(
    rf"(?:вводится\s+в\s+действие|вступает\s+в\s+силу)\s+с\s+(?P<d1>{_DATE})|(?P<d2>{_DATE})\s+бастап"
)


MAX_RELATIONS = 2_000  # relations one note may state (acts × articles); the Labour Code's longest states 40


class NoteTooLarge(ZanError, ValueError):
    """A note states more relations than :data:`MAX_RELATIONS`; the first ones are kept, and the run lists
    the note among its rejects with the count."""


def parse_note(note: str) -> list[Relation]:
    """The relations one note states (none for a note that is not lineage), at most :data:`MAX_RELATIONS`."""
    return parse_note_counted(note)[0]


def parse_note_counted(note: str) -> tuple[list[Relation], int]:
    """The relations one note states (at most :data:`MAX_RELATIONS`) and how many it states in all. Linear in
    the note's length: each clause's type words, Kazakh «…мен» words and «;» are found once, and each act
    looks its type up among them."""
    found = _target(note)
    if found is None:
        return [], 0
    body, row, match = found
    labels = _labels(match)
    out: list[Relation] = []
    total = 0
    targets: list[str | None] = [*labels] or [None]
    for kind, clause in _clauses(body):
        types = _ClauseTypes(clause)
        acts: list[re.Match[str] | None] = [*_ACT.finditer(clause)] or [None]
        total += len(acts) * len(targets)
        for act in acts:
            if len(out) >= MAX_RELATIONS:
                break
            by_type = types.of(act)
            out += [_relation(kind, row, match, label, by_type, act) for label in targets]
    return out[:MAX_RELATIONS], total


def note_target(note: str) -> TargetKind | None:
    """What a note is about (the kind of its target: ``act`` for the whole act), read from its head alone,
    without parsing its clauses; None for a line that is not a lineage note."""
    found = _target(note)
    return found[1].kind if found else None


def _target(note: str) -> tuple[str, _Target, re.Match[str]] | None:
    """(the note's body after «Сноска.», its target row, the row's match), or None."""
    text = fold_dashes(normalize_space(note))
    head = NOTE_START.match(text)
    if not head:
        return None
    body = text[head.end() :]
    return next(((body, t, m) for t in TARGETS if (m := t.pattern.match(body))), None)


def _labels(match: re.Match[str]) -> list[str]:
    groups = match.groupdict()
    if groups.get("labels"):
        return [canonical_article_label(x) for x in re.split(r"\s*(?:,|и)\s*", groups["labels"]) if x.strip()]
    if groups.get("label") and (groups.get("of") or "стать").lower().startswith("стать"):
        return [canonical_article_label(groups["label"])]
    return []


def _clauses(body: str) -> list[tuple[RelationKind, str]]:
    """(relation, the clause's text up to the next relation phrase), in order."""
    starts = list(_ANY_RELATION.finditer(body))
    out: list[tuple[RelationKind, str]] = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        kind: RelationKind = m.lastgroup  # type: ignore[assignment]  # the row whose phrase matched
        # «Указом Президента РК, имеющим силу Закона, от …» is a decree: the force it has is not its type
        out.append((kind, _FORCE_OF_LAW.sub("", body[m.start() : end])))
    return out


_FORCE_OF_LAW = re.compile(r",?\s*имеющ\w*\s+силу\s+(?:конституционного\s+)?закона,?", re.I)


# a match can only start where a run of these letters starts (it must end where the run ends, at «\b»): the
# look-behind says so, so a long word is not tried from each of its letters
_KZ_INSTRUMENTAL = re.compile(r"(?<![А-ЯЁӘҒҚҢӨҰҮҺІа-яёәғқңөұүһі])[А-ЯЁӘҒҚҢӨҰҮҺІа-яёәғқңөұүһі]+(?:мен|бен|пен)\b")


class _ClauseTypes:
    """Where a clause names act types, found once: an act's type is then a lookup, not a scan of the clause.

    Kazakh names the type after the act («… № 414-V Кодексімен (…)», «… № 483-V (…) Заңымен», up to the next
    «;»); Russian before it: the last type word before the act («… статьей 204 Трудового кодекса РК от …;
    законами РК от …»), else the first in the clause."""

    def __init__(self, clause: str) -> None:
        self.clause = clause
        found = [(m.start(), m.lastgroup) for m in _ANY_TYPE.finditer(clause)]
        self.starts = [start for start, _ in found]
        self.kinds: list[DocType] = [kind for _, kind in found]  # type: ignore[misc]
        self.semicolons = [m.start() for m in re.finditer(";", clause)]
        self.instrumental = [m.start() for m in _KZ_INSTRUMENTAL.finditer(clause)]

    def of(self, act: re.Match[str] | None) -> DocType | None:
        """The type of ``act`` (None: the clause's first type word, for a clause that names no act)."""
        if act is not None and act.group("kz_type"):
            return _first_type(act.group("kz_type"))
        if act is None or not self.kinds:
            return self.kinds[0] if self.kinds else None
        end = act.end()
        stop = self._next(self.semicolons, end, len(self.clause))
        if self._next(self.instrumental, end, stop) < stop:  # a Kazakh type word after the act, before «;»
            at = bisect.bisect_left(self.starts, end)
            return self.kinds[at] if at < len(self.starts) and self.starts[at] < stop else None
        before = bisect.bisect_left(self.starts, act.start())
        return self.kinds[before - 1] if before else self.kinds[0]

    @staticmethod
    def _next(positions: list[int], start: int, default: int) -> int:
        at = bisect.bisect_left(positions, start)
        return positions[at] if at < len(positions) else default


def _first_type(text: str) -> DocType | None:
    found = [(m.start(), kind) for kind, p in _TYPE_WORDS if (m := p.search(text))]
    return min(found)[1] if found else None


def _relation(
    kind: RelationKind,
    row: _Target,
    match: re.Match[str],
    label: str | None,
    by_type: DocType | None,
    act: re.Match[str] | None,
) -> Relation:
    target = normalize_space(match.group(0)).rstrip(" -")
    if row.kind == "act":
        target = "акт"
    date = _date(act.group("date")) if act else None
    number = act.group("number") if act else None
    effect = normalize_space(act.group("effect") or "") if act else ""
    effect_date = _EFFECT_DATE.search(effect)
    takes = _date(effect_date.group("d1") or effect_date.group("d2")) if effect_date else None
    return Relation(
        relation=kind,
        target_kind=row.kind,
        target=target,
        article=label,
        by_type=by_type,
        by_date=date,
        by_number=_canonical_number(number, by_type),
        takes_effect=takes,
        takes_effect_text=None if takes or not effect else effect[:300],
    )


def _canonical_number(number: str | None, by_type: DocType | None) -> str | None:
    if not number:
        return None
    if by_type in ("law", "code") and re.search(r"-[IVXLCІ]+$", number, re.I):
        return canonical_law_number(number)
    return canonical_order_number(number)


def _date(text: str | None) -> dt.date | None:
    if not text:
        return None
    day, month, year = (int(x) for x in text.split("."))
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
