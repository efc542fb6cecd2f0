"""Context sources owned by the assistant itself (see :mod:`evennia_ai.prompt.builder`).

Each function returns the value of one placeholder for one request. They read the NPC's state
from the request's snapshot (:class:`~evennia_ai.prompt.snapshot.PromptSnapshot`, read once when
the tick starts), never ``npc.ai``; what is not the NPC's own state (its name, its room) they read
from the NPC, on the reactor thread, without writing. Their words are in :mod:`evennia_ai.wording`.
The memory system registers more sources (long-term memories, memory blocks) in its own modules.
"""

from __future__ import annotations

from typing import Any

from evennia_ai import conf
from evennia_ai.llm.tokens import TokenCounter
from evennia_ai.memory import context_buffer
from evennia_ai.memory.entities import relevant, render_entities
from evennia_ai.memory.events import main_event
from evennia_ai.memory.history import to_chat_messages
from evennia_ai.memory.procedures import best_procedures, render_procedures
from evennia_ai.prompt.builder import ContextBuilder, read_operator_override, register_source
from evennia_ai.prompt.components import COMPONENT_CONVERSATION_HISTORY
from evennia_ai.prompt.operator import (  # noqa: F401  (OPERATOR_HEADER re-exported)
    OPERATOR_HEADER,
    TRUST_PART,
    render_operator_prompt,
    render_operator_rules,
    render_override,
)
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.prompt.tasks import compaction_batch, reflection_results
from evennia_ai.prompt.templates import get_default_template, safe_render_template
from evennia_ai.utils import (
    clean_name,
    defuse_tags,
    fence,
    fence_section,
    guidance,
)
from evennia_ai.wording import (  # noqa: F401  (IDENTITY, SYSTEMS, TRUST_NOTE re-exported)
    EXAMPLE_PAIR,
    EXAMPLES_HEADING,
    GOALS_HEADING,
    IDENTITY,
    LOCATION_LINE,
    OWN_GUIDELINES_HEADING,
    PERSONA_HEADING,
    ROOM_HEADING,
    SELF_MODEL_FAILURE,
    SELF_MODEL_FAILURES,
    SELF_MODEL_HEADING,
    SELF_MODEL_STRENGTHS,
    SYSTEMS,
    TRUST_NOTE,
)
from evennia_ai.workspace.behaviour_rules import render_rules
from evennia_ai.workspace.goals import render_goals
from evennia_ai.workspace.projects import render_active_project
from evennia_ai.workspace.session_memory import render_session_memory
from evennia_ai.world import clock, paths, place, shopfront
from evennia_ai.world.clock import GameTime
from evennia_ai.world.routine import Routine


def own_system_prompt(builder: ContextBuilder) -> str:
    """Identity, the trust note, the base template, the assistant's own guidelines and learned
    rules (the operator's tool rules are in the operator's section: :mod:`.operator`)."""

    npc = builder.npc
    ai = builder.snapshot
    override = builder.config.system_prompt_override
    base = override or _base_template_content()
    values = {
        "tick_rate": conf.get("EVENNIA_AI_TICK_INTERVAL"),
        "name": npc.key,
        "model": builder.model,
    }
    parts = []
    parts.append(IDENTITY.format(name=clean_name(npc.key), model=builder.model))
    parts.append(TRUST_NOTE)
    parts.append(safe_render_template(base, **values))
    if not override:
        parts.append(SYSTEMS)
    guidelines = ai.assistant_system_prompt
    if guidelines:
        parts.append(guidance(f"{OWN_GUIDELINES_HEADING}\n{guidelines}", "your own guidelines"))
    learned = ai.behaviour_rules
    if learned:
        parts.append(guidance(render_rules(learned), "rules you learned"))
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


@register_source("operator_override")
def _operator_override(builder: ContextBuilder) -> str:
    """The override file (``EVENNIA_AI_OPERATOR_OVERRIDE``), first in the operator's section."""
    return render_override(read_operator_override())


@register_source("operator_prompt")
def _operator_prompt(builder: ContextBuilder) -> str:
    """The operator's prompt for this NPC, in the operator's section."""
    return render_operator_prompt(builder.snapshot.user_system_prompt)


@register_source("tool_rules")
def _tool_rules(builder: ContextBuilder) -> str:
    """The operator's tool rules for this NPC, in the operator's section."""
    return render_operator_rules(builder.snapshot.tool_rules)


@register_source(TRUST_PART)
def _trust_note(builder: ContextBuilder) -> str:
    """The trust note, for the operator's section of a request without the NPC's own prompt."""
    return TRUST_NOTE


def _base_template_content() -> str:
    try:
        template = get_prompt_registry().get_template("default")
    except Exception:
        template = None
    return (template or get_default_template()).content


@register_source("system_prompt")
def _system_prompt(builder: ContextBuilder) -> Any:
    return own_system_prompt(builder)


@register_source("character_context")
def _character_context(builder: ContextBuilder) -> str:
    ai = builder.snapshot
    parts = []
    if ai.persona:  # a Builder's text: it opens none of the prompt's elements
        parts.append(f"{PERSONA_HEADING}\n{defuse_tags(ai.persona)}")
    location = builder.npc.location
    if location is not None and conf.get_int("EVENNIA_AI_PLACE_TOKENS") <= 0:
        parts.append(LOCATION_LINE.format(location=defuse_tags(location.key)))  # else: place
    project = render_active_project(ai.projects)
    if project:
        parts.append(fence_section(project, "your project"))
    memory = render_session_memory(ai.session_memory)
    if memory:
        parts.append(fence_section(memory, "your session memory"))
    return "\n\n".join(parts)


@register_source("place")
def _place(builder: ContextBuilder) -> str:
    """The NPC's sense of place (:mod:`evennia_ai.world.place`): composed into the character
    context in place of its location line, within ``EVENNIA_AI_PLACE_TOKENS`` (0: the line)."""
    budget = conf.get_int("EVENNIA_AI_PLACE_TOKENS")
    if budget <= 0:
        return ""
    now = _game_time()
    lines: tuple[str, ...] = ()
    routine_state = builder.snapshot.routine
    if now is not None and conf.get_bool("EVENNIA_AI_ROUTINES") and routine_state.get("slots"):
        lines = place.routine_lines(Routine.from_state(routine_state, now.calendar), now)
    found = place.gather(
        builder.npc,
        conf.get_int("EVENNIA_AI_PLACE_STEPS"),
        paths.passable(builder.npc),
        now=now,
        now_next=lines,
        max_rooms=conf.get_int("EVENNIA_AI_ROUTE_MAX_ROOMS"),
    )
    if found is None:
        return ""
    return place.render(found, budget, TokenCounter(builder.model).count_text)


@register_source("wares")
def _wares(builder: ContextBuilder) -> str:
    """A trading NPC's wares (:mod:`evennia_ai.world.wares`), composed into the character
    context after its place, within ``EVENNIA_AI_GOODS_TOKENS`` (0: none)."""
    budget = conf.get_int("EVENNIA_AI_GOODS_TOKENS")
    snapshot = builder.snapshot
    if budget <= 0 or not snapshot.goods:
        return ""
    count = TokenCounter(builder.model).count_text
    return shopfront.wares_text(builder.npc, snapshot.goods, snapshot.routine, budget, count)


def _game_time() -> GameTime | None:
    """The game time now, or None when the game's clock cannot be read (the place section
    then has no time; the game's clock is its own, so nothing is logged per request)."""
    try:
        return clock.game_now()
    except Exception:
        return None


@register_source("goals")
def _goals(builder: ContextBuilder) -> str:
    text = render_goals(builder.snapshot.goals)
    return f"{GOALS_HEADING}\n{fence(text, 'your goals')}" if text else ""


@register_source("conversation_history")
def _history(builder: ContextBuilder) -> list[dict[str, Any]]:
    history = builder.snapshot.history
    if builder.config.context_type == "pre_compaction":
        # the batch about to be compacted is the task's input: only the kept part is shown here
        batch = {id(m) for m in compaction_batch(history)}
        history = [m for m in history if id(m) not in batch]
    return to_chat_messages(history)


@register_source("pending_event")
def _pending_event(builder: ContextBuilder) -> str:
    """The tick's events, else the task of the context type (see :mod:`.tasks`)."""
    if builder.batch:
        return builder.batch_text
    return builder.task or builder.extra.get("pending_event", "")


@register_source("tool_result")
def _tool_result(builder: ContextBuilder) -> Any:
    if builder.config.context_type == "reflection_cont":
        return reflection_results(builder.tool_result or "")
    return builder.tool_result or ""


@register_source("context_buffer")
def _context_buffer(builder: ContextBuilder) -> str:
    """The room's recent lines. Heard lines already in the history are left out of a request
    that carries the history: each is shown once (:mod:`evennia_ai.memory.context_buffer`)."""
    buffer = builder.snapshot.context_buffer
    if COMPONENT_CONVERSATION_HISTORY in builder.config.enabled_components:
        buffer = context_buffer.outside_history(buffer)
    text = context_buffer.render(buffer, conf.get_int("EVENNIA_AI_CONTEXT_BUFFER_SIZE"))
    return f"{ROOM_HEADING}\n{fence(text, 'the room')}" if text else ""


def mentioned_text(builder: ContextBuilder) -> str:
    """Text of this tick that may name people, things or memory blocks."""

    parts = [builder.batch_text, str(builder.tool_result or "")]
    return "\n".join(p for p in parts if p)


@register_source("entity_context")
def _entity_context(builder: ContextBuilder) -> str:
    location = builder.npc.location
    present = {obj.dbref for obj in (location.contents if location else []) if obj != builder.npc}
    rendered = render_entities(
        relevant(builder.snapshot.entities, present, mentioned_text(builder))
    )
    return fence_section(rendered, "what you noted about them")


@register_source("self_model")
def _self_model(builder: ContextBuilder) -> str:
    """Per-tool success rates and known failure areas from the NPC's own metrics."""
    stats = builder.metrics.get("tool_stats") or {}
    rated = [
        (name, s["ok"] / s["calls"], s["calls"]) for name, s in stats.items() if s.get("calls")
    ]
    if not rated:
        return ""
    strong = sorted((r for r in rated if r[1] >= 0.8), key=lambda r: (-r[2], r[0]))[:6]
    weak = sorted((r for r in rated if r[1] < 0.6 and r[2] >= 2), key=lambda r: r[1])[:4]
    lines = [SELF_MODEL_HEADING]
    if strong:
        lines.append(SELF_MODEL_STRENGTHS + ", ".join(f"{n}({rate:.0%})" for n, rate, _ in strong))
    if weak:
        lines.append(
            SELF_MODEL_FAILURES
            + ", ".join(SELF_MODEL_FAILURE.format(name=n, rate=rate) for n, rate, _ in weak)
        )
    return "\n".join(lines) if len(lines) > 1 else ""


@register_source("procedural_hints")
def _procedural_hints(builder: ContextBuilder) -> str:
    """Up to 3 tool sequences that worked for past events of the same class and similar words."""

    if not builder.batch:
        return ""

    event = main_event(builder.batch)
    if event is None:  # (a batch always has a main event)
        return ""
    found = best_procedures(
        builder.snapshot.procedures, event.event_class, builder.batch_text, limit=3
    )
    return render_procedures(found)  # tool names only


@register_source("fewshot_examples")
def _fewshot_examples(builder: ContextBuilder) -> str:
    """Operator example pairs from the registry (at most 15)."""
    try:
        pairs = get_prompt_registry().list_fewshot_examples()
    except Exception:
        return ""
    pairs = list(pairs or [])[:15]
    if not pairs:
        return ""
    lines = [EXAMPLES_HEADING]
    for pair in pairs:
        lines.append(
            EXAMPLE_PAIR.format(user=pair.get("user", ""), assistant=pair.get("assistant", ""))
        )
    return "\n\n".join(lines)
