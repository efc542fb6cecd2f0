"""Token counting, context windows and token pressure.

Counts are exact with tiktoken, using the encodings litellm ships (cl100k_base, o200k_base,
p50k_base in ``litellm/litellm_core_utils/tokenizers/``), so nothing is downloaded:
``TIKTOKEN_CACHE_DIR`` is pointed there before tiktoken's first use unless the user set it
(litellm sets the same variable process-wide on its first count). Models whose tokenizer is
unknown to tiktoken use cl100k_base, which is close for most modern models; if tiktoken cannot
load at all, an approximate count of ``ceil(len(text) / 4)`` is used and
:attr:`TokenCounter.exact` is False.

Counting is memoised per (encoding, text) in a bounded LRU, so unchanged components are not
re-counted every tick.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_CONTEXT_WINDOW = 8192
MESSAGE_OVERHEAD = 3  # tokens per message in the chat format
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


def _litellm_tokenizer_dir() -> str | None:
    spec = importlib.util.find_spec("litellm")
    if not spec or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")
    return path if os.path.isdir(path) else None


def _ensure_offline_cache() -> None:
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        path = _litellm_tokenizer_dir()
        if path:
            os.environ["TIKTOKEN_CACHE_DIR"] = path


def encoding_name_for(model: str | None) -> str:
    """The tiktoken encoding used for ``model`` (o200k for the GPT-4o/o-series family)."""
    name = (model or "").split("/")[-1].lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    return "cl100k_base"


@lru_cache(maxsize=8)
def _encoding(name: str):
    _ensure_offline_cache()
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception:
        return None


@lru_cache(maxsize=4096)
def _count_cached(encoding_name: str, text: str) -> int:
    enc = _encoding(encoding_name)
    if enc is None:
        return math.ceil(len(text) / 4)
    return len(enc.encode(text, disallowed_special=()))


def count_cache_info():
    """``functools`` cache statistics of the memoised counter."""
    return _count_cached.cache_info()


class TokenCounter:
    """Counts tokens for one model.

    Args:
        model: Model name (litellm style, e.g. ``openai/gpt-4o-mini``).
    """

    def __init__(self, model: str | None = None):
        self.model = model or ""
        self.encoding_name = encoding_name_for(self.model)

    @property
    def exact(self) -> bool:
        """Whether counts come from tiktoken (False: the len/4 approximation)."""
        return _encoding(self.encoding_name) is not None

    def count_text(self, text: str | None) -> int:
        if not text:
            return 0
        return _count_cached(self.encoding_name, str(text))

    def count_message(self, message: dict) -> int:
        tokens = MESSAGE_OVERHEAD
        content = message.get("content")
        if isinstance(content, list):  # multi-part content
            content = " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        tokens += self.count_text(content)
        if message.get("name"):
            tokens += self.count_text(message["name"]) + 1
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            tokens += 3 + self.count_text(function.get("name")) + self.count_text(function.get("arguments"))
        if message.get("tool_call_id"):
            tokens += self.count_text(message["tool_call_id"])
        return tokens

    def count_messages(self, messages: list[dict]) -> int:
        """Tokens of a chat request's messages, with the chat format's overhead."""
        return sum(self.count_message(m) for m in messages or []) + REPLY_PRIMING

    def count_tools(self, tools: list[dict] | None) -> int:
        """Tokens of the tool schemas as sent (their JSON)."""
        if not tools:
            return 0
        return self.count_text(json.dumps(tools, separators=(",", ":"), sort_keys=True))

    def count_request(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        """Tokens of a whole request exactly as sent (messages and tool schemas)."""
        return self.count_messages(messages) + self.count_tools(tools)


def count_text(text: str | None, model: str | None = None) -> int:
    return TokenCounter(model).count_text(text)


def count_messages(messages: list[dict], model: str | None = None) -> int:
    return TokenCounter(model).count_messages(messages)


def count_tools(tools: list[dict] | None, model: str | None = None) -> int:
    return TokenCounter(model).count_tools(tools)


def count_request(messages: list[dict], tools: list[dict] | None, model: str | None = None) -> int:
    return TokenCounter(model).count_request(messages, tools)


@lru_cache(maxsize=256)
def _litellm_window(model: str) -> int | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except Exception:
        return None
    for name in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(name)
        if info:
            value = info.get("max_input_tokens") or info.get("max_tokens")
            if value:
                return int(value)
    return None


def get_context_window(model: str | None) -> int:
    """The model's context window in tokens.

    Order: ``EVENNIA_AI_CONTEXT_WINDOWS[model]``, ``EVENNIA_AI_MODEL_SETTINGS[model]
    ["context_window"]``, litellm's model info, then :data:`DEFAULT_CONTEXT_WINDOW`.
    """
    from evennia_ai import conf

    model = model or ""
    overrides = conf.get("EVENNIA_AI_CONTEXT_WINDOWS") or {}
    if model in overrides:
        return int(overrides[model])
    settings = (conf.get("EVENNIA_AI_MODEL_SETTINGS") or {}).get(model) or {}
    if settings.get("context_window"):
        return int(settings["context_window"])
    if model and model != conf.OFFLINE_MODEL:
        window = _litellm_window(model)
        if window:
            return window
    return DEFAULT_CONTEXT_WINDOW


@dataclass
class ModelContextLimits:
    """How a model's window is shared (the spec's ModelContextLimits).

    Attributes:
        max_tokens: The whole context window.
        memory_tokens: Share for memory sections (character, entities, memories, blocks).
        history_tokens: Share for conversation history.
        reserved_response_tokens: Kept free for the answer.
    """

    max_tokens: int
    memory_tokens: int
    history_tokens: int
    reserved_response_tokens: int

    @property
    def prompt_budget(self) -> int:
        """Tokens a request may use: the window minus the reserved response tokens."""
        return max(0, self.max_tokens - self.reserved_response_tokens)


def get_model_limits(model: str | None) -> ModelContextLimits:
    """Limits for ``model``: reserved response from settings, 25 % memory, 40 % history."""
    from evennia_ai import conf

    window = get_context_window(model)
    reserved = min(int(conf.get("EVENNIA_AI_RESERVED_RESPONSE_TOKENS")), window // 4)
    usable = window - reserved
    return ModelContextLimits(
        max_tokens=window,
        memory_tokens=int(usable * 0.25),
        history_tokens=int(usable * 0.40),
        reserved_response_tokens=reserved,
    )


def token_pressure(used: int, limit: int) -> str:
    """"normal" below 60 % of ``limit``, "high" from 60 %, "critical" from 80 %."""
    if not limit:
        return "normal"
    ratio = used / limit
    if ratio >= 0.8:
        return "critical"
    if ratio >= 0.6:
        return "high"
    return "normal"


def advisory(used: int, limit: int) -> dict:
    """The spec's ``token_advisory``: level, message and threshold."""
    pressure = token_pressure(used, limit)
    if pressure == "critical":
        return {"level": "critical", "message": "Near the context limit: respond immediately", "threshold": 80}
    if pressure == "high":
        return {"level": "warning", "message": "Context filling: consider wrapping up", "threshold": 60}
    return {"level": "normal", "message": "Sufficient context available", "threshold": 60}
