"""The restrictive execution pattern: how an assistant may act in one tick.

Pure module (no Django, Evennia or Twisted). The pattern is composed from three sources of
limits, each of which may only restrict what the one before allows, then from the context
signals (the names are the values of :attr:`ExecutionPattern.source_layers`)::

    static limits (the NPC's own execution_config)
      ⊇ context limits (the context type's ContextConfig)
        ⊇ assessment advice (from a task assessment), then the context signals

Composition rules:

- **mode** follows the order ``single_action < plan_execute < react_loop`` and every source can
  only move it down. The static limits allow ``react_loop`` (the widest) when
  ``multi_action_enabled``, otherwise only ``single_action``. ``react_loop`` is the widest
  because the model re-decides after every tool result; ``plan_execute`` first commits to a
  written plan (a model call that cannot act) and then spends the same iterations carrying it
  out, so moving from ``react_loop`` to ``plan_execute`` is a narrowing an assessment may ask
  for, and moving back is a widening nobody can ask for. Both need multi-tool execution: when
  any source disallows it the mode is ``single_action``. Nothing ever moves a mode up.
- **max_iterations**: the minimum over the sources; the static value is clamped to 1-10;
  ``single_action`` always means 1 (one model call).
- **allowed_categories**: the intersection (``None`` = every category). Besides the context's
  ``allowed_tool_categories``, the static limits may carry an optional
  ``allowed_tool_categories`` list (lets a game keep one NPC away from, say, DANGEROUS tools
  for good; ``aiexec/set``).
- **dangerous_requires_confirm**: OR over the context, the advice and the signals.
- **multi_tool_enabled**: AND over the sources, and False whenever the mode is single_action.
- **sub_agents_enabled**: AND over the static and the context limits, and only with multi-tool
  execution (delegation is multi-step work; a tick forced to one action does not start
  helpers).
  ``sub_agent_budget`` is the static one (clamped to 0-10); 0 when sub-agents are off.
- **terminal_ends_loop** comes from the context alone.

Context signals (``llm_assessment["context_signals"]``, filled by the tick from measurements,
not by a model):

=====================================  ===========================================
``token_pressure == "critical"``       force ``single_action`` (80 %+ of the window)
``token_pressure == "high"``           at most 2 iterations (60 %+)
``recent_errors >= 3``                 force ``single_action`` and confirm DANGEROUS
``recent_errors >= 2``                 at most 2 iterations
``event_class == "communication"``     force ``single_action``
``event_class == "building"``          confirm DANGEROUS
``goal_urgency``                       no restriction (informational)
=====================================  ===========================================

``goal_urgency`` ("high", "medium", "low") restricts nothing: it is carried in
:attr:`ExecutionPattern.signals` and shown in ``source_layers["goal_urgency"]`` (e.g.
``"signal:goal_urgency=high"``) so status pages and tick traces say how urgent the NPC's goals
were when it acted; autonomy scheduling may use it to decide how soon to tick again.

``task_assessment_enabled`` (static) decides whether the tick *asks* a model for advice; advice
that is passed in is always applied, because it can only restrict.

Malformed input never widens and never raises. A static or context value that cannot be read
takes its most restrictive reading (1 iteration, single_action, no sub-agents, confirmation on,
no categories); an invalid assessment entry is ignored, since a model wrote it. Either way a line
is added to :attr:`ExecutionPattern.notes` for the trace.

Example:
    >>> from evennia_ai.prompt.contexts import get_context_config
    >>> pattern = select_execution_pattern(
    ...     {"multi_action_enabled": True, "max_iterations_per_tick": 5},
    ...     get_context_config("reflection"))
    >>> pattern.mode, pattern.max_iterations
    ('react_loop', 3)
    >>> pattern.source_layers["mode"], pattern.source_layers["max_iterations"]
    ('context', 'context')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# -- execution modes ------------------------------------------------------------------------
MODE_SINGLE_ACTION = "single_action"
MODE_REACT_LOOP = "react_loop"
MODE_PLAN_EXECUTE = "plan_execute"
EXECUTION_MODES = (MODE_SINGLE_ACTION, MODE_REACT_LOOP, MODE_PLAN_EXECUTE)
MULTI_TOOL_MODES = (MODE_REACT_LOOP, MODE_PLAN_EXECUTE)
# The order of modes, narrowest first (see the module docstring).
MODE_WIDTH = {MODE_SINGLE_ACTION: 0, MODE_PLAN_EXECUTE: 1, MODE_REACT_LOOP: 2}

# -- tool categories (the same strings as evennia_ai.tools.base.ToolCategory) -----------------
SAFE_CHAIN = "SAFE_CHAIN"
ASYNC_REQUIRED = "ASYNC_REQUIRED"
TERMINAL = "TERMINAL"
DANGEROUS = "DANGEROUS"
ALL_TOOL_CATEGORIES = (SAFE_CHAIN, ASYNC_REQUIRED, TERMINAL, DANGEROUS)

# -- hard bounds and the static limits' defaults ------------------------------------------------
MIN_ITERATIONS, MAX_ITERATIONS = 1, 10
MAX_SUB_AGENT_BUDGET = 10
REDUCED_ITERATIONS = 2  # the cap set by high token pressure or two recent errors
DEFAULT_EXECUTION_CONFIG = {
    "multi_action_enabled": True,
    "max_iterations_per_tick": 5,
    "task_assessment_enabled": False,
    "sub_agents_enabled": False,
    "sub_agent_budget": 3,
    # not a limit: off shows this NPC's replies only when whole (EVENNIA_AI_STREAM_REPLIES)
    "stream_replies": True,
}

# Values of ``source_layers``: the sources of limits (see the module docstring).
SOURCE_STATIC = "static"
SOURCE_CONTEXT = "context"
SOURCE_ASSESSMENT = "assessment"
SOURCE_ALLOWED = "allowed"

_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")
_MISSING = object()


@dataclass
class ExecutionPattern:
    """The composed execution pattern of one tick.

    Attributes:
        mode: "single_action", "react_loop" or "plan_execute".
        max_iterations: Most acting model calls in the tick (1 for single_action).
        allowed_categories: Tool categories the tick may use; None means all.
        terminal_ends_loop: Whether a TERMINAL tool ends the loop.
        dangerous_requires_confirm: Whether a DANGEROUS tool waits for a Builder.
        multi_tool_enabled: Whether more than one tool call may run.
        sub_agents_enabled: Whether the delegate tool may start helpers.
        sub_agent_budget: Most helpers running at once (0 when sub-agents are off).
        signals: The context signals the pattern was composed with.
        source_layers: For each value, what set it: "static", "context", "assessment",
            "signal:<name>", or "allowed" when no source restricted it.
        notes: Inputs that were malformed and how they were read (for the trace).
    """

    mode: str
    max_iterations: int
    allowed_categories: list[str] | None
    terminal_ends_loop: bool
    dangerous_requires_confirm: bool
    multi_tool_enabled: bool
    sub_agents_enabled: bool
    sub_agent_budget: int = 0
    signals: dict[str, Any] = field(default_factory=dict)
    source_layers: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def allows_category(self, category: str) -> bool:
        """Whether tools of ``category`` may be used."""
        return self.allowed_categories is None or category in self.allowed_categories

    def allows(self, tool: Any) -> bool:
        """Whether ``tool`` may be called: its category is allowed, and it needs no sub-agents
        where they are off (the one filter of the tick, its replay and approvals)."""
        return self.allows_category(tool.category) and (
            self.sub_agents_enabled or not getattr(tool, "needs_sub_agents", False)
        )

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-able copy (for traces and status pages)."""
        return asdict(self)


# -- reading possibly malformed input -----------------------------------------------------------
def _get(source: Any, key: str) -> Any:
    """``source[key]`` for a mapping, ``source.key`` for an object; :data:`_MISSING` if absent."""
    if isinstance(source, Mapping):
        return source.get(key, _MISSING)
    return getattr(source, key, _MISSING)


def _read_int(value: Any) -> int | None:
    """A whole number from an int, a finite float (rounded down) or a numeric string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return math.floor(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return math.floor(number) if math.isfinite(number) else None
    return None


def _read_flag(value: Any) -> bool | None:
    """A boolean from a bool, 0/1, or a yes/no word; None when unreadable."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def _read_categories(value: Any) -> tuple[list[str] | None, bool]:
    """(known categories in canonical order, whether the value was well-formed).

    None means every category. A single string is read as a one-item list. Unknown names are
    dropped (restrictive); a value that is not a collection of names reads as "no categories".
    """
    if value is None:
        return None, True
    if isinstance(value, str):
        value = [value]
    elif isinstance(value, (Mapping, bytes)) or not isinstance(value, Iterable):
        return [], False
    items = list(value)
    ok = all(isinstance(item, str) and item in ALL_TOOL_CATEGORIES for item in items)
    return [c for c in ALL_TOOL_CATEGORIES if c in items], ok


def _show(raw: Any) -> str:
    """How an input value appears in a note."""
    return "(missing)" if raw is _MISSING else repr(raw)


class _Composer:
    """The running composition: each value with the source that last narrowed it."""

    def __init__(self) -> None:
        self.mode = MODE_REACT_LOOP
        self.iterations = MAX_ITERATIONS
        self.categories: list[str] | None = None
        self.confirm = False
        self.sub_agents = True
        self.multi_source: str | None = None  # first source that turned multi-tool off
        self.src: dict[str, str] = {
            "mode": SOURCE_ALLOWED,
            "max_iterations": SOURCE_ALLOWED,
            "allowed_categories": SOURCE_ALLOWED,
            "dangerous_requires_confirm": SOURCE_ALLOWED,
            "multi_tool_enabled": SOURCE_ALLOWED,
            "sub_agents_enabled": SOURCE_ALLOWED,
        }
        self.notes: list[str] = []

    def mode_to(self, mode: str, source: str, *, claims: bool = False) -> None:
        """Narrow the mode. ``claims``: the source chose the mode, so it is named as the source
        even when it leaves the mode as it is (a context's ``execution_mode`` sets the mode, and
        ``source_layers["mode"]`` says ``"context"`` even when that is the widest)."""
        if MODE_WIDTH[mode] < MODE_WIDTH[self.mode]:
            self.mode = mode
            self.src["mode"] = source
        elif claims and mode == self.mode and self.src["mode"] == SOURCE_ALLOWED:
            self.src["mode"] = source
        if self.mode == MODE_SINGLE_ACTION and self.multi_source is None:
            self.multi_source = self.src["mode"]

    def multi_off(self, source: str) -> None:
        if self.multi_source is None:
            self.multi_source = source
        self.mode_to(MODE_SINGLE_ACTION, source)

    def iterations_to(self, iterations: int, source: str) -> None:
        if iterations < self.iterations:
            self.iterations = iterations
            self.src["max_iterations"] = source

    def categories_to(self, categories: list[str] | None, source: str) -> None:
        if categories is None:
            return
        current = ALL_TOOL_CATEGORIES if self.categories is None else self.categories
        narrowed = [c for c in current if c in categories]
        if narrowed != list(current):
            self.categories = narrowed
            self.src["allowed_categories"] = source

    def confirm_on(self, source: str) -> None:
        if not self.confirm:
            self.confirm = True
            self.src["dangerous_requires_confirm"] = source

    def sub_agents_off(self, source: str) -> None:
        if self.sub_agents:
            self.sub_agents = False
            self.src["sub_agents_enabled"] = source


# -- the sources of limits ------------------------------------------------------------------------
def _apply_static(c: _Composer, static: Any) -> int:
    """Apply the static limits; return the sub-agent budget."""
    if not isinstance(static, Mapping):
        if static is not None:
            c.notes.append("static: execution_config is not a mapping; its defaults were used")
        static = {}

    def flag(key: str, restrictive: bool) -> bool:
        raw = static.get(key, _MISSING)
        if raw is _MISSING or raw is None:
            return bool(DEFAULT_EXECUTION_CONFIG[key])
        value = _read_flag(raw)
        if value is None:
            c.notes.append(f"static: {key}={raw!r} unreadable; read as {restrictive}")
            return restrictive
        return value

    if not flag("multi_action_enabled", False):
        c.multi_off(SOURCE_STATIC)
    raw = static.get("max_iterations_per_tick", _MISSING)
    if raw is _MISSING or raw is None:
        iterations = DEFAULT_EXECUTION_CONFIG["max_iterations_per_tick"]
    else:
        read = _read_int(raw)
        if read is None:
            c.notes.append(f"static: max_iterations_per_tick={raw!r} unreadable; read as 1")
            iterations = MIN_ITERATIONS
        else:
            iterations = read
            if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
                c.notes.append(f"static: max_iterations_per_tick={raw!r} clamped to 1-10")
    c.iterations = max(MIN_ITERATIONS, min(MAX_ITERATIONS, iterations))
    c.src["max_iterations"] = SOURCE_STATIC
    if not flag("sub_agents_enabled", False):
        c.sub_agents_off(SOURCE_STATIC)
    raw = static.get("sub_agent_budget", _MISSING)
    if raw is _MISSING or raw is None:
        budget = DEFAULT_EXECUTION_CONFIG["sub_agent_budget"]
    else:
        read = _read_int(raw)
        if read is None:
            c.notes.append(f"static: sub_agent_budget={raw!r} unreadable; read as 0")
        budget = 0 if read is None else read
    budget = max(0, min(MAX_SUB_AGENT_BUDGET, budget))
    if budget == 0:
        c.sub_agents_off(SOURCE_STATIC)
    raw = static.get("allowed_tool_categories", _MISSING)
    if raw is not _MISSING:
        categories, ok = _read_categories(raw)
        if not ok:
            c.notes.append(f"static: allowed_tool_categories={raw!r} has unknown entries; dropped")
        c.categories_to(categories, SOURCE_STATIC)
    return budget


def _apply_context(c: _Composer, config: Any) -> bool:
    """Apply the context limits; return ``terminal_ends_loop``."""
    if config is None:
        config = {}

    def flag(key: str, missing: bool, restrictive: bool) -> bool:
        raw = _get(config, key)
        if raw is _MISSING:
            return missing
        value = _read_flag(raw)
        if value is None:
            c.notes.append(f"context: {key}={raw!r} unreadable; read as {restrictive}")
            return restrictive
        return value

    mode = _get(config, "execution_mode")
    if isinstance(mode, str) and mode in MODE_WIDTH:
        c.mode_to(mode, SOURCE_CONTEXT, claims=True)
    else:
        c.notes.append(f"context: execution_mode={_show(mode)} unknown; read as single_action")
        c.mode_to(MODE_SINGLE_ACTION, SOURCE_CONTEXT)
    if not flag("allows_multi_tool", True, False):
        c.multi_off(SOURCE_CONTEXT)
    raw = _get(config, "max_iterations")
    iterations = None if raw is _MISSING else _read_int(raw)
    if iterations is None:
        c.notes.append(f"context: max_iterations={_show(raw)} unreadable; read as 1")
        iterations = MIN_ITERATIONS
    c.iterations_to(max(MIN_ITERATIONS, iterations), SOURCE_CONTEXT)
    raw = _get(config, "allowed_tool_categories")
    if raw is not _MISSING:
        categories, ok = _read_categories(raw)
        if not ok:
            c.notes.append(f"context: allowed_tool_categories={raw!r} has unknown entries; dropped")
        c.categories_to(categories, SOURCE_CONTEXT)
    if flag("dangerous_requires_confirm", True, True):
        c.confirm_on(SOURCE_CONTEXT)
    if not flag("allows_sub_agents", False, False):
        c.sub_agents_off(SOURCE_CONTEXT)
    return flag("terminal_ends_loop", True, True)


def _apply_assessment(c: _Composer, assessment: Mapping[str, Any]) -> None:
    """Apply the assessment advice; invalid entries are ignored (a model wrote them)."""
    raw = assessment.get("recommended_iterations")
    if raw is not None:
        iterations = _read_int(raw)
        if iterations is None or iterations < MIN_ITERATIONS:
            c.notes.append(f"assessment: recommended_iterations={raw!r} ignored")
        else:
            c.iterations_to(iterations, SOURCE_ASSESSMENT)
    raw = assessment.get("recommended_mode")
    if raw is not None:
        mode = raw.strip() if isinstance(raw, str) else None
        if mode in MODE_WIDTH:
            c.mode_to(mode, SOURCE_ASSESSMENT)
        else:
            c.notes.append(f"assessment: recommended_mode={raw!r} ignored")
    raw = assessment.get("recommend_confirm_dangerous")
    if raw is not None:
        confirm = _read_flag(raw)
        if confirm is None:
            c.notes.append(f"assessment: recommend_confirm_dangerous={raw!r} ignored")
        elif confirm:
            c.confirm_on(SOURCE_ASSESSMENT)


def _apply_signals(c: _Composer, signals: Mapping[str, Any]) -> None:
    """Apply the context-signal table of the module docstring."""
    pressure = signals.get("token_pressure")
    if isinstance(pressure, str):
        pressure = pressure.strip().lower()
        if pressure == "critical":
            c.mode_to(MODE_SINGLE_ACTION, "signal:token_pressure")
        elif pressure == "high":
            c.iterations_to(REDUCED_ITERATIONS, "signal:token_pressure")
    raw = signals.get("recent_errors")
    if raw is not None:
        errors = _read_int(raw)
        if errors is None:
            c.notes.append(f"signals: recent_errors={raw!r} ignored")
        elif errors >= 3:
            c.mode_to(MODE_SINGLE_ACTION, "signal:recent_errors")
            c.confirm_on("signal:recent_errors")
        elif errors >= 2:
            c.iterations_to(REDUCED_ITERATIONS, "signal:recent_errors")
    event_class = signals.get("event_class")
    if isinstance(event_class, str):
        event_class = event_class.strip().lower()
        if event_class == "communication":
            c.mode_to(MODE_SINGLE_ACTION, "signal:event_class")
        elif event_class == "building":
            c.confirm_on("signal:event_class")


def select_execution_pattern(
    static_config: Mapping[str, Any] | None,
    context_config: Any,
    llm_assessment: Mapping[str, Any] | None = None,
) -> ExecutionPattern:
    """Compose the execution pattern of a tick (see the module docstring for the rules).

    Args:
        static_config: The static limits, the NPC's ``execution_config``:
            ``multi_action_enabled``, ``max_iterations_per_tick`` (1-10, clamped),
            ``task_assessment_enabled``, ``sub_agents_enabled``, ``sub_agent_budget`` and
            optionally ``allowed_tool_categories``. Missing keys take
            :data:`DEFAULT_EXECUTION_CONFIG`.
        context_config: The context limits, the tick's
            :class:`~evennia_ai.prompt.contexts.ContextConfig` (or a mapping with the same
            fields).
        llm_assessment: The assessment advice: ``recommended_iterations``,
            ``recommended_mode``, ``recommend_confirm_dangerous`` and ``context_signals``
            (``token_pressure``, ``recent_errors``, ``event_class``, ``goal_urgency``).
            Optional.

    Returns:
        The :class:`ExecutionPattern`. It is never wider than any source allows, and this
        function never raises for malformed input.
    """
    c = _Composer()
    budget = _apply_static(c, static_config)
    terminal_ends_loop = _apply_context(c, context_config)
    signals = _apply_advice(c, llm_assessment)
    return _compose(c, signals, budget, terminal_ends_loop)


def _apply_advice(c: _Composer, llm_assessment: Any) -> dict[str, Any]:
    """Apply the assessment's advice and its context signals; the signals, as read."""
    assessment = llm_assessment if isinstance(llm_assessment, Mapping) else {}
    if llm_assessment is not None and not isinstance(llm_assessment, Mapping):
        c.notes.append("assessment: not a mapping; ignored")
    _apply_assessment(c, assessment)
    raw_signals = assessment.get("context_signals")
    signals = dict(raw_signals) if isinstance(raw_signals, Mapping) else {}
    if raw_signals is not None and not isinstance(raw_signals, Mapping):
        c.notes.append("signals: context_signals is not a mapping; ignored")
    _apply_signals(c, signals)
    return signals


def _compose(
    c: _Composer, signals: dict[str, Any], budget: int, terminal_ends_loop: bool
) -> ExecutionPattern:
    """The pattern the composer arrived at, with where each limit came from."""
    # single_action is one model call, one tool, no helpers.
    if c.mode == MODE_SINGLE_ACTION:
        c.iterations_to(MIN_ITERATIONS, c.src["mode"])
        if c.multi_source is None:
            c.multi_source = c.src["mode"]
    multi_tool = c.mode != MODE_SINGLE_ACTION
    if not multi_tool:
        c.src["multi_tool_enabled"] = c.multi_source or c.src["mode"]
        c.sub_agents_off(c.src["multi_tool_enabled"])
    source_layers = dict(c.src)
    source_layers["terminal_ends_loop"] = SOURCE_CONTEXT
    source_layers["sub_agent_budget"] = (
        SOURCE_STATIC if c.sub_agents else source_layers["sub_agents_enabled"]
    )
    urgency = signals.get("goal_urgency")
    if urgency is not None:
        source_layers["goal_urgency"] = f"signal:goal_urgency={urgency}"
    return ExecutionPattern(
        mode=c.mode,
        max_iterations=c.iterations,
        allowed_categories=None if c.categories is None else list(c.categories),
        terminal_ends_loop=terminal_ends_loop,
        dangerous_requires_confirm=c.confirm,
        multi_tool_enabled=multi_tool,
        sub_agents_enabled=c.sub_agents,
        sub_agent_budget=budget if c.sub_agents else 0,
        signals=signals,
        source_layers=source_layers,
        notes=c.notes,
    )
