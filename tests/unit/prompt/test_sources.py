"""The NPC's own context sources (pure: a stand-in builder carries what they read)."""

from types import SimpleNamespace

from evennia_ai.memory import context_buffer
from evennia_ai.prompt import sources
from evennia_ai.prompt.components import COMPONENT_CONTEXT_BUFFER, COMPONENT_CONVERSATION_HISTORY
from evennia_ai.wording import ROOM_HEADING


def builder(buffer, components):
    return SimpleNamespace(
        snapshot=SimpleNamespace(context_buffer=buffer),
        config=SimpleNamespace(enabled_components=components),
    )


def test_the_rooms_lines_leave_out_heard_lines_the_history_carries():
    buffer = context_buffer.add([], "Bob lights the fire.", max_size=5)
    buffer = context_buffer.add(buffer, 'Tom says, "Thunder."', max_size=5, heard=True)
    buffer = context_buffer.add(buffer, 'Tom says, "Lightning."', max_size=5, heard=True)
    buffer = context_buffer.folded(buffer, buffer[1:2])
    with_history = sources._context_buffer(
        builder(buffer, [COMPONENT_CONTEXT_BUFFER, COMPONENT_CONVERSATION_HISTORY])
    )
    assert with_history.startswith(ROOM_HEADING)
    assert "fire" in with_history and "Lightning" in with_history
    assert "Thunder" not in with_history  # shown once: in the history
    alone = sources._context_buffer(builder(buffer, [COMPONENT_CONTEXT_BUFFER]))
    assert "Thunder" in alone  # a request without the history shows every line
    only_written = context_buffer.folded(buffer[1:2], buffer[1:2])
    assert sources._context_buffer(builder(only_written, [COMPONENT_CONVERSATION_HISTORY])) == ""
