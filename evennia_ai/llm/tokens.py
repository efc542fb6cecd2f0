"""Token counting, model context windows and token pressure.

Pure module: no Django, Evennia or Twisted at import time (litellm and tiktoken are imported
lazily, inside the functions that need them).

**Counting.** Counts come from tiktoken, using only the encodings found on disk, so nothing is
ever downloaded: litellm ships ``cl100k_base``, ``o200k_base`` and ``p50k_base`` in
``litellm/litellm_core_utils/tokenizers/``, and before tiktoken's first use
``TIKTOKEN_CACHE_DIR`` is pointed there unless it is already set to a non-empty value (litellm
sets the same variable process-wide on its own first count). An encoding whose file is not in
that folder (``r50k_base``, ``gpt2``) is never loaded: tiktoken would fetch it over HTTP with no
timeout, on the reactor thread.

The encoding is chosen by model name (the part after the last ``/`` of a litellm name):

- a name tiktoken maps to an encoding (``gpt-4o-mini`` -> o200k_base, ``gpt-4`` ->
  cl100k_base, ...), or one of the GPT-4o / 4.1 / 4.5 / 5 / o-series families (o200k_base):
  that encoding, and the count is **exact** (:attr:`TokenCounter.exact` is True);
- any other model (Claude, Llama, Mistral, a local server behind ``openai/<name>``, the offline
  model): an **estimate** with cl100k_base (``exact`` is False). Measured against the Claude
  tokenizer litellm ships, on English, Python, JSON and German text, cl100k_base counted
  10-11 % under every time, where ``len/4`` ranged from -28 % to +7 %;
- if tiktoken cannot load at all, or the chosen encoding's file is missing:
  ``ceil(len(text) / 4)`` (:data:`APPROXIMATE`; ``exact`` is False, ``encoding_name`` None).

Counts are memoised per (encoding, text) in a bounded LRU (:data:`COUNT_CACHE_SIZE` entries),
so components that do not change are not re-encoded every tick. Texts longer than
:data:`MAX_CACHED_CHARS` are counted without being cached, which bounds the cache's memory.

Chat messages are counted like OpenAI's cookbook: :data:`MESSAGE_OVERHEAD` tokens per message
plus its role, content and name (+1), tool calls' names and arguments, and
:data:`REPLY_PRIMING` tokens once per request. Tool schemas are counted as the compact JSON
that is sent.

**Windows.** :func:`get_context_window` reads ``EVENNIA_AI_CONTEXT_WINDOWS``, then
``EVENNIA_AI_MODEL_SETTINGS[model]["context_window"]``, then what the model's server reported
(:func:`set_served_window`, from :mod:`evennia_ai.llm.served_windows` at server start), then
litellm's bundled model map, then :data:`DEFAULT_CONTEXT_WINDOW` (a guess:
:func:`window_source` says ``"guess"``, and status displays warn). :func:`get_model_limits`
shares a window out as a :class:`ModelContextLimits`; :func:`token_pressure` and
:func:`advisory` grade how full it is (docs/prompts.md, "How a window is shared out").

Example:
    counter = TokenCounter("openai/gpt-4o-mini")
    used = counter.count_request(messages, tool_schemas)
    advice = advisory(used, get_context_window("openai/gpt-4o-mini"))
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import _CacheInfo, lru_cache
from typing import Any, TypedDict

import tiktoken
from tiktoken.model import encoding_name_for_model

from evennia_ai import conf
from evennia_ai.llm.errors import words
from evennia_ai.llm.models import resolve_model

_log = logging.getLogger("evennia_ai")

DEFAULT_CONTEXT_WINDOW = 8192
"""Window assumed for a model nobody describes (the settings nor litellm's map): small on
purpose, so an unknown model is never sent more than it can take."""

MESSAGE_OVERHEAD = 3
"""Tokens every chat message costs besides its text (``<|start|>role<|message|>...<|end|>``)."""

REPLY_PRIMING = 3
"""Tokens priming every reply (``<|start|>assistant<|message|>``), once per request."""

NAME_OVERHEAD = 1
"""Extra token for a message's ``name`` field."""

TOOL_CALL_OVERHEAD = 3
"""Tokens per tool call in an assistant message besides its name and arguments."""

IMAGE_PART_TOKENS = 85
"""Tokens counted for an image part of a multi-part message (OpenAI's low-detail cost)."""

APPROXIMATE = "chars/4"
"""Name of the fallback method: ``ceil(len(text) / 4)``."""

ESTIMATE_ENCODING = "cl100k_base"
"""Encoding used to estimate models whose tokenizer tiktoken does not know."""

COUNT_CACHE_SIZE = 4096
MAX_CACHED_CHARS = 32_000

# Families on o200k_base, for when the installed tiktoken is older than the model.
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")

# Encoding -> the file (OpenAI's blob name) its ranks are read from; tiktoken caches a file
# under the SHA-1 of its URL. Encodings not listed here are never loaded (see module docs).
_ENCODING_FILES = {
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
    "p50k_base": "p50k_base",
    "p50k_edit": "p50k_base",
    "r50k_base": "r50k_base",
}
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


# -- encodings --------------------------------------------------------------------------------
def litellm_tokenizer_dir() -> str | None:
    """The folder of tiktoken files litellm ships, found without importing litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if not spec or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "litellm_core_utils", "tokenizers")
        if os.path.isdir(path):
            return path
    return None


def ensure_offline_encodings() -> str | None:
    """Point ``TIKTOKEN_CACHE_DIR`` at litellm's tokenizers unless it is set; return it.

    Returns:
        The folder tiktoken will read encodings from, or None if none is known.
    """
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        path = litellm_tokenizer_dir()
        if path:
            os.environ["TIKTOKEN_CACHE_DIR"] = path
    return os.environ.get("TIKTOKEN_CACHE_DIR") or None


def encoding_available(name: str) -> bool:
    """Whether tiktoken can load encoding ``name`` from disk, without the network."""
    stem = _ENCODING_FILES.get(name)
    folder = ensure_offline_encodings()
    if not stem or not folder:
        return False
    key = hashlib.sha1(_BLOB_URL.format(stem).encode()).hexdigest()
    return os.path.isfile(os.path.join(folder, key))


def _model_basename(model: str | None) -> str:
    """``openrouter/openai/gpt-4o`` -> ``gpt-4o`` (lower case)."""
    return (model or "").strip().rsplit("/", 1)[-1].lower()


def encoding_name_for(model: str | None) -> tuple[str, bool]:
    """The tiktoken encoding meant for ``model`` and whether it is the model's own.

    Availability on disk is not checked here (see :func:`resolve_tokenizer`).

    Returns:
        ``(encoding_name, exact)``: exact is False when ``ESTIMATE_ENCODING`` stands in for a
        tokenizer tiktoken does not know.
    """
    name = _model_basename(model)
    if name:
        # Ollama tags ("gpt-oss:20b") are tiktoken's dashed names ("gpt-oss-20b").
        for candidate in dict.fromkeys((name, name.replace(":", "-"))):
            try:
                return encoding_name_for_model(candidate), True
            except KeyError:
                continue
        if name.startswith(_O200K_PREFIXES):
            return "o200k_base", True
    return ESTIMATE_ENCODING, False


@lru_cache(maxsize=256)
def resolve_tokenizer(model: str | None) -> tuple[str | None, bool]:
    """The encoding counts for ``model`` will use, after checking what is on disk.

    Returns:
        ``(encoding_name, exact)``; ``(None, False)`` means :data:`APPROXIMATE`.
    """
    name, exact = encoding_name_for(model)
    if encoding_available(name):
        return name, exact
    if name != ESTIMATE_ENCODING and encoding_available(ESTIMATE_ENCODING):
        return ESTIMATE_ENCODING, False
    return None, False


@lru_cache(maxsize=8)
def _load_encoding(name: str) -> tiktoken.Encoding | None:
    """The tiktoken Encoding ``name``, or None (logged once) if it cannot be loaded."""
    if not encoding_available(name):
        return None
    try:
        return tiktoken.get_encoding(name)
    except Exception as err:  # a corrupt file, a broken install: fall back to chars/4
        _log.warning(
            "evennia_ai: tiktoken cannot load %s (%s); counting chars/4", name, words(err) or "?"
        )
        _log.debug("evennia_ai: tiktoken's error", exc_info=True)
        return None


def _approximate(text: str) -> int:
    return math.ceil(len(text) / 4)


@lru_cache(maxsize=COUNT_CACHE_SIZE)
def _count_cached(encoding_name: str, text: str) -> int:
    return _encode_count(encoding_name, text)


@lru_cache(maxsize=COUNT_CACHE_SIZE)
def _plain_message_cached(encoding_name: str, role: str, content: str) -> int:
    """Tokens of a ``{"role", "content"}`` message (what :meth:`TokenCounter.count_message`
    counts for it, remembered whole: a request repeats most of the last one's messages)."""
    tokens = MESSAGE_OVERHEAD + (_count_cached(encoding_name, role) if role else 0)
    return tokens + (_count_cached(encoding_name, content) if content else 0)


def _encode_count(encoding_name: str, text: str) -> int:
    encoding = _load_encoding(encoding_name)
    if encoding is None:
        return _approximate(text)
    # disallowed_special=(): text that spells "<|endoftext|>" is counted as ordinary text.
    return len(encoding.encode(text, disallowed_special=()))


def count_cache_info() -> _CacheInfo:
    """Hit/miss statistics of the memoised counter (a ``functools`` ``CacheInfo``)."""
    return _count_cached.cache_info()


def clear_caches() -> None:
    """Forget memoised counts, loaded encodings and model resolutions (for tests)."""
    _count_cached.cache_clear()
    _plain_message_cached.cache_clear()
    _load_encoding.cache_clear()
    resolve_tokenizer.cache_clear()
    get_counter.cache_clear()


# -- the counter ------------------------------------------------------------------------------
class TokenCounter:
    """Counts tokens the way one model sees them.

    Args:
        model: A litellm model name (``openai/gpt-4o-mini``, ``ollama/llama3``); empty or None
            counts with the estimate encoding.

    Attributes:
        model: The model name given.
    """

    def __init__(self, model: str | None = None):
        self.model = model or ""
        self._encoding_name, self._exact = resolve_tokenizer(self.model)

    def __repr__(self) -> str:
        return f"<TokenCounter {self.model or '(no model)'}: {self.method}>"

    @property
    def encoding_name(self) -> str | None:
        """The tiktoken encoding used, or None when counting :data:`APPROXIMATE`."""
        if self._encoding_name and _load_encoding(self._encoding_name) is not None:
            return self._encoding_name
        return None

    @property
    def exact(self) -> bool:
        """True when counts come from the model's own tokenizer, False for estimates."""
        return self._exact and self.encoding_name is not None

    @property
    def method(self) -> str:
        """How counts are made: ``tiktoken:<encoding>``, ``estimate:<encoding>`` or chars/4."""
        encoding = self.encoding_name
        if encoding is None:
            return APPROXIMATE
        return f"{'tiktoken' if self._exact else 'estimate'}:{encoding}"

    def count_text(self, text: Any) -> int:
        """Tokens of ``text`` (None and "" count 0; other values are counted as ``str()``)."""
        if text is None:
            return 0
        if not isinstance(text, str):
            text = str(text)
        if not text:
            return 0
        encoding = self.encoding_name
        if encoding is None:
            return _approximate(text)
        if len(text) > MAX_CACHED_CHARS:
            return _encode_count(encoding, text)
        return _count_cached(encoding, text)

    def count_message(self, message: Mapping[str, Any] | Any) -> int:
        """Tokens of one chat message, without the per-request reply priming."""
        if type(message) is dict and len(message) == 2:  # a plain text message: most of them
            role, content = message.get("role"), message.get("content")
            if type(role) is str and type(content) is str and len(content) <= MAX_CACHED_CHARS:
                encoding = self.encoding_name
                if encoding is not None:
                    return _plain_message_cached(encoding, role, content)
        message = _as_mapping(message)
        tokens = MESSAGE_OVERHEAD
        tokens += self.count_text(message.get("role"))
        tokens += self._count_content(message.get("content"))
        if message.get("name"):
            tokens += self.count_text(message["name"]) + NAME_OVERHEAD
        for call in message.get("tool_calls") or ():
            call = _as_mapping(call)
            function = _as_mapping(call.get("function") or {})
            tokens += TOOL_CALL_OVERHEAD + self.count_text(function.get("name"))
            tokens += self.count_text(_as_json_text(function.get("arguments")))
        legacy_call = message.get("function_call")
        if legacy_call:
            legacy_call = _as_mapping(legacy_call)
            tokens += self.count_text(legacy_call.get("name"))
            tokens += self.count_text(_as_json_text(legacy_call.get("arguments")))
        if message.get("tool_call_id"):
            tokens += self.count_text(message["tool_call_id"])
        return tokens

    def _count_content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        if isinstance(content, (list, tuple)):  # multi-part content
            total = 0
            for part in content:
                if isinstance(part, Mapping):
                    kind = part.get("type")
                    if kind == "text" or (kind is None and "text" in part):
                        total += self.count_text(part.get("text"))
                    elif kind in ("image_url", "input_image", "image"):
                        total += IMAGE_PART_TOKENS
                    else:
                        total += self.count_text(_as_json_text(part))
                else:
                    total += self.count_text(part)
            return total
        return self.count_text(_as_json_text(content))

    def count_messages(self, messages: Iterable[Mapping[str, Any]] | None) -> int:
        """Tokens of a request's chat messages, with the chat format's overhead.

        An empty list counts 0 (nothing would be sent); otherwise :data:`REPLY_PRIMING` is
        added once.
        """
        messages = list(messages or ())
        if not messages:
            return 0
        return sum(self.count_message(m) for m in messages) + REPLY_PRIMING

    def count_tools(self, tools: Iterable[Mapping[str, Any]] | None) -> int:
        """Tokens of the tool schemas as sent: their compact JSON."""
        tools = list(tools or ())
        if not tools:
            return 0
        return self.count_text(_as_json_text(tools))

    def count_request(
        self,
        messages: Iterable[Mapping[str, Any]] | None,
        tools: Iterable[Mapping[str, Any]] | None = None,
    ) -> int:
        """Tokens of a whole request as sent: messages plus tool schemas."""
        return self.count_messages(messages) + self.count_tools(tools)


def _as_mapping(value: Any) -> Mapping[str, Any]:
    """Messages are dicts here; litellm's pydantic messages are accepted too."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump()
        except Exception:
            dumped = None
        if isinstance(dumped, Mapping):
            return dumped
    return {"content": str(value)} if value is not None else {}


def _as_json_text(value: Any) -> str | None:
    """Strings as they are; anything else as the compact JSON an HTTP client would send."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # circular structures
        return str(value)


@lru_cache(maxsize=64)
def get_counter(model: str | None = None) -> TokenCounter:
    """A shared :class:`TokenCounter` for ``model``."""
    return TokenCounter(model)


def count_text(text: Any, model: str | None = None) -> int:
    """Tokens of ``text`` for ``model`` (see :meth:`TokenCounter.count_text`)."""
    return get_counter(model or "").count_text(text)


def count_messages(messages: Iterable[Mapping[str, Any]] | None, model: str | None = None) -> int:
    """Tokens of chat ``messages`` for ``model`` (see :meth:`TokenCounter.count_messages`)."""
    return get_counter(model or "").count_messages(messages)


def count_tools(tools: Iterable[Mapping[str, Any]] | None, model: str | None = None) -> int:
    """Tokens of tool schemas for ``model`` (see :meth:`TokenCounter.count_tools`)."""
    return get_counter(model or "").count_tools(tools)


def count_request(
    messages: Iterable[Mapping[str, Any]] | None,
    tools: Iterable[Mapping[str, Any]] | None = None,
    model: str | None = None,
) -> int:
    """Tokens of a request as sent (see :meth:`TokenCounter.count_request`)."""
    return get_counter(model or "").count_request(messages, tools)


def request_counter(
    model: str | None,
) -> Callable[[Iterable[Mapping[str, Any]] | None, Iterable[Mapping[str, Any]] | None], int]:
    """``count(messages, schemas)``: tokens of a request to ``model`` (None: the server
    default), tools included, as the ReAct loop counts each request it sends."""
    counter = TokenCounter(resolve_model(model))

    def count(
        messages: Iterable[Mapping[str, Any]] | None, schemas: Iterable[Mapping[str, Any]] | None
    ) -> int:
        return counter.count_messages(messages) + (counter.count_tools(schemas) if schemas else 0)

    return count


# -- context windows --------------------------------------------------------------------------
def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _configured_window(model: str) -> int | None:
    overrides = conf.get_dict("EVENNIA_AI_CONTEXT_WINDOWS")
    if model in overrides:
        window = _positive_int(overrides[model])
        if window:
            return window
        _log.warning(
            "evennia_ai: EVENNIA_AI_CONTEXT_WINDOWS[%r] is not a positive whole " "number: %r",
            model,
            overrides[model],
        )
    per_model = conf.get_dict("EVENNIA_AI_MODEL_SETTINGS")
    options = per_model.get(model)
    if isinstance(options, Mapping) and options.get("context_window") is not None:
        window = _positive_int(options["context_window"])
        if window:
            return window
        _log.warning(
            "evennia_ai: EVENNIA_AI_MODEL_SETTINGS[%r]['context_window'] is not a "
            "positive whole number: %r",
            model,
            options["context_window"],
        )
    return None


def model_info(model: str | None) -> Mapping[str, Any] | None:
    """The entry of ``model`` in litellm's bundled model map, or None (the one lookup rule).

    litellm is imported here only, with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first (unless
    the environment already says otherwise) so the import never fetches the map. The map is read
    directly rather than through ``litellm.get_model_info``, which for some providers (Ollama,
    Hugging Face) asks the model's server over HTTP.

    Tried names: ``model`` itself, then without its provider prefix (``openai/gpt-4o`` ->
    ``gpt-4o``), then its last path segment (``openrouter/openai/gpt-4o`` -> ``gpt-4o``). A
    shorter name counts only when its entry names no provider or one of the prefixes the model
    was given with, so ``ollama/gpt-4o`` never borrows OpenAI's entry.
    """
    if not model:
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except Exception:  # litellm missing or broken: nothing is known about any model
        return None
    cost_map = getattr(litellm, "model_cost", None) or {}
    info = cost_map.get(model)
    if isinstance(info, Mapping):
        return info
    if "/" not in model:
        return None
    prefixes = set(model.split("/")[:-1])
    for name in dict.fromkeys((model.split("/", 1)[1], model.rsplit("/", 1)[1])):
        info = cost_map.get(name)
        if isinstance(info, Mapping) and info.get("litellm_provider") in (None, *prefixes):
            return info
    return None


def litellm_context_window(model: str) -> int | None:
    """``max_input_tokens`` (else ``max_tokens``) of ``model`` in litellm's model map, or None."""
    info = model_info(model)
    if info is None:
        return None
    return _positive_int(info.get("max_input_tokens")) or _positive_int(info.get("max_tokens"))


# model -> the window its server reported serving (vLLM's max_model_len, Ollama's num_ctx)
_served_windows: dict[str, int] = {}

#: Where a window came from (:func:`window_source`), as status displays name it.
WINDOW_SOURCES = {
    "setting": "EVENNIA_AI_CONTEXT_WINDOWS / EVENNIA_AI_MODEL_SETTINGS",
    "server": "reported by the model's server",
    "litellm": "litellm's model map",
    "offline": "the built-in offline model",
    "guess": "a guess: litellm does not know this model and its server did not say",
}


def set_served_window(model: str, window: int | None) -> None:
    """Record the window ``model``'s server reports serving (None forgets it)."""
    model = (model or "").strip()
    window = _positive_int(window)
    if window:
        _served_windows[model] = window
    else:
        _served_windows.pop(model, None)


def window_and_source(model: str | None) -> tuple[int, str]:
    """The window of ``model`` and where it came from (a key of :data:`WINDOW_SOURCES`)."""
    model = (model or "").strip()
    window = _configured_window(model)
    if window:
        return window, "setting"
    if model == conf.OFFLINE_MODEL:
        return DEFAULT_CONTEXT_WINDOW, "offline"
    window = _served_windows.get(model)
    if window:
        return window, "server"
    if model:
        window = litellm_context_window(model)
        if window:
            return window, "litellm"
    return DEFAULT_CONTEXT_WINDOW, "guess"


def get_context_window(model: str | None) -> int:
    """The context window of ``model`` in tokens.

    Order: ``EVENNIA_AI_CONTEXT_WINDOWS[model]``, ``EVENNIA_AI_MODEL_SETTINGS[model]
    ["context_window"]`` (both by the exact model name; invalid values are logged and skipped),
    the window the model's server reported (:func:`set_served_window`), litellm's bundled model
    map (:func:`litellm_context_window`; none of these two for the offline model), then
    :data:`DEFAULT_CONTEXT_WINDOW`.
    """
    return window_and_source(model)[0]


def window_source(model: str | None) -> str:
    """Where the window of ``model`` comes from: a key of :data:`WINDOW_SOURCES`."""
    return window_and_source(model)[1]


def window_guessed(model: str | None) -> bool:
    """Whether the window of ``model`` is :data:`DEFAULT_CONTEXT_WINDOW` for want of facts."""
    return window_source(model) == "guess"


@dataclass(frozen=True)
class ModelContextLimits:
    """How one model's context window is shared out (:func:`get_model_limits`).

    Attributes:
        max_tokens: The whole context window.
        memory_tokens: Share for memory sections (character, entities, memories, blocks).
        history_tokens: Share for conversation history.
        reserved_response_tokens: Kept free for the model's answer.
    """

    max_tokens: int
    memory_tokens: int
    history_tokens: int
    reserved_response_tokens: int

    @property
    def prompt_budget(self) -> int:
        """Tokens a request may use: the window minus the reserved response tokens."""
        return self.request_limit()

    def request_limit(
        self, *, max_tokens: int | None = None, token_budget: int | None = None
    ) -> int:
        """Most prompt tokens (messages and tool schemas) one request may have.

        Every check of a request against the window uses it (through :func:`request_limit`):
        fitting the prompt while it is built, the ReAct loop before it sends, and the client's
        gate for each model of the fallback chain.

        Args:
            max_tokens: The reply's own limit when the call sets one: kept free instead of
                :attr:`reserved_response_tokens`.
            token_budget: A context type's own cap on the request (0 or None: none).

        Returns:
            The window minus the tokens kept free for the reply (never below 0), capped at
            ``token_budget``.
        """
        reserved = int(max_tokens) if max_tokens else self.reserved_response_tokens
        limit = max(0, self.max_tokens - reserved)
        if token_budget:
            limit = min(limit, int(token_budget))
        return limit


MEMORY_SHARE = 0.25
"""Share of the prompt budget (window minus reserved) for memory sections."""

HISTORY_SHARE = 0.40
"""Share of the prompt budget for conversation history; the remaining 35 % holds the system
prompt, instructions, the event and the tool schemas."""

MAX_RESERVED_SHARE = 0.25
"""The reserved response never takes more than this share of a window (small local models)."""


def get_model_limits(model: str | None) -> ModelContextLimits:
    """The window of ``model`` shared out.

    ``reserved_response_tokens`` is ``EVENNIA_AI_RESERVED_RESPONSE_TOKENS`` capped at a quarter
    of the window; of the rest, :data:`MEMORY_SHARE` goes to memory and :data:`HISTORY_SHARE`
    to history.
    """
    window = get_context_window(model)
    reserved = min(
        conf.get_int("EVENNIA_AI_RESERVED_RESPONSE_TOKENS"), int(window * MAX_RESERVED_SHARE)
    )
    usable = window - reserved
    return ModelContextLimits(
        max_tokens=window,
        memory_tokens=int(usable * MEMORY_SHARE),
        history_tokens=int(usable * HISTORY_SHARE),
        reserved_response_tokens=reserved,
    )


def request_limit(
    model: str | None, *, max_tokens: int | None = None, token_budget: int | None = None
) -> int:
    """Most prompt tokens one request to ``model`` may have: the window of ``model`` minus the
    tokens kept free for the reply, capped at ``token_budget`` (see
    :meth:`ModelContextLimits.request_limit`, which has the arguments)."""
    return get_model_limits(model).request_limit(max_tokens=max_tokens, token_budget=token_budget)


def overflow_message(needed: int, limit: int, model: str | None) -> str:
    """Why a request over :func:`request_limit` was not sent (the ``context_overflow`` error).

    Args:
        needed: Prompt tokens of the request.
        limit: The most it may have (:func:`request_limit`).
        model: The model it was meant for (None: the server default).
    """
    return (
        f"the request does not fit the model's context window: it needs {needed} tokens, over "
        f"the {limit} a request to {resolve_model(model)} may use; it was not sent"
    )


# -- pressure ---------------------------------------------------------------------------------
HIGH_PRESSURE = 0.60
CRITICAL_PRESSURE = 0.80


def token_pressure(used: int, limit: int) -> str:
    """How full a window is: "normal" below 60 %, "high" from 60 %, "critical" from 80 %.

    A missing or non-positive ``limit`` reads as "normal" (nothing known to be full).
    """
    if not limit or limit <= 0:
        return "normal"
    ratio = max(0, used or 0) / limit
    if ratio >= CRITICAL_PRESSURE:
        return "critical"
    if ratio >= HIGH_PRESSURE:
        return "high"
    return "normal"


_ADVISORIES = {
    "normal": ("normal", "Sufficient context available", round(HIGH_PRESSURE * 100)),
    "high": ("warning", "Context filling: consider wrapping up", round(HIGH_PRESSURE * 100)),
    "critical": (
        "critical",
        "Near the context limit: respond immediately",
        round(CRITICAL_PRESSURE * 100),
    ),
}


class Advisory(TypedDict):
    """How full a context window is, as the ``get_system_status`` tool shows it."""

    level: str
    message: str
    threshold: int


def advisory(used: int, limit: int) -> Advisory:
    """The ``token_advisory`` the ``get_system_status`` tool shows: how full the window is.

    Returns:
        ``{"level": "normal"|"warning"|"critical", "message": str, "threshold": int}``, where
        ``threshold`` is the percentage boundary that applies: 60 (where warnings start) for
        normal and warning, 80 for critical.
    """
    level, message, threshold = _ADVISORIES[token_pressure(used, limit)]
    return {"level": level, "message": message, "threshold": threshold}
