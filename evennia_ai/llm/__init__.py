"""Model access: one client over litellm, the offline model, the JSON tool protocol."""

from evennia_ai.llm.client import UnifiedLLMClient, configure_litellm_callbacks, get_client
from evennia_ai.llm.types import LLMResult, LLMUsage, ToolCall

__all__ = ["UnifiedLLMClient", "configure_litellm_callbacks", "get_client", "LLMResult",
           "LLMUsage", "ToolCall"]
