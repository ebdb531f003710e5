"""A generated corpus shaped like the real one, for the benchmarks (``make bench``).

- **Lengths** follow the real Labour Code: each article's length and paragraph count are drawn from the
  quantiles of the 221 articles zan extracts from ``adilet/rus/K1500000414.html``
  (``labour_code_articles.json``; ``--measure PAGE`` recomputes them from a page).
- **Confusable numbers**: ministerial orders of six issuers share a small pool of numbers (21, 211, 2119,
  311, 411, 112, 121 …) across the years 2015–2025, and laws are numbered «№ N-VIII ЗРК» with neighbouring N,
  so a registry lookup has to tell 211 from 2119, МТСЗН's № 211 from МЧС's, 2019's from 2024's.
- Pages are adilet layout (``scripts/sample_adilet.py``): laws «Z…» with «Статья N.» headings, orders «V…»
  with their rules' chapters and numbered пункты.

    python benchmarks/corpus.py OUT --chunks 20000     # writes OUT/*.html, prints documents and bytes
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from sample_adilet import adilet_page  # noqa: E402

SHAPE = json.loads((Path(__file__).parent / "labour_code_articles.json").read_text("utf-8"))
ISSUERS = [
    "Министра труда и социальной защиты населения Республики Казахстан",
    "Министра по чрезвычайным ситуациям Республики Казахстан",
    "Министра энергетики Республики Казахстан",
    "Министра здравоохранения Республики Казахстан",
    "Министра индустрии и инфраструктурного развития Республики Казахстан",
    "Министра внутренних дел Республики Казахстан",
]
NUMBERS = [21, 211, 2119, 311, 411, 112, 121, 1211, 12, 2110]
MONTHS = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
          "ноября", "декабря"]  # fmt: skip
WORDS = (
    "работодатель",
    "обязан",
    "обеспечить",
    "безопасные",
    "условия",
    "труда",
    "работников",
    "средства",
    "индивидуальной",
    "защиты",
    "инструктаж",
    "проверка",
    "знаний",
    "охрана",
    "производственный",
    "контроль",
    "опасный",
    "объект",
    "расследование",
    "несчастного",
    "случая",
    "комиссия",
    "требования",
    "нормативы",
    "аттестация",
    "рабочих",
    "мест",
    "вредные",
    "факторы",
)
CHUNK_CHARS = 1500  # enrich.chunking.MAX_CHARS: an article longer than this is several chunks


def drawn(rng: random.Random, values: list[int]) -> int:
    """A value drawn from the quantile table ``values`` (inverse CDF, linear between quantiles)."""
    q = rng.random()
    qs = SHAPE["quantiles"]
    i = min(len(qs) - 2, bisect.bisect_right(qs, q) - 1)
    share = (q - qs[i]) / (qs[i + 1] - qs[i])
    return round(values[i] + share * (values[i + 1] - values[i]))


def prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words).capitalize() + "."


def article_paragraphs(rng: random.Random) -> list[str]:
    chars = max(60, drawn(rng, SHAPE["article_chars"]))
    count = max(1, min(drawn(rng, SHAPE["article_paragraphs"]), chars // 40))
    return [f"{n}. {prose(rng, chars // count)}" for n in range(1, count + 1)]


def chunks_of(paragraphs: list[str]) -> int:
    return max(1, -(-sum(len(p) for p in paragraphs) // CHUNK_CHARS))


@dataclass
class Written:
    documents: int
    estimated_chunks: int
    bytes: int


def write_corpus(folder: Path, chunks: int, seed: int = 7) -> Written:
    """Pages until about ``chunks`` chunks: two laws for every order, like the real corpus's mix."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    total = size = n = 0
    while total < chunks:
        n += 1
        page, estimate = (_order if n % 3 == 0 else _law)(rng, n)
        path = folder / f"{page[0]}.html"
        path.write_text(page[1], "utf-8")
        total += estimate
        size += path.stat().st_size
    return Written(n, total, size)


def _date(rng: random.Random) -> tuple[int, str]:
    year = rng.randint(2015, 2025)
    return year, f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {year} года"


def _law(rng: random.Random, n: int) -> tuple[tuple[str, str], int]:
    year, date = _date(rng)
    adilet_id = f"Z{year % 100:02d}{n:08d}"
    number = f"{100 + n % 400}-VIII"
    articles = rng.randint(20, 80)
    blocks: list[tuple[str, str]] = []
    estimate = 0
    for a in range(1, articles + 1):
        paragraphs = article_paragraphs(rng)
        blocks += [("art", f"Статья {a}. {prose(rng, 40)[:-1]}")] + [("p", p) for p in paragraphs]
        estimate += chunks_of(paragraphs)
    requisites = f"Закон Республики Казахстан от {date} № {number} ЗРК."
    page = adilet_page(adilet_id, "rus", f"О безопасности и охране труда (закон {n})", "Действующий", requisites,
                       blocks)  # fmt: skip
    return (adilet_id, page), estimate


def _order(rng: random.Random, n: int) -> tuple[tuple[str, str], int]:
    year, date = _date(rng)
    registration = 10_000 + n
    adilet_id = f"V{year % 100:02d}000{registration:05d}"
    issuer, number = rng.choice(ISSUERS), rng.choice(NUMBERS)
    requisites = (f"Приказ {issuer} от {date} № {number}. Зарегистрирован в Министерстве юстиции Республики "
                  f"Казахстан {date} № {registration}.")  # fmt: skip
    blocks: list[tuple[str, str]] = [("p", "В соответствии со статьей 16 Трудового кодекса Республики Казахстан "
                                           "ПРИКАЗЫВАЮ:")]  # fmt: skip
    blocks += [("p", "1. Утвердить прилагаемые Правила."), ("p", "2. Настоящий приказ вводится в действие.")]
    blocks += [("table", "Министр"), ("bold", "Приложение к приказу"), ("h3", f"Правила {n}")]
    estimate, point = 0, 0
    for chapter in range(1, rng.randint(3, 10) + 1):
        paragraphs = article_paragraphs(rng)
        numbered = []
        for p in paragraphs:
            point += 1
            numbered.append(f"{point}. {p.split('. ', 1)[1]}")
        blocks += [("h3", f"Глава {chapter}. {prose(rng, 30)[:-1]}")] + [("p", p) for p in numbered]
        estimate += chunks_of(numbered)
    title = f"Об утверждении Правил {n}"
    return (adilet_id, adilet_page(adilet_id, "rus", title, "Действующий", requisites, blocks)), estimate


def measure(page: Path) -> dict[str, list[int]]:
    """The quantile table of one real page's articles, as zan extracts them."""
    from extractors.discover import extract_file

    document = extract_file(page).document
    if document is None:
        raise SystemExit(f"{page}: not extracted")
    articles = [u for u in document.units if u.kind == "article" and not u.annex]
    lengths = sorted(sum(len(p) for p in u.paragraphs) for u in articles)
    counts = sorted(len(u.paragraphs) for u in articles)
    pick = [round(q * (len(articles) - 1)) for q in SHAPE["quantiles"]]
    return {"article_chars": [lengths[i] for i in pick], "article_paragraphs": [counts[i] for i in pick]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--measure", type=Path, help="print the quantile table of this page instead")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    if args.out is None:
        parser.error("OUT is required unless --measure")
    written = write_corpus(args.out, args.chunks, args.seed)
    print(f"{written.documents} documents, ~{written.estimated_chunks} chunks, {written.bytes / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
