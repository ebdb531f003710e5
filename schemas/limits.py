"""How large anything a caller sends may be: one place the CLI, the HTTP API, the pages and the MCP server
read (a bound written as a literal in one of them drifted from the others before).

Nothing here imports anything: the CLI reads these while it starts.
"""

from __future__ import annotations

MAX_QUERY_CHARS = 2000  # a question, not a document: longer input is refused with this reason
MAX_QUERY_PARAM = 4 * MAX_QUERY_CHARS  # a question as sent, before its spaces and escapes are cleaned
MAX_IDENTIFIERS = 20  # identifiers resolved per question; the hint says when more were named
MAX_K_PER_DOC = 100  # chunks asked of each matched document
MAX_K = 50  # chunks asked of a plain-words answer
MAX_FIELD_CHARS = 200  # a doc_id, an issuer, a type or a status filter, a title search
MAX_LABEL_CHARS = 50  # an article's label («156», «10bis», «annex1/ch2»)
