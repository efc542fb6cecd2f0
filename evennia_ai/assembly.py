"""Runtime assembly: enabled components + source values -> a valid chat-completions request.

Pure module. Steps, in the spec's order:

1. keep the components this context type enables: a static component when its ID is in
   ``enabled_components``; a pluggable one when the static component it follows
   (``after_static``, else the largest static ID below its own) is enabled;
2. drop ``enabled=False`` components; apply the context's content overrides by key;
3. render each in ID order, filling placeholders from ``values`` (missing ones are left as they
   are, so an operator sees the gap instead of a crash); parts that render empty are skipped;
4. convert to messages by role: adjacent system parts merge into one system message; the
   ``mixed`` conversation history (a list of message dicts) is inserted as messages; a ``tool``
   part answers the assistant tool call right before it when there is one, and otherwise
   becomes a user message ``[Tool result: name] ...``.

The result always validates with :func:`validate_chat_messages`: first message system, every
tool message answers a tool call of the assistant message before it, every tool call is
answered, no empty content except assistant messages carrying tool calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from evennia_ai.prompt_components import PromptComponent, anchor_of
from evennia_ai.prompt_templates import safe_render_template


@dataclass
class Section:
    """Which component produced which text (for per-section token accounting)."""

    key: str
    role: str
    text: str


@dataclass
class AssembledPrompt:
    """Messages ready to send, and the sections they came from."""

    messages: list[dict]
    sections: list[Section] = field(default_factory=list)


def select_components(components: list[PromptComponent], context_config) -> list[PromptComponent]:
    """Enabled components of the context type, overrides applied, in ID order."""
    enabled_ids = set(context_config.enabled_components)
    chosen = []
    for comp in sorted(components, key=lambda c: c.id):
        anchor = comp.id if comp.is_static else (comp.after_static if comp.after_static is not None else anchor_of(comp.id))
        if anchor not in enabled_ids or not comp.enabled:
            continue
        override = context_config.get_component_content_override(comp.key)
        chosen.append(replace(comp, content=override) if override is not None else comp)
    return chosen


def _tool_result_text(value: Any) -> tuple[str | None, str | None, str]:
    """(tool_call_id, name, text) of a tool_result value (dict or text)."""
    if isinstance(value, dict):
        content = value.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, default=str)
        return value.get("tool_call_id"), value.get("name"), content
    return None, None, "" if value is None else str(value)


def _clean_history(history: list) -> list[dict]:
    """History messages made valid: tool results only after their calls, calls answered."""
    out: list[dict] = []
    open_calls: dict[str, str] = {}
    for raw in history or []:
        if not isinstance(raw, dict):
            continue
        role = raw.get("role")
        if role == "tool":
            call_id = raw.get("tool_call_id")
            if call_id in open_calls:
                open_calls.pop(call_id)
                out.append({"role": "tool", "tool_call_id": call_id,
                            "content": str(raw.get("content") or "(empty)")})
            else:
                name = raw.get("name") or "tool"
                out.append({"role": "user", "content": f"[Tool result: {name}] {raw.get('content') or ''}".strip()})
            continue
        _close_open_calls(out, open_calls)
        if role == "assistant":
            message = {"role": "assistant", "content": raw.get("content") or None}
            calls = [c for c in raw.get("tool_calls") or [] if isinstance(c, dict) and c.get("id")]
            if calls:
                message["tool_calls"] = calls
                open_calls = {c["id"]: (c.get("function") or {}).get("name", "tool") for c in calls}
            elif not message["content"]:
                continue
            out.append(message)
        elif role in ("user", "system"):
            content = raw.get("content")
            if content:
                out.append({"role": role, "content": str(content)})
    _close_open_calls(out, open_calls)
    return out


def _close_open_calls(out: list[dict], open_calls: dict) -> None:
    """Answer tool calls whose results were lost (e.g. trimmed), so the request stays valid."""
    for call_id in list(open_calls):
        out.append({"role": "tool", "tool_call_id": call_id, "content": "(result not kept)"})
    open_calls.clear()


def assemble_messages(components: list[PromptComponent], context_config, values: dict) -> AssembledPrompt:
    """Render the enabled components into chat messages (see module docstring)."""
    messages: list[dict] = []
    sections: list[Section] = []
    system_parts: list[str] = []

    def flush_system():
        if system_parts:
            text = "\n\n".join(system_parts)
            if messages and messages[-1]["role"] == "system":
                messages[-1]["content"] += "\n\n" + text
            else:
                messages.append({"role": "system", "content": text})
            system_parts.clear()

    for comp in select_components(components, context_config):
        if comp.role == "mixed":
            value = values.get(comp.key) if comp.content.strip() == "{" + comp.key + "}" else None
            if isinstance(value, list):
                history = _clean_history(value)
                if history:
                    flush_system()
                    messages.extend(history)
                    sections.append(Section(comp.key, "mixed", json.dumps(history, default=str)))
                continue
            text = safe_render_template(comp.content, **_texts(values)).strip()
            if text:
                flush_system()
                messages.append({"role": "user", "content": text})
                sections.append(Section(comp.key, "user", text))
            continue
        if comp.role == "tool":
            raw = values.get(comp.key) if comp.content.strip() == "{" + comp.key + "}" else None
            if raw is None:
                _, name, text = None, comp.key, safe_render_template(comp.content, **_texts(values)).strip()
                call_id = None
            else:
                call_id, name, text = _tool_result_text(raw)
                text = text.strip()
            if not text or text == "{" + comp.key + "}":
                continue
            flush_system()
            last = messages[-1] if messages else None
            answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
            pending_ids = [c["id"] for c in (last or {}).get("tool_calls", []) if c["id"] not in answered] if last and last.get("role") == "assistant" else []
            if call_id and call_id in pending_ids:
                messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
                sections.append(Section(comp.key, "tool", text))
            else:
                content = f"[Tool result: {name or 'tool'}] {text}"
                messages.append({"role": "user", "content": content})
                sections.append(Section(comp.key, "user", content))
            continue
        text = safe_render_template(comp.content, **_texts(values)).strip()
        if not text or text == "{" + comp.key + "}":
            continue
        if comp.role == "system":
            system_parts.append(text)
            sections.append(Section(comp.key, "system", text))
        else:
            flush_system()
            messages.append({"role": comp.role, "content": text})
            sections.append(Section(comp.key, comp.role, text))
    flush_system()
    messages = _normalise(messages)
    return AssembledPrompt(messages=messages, sections=sections)


def _texts(values: dict) -> dict:
    """Placeholder values as text (lists and dicts as JSON)."""
    out = {}
    for key, value in (values or {}).items():
        if isinstance(value, str):
            out[key] = value
        elif value is None:
            out[key] = ""
        elif isinstance(value, (list, dict)):
            out[key] = json.dumps(value, default=str)
        else:
            out[key] = str(value)
    return out


def _normalise(messages: list[dict]) -> list[dict]:
    """First message system; system messages after the first become user context notes."""
    if not messages or messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": "You are a character in a text game."})
    out = [messages[0]]
    for message in messages[1:]:
        if message["role"] == "system":
            message = {"role": "user", "content": f"[Context]\n{message['content']}"}
        out.append(message)
    # A tool call must be answered before anything else follows it.
    fixed: list[dict] = []
    open_ids: list[str] = []
    for message in out:
        if message["role"] == "tool":
            if message.get("tool_call_id") in open_ids:
                open_ids.remove(message["tool_call_id"])
                fixed.append(message)
            else:
                fixed.append({"role": "user", "content": f"[Tool result] {message.get('content', '')}"})
            continue
        for call_id in open_ids:
            fixed.append({"role": "tool", "tool_call_id": call_id, "content": "(result not kept)"})
        open_ids = []
        if message["role"] == "assistant" and message.get("tool_calls"):
            open_ids = [c["id"] for c in message["tool_calls"]]
        fixed.append(message)
    for call_id in open_ids:
        fixed.append({"role": "tool", "tool_call_id": call_id, "content": "(result not kept)"})
    return fixed


def validate_chat_messages(messages: list[dict]) -> list[str]:
    """Problems that would make a chat-completions request invalid (empty when valid)."""
    problems = []
    if not messages:
        return ["no messages"]
    if messages[0].get("role") != "system":
        problems.append("the first message is not a system message")
    open_ids: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"message {index} has an invalid role {role!r}")
            continue
        if role == "tool":
            if message.get("tool_call_id") not in open_ids:
                problems.append(f"message {index} answers no open tool call")
            open_ids.discard(message.get("tool_call_id"))
            if not message.get("content"):
                problems.append(f"tool message {index} is empty")
            continue
        if open_ids:
            problems.append(f"message {index} follows unanswered tool calls {sorted(open_ids)}")
            open_ids = set()
        if role == "assistant" and message.get("tool_calls"):
            open_ids = {c.get("id") for c in message["tool_calls"]}
        elif not message.get("content"):
            problems.append(f"message {index} ({role}) is empty")
    if open_ids:
        problems.append(f"unanswered tool calls at the end: {sorted(open_ids)}")
    return problems
