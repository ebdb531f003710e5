"""The named parts the query grammar is built from (:mod:`lookup.grammar`): numbers, dates, type words, issuers,
the pieces of a title. Regexes are verbose-free strings composed here once; boundaries are Unicode-aware.
"""

from __future__ import annotations

import functools
import re

from lookup.code_names import alias_regex
from lookup.gate import gate
from schemas.identifiers import ARTICLE_LABEL
from schemas.kinds import DocType
from schemas.reference import KZ_MONTHS, RU_MONTHS, issuers

# Named parts. Boundaries are Unicode-aware: Python's \b and \w know Cyrillic and Kazakh letters.
UP = "A-ZА-ЯЁӘҒҚҢӨҰҮҺІ"
NUM_SIGN = r"(?:№|(?<!\w)N(?=\s?\d)|(?<!\w)No\.?)"
ART = rf"(?P<art>{ARTICLE_LABEL})(?![\d.,]\d|-?\d)"
ART_WORD = r"\b(?:[Сс]т(?:ать[а-яё]*|\.)|СТАТЬ[А-ЯЁ]*|Article|Art\.)"
PARA_RU = r"(?:\b(?P<pw>[Пп]п\.|[Пп](?:ункт[а-я]*|\.)|[Чч](?:аст[а-я]*|\.))\s*(?P<para>\d{1,3}(?:\.\d{1,3})?)\s*,?\s*)"
BAP = r"\s*-?\s*(?:бап|баб)\w*"
PARA_KZ = r"(?:\s+(?P<para2>\d{1,3})\s*-?\s*тармағ\w*)"
DATE_NUM = r"\d{1,2}\.\d{1,2}\.\d{4}"
DATE_RU = r"\d{1,2}\s+(?:" + "|".join(RU_MONTHS) + r")\s+\d{4}(?:\s*(?:года|г\.))?"
DATE_KZ = r"\d{4}\s*жыл[ғг]ы\s+\d{1,2}\s+(?:" + "|".join(KZ_MONTHS) + r")\w*"


def date_part(n: int) -> str:
    """A date (or a year alone) in any spelling, as groups ``date<n>`` / ``year<n>``."""
    year = rf"(?P<year{n}>\d{{4}})\s*(?:года|г\.|жыл\w*)"
    return rf"(?:(?P<date{n}>{DATE_NUM}|{DATE_RU}|{DATE_KZ})|{year})"


LOW = "а-яёәғқңөұүһі"
# An act's own number in every form met: 211, 1428, 7/71, 11-1-2/535, 4-1/271, 77-НП, 359-НҚ, 68/НҚ, 47-р,
# ҚР ДСМ-26, ҚР ДСМ-322/2020, and a maslikhat's session-prefixed «8С 37/5». The token must end where the
# number ends: «№ 94-VI» is never read as «№ 94» (that is a law number, and a different act).
ORDER_NUM = (
    rf"(?P<num>(?:[{UP}]{{1,4}}\s+)?(?:[{UP}]{{1,5}}\s*-\s*)?\d{{1,6}}"
    rf"(?:[{UP}{LOW}]{{1,2}}(?=\s+\d{{1,4}}\s*/)\s+\d{{1,4}}\s*/\s*\d{{1,4}})?"
    rf"(?:\s*[-/]\s*(?:\d{{1,6}}|[{UP}{LOW}A-Za-z]{{1,4}}(?![{UP}{LOW}A-Za-z])))*)"
    r"(?![\w/-]|[.,]\d)"
)
TYPE_RU = (
    r"(?P<type>\b(?:[Нн]ормативн\w*\s+постановлени|[Пп]риказ|[Пп]остановлени|[Уу]каз|[Рр]ешени|[Рр]аспоряжени"
    r"|[Зз]акон|[Oo]rder|[Rr]esolution|[Dd]ecree|[Dd]ecision)\w*)"
)
TYPE_KZ = r"(?P<type>\b(?:бұйры[қғ]|қаулы|[Жж]арлы[қғ]|шешім|өкім)\w*)"
REGISTERED_RU = r"\b[Зз]арегистрирован\w*\s+(?:в\s+)?(?:Министерстве\s+юстиции|Минюсте|МЮ)[^№]{0,80}?"

# type word (its stem) → the doc_type it names; «постановление» covers a court's normative ruling too
TYPE_WORDS: dict[str, DocType] = {"нормативн": "ruling", "приказ": "order", "order": "order", "бұйры": "order"}
TYPE_WORDS |= {"постановлени": "resolution", "resolution": "resolution", "қаулы": "resolution"}
TYPE_WORDS |= {"указ": "decree", "decree": "decree", "жарлы": "decree", "решени": "decision", "шешім": "decision"}
TYPE_WORDS |= {"decision": "decision", "распоряжени": "instruction", "өкім": "instruction", "закон": "law"}
TYPE_NAMES: dict[str, str] = {
    "order": "Приказ",
    "resolution": "Постановление",
    "decree": "Указ",
    "decision": "Решение",
    "ruling": "Нормативное постановление",
    "instruction": "Распоряжение",
    "law": "Закон",
}
# doc types a query's type word admits (a user writes «постановление» for a court's normative ruling)
TYPE_ADMITS: dict[DocType, tuple[DocType, ...]] = {"resolution": ("resolution", "ruling"), "ruling": ("ruling",)}


ISSUER_HEAD = r"(?:Қазақстан\s+Республикасы\w*\s+)?"
ISSUER_TAIL = r"(?:\s+(?:Республики\s+Казахстан|РК))?(?:\s+м\.а\.)?"


@functools.cache
def issuer_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Per issuer: its declined full names and its aliases (МТСЗН, Минтруда, Правительства РК)."""
    out = []
    for issuer in issuers():
        # requisites-only patterns anchored at a line's start or end («^Закон Республики …») are not names
        full = [p.pattern + r"\w*(?:\s+населения)?" for p in issuer.patterns if not re.search(r"\^|\$", p.pattern)]
        aliases = [alias_regex(a) for a in sorted({issuer.short, *issuer.aliases}, key=len, reverse=True)]
        out.append((issuer.short, re.compile("|".join([*full, *aliases]), re.IGNORECASE)))
    return tuple(out)


# A local body with the words around it: «Атбасарского районного маслихата», «акимата Камыстинского района
# Костанайской области», «акима села Бестобе». Every repeat and word is bounded, so matching stays linear.
LOCAL_WORD = r"[А-ЯЁа-яёӘҒҚҢӨҰҮҺІәғқңөұүһі-]{1,40}"
LOCAL_PLACE = r"(?:района|области|города|округа|села|поселка|ауданы|облысы|қаласы)"
LOCAL_ISSUER = (
    rf"(?<![\w-])(?:{LOCAL_WORD}(?:ого|его|ой)\s+){{0,2}}(?:[Мм]аслихат|[Аа]кимат|[Аа]ким|[Мм]әслихат|[Әә]кім)\w*"
    rf"(?:\s+(?:{LOCAL_WORD}\s+)?{LOCAL_PLACE}(?:\s+[А-ЯЁӘҒҚҢӨҰҮҺІ]{LOCAL_WORD})?){{0,3}}"
)


@functools.cache
def issuer_regex(group: str = "issuer") -> str:
    return rf"(?P<{group}>{_named_issuers()}|{LOCAL_ISSUER})"


@functools.cache
def _named_issuers() -> str:
    """Each issuer, and the named ones together, behind their first letters (:mod:`lookup.gate`): the regex
    engine tries every alternative at every position, and a hundred declined names made a question's parse
    slow (2.0 → 0.4 ms for a worded question)."""
    names = "|".join(gate(p.pattern) for _, p in issuer_patterns())
    return gate(f"{ISSUER_HEAD}(?:{names}){ISSUER_TAIL}")


TITLE_WORD = r"\b(?:[Зз]акон\w*|[Пп]остановлени\w*|[Пп]риказ\w*|[Уу]каз\w*)"
# a title in guillemets with up to two levels of guillemets inside («О внесении … в приказ … «Об … «Фонд …»»»),
# bounded (a question is at most 2 000 characters); only the inner alternative can take «, so it stays linear
NESTED = r"«[^«»]{0,2000}»"
IN_GUILLEMETS = rf"(?:[^«»]|«(?:[^«»]|{NESTED}){{0,2000}}»){{3,2000}}"
# the words of an unquoted title: Cyrillic words, up to the first word that starts the question itself or
# names a part of the act (a digit, a punctuation mark or the end also ends it); bounded, so linear
TITLE_STOP = (
    r"(?:стать\w*|ст|пункт\w*|п|глав\w*|что|как\w*|сколько|можно|ли|кто|когда|где|почему|зачем|это|в\s+част\w*"
    r"|говорит|гласит|сказано|написано|regarding)"
)
TITLE_WORDS = rf"[а-яёА-ЯЁ-]{{1,40}}(?:\s+(?!{TITLE_STOP}(?![а-яё]))[а-яёА-ЯЁ-]{{1,40}}){{0,14}}"
