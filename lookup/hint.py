"""The note for the LLM: one line per identifier saying what was found, what is ambiguous, what is absent.

Format (the seed's): «✓ 'ст. 182 ТК РК' → Трудовой кодекс РК, ст. 182 (K1500000414)», «⚠ 'Приказ №211' →
соответствует 3 документам: … Спроси пользователя, какой нужен.», «⚠ 'Приказ №999' — НЕ НАЙДЕН в реестре.
Скажи: «этого документа нет в моей базе». Не выдумывай.»
"""

from __future__ import annotations

from lookup.chunks import Chunk
from lookup.lineage import Change, LineageIndex
from lookup.registry_index import DocInfo, Match

ASK = "Спроси пользователя, какой нужен."
REFUSE = "Скажи: «этого документа нет в моей базе». Не выдумывай."
REFUSE_ARTICLE = "Скажи: «этой статьи нет в моей базе». Не выдумывай."
# A document in force needs no remark; one that lost force must be said, so the answer does not cite it as law.
_STATUS_WORDS = {"in_force": "", "updated": "", "unknown": ""}  # repealed: repeal_words (when and by which act)
NO_IDENTIFIER = (
    "В вопросе нет номеров документов. Источники ниже — кандидаты, найденные по тексту вопроса, а не по номеру: "
    "проверь, отвечают ли они на вопрос, прежде чем ссылаться на них."
)
# How the vector half finds chunks, said as it is: hashed character n-grams match spelling, not meaning.
VECTOR_METHOD = {
    "hash": "по сходству написания (хеш символьных n-грамм, не смысл)",
    "e5": "по смыслу (модель multilingual-e5-small)",
    "st": "по смыслу (модель {name})",
    "openai": "по смыслу (модель {name})",
}
_HOW = {
    "both": "{vector} и по словам вопроса (BM25)",
    "vector": "{vector}",
    "lexical": "по словам вопроса (BM25)",
    "document": "среди лучших фрагментов документа, подходящего к вопросу",
}


def vector_method(spec: str) -> str:
    """The words for how an embedder finds chunks, from its spec (``hash``, ``e5``, ``openai:…?model=M``)."""
    kind = spec.split(":", 1)[0].split("?", 1)[0]
    name = spec.rsplit("model=", 1)[-1].split("&", 1)[0] if "model=" in spec else spec.rsplit("/", 1)[-1]
    return VECTOR_METHOD.get(kind, VECTOR_METHOD["st"]).format(name=name)


_ONLY_IN = {
    "rus": "текст есть только на русском",
    "kaz": "текст есть только на казахском",
    "eng": "текст есть только на английском",
}


def plain_words_hint(found: list[Chunk], docs: dict[str, DocInfo], method: str, language: str | None = None) -> str:
    """The note for a question with no identifier: each source, how it was found, and when its act is not
    published in the question's ``language`` (a Kazakh question answered by Russian-only rules), which."""
    lines = [NO_IDENTIFIER]
    for n, chunk in enumerate(found, 1):
        doc = docs.get(chunk.doc_id)
        where = describe(doc, tuple(chunk.article_labels[:1])) if doc else chunk.doc_id
        line = f"[{n}] {where} — найден {_HOW.get(chunk.found_by, _HOW['vector']).format(vector=method)}"
        if doc is not None and language in _ONLY_IN and doc.languages and language not in doc.languages:
            held = sorted(doc.languages)
            line += f" ({_ONLY_IN[held[0]]})" if len(held) == 1 and held[0] in _ONLY_IN else ""
        lines.append(line)
    return "\n".join(lines)


def describe(
    doc: DocInfo, articles: tuple[str, ...] = (), points: tuple[str, ...] = (), lineage: LineageIndex | None = None
) -> str:
    """«Приказ МТСЗН № 211 от 25.12.2024 «Об утверждении…» (V2400035612)», with articles when named (and the
    edition each is in, when the notes say), and what became of a document that lost force."""
    parts = [doc.doc_title]
    if doc.doc_type in ("order", "resolution", "decree") and doc.order_number:
        issued = f"№ {doc.order_number}" + (f" от {doc.date_approved:%d.%m.%Y}" if doc.date_approved else "")
        parts.append(f"{doc.issuer} {issued}" if doc.issuer else issued)
    if articles:
        parts.append(", ".join(_article(doc, a, lineage) for a in articles))
    if points:
        parts.append(", ".join(f"п. {p}" for p in points))
    status = repeal_words(doc) if doc.status == "repealed" else _STATUS_WORDS.get(doc.status, f"статус: {doc.status}")
    return f"{', '.join(parts)} ({doc.ref}{'; ' + status if status else ''})"


def repeal_words(doc: DocInfo) -> str:
    """«УТРАТИЛ СИЛУ с 01.01.2015 (Кодекс РК от 04.07.2014 № 231-V), не цитируй как действующий»."""
    since = f" с {doc.repealed_on:%d.%m.%Y}" if doc.repealed_on else ""
    by = f" ({doc.repealed_by})" if doc.repealed_by else ""
    return f"УТРАТИЛ СИЛУ{since}{by}, не цитируй как действующий"


def _article(doc: DocInfo, article: str, lineage: LineageIndex | None) -> str:
    change = lineage.edition(doc.doc_id, article) if lineage else None
    if change is None:
        return f"ст. {article}"
    part = "заголовок " if change.target.lower().startswith("заголов") else ""
    how = f"{part}в редакции:" if change.relation == "new_edition" else f"{part}последнее изменение:"
    return f"ст. {article} ({how} {change.by_written})"


def _changed(changes: list[Change], docs: dict[str, DocInfo]) -> str:
    """«изменял: Трудовой кодекс РК (K1500000414): ст. 1, 11, 15 …»."""
    by_doc: dict[str, list[str]] = {}
    for c in changes:
        by_doc.setdefault(c.document, []).append(c.article or c.target)
    listed = []
    for doc_id, targets in by_doc.items():
        name = f"{docs[doc_id].doc_title} ({docs[doc_id].ref})" if doc_id in docs else doc_id
        shown = list(dict.fromkeys(targets))
        more = f" и ещё {len(shown) - 30}" if len(shown) > 30 else ""
        listed.append(f"{name}: ст. {', '.join(shown[:30])}{more}")
    return "; ".join(listed)


def hint_line(match: Match, docs: dict[str, DocInfo], lineage: LineageIndex | None = None) -> str:
    raw = match.identifier.raw
    ident = match.identifier
    changes = (
        lineage.changed_by(ident.number) if lineage and ident.number and ident.kind in ("law_number", "order") else []
    )
    changed = f" Этот акт вносил изменения в: {_changed(changes, docs)}." if changes else ""
    if match.status == "exact":
        doc = docs[match.doc_ids[0]]
        found = describe(doc, match.articles, match.points, lineage)
        if doc.incomplete:
            found += " (текст в источнике неполный: части документа, например приложения, отсутствуют — скажи об этом)"
        if doc.status != "repealed":
            return f"✓ '{raw}' → {found}{changed}"
        instead = docs.get(doc.replaced_by or "")
        now = f" Вместо него действует: {describe(instead)}; его фрагменты даны рядом." if instead else ""
        return f"⚠ '{raw}' → {found}. Документ утратил силу: так и скажи.{now}{changed}"
    if match.candidates_only:
        listed = "; ".join(describe(docs[d], match.articles) for d in match.doc_ids)
        found = f" Такая статья есть в: {listed}." if listed else ""
        return f"⚠ '{raw}' — не сказано, какого документа.{found} Спроси пользователя, о каком документе речь."
    if match.status == "ambiguous":
        listed = "; ".join(describe(docs[d], match.articles) for d in match.doc_ids)
        return f"⚠ '{raw}' → соответствует {len(match.doc_ids)} документам: {listed}. {ASK}"
    if match.near and match.identifier.article and match.identifier.kind in ("code_article", "article"):
        where = "; ".join(describe(docs[d]) for d in match.near)
        return f"⚠ '{raw}' — статья {match.identifier.article} НЕ НАЙДЕНА в {where}. {REFUSE_ARTICLE}"
    if match.identifier.bound_to is not None and match.reason:  # an article of a document that is not there
        return f"⚠ '{raw}' — {match.reason}. {REFUSE}"
    line = f"⚠ '{raw}' — НЕ НАЙДЕН в реестре. {REFUSE}"
    if match.near:
        others = "; ".join(describe(docs[d]) for d in match.near)
        line += f" С тем же номером есть другие документы, это не они: {others}."
    if changes:  # its text is not here, but the notes of documents that are say what it changed
        line += f" Известно лишь из сносок, что он вносил изменения в: {_changed(changes, docs)}."
    return line


def hint(matches: list[Match], docs: dict[str, DocInfo], lineage: LineageIndex | None = None) -> str:
    """All lines, in query order; a fixed note when the query named no identifier."""
    return "\n".join(hint_line(m, docs, lineage) for m in matches) if matches else NO_IDENTIFIER
