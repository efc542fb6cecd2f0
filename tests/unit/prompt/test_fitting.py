"""The budget: a request as sent never exceeds the window minus the reserved response tokens."""

from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.llm.tokens import TokenCounter
from evennia_ai.prompt.assembly import assemble_messages, validate_chat_messages
from evennia_ai.prompt.components import get_static_components
from evennia_ai.prompt.contexts import get_context_config
from evennia_ai.prompt.fitting import fit_to_window

COUNTER = TokenCounter("openai/gpt-4o-mini")
COMPONENTS = get_static_components()
CONFIG = get_context_config("tick_event")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "say",
            "description": "Say.",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]
TOOL_TOKENS = COUNTER.count_tools(TOOLS)

words = st.text(alphabet="abcdefghij klmnop\n", min_size=0, max_size=3000)


def history_of(n, size):
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"Alice says hi {i} " + "x " * size})
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "say", "arguments": '{"message": "hello"}'},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "said " + "y " * size})
    return out


def measure(values):
    assembled = assemble_messages(COMPONENTS, CONFIG, values)
    return COUNTER.count_messages(assembled.messages) + TOOL_TOKENS


@settings(max_examples=60, deadline=None)
@given(
    system=words,
    character=words,
    memories=words,
    buffer=words,
    goals=words,
    event=words,
    n_history=st.integers(0, 30),
    history_size=st.integers(0, 200),
    limit=st.integers(300, 6000),
)
def test_request_never_exceeds_limit(
    system, character, memories, buffer, goals, event, n_history, history_size, limit
):
    values = {
        "system_prompt": "You are Innkeeper. " + system,
        "character_context": character,
        "semantic_memories": memories,
        "context_buffer": buffer,
        "goals": goals,
        "conversation_history": history_of(n_history, history_size),
        "pending_event": "Alice says hello. " + event,
        "tool_result": "",
        "entity_context": "",
    }
    result = fit_to_window(values, measure, limit)
    assert result.fits, result
    assembled = assemble_messages(COMPONENTS, CONFIG, result.values)
    assert COUNTER.count_messages(assembled.messages) + TOOL_TOKENS <= limit
    assert not validate_chat_messages(assembled.messages)
    assert result.values["pending_event"]  # never dropped entirely


def test_lowest_priority_goes_first():
    values = {
        "system_prompt": "sys",
        "context_buffer": "buffer line\n" * 400,
        "goals": "- goal_1_0 [high] active 0% - keep",
        "pending_event": "Alice says hi",
    }
    limit = measure({**values, "context_buffer": ""}) + 5
    result = fit_to_window(values, measure, limit)
    assert result.fits
    assert result.values["goals"] == values["goals"]
    assert "context_buffer" in result.shrunk


def test_nothing_shrinks_when_it_fits():
    values = {"system_prompt": "sys", "pending_event": "hi"}
    result = fit_to_window(values, measure, 10_000)
    assert result.values == values and not result.shrunk
