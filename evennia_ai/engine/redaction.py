"""What stays with Developers: an NPC's secrets, redacted wherever its records are shown.

An NPC's **secrets** (:func:`npc_secrets`) are the texts of ``EVENNIA_AI_SECRETS``, the
``Secret:`` lines of its operator prompt, the lines of its secret memory blocks (the values kept
aside, too: a set-aside operator prompt still names its secrets) and the API keys of the
server's model settings. They are redacted in three places:

- **Tick recordings** hold no secret at all (:func:`redact_secrets` before a line is written,
  :mod:`evennia_ai.engine.recording`).
- **Traces.** When a tick's trace is stored, a tool call that was refused or failed and whose
  arguments would reveal a secret or recite the operator prompt keeps its refusal but not those
  arguments (:func:`withhold_refused_secrets`), so no view below Developer can ever show them.
  When a trace is shown to anyone below Developer (the dashboard, its API, ``aitrace``),
  :func:`trace_for` also withholds every text of it that would reveal a secret and redacts
  the secrets left; Developers see the trace as it was stored.
- **Values kept aside** (:func:`quarantined_for`): below Developer, the value of a key only
  Developers may change or read (:data:`DEVELOPER_KEYS`) is replaced by a marker, and the
  others are shown with their secrets redacted.

Matching is on word and token boundaries, case-insensitively, so a short secret ("x") never
turns "exact" into "e[redacted]act": a secret that starts or ends with a letter or digit is not
matched where that end touches another letter or digit. A secret of :data:`TOKEN_CHARS` or more
characters without spaces (an API key, a password) is matched anywhere, because inside a URL or
an encoded query it is glued to other characters (``key%3Dsk-abc123``). Runs of white space in
a secret match any white space, and a secret's JSON-escaped forms are matched too (a tool
call's arguments are recorded as a JSON string). Secrets shorter than :data:`MIN_SAFE_CHARS`
are redacted on boundaries only and logged once as too short to redact safely.

Pure apart from reading an NPC's state in :func:`npc_secrets`; no Django at import time.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from evennia.utils import logger

from evennia_ai import access, conf
from evennia_ai.npc_state import (
    BLOCKS,
    BLOCKS_SHARED_IN,
    BUDGET,
    EXECUTION_CONFIG,
    QUARANTINE_CATEGORY,
    SCRIPT_PREFIX,
    TOOL_ALLOW,
    TOOL_DENY,
    TOOL_RULES,
    USER_SYSTEM_PROMPT,
    find_npc_state,
)
from evennia_ai.tools.safety import secret_block_texts, secret_leak, secret_lines
from evennia_ai.utils import plain

REDACTED = "[redacted]"
"""What stands in place of a secret."""

WITHHELD = "[withheld: it would reveal a secret; Developers see the operator prompt]"
"""What stands in place of a text that would reveal a secret or recite the operator prompt."""

KEPT_ASIDE_WITHHELD = "[withheld: only Developers see this value]"
"""What stands in place of a value kept aside that only Developers may see."""

MIN_SAFE_CHARS = 4
"""Secrets shorter than this are redacted only where they stand alone, and logged once."""

TOKEN_CHARS = 8
"""A secret of this many characters or more, without white space, is matched anywhere."""


DEVELOPER_KEYS = frozenset(
    {
        USER_SYSTEM_PROMPT,
        BUDGET,
        TOOL_ALLOW,
        TOOL_DENY,
        TOOL_RULES,
        BLOCKS,
        BLOCKS_SHARED_IN,
        SCRIPT_PREFIX + EXECUTION_CONFIG,
    }
)
"""Keys whose value kept aside only Developers see: what the operators tell an NPC, let it do
or let it spend (:data:`evennia_ai.access.EDIT`), and the memory blocks, which hold the secret
ones."""

_WORDLIKE = re.compile(r"[^\W_]")  # a letter or a digit, in any script
_WARNED: set[str] = set()  # fingerprints of secrets logged as too short (once each)


@dataclass(frozen=True)
class Secrets:
    """What one NPC must not show below Developer.

    Attributes:
        texts: Every secret text: secret lines, secret block lines and API keys.
        operator_prompt: The operator prompt (a long quote of it is withheld like a secret).
        block_texts: The lines of the secret memory blocks.
    """

    texts: tuple[str, ...] = ()
    operator_prompt: str = ""
    block_texts: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.texts or self.operator_prompt)


# -- matching -------------------------------------------------------------------------------------
def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _warn_short(text: str) -> None:
    """One log line per secret too short to redact safely (never the secret itself)."""
    mark = _fingerprint(text)
    if mark in _WARNED:
        return
    _WARNED.add(mark)
    logger.log_warn(
        f"evennia_ai: a secret of {len(text)} character(s) is too short to redact safely: it "
        "is redacted only where it stands alone as a word, so longer words holding it stay as "
        f"they are. Make every secret (EVENNIA_AI_SECRETS, Secret: lines, secret memory blocks, "
        f"API keys) at least {MIN_SAFE_CHARS} characters long."
    )


def _forms(text: str) -> list[str]:
    """``text`` and its JSON-escaped forms (as a JSON string of tool arguments holds it)."""
    forms = [text]
    for ascii_only in (True, False):
        escaped = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
        if escaped not in forms:
            forms.append(escaped)
    return forms


def _pattern_of(text: str) -> str:
    """The regular expression of one secret form, with its boundaries (see module docstring)."""
    body = r"\s+".join(re.escape(part) for part in text.split())
    if len(text) >= TOKEN_CHARS and not any(ch.isspace() for ch in text):
        return body
    left = r"(?<![^\W_])" if _WORDLIKE.match(text[0]) else ""
    right = r"(?![^\W_])" if _WORDLIKE.match(text[-1]) else ""
    return f"{left}{body}{right}"


@functools.lru_cache(maxsize=64)
def _compiled(texts: tuple[str, ...]) -> re.Pattern | None:
    forms = {form for text in texts for form in _forms(text)}
    if not forms:
        return None
    ordered = sorted(forms, key=lambda form: (-len(form), form))  # a longer secret goes first
    return re.compile("|".join(_pattern_of(form) for form in ordered), re.IGNORECASE)


def _clean(secrets: Iterable[str]) -> tuple[str, ...]:
    texts = []
    for secret in secrets or ():
        text = str(secret or "").strip()
        if text and text not in texts:
            texts.append(text)
    for text in texts:
        if len(text) < MIN_SAFE_CHARS:
            _warn_short(text)
    return tuple(sorted(texts))


def redact_secrets(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (text, or JSON-able dicts and lists of it) with every secret replaced.

    Each secret is replaced by :data:`REDACTED` wherever it occurs on word or token
    boundaries, in any case (see the module docstring); dict keys are kept. Returns a new value
    (``value`` itself when there is nothing to redact).

    Example:
        redact_secrets("the code is x, exactly", ["x"])  # -> "the code is [redacted], exactly"
    """
    pattern = _compiled(_clean(secrets))
    if pattern is None:
        return value
    return _walk(value, lambda text: pattern.sub(REDACTED, text))


def _walk(value: Any, change) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {key: _walk(inner, change) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(inner, change) for inner in value]
    return value


def _texts_in(value: Any, depth: int = 0) -> list[str]:
    """Every string leaf of ``value`` (bounded depth)."""
    if isinstance(value, str):
        return [value]
    if depth > 50:
        return []
    if isinstance(value, Mapping):
        return [text for inner in value.values() for text in _texts_in(inner, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [text for inner in value for text in _texts_in(inner, depth + 1)]
    return []


def recites(text: str, secrets: Secrets) -> bool:
    """Whether ``text`` would reveal a secret or recite the operator prompt, as the speech
    guard decides (:func:`evennia_ai.tools.safety.secret_leak`: a run of words of a secret, or
    a long quote of the operator prompt)."""
    if not text or not secrets:
        return False
    return bool(secret_leak(secrets.operator_prompt, text, secrets.block_texts))


def reveals(text: str, secrets: Secrets) -> bool:
    """Whether ``text`` :func:`recites` a secret or holds one verbatim (on its boundaries)."""
    if recites(text, secrets):
        return True
    pattern = _compiled(_clean(secrets.texts))
    return bool(text and pattern and pattern.search(text))


# -- an NPC's secrets -----------------------------------------------------------------------------
def api_keys() -> list[str]:
    """The API keys of the server's model settings (``EVENNIA_AI_API_KEY`` and per model)."""
    keys = [conf.get_str("EVENNIA_AI_API_KEY")]
    for options in conf.get_dict("EVENNIA_AI_MODEL_SETTINGS").values():
        if isinstance(options, Mapping):
            keys.append(str(options.get("api_key") or ""))
    return [key for key in keys if key]


def _kept_aside(npc, key: str) -> Any:
    """The value of ``key`` kept aside on ``npc`` (``script.<key>``: on its Script), read from
    the Attribute itself (None when nothing is)."""
    holder = npc
    if key.startswith(SCRIPT_PREFIX):
        holder, key = getattr(find_npc_state(npc), "script", None), key[len(SCRIPT_PREFIX) :]
    attributes = getattr(holder, "attributes", None)
    if attributes is None:
        return None
    kept = attributes.get(key, category=QUARANTINE_CATEGORY)
    return plain(kept.get("value")) if isinstance(kept, Mapping) else None


def npc_secrets(npc) -> Secrets:
    """``npc``'s secrets (see the module docstring), the values kept aside included."""
    state = find_npc_state(npc)
    if state is None:
        return Secrets(texts=tuple(api_keys()))
    prompt = str(state.user_system_prompt or "")
    prompts = [prompt, *_texts_in(_kept_aside(npc, USER_SYSTEM_PROMPT))]
    blocks: list[Mapping[str, object]] = [state.blocks]
    kept_blocks = _kept_aside(npc, BLOCKS)
    if isinstance(kept_blocks, Mapping):
        blocks.append(kept_blocks)
    block_texts = [text for found in blocks for text in secret_block_texts(found)]
    lines = [line for text in prompts for line in secret_lines(text)]
    texts = [*lines, *block_texts, *api_keys()]
    return Secrets(
        texts=tuple(dict.fromkeys(texts)),
        operator_prompt="\n".join(text for text in prompts if text),
        block_texts=tuple(dict.fromkeys(block_texts)),
    )


# -- traces ---------------------------------------------------------------------------------------
def _withhold_arguments(arguments: Any, secrets: Secrets) -> tuple[Any, bool]:
    """``arguments`` with each text that would reveal a secret withheld; whether one was."""
    texts = _texts_in(arguments)
    if not any(reveals(text, secrets) for text in texts) and not reveals(" ".join(texts), secrets):
        return arguments, False

    def change(text: str) -> str:
        return WITHHELD if text.strip() else text

    return _walk(arguments, change), True


def withhold_refused_secrets(trace: dict, secrets: Secrets) -> dict:
    """``trace`` (a stored TickTrace dict) with the arguments of refused secret-telling calls
    withheld, for everyone.

    A tool call that did not succeed (refused, failed, skipped) and whose arguments would
    reveal a secret or recite the operator prompt keeps its name, status and refusal; its
    texts become :data:`WITHHELD`. Calls that ran are left as they are. Returns a copy when
    something changed, else ``trace``.
    """
    if not secrets or not isinstance(trace, Mapping):
        return trace
    changed = copy.deepcopy(trace)
    found = False
    for iteration in changed.get("iterations") or ():
        for call in (iteration or {}).get("tool_calls") or ():
            if not isinstance(call, dict) or call.get("success"):
                continue
            call["arguments"], withheld = _withhold_arguments(call.get("arguments"), secrets)
            found = found or withheld
    return changed if found else trace


def trace_for(trace: dict, secrets: Secrets, developer: bool) -> dict:
    """``trace`` as someone may see it: whole for Developers; below, without secrets.

    Below Developer, the refused calls' arguments are withheld (as when stored), every other
    text that would reveal a secret or recite the operator prompt is replaced by
    :data:`WITHHELD`, and the secrets left are redacted (traces stored before secrets were
    withheld at store time, secrets added since).

    Args:
        trace: A stored trace dict (as ``npc.ai.trace`` returns it).
        secrets: The NPC's secrets (:func:`npc_secrets`).
        developer: Whether the viewer passes :data:`evennia_ai.access.EDIT`.
    """
    if developer or not secrets or not isinstance(trace, Mapping):
        return trace
    withheld = withhold_refused_secrets(trace, secrets)

    def change(text: str) -> str:
        return WITHHELD if recites(text, secrets) else text

    # one check of all its texts first: most traces recite nothing, and a run of words found
    # in no text of the trace is in none of them
    if recites("\n".join(_texts_in(withheld)), secrets):
        withheld = _walk(withheld, change)
    return redact_secrets(withheld, secrets.texts)


def traces_for(traces: Iterable[dict], secrets: Secrets, developer: bool) -> list[dict]:
    """:func:`trace_for` of each of ``traces``."""
    return [trace_for(trace, secrets, developer) for trace in traces]


def traces_shown_to(viewer, npc, traces: Iterable[dict]) -> list[dict]:
    """``npc``'s ``traces`` as ``viewer`` (a caller or a request's user) may see them.

    What the dashboard, the API and the admin commands (``aitrace``, ``interact``) show.
    """
    traces = list(traces)
    if not traces or access.passes(viewer, access.EDIT):
        return traces
    return traces_for(traces, npc_secrets(npc), developer=False)


# -- values kept aside ----------------------------------------------------------------------------
def quarantined_for(kept: Mapping, secrets: Secrets, developer: bool) -> dict:
    """Values kept aside (``{key: {"value", "problem", "time", ...}}``) as someone may see them.

    Developers see them whole. Below Developer, the value of a key of :data:`DEVELOPER_KEYS`
    (``script.<key>`` for the Script's), or of one the handler marks ``developer_only``, is
    :data:`KEPT_ASIDE_WITHHELD`; the other values and every problem text have the NPC's
    secrets redacted. ``redacted`` says whether the value is withheld (an entry the handler
    already redacted stays so).
    """
    out = {}
    for key, entry in (kept or {}).items():
        entry = dict(entry) if isinstance(entry, Mapping) else {"value": entry}
        if developer:
            out[key] = entry
            continue
        hidden = (
            key in DEVELOPER_KEYS
            or f"script.{key}" in DEVELOPER_KEYS
            or bool(entry.get("developer_only"))  # as the key's declaration says
        )
        if "value" in entry:
            entry["value"] = (
                KEPT_ASIDE_WITHHELD if hidden else redact_secrets(entry["value"], secrets.texts)
            )
        entry["redacted"] = bool(entry.get("redacted")) or hidden
        problem = entry.get("problem")
        if isinstance(problem, str):
            shown = WITHHELD if recites(problem, secrets) else problem
            entry["problem"] = redact_secrets(shown, secrets.texts)
        out[key] = entry
    return out


def quarantined_shown_to(viewer, npc, kept: Mapping) -> dict:
    """``npc``'s values kept aside as ``viewer`` may see them (:func:`quarantined_for`).

    ``kept`` is what ``npc.ai.status()["quarantined"]`` lists. Developers see every value
    whole: one the handler summarised (no ``value``, or ``redacted``) is read from its
    Attribute.
    """
    if not kept:
        return {}
    if access.passes(viewer, access.EDIT):
        whole = {}
        for key, entry in kept.items():
            entry = dict(entry) if isinstance(entry, Mapping) else {"value": entry}
            if "value" not in entry or entry.get("redacted"):  # summarised by the handler
                entry["value"] = _kept_aside(npc, key)
                entry["redacted"] = False
            whole[key] = entry
        return whole
    return quarantined_for(kept, npc_secrets(npc), developer=False)
