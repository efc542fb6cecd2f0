"""What a request reads of its NPC's state, read once: :class:`PromptSnapshot`.

A tick reads its NPC's state when it starts (``TickState``) and every step takes it from there:
the context builder and its sources (:mod:`evennia_ai.prompt.sources`,
:mod:`evennia_ai.prompt.tasks`) read the snapshot, not ``npc.ai``. A request built outside a
tick (``aiprompt/show``, a request a tool builds inside a tick) gets a snapshot the builder reads
itself, once, when a source first needs it.

The values are the plain copies ``npc.ai`` hands out (docs/architecture.md, "Where state
lives"): changing one writes nothing, and nothing that reads the snapshot changes it. What is
not the NPC's own state (its name, its location, the room's contents) is read from the NPC as
before.

Example:
    snapshot = PromptSnapshot.read(npc)
    built = yield ContextBuilder(npc, config, snapshot=snapshot).build()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evennia_ai.npc_state import npc_state

JSON = dict[str, Any]
"""A plain JSON-shaped dict (as ``npc.ai`` returns it)."""


@dataclass(frozen=True)
class PromptSnapshot:
    """The NPC's state as a request reads it, read once (see the module docstring).

    Attributes:
        model: The NPC's own model ("" means the server default).
        persona: Who the NPC is (a Builder's text).
        user_system_prompt: The operator's prompt for this NPC.
        assistant_system_prompt: The NPC's own guidelines.
        behaviour_rules: Rules the NPC learned by reflecting.
        tool_rules: The operator's tool rules for this NPC, as stored.
        goals: The NPC's goals.
        metrics: The NPC's counters.
        projects: Project slots and the active one.
        session_memory: Facts, patterns and completed tasks of this session.
        history: The conversation sent to the model, oldest first.
        context_buffer: Recent ambient lines seen in the room.
        entities: People and things the NPC knows, by key.
        procedures: Tool sequences that worked, by kind of event.
        journal: Journal entries, oldest first.
        reflection: When the NPC last reflected (and the counters it measures from).
        sleep: Whether the NPC sleeps, since when, and when it last consolidated.
        execution_config: The execution pattern's static limits, defaults filled in.
        blocks: The NPC's memory blocks by label.
        routine: The NPC's day in game time (its slots; none by default).
        goods: What the NPC sells and buys, and its trade rules (none by default).
    """

    model: str
    persona: str
    user_system_prompt: str
    assistant_system_prompt: str
    behaviour_rules: list[str]
    tool_rules: list[JSON]
    goals: list[JSON]
    metrics: JSON
    projects: JSON
    session_memory: JSON
    history: list[JSON]
    context_buffer: list[JSON]
    entities: dict[str, JSON]
    procedures: list[JSON]
    journal: list[JSON]
    reflection: JSON
    sleep: JSON
    execution_config: JSON
    blocks: dict[str, JSON]
    routine: JSON = field(default_factory=dict)
    goods: JSON = field(default_factory=dict)

    @classmethod
    def read(cls, npc: Any, *, metrics: JSON | None = None) -> PromptSnapshot:
        """Read the snapshot of ``npc``'s state (reads only: nothing is written).

        Args:
            npc: The assistant (its state is read through
                :func:`~evennia_ai.npc_state.npc_state`).
            metrics: The NPC's counters when the caller read them already (the tick reads
                them first, for its spending status); None reads them here.
        """
        state = npc_state(npc)
        # First: reading the buffer takes the lines heard in the room into it, which may write
        # some to the history (:mod:`evennia_ai.npc.heard`).
        context_buffer = state.context_buffer
        return cls(
            model=state.model or "",
            persona=state.persona or "",
            user_system_prompt=state.user_system_prompt or "",
            assistant_system_prompt=state.assistant_system_prompt or "",
            behaviour_rules=state.behaviour_rules,
            tool_rules=state.tool_rules,
            goals=state.goals,
            metrics=state.metrics if metrics is None else metrics,
            projects=state.projects,
            session_memory=state.session_memory,
            history=state.history,
            context_buffer=context_buffer,
            entities=state.entities,
            procedures=state.procedures,
            journal=state.journal,
            reflection=state.reflection,
            sleep=state.sleep,
            execution_config=state.execution_config,
            blocks=state.blocks,
            routine=state.routine,
            goods=state.goods,
        )


def own_model(npc: Any) -> str:
    """The NPC's own model ("" for the server default), for a builder given no snapshot.

    Only the model is read: a builder that only assembles recorded source values (the replay)
    never reads the rest.
    """
    model: str | None = npc_state(npc).model
    return model or ""
