"""zan_client: talk to `zan serve` from a chatbot — the typed answer (:mod:`zan_client.models`), sync and async
clients (:mod:`zan_client.client`), and retrievers for LangChain (:mod:`zan_client.langchain`) and LlamaIndex
(:mod:`zan_client.llamaindex`). It installs none of the ETL."""

from zan_client.client import AsyncZanClient, ZanClient, ZanError
from zan_client.models import LookupAnswer

__all__ = ["AsyncZanClient", "LookupAnswer", "ZanClient", "ZanError"]
