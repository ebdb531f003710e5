"""Parse a requisites line (Russian or Kazakh) into identifier fields.

Examples it reads (real ones from adilet and zan.gov.kz):
- «Закон Республики Казахстан от 18 ноября 2015 года № 410-V ЗРК.»
- «Приказ Министра финансов Республики Казахстан от 17 марта 2026 года № 193»
- «Постановление акимата … от 19 марта 2026 года № 29. Зарегистрировано в Министерстве юстиции
  Республики Казахстан 20 марта 2026 года № 38180»
- «Қазақстан Республикасы Денсаулық сақтау министрінің м.а. 2020 жылғы 24 желтоқсандағы
  № ҚР ДСМ-322/2020 бұйрығы. Қазақстан Республикасының Әділет министрлігінде 2020 жылғы 25 желтоқсанда
  № 21906 болып тіркелді.»
"""

from __future__ import annotations

import re

from extractors.model import Requisites
from schemas.identifiers import canonical_law_number, canonical_order_number, fold_dashes, normalize_space
from schemas.kinds import DocType
from schemas.reference import CodeRef, find_issuer, find_local_issuer, parse_date

# The act's own number: the first «№ …» before a registration clause; stops at «ЗРК», «бұйрығы», «.»
_NUMBER = re.compile(r"(?:№|\bN)\s*([^\s.,;]+(?:\s?[-/]\s?[^\s.,;]+)*(?:\s+\d+/\d+)?)")
_ORDER_NUMBER_KZ = re.compile(r"№\s*(ҚР\s+[А-ЯӘҒҚҢӨҰҮҺІA-Z]+\s*-\s*[\d/]+|[^\s.,;]+)")
_REGISTRATION = re.compile(
    r"(Зарегистрирован\w*\s+в\s+Министерстве\s+юстиции.*|(?:Қазақстан\s+Республикасының\s+)?Әділет\s+министрлігінде.*)",
    re.I | re.S,
)
# «… № 1428. Утратил силу Указом Президента … № 814»: the repeal clause names another act's number and date.
_LAPSE = re.compile(r"[.;]?\s*(?:Утратил\w*\s+силу|Күші\s+жойыл\w*|Күшін\s+жойды).*$", re.I | re.S)

# Leading words (Russian) or closing words (Kazakh) name the act's type. Russian rows are tried longest
# first (sorted below), so «Нормативное постановление» wins over «Постановление».
_TYPES_RU: list[tuple[str, DocType]] = [
    ("Нормативное постановление", "ruling"),
    ("Конституционный закон", "law"),
    ("Постановление", "resolution"),
    ("Приказ", "order"),
    ("Совместный приказ", "order"),
    ("Закон", "law"),
    ("Кодекс", "code"),
    ("Конституция", "constitution"),
    ("Указ", "decree"),
    ("Решение", "decision"),
    ("Распоряжение", "instruction"),
]
_TYPES_RU.sort(key=lambda row: -len(row[0]))
_TYPES_KZ: list[tuple[str, DocType]] = [
    ("нормативтік қаулысы", "ruling"),
    ("бұйрығы", "order"),
    ("бірлескен бұйрығы", "order"),
    ("өкімі", "instruction"),
    ("Заңы", "law"),
    ("Кодексі", "code"),
    ("қаулысы", "resolution"),
    ("шешімі", "decision"),
    ("Жарлығы", "decree"),
    ("Конституциясы", "constitution"),
]
_TYPE_BY_ADILET_PREFIX: dict[str, DocType] = {
    "K": "code",
    "Z": "law",
    "V": "order",
    "P": "resolution",
    "U": "decree",
    "S": "ruling",
}


def doc_type_of(text: str, adilet_id: str | None = None) -> DocType | None:
    """The act type named by a requisites line, else by the adilet id's prefix letter."""
    head = text.strip().lower()
    for word, kind in _TYPES_RU:
        if head.startswith(word.lower()):
            return kind
    own, _ = _split_registration(text.strip())
    for word, kind in _TYPES_KZ:
        if re.search(rf"\b{word}\b", own, re.I):
            return kind
    return _TYPE_BY_ADILET_PREFIX.get(adilet_id[0].upper()) if adilet_id else None


def parse_requisites(line: str, adilet_id: str | None = None) -> Requisites:
    """Identifier fields stated by one requisites line. Fields the line does not state stay None."""
    text = fold_dashes(normalize_space(line))
    own, registration = _split_registration(text)
    lapse = _LAPSE.search(own)
    if lapse and lapse.start() > 0:  # «… № 1428. Утратил силу Указом … № 814»: the act's own clause ends here
        own = own[: lapse.start()]
    req = Requisites(doc_type=doc_type_of(own, adilet_id), date_approved=parse_date(own), jurisdiction="KZ")
    if lapse and lapse.start() > 0:
        req.status = "repealed"
    number = _own_number(own)
    if number:
        law = canonical_law_number(number) if req.doc_type in ("law", "code") else None
        if law:
            req.law_zrk = law
        else:
            req.order_number = canonical_order_number(number)
    if registration:
        req.registration_date = parse_date(registration)
        reg = _NUMBER.search(registration)
        req.registration_number = reg.group(1) if reg else None
    issuer = find_issuer(own)
    local = None if issuer else find_local_issuer(own)
    if issuer:
        req.issuer, req.issuer_full = issuer.short, (issuer.full_kz if _is_kazakh(own) else issuer.full_ru)
    elif local:
        req.issuer, req.issuer_full, req.region = local.short, local.phrase, local.region
    else:
        req.issuer_full = _issuer_phrase(own)
    return req


def _split_registration(text: str) -> tuple[str, str]:
    """The act's own clause and its Ministry of Justice registration clause («Зарегистрирован …», «… тіркелді»)."""
    m = _REGISTRATION.search(text)
    return (text[: m.start()], m.group(1)) if m else (text, "")


def _own_number(own: str) -> str | None:
    m = _ORDER_NUMBER_KZ.search(own) if "ҚР" in own else None
    m = m or _NUMBER.search(own)
    if not m:
        return None
    number = m.group(1)
    return re.sub(r"\s+(ЗРК|ҚРЗ|бұйрығы|Заңы|Кодексі)$", "", number).strip()


def _issuer_phrase(own: str) -> str | None:
    """«Решение маслихата Карасуского района … от …» → «маслихат Карасуского района …» (as written)."""
    m = re.match(r"^(?:\w+\s+)?(?:постановление|решение|приказ|распоряжение)\s+(.+?)\s+от\s+\d", own, re.I)
    if m:
        return m.group(1)
    m = re.match(r"^(.+?)\s+\d{4}\s+жылғы", own)
    return m.group(1) if m else None


def _is_kazakh(text: str) -> bool:
    return bool(re.search(r"[ӘәҒғҚқҢңӨөҰұҮүҺһІі]", text)) and "жылғы" in text


def code_requisites(code: CodeRef, language: str) -> Requisites:
    """The requisites a code's reference row vouches for, titled in ``language`` (rus, kaz, eng)."""
    key = {"rus": "ru", "kaz": "kz", "eng": "en"}.get(language, "ru")
    titles = [code.titles[k] for k in ("ru", "kz", "en")]
    return Requisites(
        doc_title=code.titles.get(key) or code.titles["ru"],
        doc_type=code.doc_type,
        adilet_id=code.adilet_id,
        law_zrk=code.law_zrk,
        date_approved=code.date_approved,
        issuer="Парламент РК" if code.doc_type == "code" else None,
        jurisdiction="KZ",
        aliases=list(dict.fromkeys([*code.aliases, *titles])),
    )
