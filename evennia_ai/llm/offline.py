"""The built-in offline model: deterministic answers from the request. NOT a language model.

It exists so that the demo and the test suite run with no key and no network. It reads the
request it is given (messages and offered tools) and answers with simple rules:

- a player's words in the last user message get an in-character reply through the speech tool
  when one is offered (``say``, or ``reply``/``respond``/``speak``), chosen from a few phrasings
  per intent (greeting, question, farewell, thanks, anything else) by hashing the text, and
  signed with the persona's flavour when the system message names one;
- a fact the player states ("my name is X", "I am X", "I like X", "remember that X") is stored
  with ``add_session_memory`` or ``store_memory`` when offered, in the third person;
- in an autonomous tick with ``update_goal`` offered, the first active goal id in the prompt
  (``goal_<tick>_<index>``) gets 25 points more progress;
- with no speech tool it answers with text.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

from evennia_ai.llm.types import LLMResult, LLMUsage, ToolCall

OFFLINE_MODEL_NAME = "evennia_ai/offline"
SPEECH_TOOLS = ("say", "reply", "respond", "speak")

_SPEECH = re.compile(r'^(?P<who>[^\n:"]{1,60}?)\s+(?:says|asks|exclaims|whispers)(?: to you)?,?\s*[:,]?\s*"(?P<what>.+)"\s*$', re.I | re.M)
_FACTS = (
    (re.compile(r"\bmy name is ([\w' -]{2,40})", re.I), "{who}'s name is {x}"),
    (re.compile(r"\bremember(?: that)? (.{3,120})", re.I), "{x}"),
    (re.compile(r"\bi (?:really )?(?:like|love|enjoy) ([\w' ,-]{2,60})", re.I), "{who} likes {x}"),
    (re.compile(r"\bi am (?:a |an )?([\w' -]{2,40})", re.I), "{who} is {x}"),
    (re.compile(r"\bi'm (?:a |an )?([\w' -]{2,40})", re.I), "{who} is {x}"),
)
_GOAL_ID = re.compile(r"\b(goal_\d+_\d+)\b[^\n]*?\bactive\b", re.I)
_PROGRESS = re.compile(r"(goal_\d+_\d+)[^\n]*?(\d{1,3})%")

_REPLIES = {
    "greeting": (
        "Well met, {who}! Pull up a stool by the fire.",
        "Evening, {who}. What can I get you?",
        "Welcome, {who}! You look like you've been on the road a while.",
    ),
    "question": (
        "A fair question, {who}. Let me think on it: {echo}",
        "Hmm, {who}, you're asking about {echo} I'll tell you what I know.",
        "That I can help with, {who}. {echo} is something folk ask about often.",
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
        "I hear you, {who}. {echo}",
        "Ha! You don't say, {who}.",
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


def _pick(options: tuple, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf8")).digest()
    return options[digest[0] % len(options)]


def _call(name: str, arguments: dict) -> ToolCall:
    raw = json.dumps(arguments)
    call_id = "call_" + hashlib.sha256((name + raw).encode()).hexdigest()[:10]
    return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw)


def _tool_names(tools) -> dict:
    out = {}
    for tool in tools or []:
        fn = tool.get("function", tool)
        if fn.get("name"):
            out[fn["name"]] = fn.get("parameters") or {}
    return out


def _string_arg(params: dict, text: str) -> dict:
    props = params.get("properties") or {}
    required = params.get("required") or list(props)
    for name in required:
        if (props.get(name) or {}).get("type", "string") == "string":
            return {name: text}
    return {"message": text}


def _last_user_text(messages) -> str:
    for message in reversed(messages or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


class OfflineModel:
    """Deterministic responder (see module docstring)."""

    name = OFFLINE_MODEL_NAME

    def respond(self, messages: list[dict], tools: list[dict] | None = None) -> LLMResult:
        started = time.monotonic()
        offered = _tool_names(tools)
        system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        user = _last_user_text(messages)
        calls: list[ToolCall] = []
        text = None

        speech = _SPEECH.findall(user)
        who, what = (speech[-1] if speech else ("friend", user.strip()))
        who = who.strip() or "friend"
        if speech:
            speech_tool = next((n for n in SPEECH_TOOLS if n in offered), None)
            reply = self._reply(who, what)
            memory_tool = next((n for n in ("add_session_memory", "store_memory") if n in offered), None)
            if speech_tool:
                calls.append(_call(speech_tool, _string_arg(offered[speech_tool], reply)))
            else:
                text = reply
            fact = self._fact(who, what)
            if fact and memory_tool:
                args = {"kind": "fact", "content": fact} if memory_tool == "add_session_memory" else {"content": fact}
                calls.append(_call(memory_tool, _filter_args(offered[memory_tool], args, fact)))
        elif "update_goal" in offered and ("autonomous" in user.lower() or "goal" in user.lower()):
            goal = _GOAL_ID.search(system + "\n" + user)
            if goal:
                current = {m[0]: int(m[1]) for m in _PROGRESS.findall(system + "\n" + user)}
                progress = min(100, current.get(goal.group(1), 0) + 25)
                args = {"goal_id": goal.group(1), "progress": progress}
                if progress >= 100:
                    args["status"] = "completed"
                calls.append(_call("update_goal", args))
            else:
                calls.append(_call("noop", {})) if "noop" in offered else None
        elif "noop" in offered:
            calls.append(_call("noop", {}))
        else:
            text = "I have nothing to add right now."

        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
        completion_tokens = max(1, len(json.dumps([c.arguments for c in calls]) + (text or "")) // 4)
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

    @staticmethod
    def _reply(who: str, what: str) -> str:
        intent = _intent(what)
        echo = what.strip().rstrip("?.!")
        echo = (echo[:80] + "...") if len(echo) > 80 else echo
        return _pick(_REPLIES[intent], what).format(who=who, echo=echo + ".")

    @staticmethod
    def _fact(who: str, what: str) -> str | None:
        for pattern, shape in _FACTS:
            match = pattern.search(what)
            if match:
                x = match.group(1).strip().rstrip(".!?")
                if shape == "{x}":
                    x = re.sub(r"\bI am\b|\bI'm\b", f"{who} is", x)
                    x = re.sub(r"\bmy\b", f"{who}'s", x, flags=re.I)
                    x = re.sub(r"\bI\b", who, x)
                return shape.format(who=who, x=x)
        return None


def _filter_args(params: dict, args: dict, text: str) -> dict:
    props = params.get("properties") or {}
    if not props:
        return args
    kept = {k: v for k, v in args.items() if k in props}
    for name in params.get("required") or []:
        if name not in kept:
            kept.update(_string_arg({"properties": {name: props.get(name, {})}, "required": [name]}, text))
    return kept
