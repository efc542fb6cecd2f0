"""Context types: the seven situations an assistant calls its model in, and what each allows.

Pure module. Each :class:`ContextConfig` names the components it assembles, the tools it offers
(``tool_filter``: ``None`` means every tool, ``[]`` none), its token budget and its Layer-2
execution settings. ``get_context_config`` returns fresh copies of the defaults; operators may
customise a context type through the PromptRegistry, validated here by
:func:`apply_context_customization`, and at run time the result is still composed under each
NPC's own Layer 1 by :func:`~evennia_ai.execution_pattern.select_execution_pattern`, so a
customisation can never widen what an NPC is allowed.

Values the spec leaves open, and why they are what they are:

- ``tick_autonomous``: like ``tick_event`` (full components, all tools, react_loop, 5
  iterations, sub-agents allowed) — goal work needs the same reach as answering an event.
- ``reflection_cont``: react_loop, 2 iterations (the spec's table), journal tools only, no
  sub-agents: it only processes the reflection's tool output.
- ``sleep_consolidate``: react_loop, 10 iterations (spec), memory and journal tools.
- ``goal_decompose``: single_action, 1 iteration, **no tools** (the decomposition is read from
  the reply text).
- ``pre_compaction``: react_loop, 5 iterations (spec), extraction tools, no sub-agents.
- ``dangerous_requires_confirm`` is True in every context: a player's words alone must never
  make an NPC run a DANGEROUS tool without a Builder's confirmation. Operators may switch it
  off per context (their decision, their game).
- ``terminal_ends_loop`` is True everywhere: after speaking, the NPC waits for an answer.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields

from evennia_ai.prompt_components import (
    COMPONENT_CHARACTER_CONTEXT,
    COMPONENT_CONTEXT_BUFFER,
    COMPONENT_CONVERSATION_HISTORY,
    COMPONENT_ENTITY_CONTEXT,
    COMPONENT_GOALS,
    COMPONENT_PENDING_EVENT,
    COMPONENT_SEMANTIC_MEMORIES,
    COMPONENT_SYSTEM_PROMPT,
    COMPONENT_TOOL_RESULT,
    STATIC_COMPONENT_IDS,
)

CONTEXT_TICK_EVENT = "tick_event"
CONTEXT_TICK_AUTONOMOUS = "tick_autonomous"
CONTEXT_REFLECTION = "reflection"
CONTEXT_REFLECTION_CONT = "reflection_cont"
CONTEXT_SLEEP_CONSOLIDATE = "sleep_consolidate"
CONTEXT_GOAL_DECOMPOSE = "goal_decompose"
CONTEXT_PRE_COMPACTION = "pre_compaction"
CONTEXT_TYPES = (
    CONTEXT_TICK_EVENT,
    CONTEXT_TICK_AUTONOMOUS,
    CONTEXT_REFLECTION,
    CONTEXT_REFLECTION_CONT,
    CONTEXT_SLEEP_CONSOLIDATE,
    CONTEXT_GOAL_DECOMPOSE,
    CONTEXT_PRE_COMPACTION,
)

SAFE_CHAIN = "SAFE_CHAIN"
ASYNC_REQUIRED = "ASYNC_REQUIRED"
TERMINAL = "TERMINAL"
DANGEROUS = "DANGEROUS"
ALL_TOOL_CATEGORIES = (SAFE_CHAIN, ASYNC_REQUIRED, TERMINAL, DANGEROUS)

MODE_SINGLE_ACTION = "single_action"
MODE_REACT_LOOP = "react_loop"
MODE_PLAN_EXECUTE = "plan_execute"
EXECUTION_MODES = (MODE_SINGLE_ACTION, MODE_REACT_LOOP, MODE_PLAN_EXECUTE)

MIN_ITERATIONS, MAX_ITERATIONS = 1, 10

REFLECTION_TOOLS = ["noop", "add_journal_entry", "review_journal"]
SLEEP_TOOLS = ["noop", "add_journal_entry", "review_journal", "recall_memories", "store_memory"]
PRE_COMPACTION_TOOLS = ["noop", "add_journal_entry", "update_entity_observation"]

FULL_COMPONENTS = [
    COMPONENT_SYSTEM_PROMPT,
    COMPONENT_CHARACTER_CONTEXT,
    COMPONENT_ENTITY_CONTEXT,
    COMPONENT_SEMANTIC_MEMORIES,
    COMPONENT_CONTEXT_BUFFER,
    COMPONENT_GOALS,
    COMPONENT_CONVERSATION_HISTORY,
    COMPONENT_PENDING_EVENT,
    COMPONENT_TOOL_RESULT,
]

REFLECTION_PROMPT = """You are an AI assistant performing periodic self-reflection.
Review your recent performance and journal entries. Consider:
1. What patterns am I observing in my work?
2. What strategies are working well?
3. What mistakes am I repeating?
4. What should I do differently?
Use the journal tools to record your insights."""


@dataclass
class ContextConfig:
    """How the model is called in one context type (Layer 2 of the execution pattern)."""

    context_type: str
    name: str
    description: str
    enabled_components: list[int] = field(default_factory=list)
    component_overrides: dict = field(default_factory=dict)
    tool_filter: list[str] | None = None
    token_budget: int | None = None
    execution_mode: str = MODE_REACT_LOOP
    max_iterations: int = 5
    allowed_tool_categories: list[str] | None = None
    terminal_ends_loop: bool = True
    dangerous_requires_confirm: bool = True
    allows_multi_tool: bool = True
    allows_sub_agents: bool = False

    def get_component_content_override(self, component_key: str) -> str | None:
        """The content override for ``component_key``, if this context has one."""
        override = self.component_overrides.get(component_key, {})
        if isinstance(override, dict):
            return override.get("content")
        return None

    @property
    def system_prompt_override(self) -> str | None:
        return self.get_component_content_override("system_prompt")

    def to_dict(self) -> dict:
        return copy.deepcopy(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "ContextConfig":
        names = {f.name for f in fields(cls)}
        return cls(**copy.deepcopy({k: v for k, v in data.items() if k in names}))


DEFAULT_CONTEXT_CONFIGS: dict[str, ContextConfig] = {
    CONTEXT_TICK_EVENT: ContextConfig(
        context_type=CONTEXT_TICK_EVENT,
        name="Event",
        description="Process the pending event from the queue.",
        enabled_components=list(FULL_COMPONENTS),
        tool_filter=None,
        execution_mode=MODE_REACT_LOOP,
        max_iterations=5,
        allows_multi_tool=True,
        allows_sub_agents=True,
    ),
    CONTEXT_TICK_AUTONOMOUS: ContextConfig(
        context_type=CONTEXT_TICK_AUTONOMOUS,
        name="Autonomous",
        description="Goal-driven behaviour when nothing is happening.",
        enabled_components=list(FULL_COMPONENTS),
        tool_filter=None,
        execution_mode=MODE_REACT_LOOP,
        max_iterations=5,
        allows_multi_tool=True,
        allows_sub_agents=True,
    ),
    CONTEXT_REFLECTION: ContextConfig(
        context_type=CONTEXT_REFLECTION,
        name="Reflection",
        description="Self-analysis of recent performance.",
        enabled_components=[COMPONENT_SYSTEM_PROMPT, COMPONENT_PENDING_EVENT, COMPONENT_TOOL_RESULT],
        component_overrides={"system_prompt": {"content": REFLECTION_PROMPT}},
        tool_filter=list(REFLECTION_TOOLS),
        execution_mode=MODE_REACT_LOOP,
        max_iterations=3,
        allows_multi_tool=True,
        allows_sub_agents=False,
    ),
    CONTEXT_REFLECTION_CONT: ContextConfig(
        context_type=CONTEXT_REFLECTION_CONT,
        name="Reflection (continued)",
        description="Process the output of a reflection's journal tools.",
        enabled_components=[COMPONENT_SYSTEM_PROMPT, COMPONENT_TOOL_RESULT],
        tool_filter=list(REFLECTION_TOOLS),
        execution_mode=MODE_REACT_LOOP,
        max_iterations=2,
        allows_multi_tool=True,
        allows_sub_agents=False,
    ),
    CONTEXT_SLEEP_CONSOLIDATE: ContextConfig(
        context_type=CONTEXT_SLEEP_CONSOLIDATE,
        name="Sleep consolidation",
        description="Consolidate the journal and recent history into lasting memory.",
        enabled_components=[COMPONENT_SYSTEM_PROMPT, COMPONENT_SEMANTIC_MEMORIES],
        tool_filter=list(SLEEP_TOOLS),
        execution_mode=MODE_REACT_LOOP,
        max_iterations=10,
        allows_multi_tool=True,
        allows_sub_agents=False,
    ),
    CONTEXT_GOAL_DECOMPOSE: ContextConfig(
        context_type=CONTEXT_GOAL_DECOMPOSE,
        name="Goal decomposition",
        description="Break a goal down into 3-7 subtasks.",
        enabled_components=[COMPONENT_SYSTEM_PROMPT, COMPONENT_GOALS, COMPONENT_PENDING_EVENT],
        tool_filter=[],
        execution_mode=MODE_SINGLE_ACTION,
        max_iterations=1,
        allows_multi_tool=False,
        allows_sub_agents=False,
    ),
    CONTEXT_PRE_COMPACTION: ContextConfig(
        context_type=CONTEXT_PRE_COMPACTION,
        name="Pre-compaction extraction",
        description="Extract lasting facts from the full history before it is compacted.",
        enabled_components=[
            COMPONENT_SYSTEM_PROMPT, COMPONENT_CONVERSATION_HISTORY, COMPONENT_PENDING_EVENT,
            COMPONENT_TOOL_RESULT,
        ],
        tool_filter=list(PRE_COMPACTION_TOOLS),
        execution_mode=MODE_REACT_LOOP,
        max_iterations=5,
        allows_multi_tool=True,
        allows_sub_agents=False,
    ),
}


def get_context_config(name: str) -> ContextConfig:
    """A fresh copy of the default config of context type ``name``.

    Raises:
        KeyError: For an unknown context type (the message lists the known ones).
    """
    config = DEFAULT_CONTEXT_CONFIGS.get(name)
    if config is None:
        raise KeyError(f"Unknown context type '{name}'. Known: {', '.join(CONTEXT_TYPES)}")
    return ContextConfig.from_dict(config.to_dict())


# -- operator customisation --------------------------------------------------------------------
CUSTOMIZABLE_FIELDS = {
    "name": str,
    "description": str,
    "enabled_components": list,
    "component_overrides": dict,
    "tool_filter": (list, type(None)),
    "token_budget": (int, type(None)),
    "execution_mode": str,
    "max_iterations": int,
    "allowed_tool_categories": (list, type(None)),
    "terminal_ends_loop": bool,
    "dangerous_requires_confirm": bool,
    "allows_multi_tool": bool,
    "allows_sub_agents": bool,
}


def _is_component_id(value) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value <= STATIC_COMPONENT_IDS[-1] + 999
    )


def validate_context_customization(
    context_type: str, customization: dict, known_tools: set[str] | None = None,
    known_components: set[str] | None = None,
) -> list[str]:
    """Problems with a customisation (empty when valid).

    Args:
        context_type: The context type customised.
        customization: Field -> value.
        known_tools: Tool names that exist; None skips the tool-name check.
        known_components: Component keys overrides may name; None: the static keys.
    """
    from evennia_ai.prompt_components import STATIC_COMPONENT_KEYS

    problems: list[str] = []
    if context_type not in CONTEXT_TYPES:
        return [f"Unknown context type '{context_type}'. Known: {', '.join(CONTEXT_TYPES)}"]
    if not isinstance(customization, dict):
        return ["A context customisation must be a mapping of field to value."]
    components = known_components or set(STATIC_COMPONENT_KEYS)
    for key, value in customization.items():
        expected = CUSTOMIZABLE_FIELDS.get(key)
        if expected is None:
            problems.append(
                f"Unknown field '{key}'. Fields: {', '.join(sorted(CUSTOMIZABLE_FIELDS))}"
            )
            continue
        if isinstance(value, bool) and expected is int:
            problems.append(f"{key} must be a whole number, not {value!r}.")
            continue
        if not isinstance(value, expected):
            problems.append(f"{key} has the wrong type ({type(value).__name__}).")
            continue
        if key == "max_iterations" and not MIN_ITERATIONS <= value <= MAX_ITERATIONS:
            problems.append(f"max_iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, not {value}.")
        elif key == "token_budget" and value is not None and (isinstance(value, bool) or value <= 0):
            problems.append("token_budget must be a positive number of tokens or None.")
        elif key == "execution_mode" and value not in EXECUTION_MODES:
            problems.append(f"execution_mode must be one of {', '.join(EXECUTION_MODES)}, not '{value}'.")
        elif key == "enabled_components":
            bad = [v for v in value if not _is_component_id(v)]
            if bad:
                problems.append(f"enabled_components has invalid component IDs: {bad}")
        elif key == "allowed_tool_categories" and value is not None:
            bad = [v for v in value if v not in ALL_TOOL_CATEGORIES]
            if bad:
                problems.append(f"Unknown tool categories {bad}. Known: {', '.join(ALL_TOOL_CATEGORIES)}")
        elif key == "tool_filter" and value is not None:
            if not all(isinstance(v, str) for v in value):
                problems.append("tool_filter must list tool names.")
            elif known_tools is not None:
                bad = sorted(set(value) - set(known_tools))
                if bad:
                    problems.append(f"Unknown tools in tool_filter: {', '.join(bad)}")
        elif key == "component_overrides":
            for comp_key, override in value.items():
                if comp_key not in components:
                    problems.append(f"component_overrides names an unknown component '{comp_key}'.")
                elif not isinstance(override, dict) or set(override) - {"content"} or not isinstance(override.get("content", ""), str):
                    problems.append(f"component_overrides['{comp_key}'] must be {{'content': text}}.")
    return problems


def apply_context_customization(
    base: ContextConfig, customization: dict, known_tools: set[str] | None = None,
    known_components: set[str] | None = None,
) -> ContextConfig:
    """``base`` with ``customization`` applied, after validation.

    Raises:
        ValueError: Naming every problem found.
    """
    problems = validate_context_customization(base.context_type, customization, known_tools,
                                              known_components)
    if problems:
        raise ValueError("; ".join(problems))
    data = base.to_dict()
    data.update(copy.deepcopy(customization))
    return ContextConfig.from_dict(data)


# Re-exported for convenience: the execution pattern lives in its own module.
from evennia_ai.execution_pattern import ExecutionPattern, select_execution_pattern  # noqa: E402,F401
