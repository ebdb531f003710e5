"""A LlamaIndex retriever over `zan serve` (``pip install zan-client[llamaindex]``): the same nodes as the
LangChain retriever, as ``NodeWithScore`` with the same metadata.

    from zan_client.llamaindex import ZanRetriever
    nodes = ZanRetriever(base_url="http://127.0.0.1:8787", k_per_doc=3).retrieve("ст. 182 ТК РК")

A question naming a document the registry does not hold returns no nodes; :attr:`last_refusal` says why.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from zan_client._documents import passages, refusal
from zan_client.client import AsyncZanClient, ZanClient
from zan_client.models import LookupAnswer


class ZanRetriever(BaseRetriever):
    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8787",
        token: str | None = None,
        k_per_doc: int = 3,
        k: int = 10,
        timeout: float = 30.0,
        retries: int = 3,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.base_url, self.token, self.k_per_doc, self.k = base_url, token, k_per_doc, k
        self.timeout, self.retries = timeout, retries
        self.last_refusal: dict[str, Any] | None = None
        self._client = ZanClient(base_url, token, timeout, retries)

    def _nodes(self, answer: LookupAnswer) -> list[NodeWithScore]:
        found = passages(answer, self.k)
        self.last_refusal = None if found or answer.chunks else refusal(answer)
        return [
            NodeWithScore(node=TextNode(id_=meta["chunk_id"], text=text, metadata=meta), score=score)
            for text, meta, score in found
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self._client.lookup(query_bundle.query_str, k_per_doc=self.k_per_doc, k=self.k))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncZanClient(self.base_url, self.token, self.timeout, self.retries) as client:
            answer = await client.lookup(query_bundle.query_str, k_per_doc=self.k_per_doc, k=self.k)
        return self._nodes(answer)
