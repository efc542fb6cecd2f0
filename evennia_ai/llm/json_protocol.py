"""The JSON tool protocol for models without native tool calling (pure).

When a model cannot take ``tools=`` natively, the client leaves the tools out of the request
and puts the ``default_fallback`` template in the system message, with the tool list rendered
by :func:`render_tool_schemas`. The template asks the model to answer with one JSON object::

    {"tool": "say", "arguments": {"message": "Hello"}}
    {"tool_calls": [{"tool": "look", "arguments": {}}, {"tool": "say", "arguments": {...}}]}

or with plain text. :func:`parse_tool_calls_from_text` turns the reply back into the same
:class:`~evennia_ai.llm.types.ToolCall` objects native tool calling gives. It is forgiving,
because small local models rarely follow the format exactly:

- code fences (```` ```json ... ``` ````) and prose before or after the JSON are ignored;
- several objects in a row, a JSON list of calls, or ``{"tool_calls": [...]}`` all work;
- ``"name"`` is accepted for ``"tool"`` (with an ``"arguments"``/``"parameters"`` key, or when
  the name is a known tool), as are the OpenAI shape ``{"function": {"name", "arguments"}}``
  and ``{"action": ..., "action_input": ...}``; ``{"tool": "say", "message": "hi"}`` (arguments
  at the top level) is read as ``say(message="hi")``;
- arguments given as a JSON string are decoded; arguments that are not a JSON object give a
  call with ``error`` set, which the ReAct loop reports back to the model;
- braces inside JSON strings are handled by the JSON decoder itself; single-quoted
  pseudo-JSON is *not* accepted (it is plain text).

Streaming: :func:`first_call_so_far` reads the first call of a reply that is still being
written (partial JSON, :func:`pydantic_core.from_json` with ``allow_partial``), so a ``say``
can be shown sentence by sentence before the reply is complete
(:mod:`evennia_ai.engine.streaming`).

Text: when at least one tool call is found, the prose outside the JSON is returned as the
reply text (the model's "thought": the loop keeps it in the trace and does not say it) or None
when there is none. When no tool call is found the whole reply is the text, to be said aloud.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator

from pydantic_core import from_json

from evennia_ai.llm.types import JSONObject, ToolCall
from evennia_ai.wording import JSON_TOOLS_PROMPT as JSON_TOOLS_PROMPT
from evennia_ai.wording import NATIVE_TOOLS_PROMPT as NATIVE_TOOLS_PROMPT
from evennia_ai.wording import TOOL_RESULT_LABEL

# Keys that may hold a call's arguments, most common first.
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "action_input")
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*")
_JSON_START = re.compile(r"[{\[]")
# Bounds that keep a hostile or broken reply from making parsing slow.
_MAX_FAILED_DECODES = 500
_MAX_NESTING = 3


def _schema_type(spec: object) -> str:
    if not isinstance(spec, dict):
        return "any"
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return "|".join(json.dumps(v) for v in spec["enum"])
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_schema_type(spec['items'])}"
    bounds = [str(spec[k]) for k in ("minimum", "maximum") if isinstance(spec.get(k), (int, float))]
    return f"{kind} {'-'.join(bounds)}" if len(bounds) == 2 else str(kind)


def render_tool_schemas(tools: Iterable[object] | None) -> str:
    """Render OpenAI-format tool schemas as a compact, readable list for a prompt.

    Args:
        tools: ``[{"type": "function", "function": {name, description, parameters}}]`` (bare
            ``{name, description, parameters}`` dicts work too).

    Returns:
        One line per tool, ``- name(arg: type, optional?: type) - description``, followed by
        indented lines for arguments that have a description; ``(no tools)`` when empty.

    Example:
        >>> render_tool_schemas([{"type": "function", "function": {"name": "say",
        ...     "description": "Say something aloud.", "parameters": {"type": "object",
        ...     "properties": {"message": {"type": "string"}}, "required": ["message"]}}}])
        '- say(message: string) - Say something aloud.'
    """
    lines: list[str] = []
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        fn = function if isinstance(function, dict) else tool
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = fn.get("parameters")
        params = params if isinstance(params, dict) else {}
        props = params.get("properties")
        props = props if isinstance(props, dict) else {}
        required = set(params.get("required") or [])
        args = ", ".join(
            f"{arg}{'' if arg in required else '?'}: {_schema_type(spec)}"
            for arg, spec in props.items()
        )
        description = str(fn.get("description") or "").strip()
        lines.append(f"- {name}({args})" + (f" - {description}" if description else ""))
        for arg, spec in props.items():
            if isinstance(spec, dict) and spec.get("description"):
                lines.append(f"    {arg}: {spec['description']}")
    return "\n".join(lines) or "(no tools)"


def _json_values(text: str) -> Iterator[tuple[int, int, object]]:
    """Yield ``(start, end, value)`` for each top-level JSON object or list in ``text``."""
    decoder = json.JSONDecoder()
    failures = 0
    position = 0
    while failures < _MAX_FAILED_DECODES:
        match = _JSON_START.search(text, position)
        if match is None:
            return
        start = match.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            failures += 1
            position = start + 1
            continue
        yield start, end, value
        position = end


def decode_arguments(value: object) -> tuple[JSONObject, str, str | None]:
    """``(arguments, raw_arguments, error)`` for an arguments value as the model wrote it.

    Native tool calls and the JSON protocol read arguments alike: a JSON object string or a
    dict; anything else yields ``{}`` and an error the loop feeds back to the model.
    """
    if value is None:
        return {}, "{}", None
    if isinstance(value, str):
        raw = value
        if not raw.strip():
            return {}, raw, None
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as err:
            return {}, raw, f"arguments are not valid JSON ({err})"
    else:
        raw = json.dumps(value)
    if not isinstance(value, dict):
        return {}, raw, f"arguments must be a JSON object, not {type(value).__name__}"
    return value, raw, None


def _as_call(entry: JSONObject, known: frozenset[str]) -> tuple[str, object] | None:
    """``(name, arguments value)`` when ``entry`` is shaped like a tool call, else None."""
    function = entry.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return function["name"], function.get("arguments")
    arg_key = next((k for k in _ARGUMENT_KEYS if k in entry), None)
    tool = entry.get("tool")
    if isinstance(tool, str) and tool.strip():
        if arg_key is not None:
            return tool.strip(), entry[arg_key]
        # Arguments written beside the name: {"tool": "say", "message": "hi"}.
        return tool.strip(), {k: v for k, v in entry.items() if k not in ("tool", "id", "type")}
    # "name" and "action" are common words in other JSON, so they need more evidence.
    for name_key in ("name", "action"):
        name = entry.get(name_key)
        if not isinstance(name, str) or not name.strip():
            continue
        if arg_key is not None or name.strip() in known:
            return name.strip(), entry.get(arg_key) if arg_key else None
    return None


def _calls_in(value: object, known: frozenset[str], depth: int = 0) -> list[tuple[str, object]]:
    """Tool-call shaped entries in a decoded JSON value (searching a little way down)."""
    if depth > _MAX_NESTING:
        return []
    if isinstance(value, list):
        found = []
        for item in value:
            found.extend(_calls_in(item, known, depth + 1))
        return found
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _calls_in(value["tool_calls"], known, depth + 1)
    call = _as_call(value, known)
    if call is not None:
        return [call]
    # A wrapper such as {"thought": "...", "action": {"tool": ...}}.
    found = []
    for item in value.values():
        if isinstance(item, (dict, list)):
            found.extend(_calls_in(item, known, depth + 1))
    return found


def parse_tool_calls_from_text(
    text: str | None, known_tool_names: Iterable[str] | None = None
) -> tuple[str | None, list[ToolCall]]:
    """Read tool calls written as JSON in a model's reply (see the module docstring).

    Args:
        text: The model's reply.
        known_tool_names: Names of the offered tools. They let a bare ``{"name": "look"}`` count
            as a call; names not in it are still returned when the object is clearly a tool
            call, so the loop can tell the model that tool does not exist.

    Returns:
        ``(text, calls)``. With calls, ``text`` is the prose around the JSON (None when there is
        none); without, it is the reply unchanged. Never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return (text if isinstance(text, str) else None), []
    known = frozenset(n for n in (known_tool_names or ()) if isinstance(n, str))
    cleaned = _FENCE.sub("", text)
    found: list[tuple[str, object]] = []
    spans: list[tuple[int, int]] = []
    for start, end, value in _json_values(cleaned):
        calls = _calls_in(value, known)
        if calls:
            found.extend(calls)
            spans.append((start, end))
    if not found:
        return text, []

    seed = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:8]
    tool_calls = []
    for index, (name, value) in enumerate(found):
        arguments, raw, error = decode_arguments(value)
        tool_calls.append(
            ToolCall(
                id=f"call_{seed}_{index}",
                name=name,
                arguments=arguments,
                raw_arguments=raw,
                error=error,
            )
        )
    prose, last = [], 0
    for start, end in spans:
        prose.append(cleaned[last:start])
        last = end
    prose.append(cleaned[last:])
    thought = re.sub(r"\n{3,}", "\n\n", "".join(prose)).strip()
    return (thought or None), tool_calls


_LEADING_FENCE = re.compile(r"\s*(?:```[A-Za-z0-9_+-]*\s*)?")


def starts_as_json(text: str) -> bool | None:
    """Whether a reply being written opens with JSON (a ``{``/``[``, after a code fence);
    None while only whitespace or a fence's start has arrived."""
    stripped = text.lstrip()
    if not stripped or "```".startswith(stripped):
        return None
    rest = text[_LEADING_FENCE.match(text).end() :]  # type: ignore[union-attr]
    if not rest:
        return None
    return rest[0] in "{["


def _partial(text: str, mode: bool | str) -> object:
    try:
        return from_json(text, allow_partial=mode)  # type: ignore[arg-type]
    except ValueError:
        return None


def partial_object(text: str) -> object:
    """A JSON value still being written, as far as it is (its last string possibly cut
    short, an escape cut in the middle left out); None when it cannot be read. Never raises."""
    return _partial(text, "trailing-strings")


def first_call_so_far(
    text: str, known_tool_names: Iterable[str] | None = None
) -> tuple[str | None, object]:
    """The first tool call of a JSON-protocol reply still being written.

    Args:
        text: The reply so far; it must open with the JSON (:func:`starts_as_json`).
        known_tool_names: Names of the offered tools (as for :func:`parse_tool_calls_from_text`).

    Returns:
        ``(name, arguments)``: the first call's name once it is written out in full (None
        before), and its arguments as far as they are written, the last string possibly cut
        short (None while there are none). An escape cut in the middle (``\\u00``) is left out
        until it is complete. Never raises.
    """
    known = frozenset(n for n in (known_tool_names or ()) if isinstance(n, str))
    body = _FENCE.sub("", text[_LEADING_FENCE.match(text).end() :])  # type: ignore[union-attr]
    # Without the trailing string: a name being written ("sa" of "say") is not read yet.
    whole = _calls_in(_partial(body, True), known)
    if not whole:
        return None, None
    growing = _calls_in(_partial(body, "trailing-strings"), known)
    arguments = growing[0][1] if growing and growing[0][0] == whole[0][0] else None
    return whole[0][0], arguments


def to_text_protocol(
    messages: list[JSONObject], tools: list[JSONObject] | None, tick_rate: object
) -> list[JSONObject]:
    """Rewrite a request for the JSON tool protocol.

    :data:`JSON_TOOLS_PROMPT` (the built-in ``default_fallback`` template), rendered with the
    tool list, joins the system message (replacing :data:`NATIVE_TOOLS_PROMPT`, the ``default``
    template, when that is there verbatim); tool results and
    earlier tool calls become plain user and assistant text, since the provider takes no tools.
    """
    protocol = JSON_TOOLS_PROMPT.replace("{tick_rate}", str(tick_rate)).replace(
        "{tool_schemas}", render_tool_schemas(tools)
    )
    native_prompt = NATIVE_TOOLS_PROMPT.replace("{tick_rate}", str(tick_rate))
    out: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            name = message.get("name") or "tool"
            label = TOOL_RESULT_LABEL.format(name=name)
            out.append({"role": "user", "content": f"{label} {content or ''}"})
        elif role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                fn = call.get("function") or {}
                arguments = fn.get("arguments")
                try:
                    arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                except ValueError:
                    pass  # keep the string as the model wrote it
                calls.append({"tool": fn.get("name"), "arguments": arguments or {}})
            text = ((content or "") + "\n" + json.dumps({"tool_calls": calls})).strip()
            out.append({"role": "assistant", "content": text})
        else:
            out.append({"role": role, "content": content if content is not None else ""})
    system = next((m for m in out if m["role"] == "system" and isinstance(m["content"], str)), None)
    if system is None:
        out.insert(0, {"role": "system", "content": protocol})
    elif native_prompt in system["content"]:
        system["content"] = system["content"].replace(native_prompt, protocol, 1)
    else:
        system["content"] = f"{system['content']}\n\n{protocol}"
    return out
