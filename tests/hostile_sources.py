"""Sources written to attack the service that shows them (issue 42): zan.gov.kz records whose ``url`` is a
script in every spelling a browser would run, an order number that is markup, and an adilet page with 30 000
editorial notes. Written by the tests into their own temporary folders; the real corpus is never touched."""

from __future__ import annotations

import json
from pathlib import Path

# Each a value a source may put in ``url``; none may become an href.
HOSTILE_URLS = (
    "javascript:alert(document.domain)//adilet.zan.kz/rus/docs/V2400035612",
    "JaVaScRiPt:document.body.setAttribute('data-pwned','1')",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "javascript&#58;alert(1)",
    "&#106;avascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "https://adilet.zan.kz@evil.example/rus/docs/V2400035612",
    "//evil.example/x",
    "https://evil.example/rus/docs/V2400035612",
)
GOOD_URL = "https://zan.gov.kz/client/#!/doc/990001/rus"
MARKUP_NUMBER = '777"><img src=x onerror=alert(1)>'


def write_hostile_records(folder: Path) -> dict[str, str]:
    """One zan.gov.kz record per hostile URL, one with a good URL, one whose number is markup; returns
    doc_id → the url written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    urls = [*HOSTILE_URLS, GOOD_URL]
    for n, url in enumerate(urls):
        portal_id = 990001 + n
        number = MARKUP_NUMBER if url == GOOD_URL else str(500 + n)
        record = {
            "_id": str(portal_id),
            "title": f"Об утверждении Правил проверки номер {n} по безопасности и охране труда",
            "url": url,
            "language": "ru",
            "requisites": f"Приказ Министра труда и социальной защиты населения Республики Казахстан "
            f"от 12 марта 2025 года № {number}.",
            "status": "exe",
            "act_types": "ПРИК",
            "text": "Об утверждении Правил проверки\n1. Утвердить прилагаемые Правила.\n"
            "2. Настоящий приказ вводится в действие по истечении десяти календарных дней.\n"
            "Правила проверки\n1. Работодатель проводит проверку знаний по безопасности и охране труда.\n"
            "2. Проверка проводится не реже одного раза в год.",
        }
        (folder / f"{portal_id}_rus.json").write_text(json.dumps(record, ensure_ascii=False), "utf-8")
        written[f"zan-{portal_id}"] = url
    return written


NOTES_ID = "V2499000777"


def write_noted_page(folder: Path, articles: int = 300, notes_each: int = 90, one_article_notes: int = 3_000) -> int:
    """An adilet page of ``articles`` articles, each with ``notes_each`` «Сноска» notes, and article 1 with
    ``one_article_notes`` more (30 000 notes in all by default); returns how many notes were written."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = ["<html><head><title>Закон о нотах</title></head><body><h1>Закон о многих изменениях</h1>",
             '<span class="status status_upd">Обновленный</span>',
             "<p>Закон Республики Казахстан от 1 июля 2020 года № 350-VI ЗРК.</p><article>"]  # fmt: skip
    total = 0
    for a in range(1, articles + 1):
        parts.append(f"<p><b>Статья {a}. Положение {a}</b></p><p>&nbsp; 1. Текст статьи {a} о безопасности.</p>")
        count = notes_each + (one_article_notes if a == 1 else 0)
        for n in range(count):
            year, day = 2000 + n % 24, 1 + n % 28
            parts.append(f'<span class="note">Сноска. Статья {a} с изменениями, внесенными Законом РК от '
                         f"{day:02d}.03.{year} № {100 + n}-VII.</span><br>")  # fmt: skip
        total += count
    parts.append("</article></body></html>")
    (folder / f"{NOTES_ID}.html").write_text("".join(parts), "utf-8")
    return total
