"""The note for the LLM: one line per identifier saying what was found, what is ambiguous, what is absent.

Format (the seed's): «✓ 'ст. 182 ТК РК' → Трудовой кодекс РК, ст. 182 (K1500000414)», «⚠ 'Приказ №211' →
соответствует 3 документам: … Спроси пользователя, какой нужен.», «⚠ 'Приказ №999' — НЕ НАЙДЕН в реестре.
Скажи: «этого документа нет в моей базе». Не выдумывай.»
"""

from __future__ import annotations

from lookup.registry_index import DocInfo, Match

ASK = "Спроси пользователя, какой нужен."
REFUSE = "Скажи: «этого документа нет в моей базе». Не выдумывай."
REFUSE_ARTICLE = "Скажи: «этой статьи нет в моей базе». Не выдумывай."
# A document in force needs no remark; one that lost force must be said, so the answer does not cite it as law.
_STATUS_WORDS = {"in_force": "", "updated": "", "unknown": "", "repealed": "УТРАТИЛ СИЛУ, не цитируй как действующий"}
NO_IDENTIFIER = "В вопросе нет номеров документов: источники найдены смысловым поиском, проверь их по тексту."


def describe(doc: DocInfo, articles: tuple[str, ...] = (), points: tuple[str, ...] = ()) -> str:
    """«Приказ МТСЗН № 211 от 25.12.2024 «Об утверждении…» (V2400035612)», with articles when named."""
    parts = [doc.doc_title]
    if doc.doc_type in ("order", "resolution", "decree") and doc.order_number:
        issued = f"№ {doc.order_number}" + (f" от {doc.date_approved:%d.%m.%Y}" if doc.date_approved else "")
        parts.append(f"{doc.issuer} {issued}" if doc.issuer else issued)
    if articles:
        parts.append(", ".join(f"ст. {a}" for a in articles))
    if points:
        parts.append(", ".join(f"п. {p}" for p in points))
    status = _STATUS_WORDS.get(doc.status, f"статус: {doc.status}")
    return f"{', '.join(parts)} ({doc.ref}{'; ' + status if status else ''})"


def hint_line(match: Match, docs: dict[str, DocInfo]) -> str:
    raw = match.identifier.raw
    if match.status == "exact":
        return f"✓ '{raw}' → {describe(docs[match.doc_ids[0]], match.articles, match.points)}"
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
    return line


def hint(matches: list[Match], docs: dict[str, DocInfo]) -> str:
    """All lines, in query order; a fixed note when the query named no identifier."""
    return "\n".join(hint_line(m, docs) for m in matches) if matches else NO_IDENTIFIER
