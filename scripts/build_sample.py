"""Regenerate data/sample/, the bundled corpus, from the content in scripts/sample_*.py.

Usage: uv run python scripts/build_sample.py   (needs the dev dependency fpdf2 for the one PDF)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sample_acts import CIVIL_PROTECTION_LAW, LABOUR_CODE_KZ, LABOUR_CODE_RU  # noqa: E402
from sample_adilet import adilet_page  # noqa: E402
from sample_orders import ORDERS, order_page_blocks  # noqa: E402
from sample_standards import (  # noqa: E402
    API_RP_75_TXT,
    GOST_12_0_004_TXT,
    IOGP_423_LINES,
    ISO_45001_TXT,
    NFPA_652_HTML,
    OSHA_1910_146_XML,
    TR_TS_004_HTML,
)

OUT = Path(__file__).resolve().parent.parent / "data" / "sample"


def write(relative: str, content: str | bytes) -> None:
    path = OUT / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def pdf(lines: list[str]) -> bytes:
    from fpdf import FPDF

    doc = FPDF()
    doc.set_creator("zan bundled corpus")
    doc.add_page()
    doc.set_font("Helvetica", size=11)
    for line in lines:
        doc.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(doc.output())


def main() -> None:
    write(
        "adilet/rus/K1500000414.html",
        adilet_page(
            "K1500000414",
            "rus",
            "Трудовой кодекс Республики Казахстан",
            "Обновленный",
            "Кодекс Республики Казахстан от 23 ноября 2015 года № 414-V ЗРК.",
            LABOUR_CODE_RU,
        ),
    )
    write(
        "adilet/kaz/K1500000414.html",
        adilet_page(
            "K1500000414",
            "kaz",
            "Қазақстан Республикасының Еңбек кодексі",
            "Жаңартылған",
            "Қазақстан Республикасының 2015 жылғы 23 қарашадағы № 414-V ҚРЗ Кодексі.",
            LABOUR_CODE_KZ,
        ),
    )
    write(
        "adilet/rus/Z1400000188.html",
        adilet_page(
            "Z1400000188",
            "rus",
            "О гражданской защите",
            "Обновленный",
            "Закон Республики Казахстан от 11 апреля 2014 года № 188-V ЗРК.",
            CIVIL_PROTECTION_LAW,
        ),
    )
    for order in ORDERS:
        write(
            f"adilet/rus/{order['id']}.html",
            adilet_page(
                order["id"], "rus", order["title"], "Действующий", order["requisites"], order_page_blocks(order)
            ),
        )
    mtszn = ORDERS[0]
    record = {
        "_id": "900211",
        "_source": "KZ/Adilet",
        "_type": "legislation",
        "title": mtszn["title"],
        "date": "2024-12-25",
        "url": "https://adilet.zan.kz/rus/docs/900211",
        "language": "ru",
        "code": "900211",
        "requisites": mtszn["requisites"].split(" Зарегистрирован")[0],
        "status": "exe",
        "act_types": "ПРИК",
        "text": "\n".join([mtszn["title"], "", mtszn["preamble"], *mtszn["points"]]),
    }
    write("zan/900211_rus.json", json.dumps(record, ensure_ascii=False, indent=1))
    write("standards/osha/29CFR1910.146.xml", OSHA_1910_146_XML)
    write("standards/api/API_RP_75.txt", API_RP_75_TXT)
    write("standards/iso/ISO_45001_2018.txt", ISO_45001_TXT)
    write("standards/nfpa/NFPA_652.html", NFPA_652_HTML)
    write("standards/eaeu/TR_TS_004_2011.html", TR_TS_004_HTML)
    write("standards/gost/GOST_12.0.004-2015.txt", GOST_12_0_004_TXT)
    write("standards/iogp/IOGP_423.pdf", pdf(IOGP_423_LINES))


if __name__ == "__main__":
    main()
