"""Context types: the seven situations an assistant calls its model in, and what each allows.

Pure module (no Django, Evennia or Twisted). A :class:`ContextConfig` names the prompt
components a context assembles, the tools it offers (``tool_filter``: ``None`` means every tool,
``[]`` none), its token budget (``None``: the model's window) and its execution settings (the
context limits of the execution pattern). :func:`get_context_config` returns a fresh copy of a
default. Operators customise a context type through the PromptRegistry, which validates with
:func:`apply_context_customization`; at run time the result is still composed under each NPC's
own static limits by :func:`select_execution_pattern`, so no customisation widens what an NPC
may do.

:data:`DEFAULT_CONTEXT_CONFIGS` holds the defaults (docs/prompts.md, "Context types"). Some of
their values, and why they are what they are:

- ``tick_autonomous`` is set like ``tick_event`` (react_loop, 5 iterations, multi-tool,
  sub-agents allowed): both have the same components, tools and limit, and goal work needs the
  same reach as answering an event. The NPC's static limits keep sub-agents off unless the
  operator turns them on for an NPC.
- ``reflection_cont`` uses react_loop with multi-tool and no sub-agents, like ``reflection``
  which it continues, with 2 iterations.
- ``pre_compaction`` uses react_loop with multi-tool (it may record several facts in one pass)
  and no sub-agents (extraction must stay inside the one history it is shown); 5 iterations.
- ``goal_decompose`` offers **no** tools (``tool_filter=[]``): the subtasks are read from the
  reply text.
- ``dangerous_requires_confirm`` is True in every context: words from a player alone must never
  make an NPC run a DANGEROUS tool without a Builder's confirmation. An operator may switch it
  off per context; then the assessment and the signals can still switch it back on.
- ``terminal_ends_loop`` is True everywhere: after speaking, an NPC waits for the answer.
- ``allowed_tool_categories`` is None everywhere (the tool filters already narrow the
  special contexts) and ``token_budget`` is None everywhere (the model's window decides).
- ``tool_groups`` (which allowed tools' schemas are *sent*, not which are allowed): an event
  sends the conversation group, autonomy conversation, goals and movement; the words of the
  events add groups, and ``request_tools`` fetches the rest. The special contexts send their
  whole (already narrow) filter: None.

The mode constants, tool categories, :class:`ExecutionPattern` and
:func:`select_execution_pattern` live in :mod:`evennia_ai.prompt.execution_pattern` and are
re-exported here, next to the context configs they are composed with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

from evennia_ai.llm.contracts import required_components
from evennia_ai.prompt.components import (
    COMPONENT_CHARACTER_CONTEXT,
    COMPONENT_CONTEXT_BUFFER,
    COMPONENT_CONVERSATION_HISTORY,
    COMPONENT_ENTITY_CONTEXT,
    COMPONENT_GOALS,
    COMPONENT_PENDING_EVENT,
    COMPONENT_SEMANTIC_MEMORIES,
    COMPONENT_SYSTEM_PROMPT,
    COMPONENT_TOOL_RESULT,
    PromptComponent,
    get_static_component,
    get_static_components,
)
from evennia_ai.prompt.execution_pattern import (  # noqa: F401  (re-exported)
    ALL_TOOL_CATEGORIES,
    ASYNC_REQUIRED,
    DANGEROUS,
    DEFAULT_EXECUTION_CONFIG,
    EXECUTION_MODES,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    MODE_PLAN_EXECUTE,
    MODE_REACT_LOOP,
    MODE_SINGLE_ACTION,
    SAFE_CHAIN,
    TERMINAL,
    ExecutionPattern,
    select_execution_pattern,
)
from evennia_ai.utils import plain

# -- context types -------------------------------------------------------------------------------
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
# The contexts whose turns join the conversation history: what the NPC heard and did in the
# world. The others are its own upkeep (reflection, sleep, compaction, goal decomposition),
# whose results live in the journal, long-term memory, entity notes and goals; their tool
# traffic in the history would be sent with every later request.
CONVERSATION_CONTEXTS = (CONTEXT_TICK_EVENT, CONTEXT_TICK_AUTONOMOUS)

# -- tool filters --------------------------------------------------------------------------------
REFLECTION_TOOLS = ["noop", "add_journal_entry", "review_journal"]
SLEEP_TOOLS = ["noop", "add_journal_entry", "review_journal", "recall_memories", "store_memory"]
PRE_COMPACTION_TOOLS = ["noop", "add_journal_entry", "update_entity_observation"]

# -- components ----------------------------------------------------------------------------------
STATIC_COMPONENT_IDS: tuple[int, ...] = tuple(
    sorted(
        (
            COMPONENT_SYSTEM_PROMPT,
            COMPONENT_CHARACTER_CONTEXT,
            COMPONENT_ENTITY_CONTEXT,
            COMPONENT_SEMANTIC_MEMORIES,
            COMPONENT_CONTEXT_BUFFER,
            COMPONENT_GOALS,
            COMPONENT_CONVERSATION_HISTORY,
            COMPONENT_PENDING_EVENT,
            COMPONENT_TOOL_RESULT,
        )
    )
)
# Pluggable slots follow each static ID: 1-999 after 0, 1001-1499 after 1000, ...,
# 7001-7999 after 7000. Every int from 0 to MAX_COMPONENT_ID is thus a static ID or a slot.
MAX_COMPONENT_ID = STATIC_COMPONENT_IDS[-1] + 999
STATIC_COMPONENT_KEYS: tuple[str, ...] = tuple(
    c.key for c in sorted(get_static_components(), key=lambda c: c.id)
)

FULL_COMPONENTS = list(STATIC_COMPONENT_IDS)


def is_component_id(value: Any) -> bool:
    """Whether ``value`` can name a component: an int from 0 to :data:`MAX_COMPONENT_ID`.

    Every such int is either a static ID or a pluggable slot after one, so a context may enable
    a pluggable component by its own ID even when the static component it follows is off.
    """
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COMPONENT_ID


def anchor_static_id(component_id: int) -> int:
    """The static ID a component ID belongs to: the largest static ID at or below it."""
    anchor = STATIC_COMPONENT_IDS[0]
    for static_id in STATIC_COMPONENT_IDS:
        if static_id <= component_id:
            anchor = static_id
    return anchor


REFLECTION_PROMPT = """You are an AI assistant performing periodic self-reflection.
Review your recent performance and journal entries. Consider:
1. What patterns am I observing in my work?
2. What strategies are working well?
3. What mistakes am I repeating?
4. What should I do differently?
Use the journal tools to record your insights."""


class UnknownContextTypeError(KeyError):
    """A context type name that is not one of :data:`CONTEXT_TYPES`."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass
class ContextConfig:
    """How the model is called in one context type (the execution pattern's context limits).

    Attributes:
        context_type: One of :data:`CONTEXT_TYPES`.
        name: Display name.
        description: What the context is for.
        enabled_components: Component IDs assembled (static IDs; a pluggable component is also
            included when the static component it follows is enabled).
        component_overrides: Per component key, ``{"content": text}`` replacing its content.
        tool_filter: Tool names offered; None means every tool, ``[]`` none.
        tool_groups: Tool groups whose schemas a request sends (:mod:`evennia_ai.tools.groups`);
            the events' words add groups, and ``request_tools`` lets the model ask for the
            others the filter allows. None sends every allowed tool.
        token_budget: Most prompt tokens of any one request in this context (the first and
            every later iteration); None means the model's window minus the reserved reply.
        execution_mode: "single_action", "react_loop" or "plan_execute".
        max_iterations: Most acting model calls per tick (1-10).
        allowed_tool_categories: Tool categories allowed; None means all.
        terminal_ends_loop: Whether a TERMINAL tool ends the loop.
        dangerous_requires_confirm: Whether a DANGEROUS tool waits for a Builder.
        allows_multi_tool: Whether more than one tool call may run (ReAct).
        allows_sub_agents: Whether the delegate tool may start helpers.
    """

    context_type: str
    name: str
    description: str = ""
    enabled_components: list[int] = field(default_factory=list)
    component_overrides: dict[str, Any] = field(default_factory=dict)
    tool_filter: list[str] | None = None
    tool_groups: list[str] | None = None
    token_budget: int | None = None
    execution_mode: str = MODE_REACT_LOOP
    max_iterations: int = 5
    allowed_tool_categories: list[str] | None = None
    terminal_ends_loop: bool = True
    dangerous_requires_confirm: bool = True
    allows_multi_tool: bool = True
    allows_sub_agents: bool = False

    def get_component_content_override(self, component_key: str) -> str | None:
        """The content override for ``component_key``, or None when it has none."""
        override = (self.component_overrides or {}).get(component_key)
        if isinstance(override, Mapping):
            content = override.get("content")
            return content if isinstance(content, str) else None
        return None

    @property
    def system_prompt_override(self) -> str | None:
        """The context's replacement for the system prompt's content, if any."""
        return self.get_component_content_override("system_prompt")

    def to_dict(self) -> dict[str, Any]:
        """A plain deep copy (for Attributes and JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ContextConfig":
        """Rebuild a config stored with :meth:`to_dict`.

        Unknown keys are ignored (data written by a newer version still loads) and missing
        ones take the dataclass defaults; values are deep-copied but not validated (that is
        :func:`validate_context_customization`'s job, and the execution pattern reads malformed
        values restrictively anyway).

        Raises:
            ValueError: If ``data`` is not a mapping or has no ``context_type``.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"A context config must be a mapping, not {type(data).__name__}.")
        if not data.get("context_type"):
            raise ValueError("A context config needs a context_type.")
        names = {f.name for f in fields(cls)}
        kwargs = {k: plain(v) for k, v in data.items() if k in names}
        kwargs.setdefault("name", kwargs["context_type"])
        return cls(**kwargs)


DEFAULT_CONTEXT_CONFIGS: dict[str, ContextConfig] = {
    CONTEXT_TICK_EVENT: ContextConfig(
        context_type=CONTEXT_TICK_EVENT,
        name="Event",
        description="Process the pending event from the queue.",
        enabled_components=list(FULL_COMPONENTS),
        tool_filter=None,
        tool_groups=["conversation"],
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
        tool_groups=["conversation", "goals", "movement"],
        execution_mode=MODE_REACT_LOOP,
        max_iterations=5,
        allows_multi_tool=True,
        allows_sub_agents=True,
    ),
    CONTEXT_REFLECTION: ContextConfig(
        context_type=CONTEXT_REFLECTION,
        name="Reflection",
        description="Self-analysis of recent performance.",
        enabled_components=[
            COMPONENT_SYSTEM_PROMPT,
            COMPONENT_PENDING_EVENT,
            COMPONENT_TOOL_RESULT,
        ],
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
        description="Break a goal down into subtasks.",
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
            COMPONENT_SYSTEM_PROMPT,
            COMPONENT_CONVERSATION_HISTORY,
            COMPONENT_PENDING_EVENT,
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
    """A fresh deep copy of the default config of context type ``name``.

    Raises:
        UnknownContextTypeError: (a KeyError) for an unknown name; the message lists the
            known ones.
    """
    config = DEFAULT_CONTEXT_CONFIGS.get(name) if isinstance(name, str) else None
    if config is None:
        raise UnknownContextTypeError(
            f"Unknown context type {name!r}. Known: {', '.join(CONTEXT_TYPES)}."
        )
    return ContextConfig.from_dict(config.to_dict())


# -- operator customisation ----------------------------------------------------------------------
CUSTOMIZABLE_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(ContextConfig) if f.name != "context_type"
)
_BOOL_FIELDS = (
    "terminal_ends_loop",
    "dangerous_requires_confirm",
    "allows_multi_tool",
    "allows_sub_agents",
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sequence(value: Any) -> bool:
    """A list-like value (lists, tuples, Attribute lists), not a string or a mapping."""
    return isinstance(value, Iterable) and not isinstance(
        value, (str, bytes, Mapping, set, frozenset)
    )


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_text(key: str, value: Any) -> list[str]:
    if not isinstance(value, str):
        return [f"{key} must be text, not {_type_name(value)}."]
    if key == "name" and not value.strip():
        return ["name must not be empty."]
    return []


def _check_iterations(value: Any) -> list[str]:
    if not _is_int(value):
        return [
            f"max_iterations must be a whole number from {MIN_ITERATIONS} to "
            f"{MAX_ITERATIONS}, not {value!r}."
        ]
    if not MIN_ITERATIONS <= value <= MAX_ITERATIONS:
        return [f"max_iterations must be from {MIN_ITERATIONS} to {MAX_ITERATIONS}, not {value}."]
    return []


def _check_token_budget(value: Any) -> list[str]:
    if value is None:
        return []
    if not _is_int(value) or value <= 0:
        return [f"token_budget must be a positive whole number of tokens or None, not {value!r}."]
    return []


def _check_mode(value: Any) -> list[str]:
    if value not in EXECUTION_MODES:
        return [f"execution_mode must be one of {', '.join(EXECUTION_MODES)}, not {value!r}."]
    return []


def _check_enabled_components(value: Any) -> list[str]:
    if not _is_sequence(value):
        return [f"enabled_components must be a list of component IDs, not {_type_name(value)}."]
    items = list(value)
    if not items:
        return ["enabled_components must name at least one component."]
    bad = [v for v in items if not is_component_id(v)]
    if bad:
        return [
            f"enabled_components has unknown component IDs {bad}: use static IDs "
            f"({', '.join(map(str, STATIC_COMPONENT_IDS))}) or pluggable IDs from 1 to "
            f"{MAX_COMPONENT_ID}."
        ]
    return []


def _check_tool_filter(value: Any, known_tools: Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if not _is_sequence(value) or not all(isinstance(v, str) for v in value):
        return ["tool_filter must be a list of tool names, [] for no tools, or None for all tools."]
    if known_tools is not None:
        unknown = sorted(set(value) - set(known_tools))
        if unknown:
            return [f"tool_filter names unknown tools: {', '.join(unknown)}."]
    return []


def _check_tool_groups(value: Any) -> list[str]:
    if value is None:
        return []
    if not _is_sequence(value) or not all(isinstance(v, str) and v.strip() for v in value):
        return [
            "tool_groups must be a list of tool group names (conversation, movement, items, trade, "
            "memory, blocks, goals, building, self, or a game's own), or None for every tool."
        ]
    return []


def _check_categories(value: Any) -> list[str]:
    if value is None:
        return []
    if not _is_sequence(value):
        return ["allowed_tool_categories must be a list of categories or None for all."]
    unknown = [v for v in value if v not in ALL_TOOL_CATEGORIES]
    if unknown:
        return [
            f"allowed_tool_categories has unknown categories {unknown}. "
            f"Known: {', '.join(ALL_TOOL_CATEGORIES)}."
        ]
    return []


_FIELD_CHECKS: dict[str, Callable[[Any], list[str]]] = {
    "max_iterations": _check_iterations,
    "token_budget": _check_token_budget,
    "execution_mode": _check_mode,
    "enabled_components": _check_enabled_components,
    "tool_groups": _check_tool_groups,
    "allowed_tool_categories": _check_categories,
}
"""Fields checked by their value alone (name -> the check)."""


def _check_field(
    key: str,
    value: Any,
    known_tools: Iterable[str] | None,
    known_components: Iterable[str] | None,
) -> list[str]:
    """Problems with one customised field."""
    if key in ("name", "description"):
        return _check_text(key, value)
    if key in _BOOL_FIELDS:
        return [] if isinstance(value, bool) else [f"{key} must be true or false, not {value!r}."]
    check = _FIELD_CHECKS.get(key)
    if check is not None:
        return check(value)
    if key == "tool_filter":
        return _check_tool_filter(value, known_tools)
    if key == "component_overrides":
        return _check_overrides(value, known_components)
    return [f"Unknown field {key!r}. Fields: {', '.join(CUSTOMIZABLE_FIELDS)}."]


def _check_overrides(value: Any, known_components: Iterable[str] | None) -> list[str]:
    if not isinstance(value, Mapping):
        return ["component_overrides must map component keys to {'content': text}."]
    keys = set(STATIC_COMPONENT_KEYS) if known_components is None else set(known_components)
    problems = []
    for comp_key, override in value.items():
        if comp_key not in keys:
            problems.append(
                f"component_overrides names an unknown component {comp_key!r}. "
                f"Known: {', '.join(sorted(keys))}."
            )
        elif override is None:
            continue  # removes the base's override
        elif (
            not isinstance(override, Mapping)
            or set(override) != {"content"}
            or not isinstance(override["content"], str)
        ):
            problems.append(
                f"component_overrides[{comp_key!r}] must be {{'content': text}} "
                "(or None to remove an override)."
            )
    return problems


def validate_context_customization(
    context_type: str | ContextConfig,
    customization: Any,
    known_tools: Iterable[str] | None = None,
    known_components: Iterable[str] | None = None,
) -> list[str]:
    """Every problem with an operator's customisation of a context type (empty when valid).

    Hard bounds: only :data:`CUSTOMIZABLE_FIELDS` (``context_type`` may be repeated but not
    changed), each with its type; ``max_iterations`` 1-10; ``execution_mode`` one of
    :data:`EXECUTION_MODES`; ``token_budget`` positive or None; ``enabled_components`` a
    non-empty list of ints from 0 to :data:`MAX_COMPONENT_ID` (every such int is a static ID or
    a pluggable slot); categories among :data:`ALL_TOOL_CATEGORIES`; tool names among
    ``known_tools``; override keys among ``known_components``.

    Args:
        context_type: The context type customised (or its config).
        customization: Field -> new value.
        known_tools: Names of the tools that exist; None skips the tool-name check.
        known_components: Component keys overrides may name; None means the static keys
            (the registry passes its pluggable keys too).
    """
    if isinstance(context_type, ContextConfig):
        context_type = context_type.context_type
    if context_type not in CONTEXT_TYPES:
        return [f"Unknown context type {context_type!r}. Known: {', '.join(CONTEXT_TYPES)}."]
    if not isinstance(customization, Mapping):
        return [
            f"A context customisation must map field names to values, not "
            f"{_type_name(customization)}."
        ]
    problems: list[str] = []
    for key, value in customization.items():
        if key == "context_type":
            if value != context_type:
                problems.append(
                    f"context_type cannot be changed (this customises {context_type!r})."
                )
            continue
        problems.extend(_check_field(key, value, known_tools, known_components))
    return problems


def apply_context_customization(
    base: ContextConfig,
    customization: Mapping[str, Any],
    known_tools: Iterable[str] | None = None,
    known_components: Iterable[str] | None = None,
) -> ContextConfig:
    """A new config: ``base`` with an operator's ``customization`` applied (``base`` unchanged).

    Each customised field replaces the base's value, except ``component_overrides``, which is
    merged per component key (a key set to None removes the base's override, e.g.
    ``{"component_overrides": {"system_prompt": None}}`` gives reflection the normal system
    prompt back). Customisations may set any field, but at run time the config is still composed
    under each NPC's static limits by :func:`select_execution_pattern`, so it never widens what
    an NPC is allowed.

    Args:
        base: The config to start from (usually :func:`get_context_config`).
        customization: Field -> new value.
        known_tools: Names of the tools that exist; None skips the tool-name check.
        known_components: Component keys overrides may name; None means the static keys.

    Raises:
        ValueError: Naming every problem found, one sentence each (see
            :func:`validate_context_customization`). The message does not repeat the context
            type, so a caller can prefix its own.
    """
    problems = validate_context_customization(
        base.context_type, customization, known_tools, known_components
    )
    if problems:
        raise ValueError(" ".join(problems))
    data = base.to_dict()
    for key, value in customization.items():
        if key == "context_type":
            continue
        if key == "component_overrides":
            merged = dict(data["component_overrides"] or {})
            for comp_key, override in value.items():
                if override is None:
                    merged.pop(comp_key, None)
                else:
                    merged[comp_key] = {"content": override["content"]}
            data[key] = merged
        elif key == "enabled_components":
            data[key] = list(dict.fromkeys(value))  # duplicates dropped, order kept
        else:
            data[key] = plain(value)
    return ContextConfig.from_dict(data)


def contract_problems_of(
    config: ContextConfig, components: Iterable[PromptComponent] | None = None
) -> list[str]:
    """Why requests of ``config``'s context type could not carry what their contract needs.

    Each input a prompt component carries (:func:`~evennia_ai.llm.contracts.required_components`:
    a ``tick_event``'s event in ``pending_event``, a ``tick_autonomous``'s goals in ``goals``,
    a ``reflection_cont``'s tool results in ``tool_result``) needs that component enabled, in
    the context's ``enabled_components``, and with content (the context's override, else the
    component's own) that still shows its placeholder. The task of the other context types and
    the operator's section are not components (nothing here can remove them).

    Args:
        config: The effective config of a context type.
        components: The components as edited (static ones with their overrides); None: the
            static defaults.

    Returns:
        One sentence per problem, naming the component, the context and the input; empty when
        the config keeps every one.
    """
    kind = config.context_type
    by_key = {c.key: c for c in components or () if getattr(c, "is_static", False)}
    enabled_ids = {v for v in config.enabled_components or () if isinstance(v, int)}
    problems = []
    for key, input_name in required_components(kind):
        comp = by_key.get(key) or get_static_component(key)
        if comp is None:
            continue
        named = f"component {comp.id} ({key})"
        carries = f"it carries the {input_name} of every {kind} request"
        if not comp.enabled:
            problems.append(f"{named} cannot be disabled: {carries}")
        elif comp.id not in enabled_ids:
            problems.append(f"context '{kind}' must include {named}: {carries}")
        else:
            content = config.get_component_content_override(key)
            content = comp.content if content is None else content
            if "{" + key + "}" not in (content or ""):
                problems.append(
                    f"the content of {named} must keep {{{key}}} in context '{kind}': {carries}"
                )
    return problems


def diff_context_config(base: ContextConfig, edited: ContextConfig) -> dict[str, Any]:
    """The customisation that turns ``base`` into ``edited`` (fields that differ).

    Handy for storing only what an operator changed, so later changes to the defaults still
    reach the fields they did not touch. ``component_overrides`` differences are given per key
    (None for a removed override), matching :func:`apply_context_customization`.
    """
    out: dict[str, Any] = {}
    old, new = base.to_dict(), edited.to_dict()
    for key in CUSTOMIZABLE_FIELDS:
        if key == "component_overrides":
            changes = {
                k: new[key].get(k)
                for k in set(old[key]) | set(new[key])
                if old[key].get(k) != new[key].get(k)
            }
            if changes:
                out[key] = changes
        elif old[key] != new[key]:
            out[key] = new[key]
    return out
