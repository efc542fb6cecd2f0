"""Ask a model's server what context window it serves.

Pure module (no Django, Evennia or Twisted); it makes blocking HTTP requests, so it runs in a
thread (``evennia_ai.startstop`` asks at server start, off the reactor, before NPCs tick).

litellm's model map knows hosted models, not what a local server runs: a vLLM server may serve
a model with a shorter ``--max-model-len`` than it was trained for, and Ollama runs every model
with its own ``num_ctx`` whatever the model could take. Asked here:

- **Ollama** (``ollama/`` and ``ollama_chat/`` models): the ``num_ctx`` the plugin sends
  (``EVENNIA_AI_MODEL_SETTINGS[model]["num_ctx"]``, passed to Ollama with every request) when
  set; otherwise ``GET /api/ps``, whose ``context_length`` is what the loaded model runs with.
  Never the model's trained length (``/api/show``): Ollama does not serve that unless told to.
- **OpenAI-compatible servers** with an ``api_base`` (vLLM, the loopback test server, llama.cpp's
  server): ``GET <api_base>/models``; a listed model's ``max_model_len`` (vLLM) or
  ``context_length`` / ``context_window``.

Found windows go to :func:`evennia_ai.llm.tokens.set_served_window`. Operators' settings still
win over them (``EVENNIA_AI_CONTEXT_WINDOWS``).

Example:
    window = probe_window("openai/my-llama", api_base="http://gpu1:8000/v1")
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

from evennia_ai import conf
from evennia_ai.llm import tokens
from evennia_ai.llm.errors import describe, shown_url

_log = logging.getLogger("evennia_ai")

TIMEOUT = 3.0  # seconds per request: a server that does not answer leaves the window a guess
OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")
WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")


def _model_options(model: str) -> Mapping[str, Any]:
    options = conf.get_dict("EVENNIA_AI_MODEL_SETTINGS").get(model)
    return options if isinstance(options, Mapping) else {}


def _get_json(url: str, api_key: str | None = None, timeout: float = TIMEOUT) -> object:
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http(s))
        return json.loads(response.read().decode("utf8", "replace") or "null")


def _window(entry: Mapping[str, Any]) -> int | None:
    for key in WINDOW_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _listed(data: object, key: str) -> list[object]:
    """The list under ``key`` of a server's JSON answer; empty when the answer has none (an
    answer that is not an object, such as a bare list or string, included)."""
    listed = data.get(key) if isinstance(data, Mapping) else None
    return listed if isinstance(listed, list) else []


def _bare(model: str) -> str:
    """``openai/org/name`` -> ``org/name`` (the id the server lists)."""
    return model.split("/", 1)[1] if "/" in model else model


def ollama_window(model: str, api_base: str | None, timeout: float = TIMEOUT) -> int | None:
    """The ``num_ctx`` an Ollama model runs with: the plugin's setting, else ``/api/ps``."""
    num_ctx = _model_options(model).get("num_ctx")
    if isinstance(num_ctx, int) and not isinstance(num_ctx, bool) and num_ctx > 0:
        return num_ctx
    base = (api_base or "http://localhost:11434").rstrip("/")
    data = _get_json(f"{base}/api/ps", timeout=timeout)
    name = _bare(model)
    for entry in _listed(data, "models"):
        if isinstance(entry, Mapping) and name in (entry.get("name"), entry.get("model")):
            return _window(entry)
    return None


def openai_server_window(
    model: str, api_base: str, api_key: str | None = None, timeout: float = TIMEOUT
) -> int | None:
    """The window an OpenAI-compatible server lists for ``model`` at ``<api_base>/models``."""
    data = _get_json(f"{api_base.rstrip('/')}/models", api_key, timeout)
    wanted = {model, _bare(model), model.rsplit("/", 1)[-1]}
    for entry in _listed(data, "data"):
        if isinstance(entry, Mapping) and entry.get("id") in wanted:
            return _window(entry)
    return None


def probe_window(
    model: str,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float = TIMEOUT,
) -> int | None:
    """The window ``model``'s server reports, or None (not asked, no answer, not listed).

    Never raises: a server that is down or answers nonsense leaves the window as it was.
    """
    model = (model or "").strip()
    if not model or model == conf.OFFLINE_MODEL:
        return None
    try:
        if model.startswith(OLLAMA_PREFIXES):
            return ollama_window(model, api_base, timeout)
        if api_base:
            return openai_server_window(model, api_base, api_key, timeout)
    except (OSError, ValueError, urllib.error.URLError) as err:
        _log.info(
            "evennia_ai: could not ask %s for the window of %s (%s)",
            shown_url(api_base) or "its server",
            model,
            describe(err, url=api_base, timeout=timeout),
        )
    return None


def learn_windows(models: Iterable[str | None]) -> dict[str, int]:
    """Ask the server of each of ``models`` whose window is not set or known to litellm.

    Each model's server is its ``EVENNIA_AI_MODEL_SETTINGS[model]["api_base"]``, else
    ``EVENNIA_AI_API_BASE`` (likewise the key). Returns ``{model: window}`` for those it learnt
    (recorded with :func:`~evennia_ai.llm.tokens.set_served_window`) and logs the models whose
    window is still a guess.
    """
    learnt: dict[str, int] = {}
    for model in dict.fromkeys(m for m in models if m and m != conf.OFFLINE_MODEL):
        if tokens.window_source(model) not in ("guess", "server"):
            continue
        options = _model_options(model)
        window = probe_window(
            model,
            options.get("api_base") or conf.get_str("EVENNIA_AI_API_BASE") or None,
            options.get("api_key") or conf.get_str("EVENNIA_AI_API_KEY") or None,
        )
        if window:
            tokens.set_served_window(model, window)
            learnt[model] = window
            _log.info("evennia_ai: %s serves a %s-token window (asked the server)", model, window)
        elif tokens.window_guessed(model):
            _log.warning(
                "evennia_ai: the context window of %s is unknown; assuming %s tokens. Set "
                "EVENNIA_AI_CONTEXT_WINDOWS = {%r: <tokens>} in settings.",
                model,
                tokens.DEFAULT_CONTEXT_WINDOW,
                model,
            )
    return learnt
