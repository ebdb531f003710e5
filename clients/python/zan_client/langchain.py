"""A LangChain retriever over `zan serve` (``pip install zan-client[langchain]``).

    from zan_client.langchain import ZanRetriever
    retriever = ZanRetriever(base_url="http://127.0.0.1:8787", token=None, k_per_doc=3)
    docs = retriever.invoke("ст. 182 ТК РК")   # article 182's chunks, metadata: doc_id, article, status, …

Identifiers are resolved by the server before any ranking: a question naming a document gets only that
document's chunks (the named article's, when one is named). A question naming a document the registry does
not hold returns no documents; the refusal (status and hint) goes to the callbacks as text, and is kept
as :attr:`ZanRetriever.last_refusal` for a caller that wants to tell the user why.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from zan_client._documents import passages, refusal
from zan_client.client import AsyncZanClient, ZanClient
from zan_client.models import LookupAnswer


class ZanRetriever(BaseRetriever):
    """Chunks for a question from `zan serve`: identifiers first (``k_per_doc`` per named document), plain
    words otherwise (``k`` in all; ``k`` also caps an identifier answer)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str = "http://127.0.0.1:8787"
    token: str | None = Field(default=None, repr=False)
    k_per_doc: int = Field(default=3, ge=1, le=100)
    k: int = Field(default=10, ge=1, le=50)
    timeout: float = 30.0
    retries: int = 3
    last_refusal: dict[str, Any] | None = None
    _client: ZanClient | None = PrivateAttr(default=None)

    def _sync(self) -> ZanClient:
        if self._client is None:
            self._client = ZanClient(self.base_url, self.token, self.timeout, self.retries)
        return self._client

    def _documents(self, answer: LookupAnswer, k: int) -> list[Document]:
        found = passages(answer, k)
        self.last_refusal = None if found or answer.chunks else refusal(answer)
        return [Document(page_content=text, metadata=meta, id=meta["chunk_id"]) for text, meta, _ in found]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        answer = self._sync().lookup(query, k_per_doc=int(kwargs.get("k_per_doc", self.k_per_doc)), k=k)
        documents = self._documents(answer, k)
        if not documents:
            run_manager.on_text(f"zan: {answer.status}: {answer.hint}")
        return documents

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        async with AsyncZanClient(self.base_url, self.token, self.timeout, self.retries) as client:
            answer = await client.lookup(query, k_per_doc=int(kwargs.get("k_per_doc", self.k_per_doc)), k=k)
        documents = self._documents(answer, k)
        if not documents:
            await run_manager.on_text(f"zan: {answer.status}: {answer.hint}")
        return documents
