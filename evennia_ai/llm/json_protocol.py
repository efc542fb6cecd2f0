"""The JSON tool protocol for models without native tool calling (pure).

The ``default_fallback`` template tells the model to answer with one JSON object::

    {"tool": "say", "arguments": {"message": "Hello"}}
    {"tool_calls": [{"tool": "look", "arguments": {}}, ...]}

(``"name"`` is accepted for ``"tool"``), or with plain text. Parsing is forgiving: code fences,
prose before or after the object, several objects in a row, braces inside strings. When a tool
call is found the surrounding prose is returned as the reply's ``thought`` text (kept in the
trace, not spoken); when none is found the whole text is the reply.
"""

from __future__ import annotations

import json
import uuid

from evennia_ai.llm.types import ToolCall


def render_tool_schemas(tools: list[dict] | None) -> str:
    """A compact, readable list of tools for the fallback prompt."""
    lines = []
    for tool in tools or []:
        fn = tool.get("function", tool)
        params = fn.get("parameters") or {}
        props = params.get("properties") or {}
        required = set(params.get("required") or [])
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
            + (f" ({spec['description']})" if spec.get("description") else "")
            for name, spec in props.items()
        )
        lines.append(f"- {fn.get('name')}({args}): {fn.get('description', '')}".rstrip())
    return "\n".join(lines) or "(no tools)"


def _json_objects(text: str):
    """Yield (start, end, obj) for each top-level JSON object/array found in ``text``."""
    decoder = json.JSONDecoder()
    index = 0
    while index < len(text):
        start = min((i for i in (text.find("{", index), text.find("[", index)) if i != -1), default=-1)
        if start == -1:
            return
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        yield start, end, obj
        index = end


def _to_call(entry) -> ToolCall | None:
    if not isinstance(entry, dict):
        return None
    name = entry.get("tool") or entry.get("name")
    if isinstance(entry.get("function"), dict):
        name = name or entry["function"].get("name")
        arguments = entry["function"].get("arguments", {})
    else:
        arguments = entry.get("arguments", entry.get("args", {}))
    if not isinstance(name, str) or not name:
        return None
    error = None
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as err:
            arguments, error = {}, f"not valid JSON ({err})"
    if not isinstance(arguments, dict):
        arguments, error = {}, "arguments must be a JSON object"
    return ToolCall(id="call_" + uuid.uuid4().hex[:10], name=name, arguments=arguments,
                    raw_arguments=raw, error=error)


def parse_tool_calls_from_text(text: str | None, known_tool_names=None) -> tuple[str | None, list[ToolCall]]:
    """Tool calls written as JSON in ``text``.

    Args:
        text: The model's reply.
        known_tool_names: Unused for filtering (unknown names are still returned so the loop can
            tell the model the tool does not exist); accepted for symmetry.

    Returns:
        ``(text, calls)``: with calls, ``text`` is the prose around the JSON (or None); without,
        it is the whole reply.
    """
    if not text:
        return text, []
    cleaned = text.replace("```json", "```")
    calls: list[ToolCall] = []
    spans = []
    for start, end, obj in _json_objects(cleaned):
        entries = []
        if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
            entries = obj["tool_calls"]
        elif isinstance(obj, dict):
            entries = [obj]
        elif isinstance(obj, list):
            entries = obj
        found = [c for c in (_to_call(e) for e in entries) if c is not None]
        if found:
            calls.extend(found)
            spans.append((start, end))
    if not calls:
        return text, []
    prose, last = [], 0
    for start, end in spans:
        prose.append(cleaned[last:start])
        last = end
    prose.append(cleaned[last:])
    rest = "".join(prose).replace("```", "").strip()
    return (rest or None), calls
