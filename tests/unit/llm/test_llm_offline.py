"""The built-in offline model, alone and through the client (no litellm, no network)."""

import json

import pytest
from django.test import override_settings

from evennia_ai import conf
from evennia_ai.llm import client as client_module
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.llm.offline import GOAL_STEP, OfflineModel, build_arguments


def tool(name, properties=None, required=None):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": list(required or []),
            },
        },
    }


SAY = tool("say", {"message": {"type": "string"}}, ["message"])
MEMORY = tool(
    "add_session_memory",
    {
        "kind": {"type": "string", "enum": ["fact", "pattern", "completed_task"]},
        "content": {"type": "string"},
    },
    ["kind", "content"],
)
STORE = tool(
    "store_memory",
    {"memory": {"type": "string"}, "importance": {"type": "integer", "minimum": 1}},
    ["memory", "importance"],
)
UPDATE_GOAL = tool(
    "update_goal",
    {
        "goal_id": {"type": "string"},
        "status": {"type": "string", "enum": ["active", "completed", "abandoned"]},
        "progress": {"type": "integer", "minimum": 0, "maximum": 100},
    },
    ["goal_id"],
)
NOOP = tool("noop")
SYSTEM = (
    "You are Mara, a character in a text-based multiplayer game.\n\n"
    "## Persona\nA warm innkeeper who runs the Prancing Pony.\n\n"
    "## Goals\n- goal_3_0 [high] completed 100% - Hire a cook\n"
    "- goal_4_1 [medium] active 50% - Stock the cellar\n"
)


def chat(user, system=SYSTEM):
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def respond(messages, tools):
    return OfflineModel().respond(messages, tools)


def test_speech_gets_an_in_character_say():
    result = respond(chat('Alice says, "Hello there!"'), [SAY])
    assert result.ok and result.text is None
    [call] = result.tool_calls
    assert call.name == "say" and call.error is None
    message = call.arguments["message"]
    assert "Alice" in message
    assert json.loads(call.raw_arguments) == call.arguments
    assert result.model == conf.OFFLINE_MODEL == "evennia_ai/offline"
    assert result.cost == 0.0 and result.latency < 0.1 and result.finish_reason == "tool_calls"
    assert result.usage.prompt_tokens > 0
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens


@pytest.mark.parametrize(
    "words, expected",
    [
        ("Hello!", ("Well met", "Evening", "Welcome")),
        ("Where is the smithy?", ("question", "asking", "help with")),
        ("Goodbye, Mara.", ("Safe travels", "Off with you")),
        ("Thank you kindly.", ("Think nothing", "My pleasure")),
        ("The road was long.", ("Tell me more", "I hear you", "You don't say")),
    ],
)
def test_reply_follows_the_intent(words, expected):
    result = respond(chat(f'Bob says to you: "{words}"'), [SAY])
    message = result.tool_calls[0].arguments["message"]
    assert "Bob" in message
    assert any(part in message for part in expected), message


def test_reply_uses_name_and_persona():
    replies = {
        respond(chat(f'Alice says, "{w}"'), [SAY]).tool_calls[0].arguments["message"]
        for w in ("Hello!", "Hi there", "Hey", "Greetings", "Good evening", "hello again")
    }
    flavoured = [r for r in replies if "What can I pour you?" in r]
    assert flavoured, replies  # the innkeeper persona shows
    guard = chat('Alice says, "Hello!"', system="You are Brom.\n\n## Persona\nA stern city guard.")
    assert "Keep the peace" in respond(guard, [SAY]).tool_calls[0].arguments["message"]


def test_deterministic():
    first = respond(chat('Alice says, "My name is Alice and I like ale"'), [MEMORY, SAY])
    second = respond(chat('Alice says, "My name is Alice and I like ale"'), [MEMORY, SAY])
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        (c.id, c.name, c.arguments) for c in second.tool_calls
    ]


def test_any_user_text_is_answered():
    result = respond(chat("Is anyone here?"), [SAY])
    assert result.tool_calls[0].name == "say"
    assert "friend" in result.tool_calls[0].arguments["message"]


@pytest.mark.parametrize(
    "who, words, fact",
    [
        ("Alice", "My name is Alice.", "Alice's name is Alice"),
        ("Char", "Hello! I am a blacksmith from the north.", "Char is a blacksmith from the north"),
        ("Char", "I really like dark ale, you know", "Char likes dark ale"),
        ("Char", "Remember that my sister lives in Bree.", "Char's sister lives in Bree"),
        ("Char", "I'm Alice, by the way", "Char's name is Alice"),
    ],
)
def test_stated_facts_are_stored_first(who, words, fact):
    result = respond(chat(f'{who} says, "{words}"'), [SAY, MEMORY])
    assert [c.name for c in result.tool_calls] == ["add_session_memory", "say"]
    assert result.tool_calls[0].arguments == {"kind": "fact", "content": fact}


def test_store_memory_arguments_come_from_its_schema():
    result = respond(chat('Alice says, "My name is Alice"'), [STORE, SAY])
    call = result.tool_calls[0]
    assert call.name == "store_memory"
    assert call.arguments == {"memory": "Alice's name is Alice", "importance": 1}


def test_no_fact_no_memory_call():
    result = respond(chat('Alice says, "Nice weather."'), [SAY, MEMORY])
    assert [c.name for c in result.tool_calls] == ["say"]


def test_without_a_speech_tool_the_reply_is_text():
    result = respond(chat('Alice says, "Hello!"'), [MEMORY])
    assert result.tool_calls == [] and "Alice" in result.text
    assert result.finish_reason == "stop"
    result = respond(chat('Alice says, "My name is Alice"'), None)
    assert result.text and not result.tool_calls


def test_speech_like_tools_and_other_parameter_names():
    reply = tool("reply_to", {"target": {"type": "string"}, "text": {"type": "string"}}, ["text"])
    result = respond(chat('Alice says, "hi"'), [reply])
    call = result.tool_calls[0]
    assert call.name == "reply_to" and set(call.arguments) == {"text"}
    speak = tool("speak", {"line": {"type": "string"}})  # nothing required
    assert set(respond(chat("hi"), [speak]).tool_calls[0].arguments) == {"line"}


def test_build_arguments_fills_required_parameters_by_type():
    params = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer", "minimum": 2},
            "c": {"type": "boolean"},
            "d": {"type": "string", "enum": ["x", "y"]},
            "e": {"type": "array"},
            "f": {"type": "number"},
        },
        "required": ["a", "b", "c", "d", "e"],
    }
    assert build_arguments(params, "text", {"f": 1.5, "zzz": 1}) == {
        "f": 1.5,
        "a": "text",
        "b": 2,
        "c": False,
        "d": "x",
        "e": [],
    }
    assert build_arguments({}, "hi") == {"message": "hi"}
    optional = {"type": "object", "properties": {"reason": {"type": "string"}}}
    assert build_arguments(optional, "") == {} and build_arguments(optional, "x") == {"reason": "x"}


def test_autonomous_tick_advances_the_first_active_goal():
    messages = [{"role": "system", "content": SYSTEM}]
    result = respond(messages, [SAY, UPDATE_GOAL, NOOP])
    [call] = result.tool_calls
    assert call.name == "update_goal"
    assert call.arguments == {"goal_id": "goal_4_1", "progress": 50 + GOAL_STEP}


def test_goal_completes_at_one_hundred():
    system = SYSTEM.replace("active 50%", "active 90%")
    result = respond([{"role": "system", "content": system}], [UPDATE_GOAL])
    assert result.tool_calls[0].arguments == {
        "goal_id": "goal_4_1",
        "progress": 100,
        "status": "completed",
    }


def answered(messages, calls, content=None):
    """The conversation after the assistant made ``calls`` and got their results."""
    assistant = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            for i, name in enumerate(calls)
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(len(calls))
    ]
    return messages + [assistant] + results


def test_old_answered_speech_is_not_answered_again_in_an_autonomous_tick():
    history = answered(chat('Alice says, "Hello!"'), ["say"])
    result = respond(history, [SAY, UPDATE_GOAL, NOOP])
    assert [c.name for c in result.tool_calls] == ["update_goal"]


def test_the_loop_ends_once_everything_is_done():
    conversation = answered(chat('Alice says, "Hello!"'), ["say"])
    conversation = answered(conversation, ["update_goal"])
    assert [c.name for c in respond(conversation, [SAY, UPDATE_GOAL, NOOP]).tool_calls] == ["noop"]
    final = respond(conversation, [SAY, UPDATE_GOAL])
    assert final.ok and final.text is None and final.tool_calls == []


def test_after_the_memory_call_a_text_answer_is_not_repeated():
    first = respond(chat('Alice says, "My name is Alice"'), [MEMORY])
    assert [c.name for c in first.tool_calls] == ["add_session_memory"] and first.text
    later = answered(
        chat('Alice says, "My name is Alice"'), ["add_session_memory"], content=first.text
    )
    second = respond(later, [MEMORY])
    assert second.tool_calls == [] and second.text is None


def test_tool_results_relayed_as_user_text_are_not_player_input():
    conversation = chat('Alice says, "Hello!"') + [
        {"role": "assistant", "content": '{"tool": "look", "arguments": {}}'},
        {"role": "user", "content": "[Tool result: look] A cosy inn."},
    ]
    assert respond(conversation, [SAY]).tool_calls == []


def test_odd_input_does_not_break_it():
    assert respond([], None).ok
    assert respond(
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], [SAY]
    ).tool_calls
    assert respond([{"role": "user"}, "junk"], ["junk", {"function": None}, {"x": object()}]).ok


# -- through the client ------------------------------------------------------------------------
@pytest.fixture
def no_litellm(monkeypatch):
    def forbidden():
        raise AssertionError("the offline model must not touch litellm")

    monkeypatch.setattr(client_module, "get_litellm", forbidden)
    monkeypatch.delenv("EVENNIA_AI_MODEL", raising=False)


def test_client_uses_offline_model_when_no_model_is_configured(no_litellm):
    with override_settings(EVENNIA_AI_MODEL=""):
        result = UnifiedLLMClient().complete_sync(chat('Alice says, "Hello!"'), [SAY])
    assert result.ok and result.model == conf.OFFLINE_MODEL
    assert result.tool_calls[0].name == "say"
    assert result.attempts == 1 and not result.fallback_used


def test_client_uses_offline_model_by_name(no_litellm):
    with override_settings(EVENNIA_AI_MODEL="openai/never-called"):
        result = UnifiedLLMClient().complete_sync(chat("hi"), [SAY], model=conf.OFFLINE_MODEL)
    assert result.ok and result.model == conf.OFFLINE_MODEL


def test_pure_modules_import_without_twisted_django_or_litellm():
    import subprocess
    import sys

    code = (
        "import sys, evennia_ai.llm.offline, evennia_ai.llm.json_protocol, evennia_ai.llm.types;"
        "print(sorted(m for m in ('twisted', 'django', 'litellm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


QUESTIONS = [
    "Marta, what is on the menu tonight?",
    "Marta, is the kitchen still open?",
    "Where can I find Bob the Smith?",
    "Tell me about the Harvest Festival",
    "The Duke of Ashford rides tonight",
    "Why is the Cellar locked, Marta?",
] + [f"Question number {n}: is Aldric the Bold in town?" for n in range(30)]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_reply_never_echoes_the_question_nor_lower_cases_a_name(question):
    """Issue 35: 'Hmm, you're asking about marta, what is on the menu tonight? ...'."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f'Admin says, "{question}"'},
    ]
    reply = OfflineModel().respond(messages, [SAY]).tool_calls[0].arguments["message"]
    assert len(reply) <= 80, reply
    spoken = set(reply.lower().replace(",", " ").replace(".", " ").replace("?", " ").split())
    names = {"marta", "menu", "kitchen", "bob", "festival", "duke", "ashford", "cellar", "aldric"}
    assert not spoken & names, reply
    assert "Admin" in reply or "admin" not in reply.lower(), reply  # a name stays as written
