"""An assistant's conversation history: chat messages grouped by the tick that made them.

Pure: no Django, Evennia or Twisted. The history is a plain list of message dicts in
chat-completions shape, oldest first, each tagged with the tick that made it::

    {"role": "user" | "assistant" | "tool" | "system", "content": ...,
     "tool_calls": [...],        # assistant messages that called tools
     "tool_call_id": "...",      # tool results
     "name": "...",              # tool results
     "batch": 17,                # the tick id (bookkeeping)
     "ts": "2026-11-02T10:00:00+00:00"}   # when it was stored (bookkeeping)

A tick's messages (its *batch*) are the event it answered as a user message, then the
assistant's messages and tool results. :func:`append_tick` adds one batch and trims the history
to a message count by dropping whole batches, oldest first, so a tool call is never separated
from its result; the batch just added (the active one) is never dropped. Trimming by tokens and
summarising belong to the history compression in ``evennia_ai.memory``.

:func:`to_chat_messages` is what goes to the model: bookkeeping removed and the transcript made
valid whatever is stored (a tool result always follows the call it answers).

Example:
    history = append_tick([], 1, [{"role": "user", "content": 'Alice says to you: "Hi."'},
                                  {"role": "assistant", "content": "Hello, Alice."}], 200)
    to_chat_messages(history)
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Hashable, Iterable

from evennia_ai.utils import defuse_tags, iso_utc, truncate

ROLES = ("system", "user", "assistant", "tool")
BOOKKEEPING_KEYS = ("batch", "ts")
_CHAT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
COLLAPSED_RESULT_CHARS = 500  # characters of a tool result kept when a call becomes text
DEFUSED_CACHE_CHARS = 4000  # texts up to this long keep their defused form between ticks


def _message(raw: Any, tick_id: Hashable, ts: str) -> dict:
    """Copy one incoming message with its chat keys and bookkeeping."""
    if not isinstance(raw, dict):
        raise ValueError(f"A history message must be a dict, not {type(raw).__name__}.")
    role = raw.get("role")
    if role not in ROLES:
        raise ValueError(f"A history message needs a role among {', '.join(ROLES)}, not {role!r}.")
    message = {key: raw[key] for key in _CHAT_KEYS if key in raw}
    message["batch"] = tick_id
    message["ts"] = ts
    return message


def _calls(message: dict) -> list[dict]:
    """The well-formed tool calls of an assistant message (dicts with an id and a name)."""
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list):
        return []
    return [
        c
        for c in calls
        if isinstance(c, dict)
        and c.get("id")
        and isinstance(c.get("function"), dict)
        and c["function"].get("name")
    ]


def _groups(messages: list[dict]) -> list[list[dict]]:
    """Split messages into units that must stay together: a tool-calling assistant message
    with the tool results that follow it, or any other single message."""
    groups: list[list[dict]] = []
    for message in messages:
        if message.get("role") == "tool" and groups and _calls(groups[-1][0]):
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def _call_text(call: dict) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments or {}, ensure_ascii=False, sort_keys=True)
    return f"{function.get('name', '?')}({arguments})"


def _collapse(group: list[dict]) -> dict:
    """One tool-calling group as a single assistant text message (when it cannot fit whole)."""
    head = group[0]
    results = {m.get("tool_call_id"): m for m in group[1:]}
    lines = [str(head["content"])] if head.get("content") else []
    for call in _calls(head):
        result = results.get(call["id"])
        outcome = (
            truncate(result.get("content"), COLLAPSED_RESULT_CHARS)
            if result is not None
            else "no result recorded"
        )
        lines.append(f"[called {_call_text(call)} -> {outcome}]")
    collapsed = {"role": "assistant", "content": "\n".join(lines) or "(no reply)"}
    for key in BOOKKEEPING_KEYS:
        if key in head:
            collapsed[key] = head[key]
    return collapsed


def _fit_batch(messages: list[dict], cap: int) -> list[dict]:
    """Shorten one batch longer than ``cap``: keep its event and its newest steps whole."""
    if len(messages) <= cap:
        return messages
    head = messages[:1] if cap >= 2 and messages[0].get("role") == "user" else []
    room = cap - len(head)
    kept: list[list[dict]] = []
    for group in reversed(_groups(messages[len(head) :])):
        if len(group) <= room:
            kept.insert(0, group)
            room -= len(group)
        elif not kept:  # even the newest step is too long: keep it as text
            kept.insert(0, [_collapse(group)])
            room -= 1
        else:  # keep the tail contiguous
            break
    return head + [m for group in kept for m in group]


def batches(history: Iterable[dict] | None) -> list[tuple[Hashable, list[dict]]]:
    """The history as ``(batch id, messages)`` pairs, oldest first (consecutive runs)."""
    runs: list[tuple[Hashable, list[dict]]] = []
    for message in history or []:
        if not isinstance(message, dict):
            continue
        batch = message.get("batch")
        if runs and runs[-1][0] == batch:
            runs[-1][1].append(message)
        else:
            runs.append((batch, [message]))
    return runs


def append_tick(
    history: list[dict] | None,
    tick_id: Hashable,
    messages: Iterable[dict],
    max_messages: int,
    ts: str | None = None,
    *,
    max_chars: int | None = None,
    message_chars: int | None = None,
) -> list[dict]:
    """Return a new history with one tick's messages added and trimmed to ``max_messages``.

    Whole batches are dropped, oldest first, until the history fits; the tick's own batch (the
    active one, merged with an earlier run of the same tick id at the end) is never dropped. If
    it alone is longer than ``max_messages`` it is shortened inside: its event message and its
    newest steps are kept, and a step that cannot fit whole becomes one text message.

    Args:
        history: The stored history (not changed).
        tick_id: Id of the tick (stored as each message's ``batch``).
        messages: The tick's chat messages: the event as a user message, then the assistant's
            messages (with ``tool_calls``) and the tool results.
        max_messages: Most messages kept (at least 1).
        ts: Timestamp for the new messages; now when omitted.
        max_chars: Most characters of content in all; older batches are dropped past it
            (the active one is kept). None: no limit.
        message_chars: Most characters of one new message's content (a long tool result is
            cut with a marker). None: no limit.

    Raises:
        ValueError: If ``max_messages`` is below 1 or a message is not a chat message dict.
    """
    max_messages = int(max_messages)
    if max_messages < 1:
        raise ValueError(f"The history must keep at least 1 message, not {max_messages}.")
    ts = ts or iso_utc(precise=True)
    new = [_message(m, tick_id, ts) for m in messages or []]
    if message_chars:
        for message in new:
            if isinstance(message.get("content"), str):
                message["content"] = truncate(message["content"], int(message_chars))
    runs = batches([dict(m) for m in history or [] if isinstance(m, dict)])
    if runs and runs[-1][0] == tick_id:
        new = runs.pop()[1] + new
    active = _fit_batch(new, max_messages)
    total = len(active) + sum(len(m) for _, m in runs)
    while runs and total > max_messages:
        total -= len(runs.pop(0)[1])
    if max_chars:
        size = sum(stored_chars(m) for _, run in runs for m in run) + sum(
            stored_chars(m) for m in active
        )
        while runs and size > int(max_chars):
            size -= sum(stored_chars(m) for m in runs.pop(0)[1])
    return [m for _, run in runs for m in run] + active


def stored_chars(message: dict) -> int:
    """Characters a stored message holds (content and tool-call arguments)."""
    content = message.get("content")
    size = len(content) if isinstance(content, str) else len(str(content or ""))
    for call in message.get("tool_calls") or []:
        size += len(str((call.get("function") or {}).get("arguments") or ""))
    return size


@lru_cache(maxsize=2048)
def _defused(text: str) -> str:
    """:func:`defuse_tags` of a history text, remembered: every tick sends the same history."""
    return defuse_tags(text)


def _clean(message: dict, **overrides: Any) -> dict:
    """A message with only its chat keys, content made acceptable to providers."""
    role = message["role"]
    clean = {"role": role}
    content = overrides.pop("content", message.get("content"))
    if content is None and not (role == "assistant" and overrides.get("tool_calls")):
        content = ""
    elif content is not None and not isinstance(content, (str, list)):
        content = str(content)
    if isinstance(content, str):  # what players, tools and the model wrote opens no element
        content = _defused(content) if len(content) <= DEFUSED_CACHE_CHARS else defuse_tags(content)
    clean["content"] = content
    if role == "tool":
        clean["tool_call_id"] = message.get("tool_call_id")
        if message.get("name"):
            clean["name"] = str(message["name"])
    clean.update(overrides)
    return clean


def to_chat_messages(history: Iterable[dict] | None) -> list[dict]:
    """The history as chat messages for a model call, always a valid transcript.

    Bookkeeping keys are removed. A tool result is kept only right after the assistant message
    whose call it answers (a second answer to one call is dropped); calls left without a result
    are removed from their message, and a message left with no answered call becomes text.
    Messages of unknown roles are dropped. Never returns more messages than it was given.
    """
    messages = [m for m in history or [] if isinstance(m, dict) and m.get("role") in ROLES]
    out: list[dict] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message["role"]
        i += 1
        if role == "tool":
            continue  # a result with no call right before it
        calls = _calls(message)
        if role != "assistant" or not calls:
            if role == "assistant" and message.get("tool_calls"):
                out.append(_clean(message, content=message.get("content") or "(no reply)"))
            else:
                out.append(_clean(message))
            continue
        results = []
        while i < len(messages) and messages[i]["role"] == "tool":
            results.append(messages[i])
            i += 1
        by_id = {c["id"]: c for c in calls}
        answered: list[dict] = []
        seen: set = set()
        for result in results:
            call_id = result.get("tool_call_id")
            if call_id in by_id and call_id not in seen:
                seen.add(call_id)
                answered.append(result)
        kept = [c for c in calls if c["id"] in seen]
        if not kept:
            out.append(_collapse([message]))
            out[-1] = _clean(out[-1])
            continue
        out.append(_clean(message, tool_calls=kept))
        out.extend(_clean(r) for r in answered)
    return out


def render_text(
    history: Iterable[dict] | None,
    assistant_name: str = "You",
    max_chars: int = COLLAPSED_RESULT_CHARS,
) -> str:
    """A plain transcript for summarisation and reflection, one block per tick.

    Args:
        history: The stored history (or plain chat messages).
        assistant_name: How the assistant's own lines are labelled.
        max_chars: Characters kept of each tool result.
    """
    blocks = []
    for batch, messages in batches(history):
        lines = [f"--- tick {batch} ---"] if batch is not None else []
        for message in messages:
            role = message.get("role")
            content = message.get("content")
            if isinstance(content, list):  # content parts: keep their text
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            content = "" if content is None else str(content).strip()
            if role == "assistant":
                if content:
                    lines.append(f"{assistant_name}: {content}")
                for call in _calls(message):
                    lines.append(f"{assistant_name} used {_call_text(call)}")
            elif role == "tool":
                name = message.get("name") or "tool"
                lines.append(f"Result of {name}: {truncate(content, max_chars)}")
            elif role == "system":
                lines.append(f"[System] {content}")
            elif content:
                lines.append(content)
        blocks.append("\n".join(lines))
    return "\n\n".join(b for b in blocks if b)
