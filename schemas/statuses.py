"""Legal status of an act: one vocabulary for every source (adilet labels in Russian and Kazakh, zan.gov.kz
codes, «Сноска. Утратил силу …» notes).

| value          | adilet (ru)                      | adilet (kz)                         | zan.gov.kz |
|----------------|----------------------------------|-------------------------------------|------------|
| ``in_force``   | Действующий, Новый               | Қолданыстағы, Жаңа                  | exe, new   |
| ``updated``    | Обновленный                      | Жаңартылған                         | upd        |
| ``repealed``   | Утративший силу                  | Күшін жойған, Күші жойылған         | ref, rep   |
| ``not_in_force``| Не введен в действие            | Қолданысқа енгізілмеген             | nvd        |
| ``suspended``  | Приостановлен(ный)               | Тоқтатыла тұрған                    | sus        |
| ``unknown``    | the source states none, or none of these                                           |

Matching folds case and Cyrillic/Latin look-alikes: real exports carry «Утpатил» with a Latin «p».
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from schemas.identifiers import fold_lookalikes, normalize_space

DocStatus = Literal["in_force", "updated", "repealed", "not_in_force", "suspended", "unknown"]
STATUSES: tuple[DocStatus, ...] = get_args(DocStatus)


def as_status(value: str | None) -> DocStatus:
    """A status value as the vocabulary type (anything else: ``unknown``)."""
    return next((s for s in STATUSES if s == value), "unknown")


_LABELS = {
    "действующий": "in_force",
    "действует": "in_force",
    "новый": "in_force",
    "обновленный": "updated",
    "обновлённый": "updated",
    "утративший силу": "repealed",
    "утратил силу": "repealed",
    "не введен в действие": "not_in_force",
    "не введён в действие": "not_in_force",
    "не вступил в силу": "not_in_force",
    "приостановлен": "suspended",
    "приостановленный": "suspended",
    "қолданыстағы": "in_force",
    "жаңа": "in_force",
    "жаңартылған": "updated",
    "күшін жойған": "repealed",
    "күші жойылған": "repealed",
    "күші жойылды": "repealed",
    "қолданысқа енгізілмеген": "not_in_force",
    "тоқтатыла тұрған": "suspended",
    "in force": "in_force",
    "new": "in_force",
    "updated": "updated",
    "repealed": "repealed",
    "no longer valid": "repealed",
    "not in force": "not_in_force",
    "suspended": "suspended",
}
_PORTAL_CODES = {
    "exe": "in_force",
    "new": "in_force",
    "upd": "updated",
    "ref": "repealed",
    "rep": "repealed",
    "nvd": "not_in_force",
    "sus": "suspended",
}
# CSS class of adilet's status label, when its text is missing or unusual (``status_yts`` = утративший силу).
_CSS = {"status_yts": "repealed", "status_new": "in_force", "status_nvd": "not_in_force"}


def _key(text: str) -> str:
    return fold_lookalikes(normalize_space(text).casefold().replace("ё", "е"))


_BY_KEY = {_key(k): v for k, v in _LABELS.items()}
# A note or requisites clause that says the act lost force: «Утратил силу Указом …», «Күші жойылды …».
_REPEAL_NOTE = re.compile(
    "|".join(
        re.escape(_key(w))
        for w in ("утратил силу", "утратила силу", "утратило силу", "утратили силу", "күші жойылды", "күшін жойды")
    )
)


def status_of(label: str | None) -> str | None:
    """The status a label states (adilet ru/kz label, English word or zan.gov.kz code), else None."""
    if not label or not label.strip():
        return None
    key = _key(label).strip(" .")
    return _BY_KEY.get(key) or _PORTAL_CODES.get(key)


def status_of_css(classes: str) -> str | None:
    return next((v for k, v in _CSS.items() if k in classes.split()), None)


_NOTE_PREFIX = re.compile(_key(r"^(?:сноска|ескерту)") + r"\W*")


def says_repealed(text: str) -> bool:
    """True when a note or clause says the act *itself* lost force («Сноска. Утратил силу Указом …»), not
    one of its points («Сноска. Пункт 3 утратил силу …»): the phrase must open the note."""
    head = _NOTE_PREFIX.sub("", _key(text)[:200], count=1)
    return bool(_REPEAL_NOTE.match(head))


# How a registry row's notice says part of the document's text is missing from its source (a kazakhstan-law
# act whose index names part files that are not there): the extractor writes it, the lookup's hint reads it.
INCOMPLETE_TEXT = "the text is incomplete"
