"""Runtime assembly: prompt components + source values -> a valid chat-completions request.

Pure module (no Django, Evennia or Twisted). :func:`assemble_messages` takes these steps
(docs/prompts.md, "Components"):

1. **Select.** A static component is kept when its ID is in the context type's
   ``enabled_components``. A pluggable component is kept when the static component it follows
   is enabled (its ``after_static``, or else the largest static ID below its own ID), or when
   its own ID is listed (so an operator can add one pluggable component to a minimal context
   without enabling its neighbour). Components with ``enabled=False`` are dropped.
2. **Override.** The context's ``component_overrides`` replace content by component key
   (reflection's own system prompt, for instance).
3. **Render** in ID order with :func:`~evennia_ai.prompt.templates.safe_render_template`:
   placeholders are filled from ``values`` (texts as they are, lists and dicts as JSON) and
   missing ones are left visible, so an operator sees the gap instead of a crash. A value is
   inserted once and never rendered again, so a player who says ``{system_prompt}`` is quoted,
   not expanded. A component made only of placeholders whose values are missing or empty is
   skipped, and so is one that renders to blank text.
4. **Convert by role.** Adjacent system parts merge into ONE system message joined by blank
   lines (a system part placed after other messages, e.g. a pluggable component after the
   history, stays a system message there; chat-completions allows that). ``user`` and
   ``assistant`` parts become messages of that role; an unknown role is read as system. A
   ``mixed`` component (the conversation history) whose placeholder holds a list of message
   dicts inserts those messages (text around the placeholder becomes user messages around
   them; bookkeeping keys such as ``batch`` are dropped); holding text, it is
   a user message. A ``tool`` component's value may be ``{"tool_call_id", "name", "content"}``
   (or a list of them) or text.
5. **Make valid.** A tool message must directly answer a tool call of the assistant message
   right before it (only other tool messages in between). A tool result that answers no such
   call becomes a user message ``[Tool result: name] ...``. A tool call left without a result
   (history trimmed between a call and its answer, say) is dropped from its message; an
   assistant message left with no call becomes text that records what it called
   (``[called look({}) - no result kept]``), so the model still sees what it did. Empty
   messages are dropped, except that an assistant message with tool calls may have no content;
   an empty tool result that answers a call reads :data:`EMPTY_TOOL_OUTPUT`.
6. **Frame.** The operator's section (``operator=``, :mod:`evennia_ai.prompt.operator`) opens
   the first system message, whatever the components and the context select: it is not a
   component, and no component edit or context config removes it. The first message is always
   system (:data:`DEFAULT_SYSTEM_FALLBACK` when nothing else is); and, unless
   ``ensure_user_turn=False``, a request that would end on a system or assistant message gets a
   short user turn (:data:`DEFAULT_USER_TURN`): some providers reject a request with only a
   system message, and treat a trailing assistant message as a prefill.

The result always passes :func:`validate_chat_messages`. It also lists its
:class:`Section` s (which component produced which text, in which message), so a budgeter can
count tokens per section.

Example:
    >>> from evennia_ai.prompt.components import get_static_components
    >>> from evennia_ai.prompt.contexts import get_context_config
    >>> prompt = assemble_messages(get_static_components(), get_context_config("tick_event"),
    ...                            {"system_prompt": "You are Bob.",
    ...                             "pending_event": 'Alice says to you: "Hi."'})
    >>> [m["role"] for m in prompt.messages]
    ['system', 'user']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evennia_ai.prompt.components import PromptComponent
from evennia_ai.prompt.contexts import STATIC_COMPONENT_IDS, anchor_static_id
from evennia_ai.prompt.templates import safe_render_template
from evennia_ai.wording import (  # noqa: F401  (re-exported: assembly's names of them)
    CALL_WITHOUT_RESULT,
    DEFAULT_SYSTEM_FALLBACK,
    DEFAULT_USER_TURN,
    EMPTY_TOOL_OUTPUT,
    TOOL_RESULT_LABEL,
    TOOL_RESULT_LABEL_UNNAMED,
)

CHAT_ROLES = ("system", "user", "assistant", "tool")
COMPONENT_ROLES = CHAT_ROLES + ("mixed",)
SECTION_FALLBACK_SYSTEM = "_fallback_system"
SECTION_USER_TURN = "_user_turn"
SECTION_TASK = "_task"
SECTION_OPERATOR = "operator"
TASK_PLACEHOLDER = "pending_event"

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Names safe_render_template takes as its own parameters; never passed as values.
_RESERVED_VALUE_NAMES = frozenset({"content", "template", "template_or_content"})


@dataclass
class Section:
    """Which component produced which text of the request.

    Attributes:
        key: The component key (history messages carry the history component's key);
            :data:`SECTION_FALLBACK_SYSTEM` / :data:`SECTION_USER_TURN` for added framing.
        role: The role of the message the text went into.
        text: The text (for an assistant message with tool calls: its content and the calls as
            JSON, which is what costs tokens).
        message_index: Index of the message in :attr:`AssembledPrompt.messages`; several
            sections share one index when system parts merged.
    """

    key: str
    role: str
    text: str
    message_index: int = -1


@dataclass
class AssembledPrompt:
    """The messages ready to send, and where their text came from.

    Attributes:
        messages: Chat-completions messages (dicts with role/content, tool_calls, tool_call_id).
        sections: One :class:`Section` per piece of text, in message order.
        skipped: ``(component key, reason)`` for enabled-looking components that produced
            nothing ("disabled", "not in context", "empty").
    """

    messages: list[dict[str, Any]]
    sections: list[Section] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Part:
    """One message-to-be, tagged with the component that produced it."""

    key: str
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


# -- selection -----------------------------------------------------------------------------------
def _enabled_ids(context_config: Any) -> set[int] | None:
    """The context's enabled component IDs; None (everything) without a config."""
    if context_config is None:
        return None
    raw = getattr(context_config, "enabled_components", None)
    if isinstance(context_config, Mapping):
        raw = context_config.get("enabled_components")
    if raw is None:
        return None
    return {v for v in raw if isinstance(v, int) and not isinstance(v, bool)}


def _override(context_config: Any, key: str) -> str | None:
    getter = getattr(context_config, "get_component_content_override", None)
    if getter is None:
        return None
    value = getter(key)
    return value if isinstance(value, str) else None


def is_component_enabled(component: PromptComponent, enabled_ids: Iterable[int] | None) -> bool:
    """Whether a context with ``enabled_ids`` includes ``component`` (ignoring its own flag).

    Static components are included by their ID. A pluggable component is included by its own
    ID or by the static component it follows (``after_static`` when that is a static ID, else
    the largest static ID below its ID).
    """
    if enabled_ids is None:
        return True
    enabled = set(enabled_ids)
    if component.id in enabled:
        return True
    if component.id in STATIC_COMPONENT_IDS:
        return False
    after = getattr(component, "after_static", None)
    anchor = after if after in STATIC_COMPONENT_IDS else anchor_static_id(component.id)
    return anchor in enabled


def select_components(
    components: Iterable[PromptComponent],
    context_config: Any,
    *,
    apply_overrides: bool = True,
    skipped: list[tuple[str, str]] | None = None,
) -> list[PromptComponent]:
    """The components a context assembles, in ID order, with its content overrides applied.

    Args:
        components: Static and pluggable components (any order).
        context_config: The context type's ContextConfig; None includes every component.
        apply_overrides: Whether to apply the context's ``component_overrides``.
        skipped: When given, ``(key, reason)`` is appended for each component left out.
    """
    enabled_ids = _enabled_ids(context_config)
    chosen: list[PromptComponent] = []
    valid = [c for c in components if isinstance(getattr(c, "id", None), int)]
    for comp in sorted(valid, key=lambda c: c.id):
        if not comp.enabled:
            if skipped is not None:
                skipped.append((comp.key, "disabled"))
            continue
        if not is_component_enabled(comp, enabled_ids):
            if skipped is not None:
                skipped.append((comp.key, "not in context"))
            continue
        override = _override(context_config, comp.key) if apply_overrides else None
        chosen.append(replace(comp, content=override) if override is not None else comp)
    return chosen


# -- rendering -----------------------------------------------------------------------------------
def _as_text(value: Any) -> str:
    """A placeholder value as prompt text (lists and dicts as JSON)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple, dict)):
        return not value
    return False


def _texts(values: Mapping[str, Any]) -> dict[str, str]:
    return {
        key: _as_text(value)
        for key, value in values.items()
        if isinstance(key, str) and key.isidentifier() and key not in _RESERVED_VALUE_NAMES
    }


def _only_empty_placeholders(content: str, values: Mapping[str, Any]) -> bool:
    """Whether ``content`` is nothing but placeholders with missing or empty values."""
    if _PLACEHOLDER.sub("", content).strip():
        return False
    return all(_is_empty(values.get(name)) for name in _PLACEHOLDER.findall(content))


def _render(content: str, values: Mapping[str, Any], texts: dict[str, str]) -> str:
    """Rendered, stripped text; "" when there is nothing worth sending."""
    if not content or _only_empty_placeholders(content, values):
        return ""
    return safe_render_template(content, **texts).strip()


def _message_text(content: Any) -> str:
    """The text of a message's content (content-part lists joined)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, (list, tuple)):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
        return "\n".join(pieces)
    return _as_text(content)


def _normalise_calls(raw: Any) -> list[dict[str, Any]]:
    """Well-formed tool calls in chat-completions shape (first of each id kept)."""
    if not isinstance(raw, (list, tuple)):
        return []
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in raw:
        if not isinstance(call, Mapping):
            continue
        call_id = call.get("id")
        function = call.get("function")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            continue
        if not isinstance(function, Mapping):
            continue
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        seen.add(call_id)
        calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls


def _history_parts(key: str, items: Iterable[Any]) -> list[_Part]:
    """History messages as parts (chat keys only; bookkeeping and unknown roles dropped)."""
    parts: list[_Part] = []
    for raw in items:
        if isinstance(raw, str):
            parts.append(_Part(key, "user", raw))
            continue
        if not isinstance(raw, Mapping) or raw.get("role") not in CHAT_ROLES:
            continue
        role = raw["role"]
        text = _message_text(raw.get("content"))
        if role == "assistant":
            parts.append(_Part(key, role, text, tool_calls=_normalise_calls(raw.get("tool_calls"))))
        elif role == "tool":
            parts.append(_tool_part(key, raw))
        else:
            parts.append(_Part(key, role, text))
    return parts


def _tool_part(key: str, value: Mapping[str, Any]) -> _Part:
    call_id = value.get("tool_call_id")
    name = value.get("name")
    return _Part(
        key,
        "tool",
        _message_text(value.get("content")),
        tool_call_id=call_id if isinstance(call_id, str) and call_id else None,
        name=name if isinstance(name, str) and name else None,
    )


def _sole_placeholder(content: str) -> str | None:
    """The placeholder name when ``content`` is exactly one placeholder."""
    match = _PLACEHOLDER.fullmatch(content.strip())
    return match.group(1) if match else None


def _mixed_parts(
    comp: PromptComponent, values: Mapping[str, Any], texts: dict[str, Any]
) -> list[_Part]:
    """A mixed component: list values become messages, the text around them user messages."""
    list_names = [
        n
        for n in dict.fromkeys(_PLACEHOLDER.findall(comp.content))
        if isinstance(values.get(n), (list, tuple))
    ]
    if not list_names:
        text = _render(comp.content, values, texts)
        return [_Part(comp.key, "user", text)] if text else []
    tokens = {"{" + n + "}": n for n in list_names}
    pattern = "(" + "|".join(re.escape(t) for t in tokens) + ")"
    parts: list[_Part] = []
    for piece in re.split(pattern, comp.content):
        if piece in tokens:
            parts.extend(_history_parts(comp.key, values[tokens[piece]]))
        else:
            text = _render(piece, values, texts)
            if text:
                parts.append(_Part(comp.key, "user", text))
    return parts


def _tool_parts(
    comp: PromptComponent, values: Mapping[str, Any], texts: dict[str, Any]
) -> list[_Part]:
    """A tool component: result dicts keep their call id; text is an unattached result."""
    name = _sole_placeholder(comp.content)
    value = values.get(name) if name else None
    if isinstance(value, Mapping):
        return [_tool_part(comp.key, value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        return [_tool_part(comp.key, v) for v in value]
    text = _render(comp.content, values, texts)
    return [_Part(comp.key, "tool", text)] if text else []


# -- making the transcript valid -----------------------------------------------------------------
def _call_note(call: dict[str, Any]) -> str:
    function = call["function"]
    return CALL_WITHOUT_RESULT.format(name=function["name"], arguments=function["arguments"])


def _as_user_result(part: _Part) -> _Part | None:
    """An unattached tool result as a user message (None when it says nothing)."""
    text = (part.content or "").strip()
    if not text:
        return None
    label = TOOL_RESULT_LABEL.format(name=part.name) if part.name else TOOL_RESULT_LABEL_UNNAMED
    return _Part(part.key, "user", f"{label} {text}")


def _make_valid(parts: list[_Part]) -> list[_Part]:
    """Tool results only directly after their calls; every kept call answered; no empties."""
    out: list[_Part | None] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        i += 1
        if part.role == "tool":
            out.append(_as_user_result(part))  # no call right before it
            continue
        if part.role != "assistant" or not part.tool_calls:
            out.append(replace(part, tool_calls=None))
            continue
        run: list[_Part] = []
        while i < len(parts) and parts[i].role == "tool":
            run.append(parts[i])
            i += 1
        call_ids = {call["id"] for call in part.tool_calls}
        answers: list[_Part] = []
        answered: set[str] = set()
        extra: list[_Part] = []
        for result in run:
            call_id = result.tool_call_id
            if call_id is not None and call_id in call_ids and call_id not in answered:
                answered.add(call_id)
                has_text = bool((result.content or "").strip())
                answers.append(
                    replace(result, content=result.content if has_text else EMPTY_TOOL_OUTPUT)
                )
            else:
                extra.append(result)
        kept = [call for call in part.tool_calls if call["id"] in answered]
        if kept:
            out.append(replace(part, tool_calls=kept))
            out.extend(answers)
        else:
            lines = [part.content or ""] if (part.content or "").strip() else []
            lines += [_call_note(call) for call in part.tool_calls]
            out.append(replace(part, content="\n".join(lines), tool_calls=None))
        out.extend(_as_user_result(result) for result in extra)
    valid: list[_Part] = []
    for item in out:
        if item is None:
            continue
        blank = not (item.content or "").strip()
        if item.role == "assistant" and item.tool_calls:
            valid.append(replace(item, content=None) if blank else item)
        elif not blank:
            valid.append(item)
    return valid


def _message(part: _Part) -> dict[str, Any]:
    if part.role == "assistant" and part.tool_calls:
        return {"role": "assistant", "content": part.content, "tool_calls": part.tool_calls}
    if part.role == "tool":
        message = {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content}
        if part.name:
            message["name"] = part.name
        return message
    return {"role": part.role, "content": part.content}


def _section_text(part: _Part) -> str:
    if part.role == "assistant" and part.tool_calls:
        calls = json.dumps(part.tool_calls, ensure_ascii=False)
        return f"{part.content}\n{calls}" if part.content else calls
    return part.content or ""


# -- assembly ------------------------------------------------------------------------------------
def assemble_messages(
    components: Iterable[PromptComponent],
    context_config: Any,
    values: Mapping[str, Any] | None,
    *,
    apply_overrides: bool = True,
    fallback_system: str = DEFAULT_SYSTEM_FALLBACK,
    ensure_user_turn: bool = True,
    task: str | None = None,
    operator: str | None = None,
) -> AssembledPrompt:
    """Render a context's components into a valid chat-completions request.

    Args:
        components: Static and pluggable :class:`PromptComponent` s (any order).
        context_config: The context type's ContextConfig (None: every component, no overrides).
        values: Placeholder values from the context sources: texts, the history as a list of
            message dicts, the tool result as a dict or text.
        apply_overrides: Whether the context's ``component_overrides`` replace content.
        fallback_system: The system message used when no system text was produced.
        ensure_user_turn: Append :data:`DEFAULT_USER_TURN` when the request would otherwise
            end on a system or assistant message.
        task: The task message of a context type without an event (see
            :mod:`evennia_ai.prompt.tasks`). No component rendering ``{pending_event}``: it is
            appended as the last user message (section :data:`SECTION_TASK`).
        operator: The operator's section (:mod:`evennia_ai.prompt.operator`). Not a component:
            it opens the first system message whatever ``components`` and ``context_config``
            select (section :data:`SECTION_OPERATOR`).

    Returns:
        An :class:`AssembledPrompt` whose messages pass :func:`validate_chat_messages`.
    """
    values = dict(values) if isinstance(values, Mapping) else {}
    skipped: list[tuple[str, str]] = []
    chosen = [
        replace(comp, content=comp.content if isinstance(comp.content, str) else "")
        for comp in select_components(
            components, context_config, apply_overrides=apply_overrides, skipped=skipped
        )
    ]
    parts = _component_parts(chosen, values, skipped)
    if task and not any(TASK_PLACEHOLDER in _PLACEHOLDER.findall(c.content) for c in chosen):
        parts.append(_Part(SECTION_TASK, "user", task))
    parts = _frame(_make_valid(parts), operator, fallback_system, ensure_user_turn)
    messages, sections = _messages_of(parts)
    return AssembledPrompt(messages=messages, sections=sections, skipped=skipped)


def _component_parts(
    chosen: list[PromptComponent], values: Mapping[str, Any], skipped: list[tuple[str, str]]
) -> list[_Part]:
    """The parts the ``chosen`` components render to, in order (steps 3 and 4).

    A component that renders nothing is noted in ``skipped`` as "empty".
    """
    # Only the values some component renders as text are turned into text (the budgeter
    # assembles often): a list a mixed component inserts as messages (the history) is not.
    used = {
        name
        for comp in chosen
        for name in _PLACEHOLDER.findall(comp.content)
        if comp.role != "mixed" or not isinstance(values.get(name), (list, tuple))
    }
    texts = _texts({name: values[name] for name in used if name in values})
    parts: list[_Part] = []
    for comp in chosen:
        if comp.role == "mixed":
            produced = _mixed_parts(comp, values, texts)
        elif comp.role == "tool":
            produced = _tool_parts(comp, values, texts)
        else:
            role = comp.role if comp.role in CHAT_ROLES else "system"
            text = _render(comp.content, values, texts)
            produced = [_Part(comp.key, role, text)] if text else []
        if not produced:
            skipped.append((comp.key, "empty"))
        parts.extend(produced)
    return parts


def _frame(
    parts: list[_Part], operator: str | None, fallback_system: str, ensure_user_turn: bool
) -> list[_Part]:
    """Valid ``parts`` framed (step 6): the operator's section first, a system message first,
    a user turn last."""
    parts = list(parts)
    if isinstance(operator, str) and operator.strip():
        parts.insert(0, _Part(SECTION_OPERATOR, "system", operator.strip()))
    if not parts or parts[0].role != "system":
        fallback = fallback_system.strip() if isinstance(fallback_system, str) else ""
        parts.insert(
            0, _Part(SECTION_FALLBACK_SYSTEM, "system", fallback or DEFAULT_SYSTEM_FALLBACK)
        )
    # (An assistant message with tool calls is always followed by their results by now.)
    if ensure_user_turn and parts[-1].role in ("system", "assistant"):
        parts.append(_Part(SECTION_USER_TURN, "user", DEFAULT_USER_TURN))
    return parts


def _messages_of(parts: list[_Part]) -> tuple[list[dict[str, Any]], list[Section]]:
    """The chat messages of framed ``parts`` (adjacent system parts merged), and their
    sections."""
    messages: list[dict[str, Any]] = []
    sections: list[Section] = []
    for part in parts:
        if part.role == "system" and messages and messages[-1]["role"] == "system":
            messages[-1]["content"] += "\n\n" + (part.content or "")
        else:
            messages.append(_message(part))
        sections.append(Section(part.key, part.role, _section_text(part), len(messages) - 1))
    return messages, sections


# -- validation ----------------------------------------------------------------------------------
def _blank(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return not content
    return True


def _call_problems(index: int, calls: Any) -> tuple[list[str], list[str]]:
    """(problems, call ids) of an assistant message's tool_calls."""
    if not isinstance(calls, list) or not calls:
        return [f"message {index}: tool_calls must be a non-empty list"], []
    problems: list[str] = []
    ids: list[str] = []
    for n, call in enumerate(calls):
        where = f"message {index} tool call {n}"
        if not isinstance(call, Mapping):
            problems.append(f"{where} is not an object")
            continue
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            problems.append(f"{where} has no id")
        elif call_id in ids:
            problems.append(f"{where} repeats id {call_id!r}")
        else:
            ids.append(call_id)
        if call.get("type", "function") != "function":
            problems.append(f"{where} has type {call.get('type')!r}, not 'function'")
        function = call.get("function")
        if (
            not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not function.get("name")
        ):
            problems.append(f"{where} has no function name")
        elif not isinstance(function.get("arguments"), str):
            problems.append(f"{where} has arguments that are not a JSON string")
    return problems, ids


def validate_chat_messages(messages: Any) -> list[str]:
    """Problems that would make a chat-completions request invalid (empty when valid).

    Checks: a non-empty list of dicts with known roles; the first message is system; every
    message has non-empty content except an assistant message carrying tool calls; tool calls
    are well-formed with unique ids; a tool message directly answers (only other tool messages
    in between) a call of the assistant message before it, once; every call is answered before
    the next non-tool message.
    """
    if not isinstance(messages, list) or not messages:
        return ["there are no messages"]
    problems: list[str] = []
    open_ids: set[str] = set()
    answering = False  # inside the run of tool messages after a tool-calling assistant message
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            problems.append(f"message {index} is not an object")
            continue
        role = message.get("role")
        if role not in CHAT_ROLES:
            problems.append(f"message {index} has an invalid role {role!r}")
            continue
        if index == 0 and role != "system":
            problems.append(f"the first message is {role!r}, not 'system'")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not answering or call_id not in open_ids:
                problems.append(f"message {index} (tool) answers no open tool call ({call_id!r})")
            open_ids.discard(call_id)
            if _blank(message.get("content")):
                problems.append(f"message {index} (tool) is empty")
            continue
        if open_ids:
            problems.append(f"message {index} follows unanswered tool calls {sorted(open_ids)}")
        open_ids = set()
        answering = False
        if role == "assistant" and message.get("tool_calls") is not None:
            call_problems, ids = _call_problems(index, message.get("tool_calls"))
            problems.extend(call_problems)
            open_ids = set(ids)
            answering = True
            content = message.get("content")
            if content is not None and not isinstance(content, (str, list)):
                problems.append(
                    f"message {index} (assistant) has content of type " f"{type(content).__name__}"
                )
        elif _blank(message.get("content")):
            problems.append(f"message {index} ({role}) is empty")
    if open_ids:
        problems.append(f"tool calls {sorted(open_ids)} are never answered")
    return problems
