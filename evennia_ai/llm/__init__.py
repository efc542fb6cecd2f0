"""Model access: one client over litellm, the offline model, the JSON tool protocol.

Public API::

    from evennia_ai.llm import get_client, UnifiedLLMClient, LLMResult, ToolCall

    d = get_client().complete(messages, tools=schemas, model=npc_model)  # Deferred -> LLMResult

Modules: :mod:`~evennia_ai.llm.types` (results, pure), :mod:`~evennia_ai.llm.json_protocol`
(tool calls as JSON text, pure), :mod:`~evennia_ai.llm.offline` (the offline model, pure) and
:mod:`~evennia_ai.llm.client` (litellm and Twisted threads). The client is imported on first
use, so importing the pure modules does not pull in Twisted.
"""

from evennia_ai.llm.types import LLMResult, LLMUsage, ToolCall

_CLIENT_NAMES = ("UnifiedLLMClient", "configure_litellm_callbacks", "get_client")

__all__ = ["UnifiedLLMClient", "configure_litellm_callbacks", "get_client", "LLMResult",
           "LLMUsage", "ToolCall"]


def __getattr__(name):
    if name in _CLIENT_NAMES:
        from evennia_ai.llm import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
