"""The built-in offline model: deterministic answers computed from the request.

This is NOT a language model. It exists so that a game, the demo and the test suite work with
no API key and no network: the client uses it when ``EVENNIA_AI_MODEL`` is empty or is
``evennia_ai/offline``. It reads the request (messages and offered tools) and follows a few
fixed rules, so the same request always gets the same answer:

1. **Speech.** The newest user message (someone said something: ``Alice says, "hello"``, or any
   user text) gets an in-character reply through a speech tool when one is offered (``say``,
   else ``reply``/``respond``/``speak``, else a tool whose name contains one of those words).
   The reply is picked from a few short phrasings per intent (greeting, question, farewell,
   thanks, anything else) by hashing the player's words, and uses the speaker's and the NPC's
   names as written and the flavour of its persona when the system message gives them. It
   never repeats the player's words back (an echo reads as a broken NPC). With no speech
   tool, the reply is text.
2. **Facts.** When the player states a fact ("my name is X", "I am X", "I like X", "remember
   that X") and ``add_session_memory`` or ``store_memory`` is offered, that call comes first,
   with the fact in the third person (``Alice's name is X``).
3. **Goals.** In an autonomous tick (no new input to answer) with ``update_goal`` offered, the
   first active goal id in the prompt (``goal_<tick>_<n> ... active``) gets one step
   (:data:`GOAL_STEP` points) more progress, and is completed at 100.
4. **Done.** Inside a ReAct loop, once the steps above were taken for the newest input, it
   ends the turn: ``noop`` when offered, else an empty answer.

Arguments are built from each tool's JSON schema, so tools whose parameter names differ still
get valid calls (required string parameters get the text). Usage is a rough estimate (four
characters a token), cost 0, model ``evennia_ai/offline``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping

from evennia_ai.llm.types import JSONObject, LLMResult, LLMUsage, ToolCall

OFFLINE_MODEL_NAME = "evennia_ai/offline"  # same value as evennia_ai.conf.OFFLINE_MODEL
SPEECH_TOOLS = ("say", "reply", "respond", "speak")
MEMORY_TOOLS = ("add_session_memory", "store_memory")
GOAL_STEP = 25

# "Alice says, "hi"", "Alice says to you: "hi"", "Bob asks: "where?"".
_SPEECH = re.compile(
    r'^\s*(?P<who>[^\n:"]{1,60}?)\s+(?:says|asks|exclaims|whispers|shouts|replies)'
    r'(?:\s+to\s+[^\n:",]{1,40})?\s*[:,]?\s*"(?P<what>[^\n]+)"\s*$',
    re.I | re.M,
)
_NPC_NAME = re.compile(r"\bYou are ([A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3})")
_PERSONA = re.compile(r"^#+\s*Persona\s*\n(?P<text>.+?)(?:\n#|\Z)", re.S | re.M | re.I)
_ACTIVE_GOAL = re.compile(r"\b(goal_\d+_\d+)\b[^\n]*?\bactive\b", re.I)
_GOAL_PROGRESS = re.compile(r"\b(goal_\d+_\d+)\b[^\n]*?(\d{1,3})%")
# Cut a stated fact at the next clause: "Alice and I like ale" -> "Alice".
_CLAUSE_END = re.compile(r"\s*(?:[.!?;]|,| and | but | so | because ).*$", re.I | re.S)
_FACTS = (
    (re.compile(r"\bmy name is ([\w' -]{2,60})", re.I), "{who}'s name is {x}"),
    (re.compile(r"\bremember(?: that)? (.{3,160})", re.I), None),
    (re.compile(r"\bi (?:really )?(?:like|love|enjoy) ([\w' -]{2,60})", re.I), "{who} likes {x}"),
    (re.compile(r"\b(?:i am|i'm) ((?:a |an )?[\w' -]{2,60})", re.I), "{who} is {x}"),
)

_FLAVOURS = (
    (("innkeeper", "tavern", "barkeep", "bartender", "inn ", "ale"), "What can I pour you?"),
    (("guard", "soldier", "watchman", "captain"), "Keep the peace while you're here."),
    (("merchant", "shop", "trader", "smith", "vendor"), "Have a look at my wares."),
    (("priest", "temple", "healer", "monk"), "Peace be with you."),
    (("wizard", "mage", "scholar", "librarian"), "Knowledge is never wasted."),
)
_DEFAULT_FLAVOUR = "What brings you here?"
_REPLIES = {
    "greeting": (
        "Well met, {who}! {flavour}",
        "Evening, {who}. {flavour}",
        "Welcome, {who}! I'm {me}. {flavour}",
    ),
    "question": (
        "A fair question, {who}. Let me think on it.",
        "I couldn't say just now, {who}. {flavour}",
        "Folk ask me that often, {who}. Give me a moment.",
    ),
    "farewell": (
        "Safe travels, {who}. The door's always open.",
        "Off with you then, {who}, and mind the road.",
    ),
    "thanks": (
        "Think nothing of it, {who}.",
        "My pleasure, {who}.",
    ),
    "default": (
        "Is that so, {who}? Tell me more.",
        "I hear you, {who}.",
        "Ha! You don't say, {who}. {flavour}",
    ),
}


def _intent(text: str) -> str:
    lowered = text.lower()
    if re.search(r"\b(bye|farewell|goodbye|good night|see you)\b", lowered):
        return "farewell"
    if re.search(r"\b(thanks|thank you|cheers)\b", lowered):
        return "thanks"
    if re.search(r"\b(hello|hi|hey|greetings|good (morning|evening|day)|well met)\b", lowered):
        return "greeting"
    if "?" in text:
        return "question"
    return "default"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _tool_params(tools: Iterable[object] | None) -> dict[str, JSONObject]:
    """Offered tool names mapped to their parameter schemas, in the order offered."""
    offered: dict[str, JSONObject] = {}
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        fn = function if isinstance(function, dict) else tool
        name = fn.get("name")
        if isinstance(name, str) and name:
            params = fn.get("parameters")
            offered[name] = params if isinstance(params, dict) else {}
    return offered


def _placeholder(spec: JSONObject, text: str) -> object:
    """A valid value for one parameter: the text for strings, a neutral value otherwise."""
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0]
    kind = spec.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "string":
        return text
    if kind in ("integer", "number"):
        return spec.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return text


def build_arguments(
    params: JSONObject, text: str, preferred: Mapping[str, object] | None = None
) -> JSONObject:
    """Arguments for a tool from its JSON schema.

    Args:
        params: The tool's ``parameters`` schema.
        text: The text to put in string parameters.
        preferred: Values wanted when the schema has parameters of those names (all are kept
            when the schema lists no properties).

    Returns:
        ``preferred`` filtered to the schema's parameters, plus a value for every required
        parameter still missing: ``text`` for strings; with no required parameter and nothing
        preferred, a non-empty ``text`` goes in the first string parameter.
    """
    props = params.get("properties")
    props = props if isinstance(props, dict) else {}
    preferred = dict(preferred or {})
    if not props:
        return preferred or {"message": text}
    arguments = {k: v for k, v in preferred.items() if k in props}
    required = [r for r in params.get("required") or [] if r in props]
    for name in required:
        if name not in arguments:
            spec = props[name] if isinstance(props[name], dict) else {}
            arguments[name] = _placeholder(spec, text)
    if not arguments and text:
        first = next(
            (
                n
                for n, s in props.items()
                if isinstance(s, dict) and s.get("type", "string") == "string"
            ),
            None,
        )
        if first:
            arguments[first] = text
    return arguments


def _call(name: str, arguments: JSONObject) -> ToolCall:
    raw = json.dumps(arguments, sort_keys=True)
    return ToolCall(
        id="call_" + _digest(name + raw)[:12], name=name, arguments=arguments, raw_arguments=raw
    )


def _speech_tool(offered: Mapping[str, JSONObject]) -> str | None:
    for name in SPEECH_TOOLS:
        if name in offered:
            return name
    return next((n for n in offered if any(word in n.lower() for word in SPEECH_TOOLS)), None)


def _content(message: JSONObject) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: keep the text parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _is_user_input(message: JSONObject) -> bool:
    """A user message that is not a tool result relayed as text (the JSON protocol's form)."""
    if message.get("role") != "user":
        return False
    return not _content(message).lstrip().startswith("[Tool result")


def _current_turn(messages: list[JSONObject]) -> tuple[str, list[str], bool]:
    """The newest user input and what was done about it since.

    Returns:
        ``(user_text, tools_called_since, answered_with_text)``. ``user_text`` is "" when the
        request has no user message. In an autonomous tick the newest user message is old
        history that was answered already, so it is not answered twice.
    """
    last_user = max((i for i, m in enumerate(messages) if _is_user_input(m)), default=-1)
    if last_user < 0:
        return "", [], False
    called: list[str] = []
    answered = False
    for message in messages[last_user + 1 :]:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and fn.get("name"):
                called.append(fn["name"])
        # Text we wrote is our spoken reply: this model never writes "thoughts".
        if _content(message).strip():
            answered = True
    return _content(messages[last_user]), called, answered


class OfflineModel:
    """Deterministic responder standing in for a model (see the module docstring)."""

    name = OFFLINE_MODEL_NAME

    def respond(
        self, messages: list[JSONObject], tools: list[JSONObject] | None = None
    ) -> LLMResult:
        """Answer a chat request without any network.

        Args:
            messages: OpenAI-format chat messages.
            tools: OpenAI-format tool schemas offered for this call.

        Returns:
            An :class:`LLMResult` with tool calls and/or text, like a real model's.
        """
        started = time.monotonic()
        messages = [m for m in messages or [] if isinstance(m, dict)]
        offered = _tool_params(tools)
        system = "\n".join(_content(m) for m in messages if m.get("role") == "system")
        user_text, called, answered = _current_turn(messages)
        speech_tool = _speech_tool(offered)
        memory_tool = next((n for n in MEMORY_TOOLS if n in offered), None)
        spoke = answered or (speech_tool is not None and speech_tool in called)

        calls: list[ToolCall] = []
        text = None
        if user_text.strip() and not spoke:
            who, words = _speaker_and_words(user_text)
            fact = _fact(who, words)
            if fact and memory_tool and memory_tool not in called:
                preferred = {"kind": "fact", "content": fact, "text": fact, "memory": fact}
                arguments = build_arguments(offered[memory_tool], fact, preferred)
                calls.append(_call(memory_tool, arguments))
            reply = _reply(who, words, system)
            if speech_tool:
                calls.append(_call(speech_tool, build_arguments(offered[speech_tool], reply)))
            else:
                text = reply
        elif "update_goal" in offered and "update_goal" not in called:
            goal_call = _goal_step(system + "\n" + user_text, offered["update_goal"])
            if goal_call is not None:
                calls.append(goal_call)
        if not calls and text is None and "noop" in offered:
            calls.append(_call("noop", build_arguments(offered["noop"], "")))

        schema_chars = len(json.dumps(tools or [], default=str))
        prompt_chars = sum(len(_content(m)) for m in messages) + schema_chars
        completion_chars = len(text or "") + sum(len(c.raw_arguments) + len(c.name) for c in calls)
        prompt_tokens = prompt_chars // 4 + 1
        completion_tokens = completion_chars // 4 + 1
        return LLMResult(
            text=text,
            tool_calls=calls,
            usage=LLMUsage(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens),
            cost=0.0,
            latency=time.monotonic() - started,
            model=OFFLINE_MODEL_NAME,
            attempts=1,
            finish_reason="tool_calls" if calls else "stop",
            native_tools=True,
        )


def _speaker_and_words(user_text: str) -> tuple[str, str]:
    """Who spoke and what they said: the last speech line, else the whole text."""
    matches = list(_SPEECH.finditer(user_text))
    if matches:
        last = matches[-1]
        who = last.group("who").strip().split("\n")[-1].strip() or "friend"
        return who, last.group("what").strip()
    return "friend", user_text.strip()


def _persona_flavour(system: str) -> str:
    match = _PERSONA.search(system)
    persona = (match.group("text") if match else system).lower()
    for words, flavour in _FLAVOURS:
        if any(word in persona for word in words):
            return flavour
    return _DEFAULT_FLAVOUR


def _reply(who: str, words: str, system: str) -> str:
    options = _REPLIES[_intent(words)]
    choice = options[int(_digest(words)[:8], 16) % len(options)]
    name = _NPC_NAME.search(system)
    return choice.format(
        who=who,
        flavour=_persona_flavour(system),
        me=name.group(1) if name else "the keeper of this place",
    )


def _fact(who: str, words: str) -> str | None:
    """The first fact the player states, in the third person, or None."""
    for pattern, shape in _FACTS:
        match = pattern.search(words)
        if not match:
            continue
        if shape is None:  # "remember that ...": rewrite the speaker's pronouns
            x = match.group(1).strip().rstrip(".!?\"'")
            x = re.sub(r"\bI am\b|\bI'm\b", f"{who} is", x)
            x = re.sub(r"\bmy\b", f"{who}'s", x, flags=re.I)
            x = re.sub(r"\b(I|me)\b", who, x)
            return x[:1].upper() + x[1:] if x else None
        x = _CLAUSE_END.sub("", match.group(1)).strip()
        if shape == "{who} is {x}" and re.fullmatch(r"[A-Z][\w'-]+", x):
            shape = "{who}'s name is {x}"  # "I'm Alice" introduces a name
        if len(x) >= 2:
            return shape.format(who=who, x=x)
    return None


def _goal_step(text: str, params: JSONObject) -> ToolCall | None:
    goal = _ACTIVE_GOAL.search(text)
    if goal is None:
        return None
    goal_id = goal.group(1)
    progress = {gid: int(value) for gid, value in _GOAL_PROGRESS.findall(text)}
    new_progress = min(100, progress.get(goal_id, 0) + GOAL_STEP)
    preferred = {"goal_id": goal_id, "progress": new_progress}
    if new_progress >= 100:
        preferred["status"] = "completed"
    return _call("update_goal", build_arguments(params, goal_id, preferred))
