"""The three-layer restrictive execution pattern.

Pure module. How an assistant may act in one tick is composed from three layers, each of which
may only restrict the one before::

    Layer 1 (the NPC's static execution_config) ⊇ Layer 2 (the context type) ⊇ Layer 3 (advice)

followed by the context signals of the spec's table. Composition rules:

- **mode**: ``single_action`` is the narrowest mode; ``react_loop`` and ``plan_execute`` both
  need multi-tool execution and are equally wide. A later layer may downgrade either to
  ``single_action``; it may switch between ``react_loop`` and ``plan_execute`` only when the
  earlier layers allow multi-tool execution (planning adds a model call, it grants no action).
  Nothing upgrades ``single_action``.
- **max_iterations**: the minimum over layers (Layer 1 clamped to 1-10); ``single_action``
  means 1.
- **allowed_categories**: intersection (``None`` = every category).
- **dangerous_requires_confirm**: OR over layers and signals.
- **multi_tool_enabled**, **sub_agents_enabled**: AND over layers.

Context signals: ``token_pressure`` critical forces single_action, high caps iterations at 2;
``recent_errors`` >= 3 forces single_action and confirmation, >= 2 caps iterations at 2;
``event_class`` communication forces single_action, building forces confirmation.
``goal_urgency`` applies no restriction: it is carried in ``signals`` and shown in
``source_layers`` so status and traces say how urgent the NPC's goals were (autonomy scheduling
may use it). Layer-3 advice comes from a model, so malformed entries are ignored, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SINGLE = "single_action"
MULTI_MODES = ("react_loop", "plan_execute")
MODES = (SINGLE,) + MULTI_MODES


@dataclass
class ExecutionPattern:
    """The composed result, with which layer set each value."""

    mode: str
    max_iterations: int
    allowed_categories: list[str] | None
    terminal_ends_loop: bool
    dangerous_requires_confirm: bool
    multi_tool_enabled: bool
    sub_agents_enabled: bool
    sub_agent_budget: int = 0
    signals: dict = field(default_factory=dict)
    source_layers: dict = field(default_factory=dict)


def _int(value, default=None):
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 1e9:
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return default
    return default


def _categories(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v) for v in value]
    return []


def select_execution_pattern(static_config: dict, context_config, llm_assessment: dict | None = None) -> ExecutionPattern:
    """Compose the execution pattern of a tick.

    Args:
        static_config: Layer 1, the NPC's ``execution_config`` (multi_action_enabled,
            max_iterations_per_tick, task_assessment_enabled, sub_agents_enabled,
            sub_agent_budget).
        context_config: Layer 2, the tick's ContextConfig.
        llm_assessment: Layer 3 advice and ``context_signals`` (optional).

    Returns:
        The ExecutionPattern; ``source_layers`` names for each value "static", "context",
        "assessment", "signal:<name>" or "allowed" (no layer restricted it).

    Example:
        >>> p = select_execution_pattern({"multi_action_enabled": True,
        ...     "max_iterations_per_tick": 5}, get_context_config("reflection"))
        >>> p.max_iterations, p.source_layers["max_iterations"]
        (3, 'context')
    """
    static = static_config if isinstance(static_config, dict) else {}
    assessment = llm_assessment if isinstance(llm_assessment, dict) else {}
    signals = assessment.get("context_signals")
    signals = dict(signals) if isinstance(signals, dict) else {}
    src: dict[str, str] = {}

    # -- Layer 1 ----------------------------------------------------------------------------
    multi = bool(static.get("multi_action_enabled", True))
    iterations = _int(static.get("max_iterations_per_tick", 5), 5)
    iterations = max(1, min(10, iterations))
    mode = "react_loop" if multi else SINGLE
    src["mode"] = "allowed" if multi else "static"
    src["multi_tool_enabled"] = "allowed" if multi else "static"
    src["max_iterations"] = "static"
    sub_agents = bool(static.get("sub_agents_enabled", False))
    src["sub_agents_enabled"] = "allowed" if sub_agents else "static"
    budget = max(0, min(10, _int(static.get("sub_agent_budget", 3), 0)))
    categories = None
    src["allowed_categories"] = "allowed"
    confirm = False
    src["dangerous_requires_confirm"] = "allowed"

    # -- Layer 2 ----------------------------------------------------------------------------
    ctx_mode = getattr(context_config, "execution_mode", "react_loop")
    ctx_multi = bool(getattr(context_config, "allows_multi_tool", True))
    if not ctx_multi or ctx_mode == SINGLE:
        if mode != SINGLE:
            mode, src["mode"] = SINGLE, "context"
        if multi and not ctx_multi:
            src["multi_tool_enabled"] = "context"
        multi = multi and ctx_multi
    elif ctx_mode in MULTI_MODES and mode != SINGLE and ctx_mode != mode:
        mode, src["mode"] = ctx_mode, "context"
    elif ctx_mode in MULTI_MODES and mode != SINGLE:
        src["mode"] = "context"
    ctx_iter = _int(getattr(context_config, "max_iterations", iterations), iterations)
    if ctx_iter is not None and 1 <= ctx_iter < iterations:
        iterations, src["max_iterations"] = ctx_iter, "context"
    ctx_cats = _categories(getattr(context_config, "allowed_tool_categories", None))
    if ctx_cats is not None:
        categories, src["allowed_categories"] = list(ctx_cats), "context"
    if getattr(context_config, "dangerous_requires_confirm", False):
        confirm, src["dangerous_requires_confirm"] = True, "context"
    if sub_agents and not getattr(context_config, "allows_sub_agents", False):
        sub_agents, src["sub_agents_enabled"] = False, "context"
    terminal_ends = bool(getattr(context_config, "terminal_ends_loop", True))
    src["terminal_ends_loop"] = "context"

    # -- Layer 3: advice ----------------------------------------------------------------------
    rec_iter = _int(assessment.get("recommended_iterations"))
    if rec_iter is not None and 1 <= rec_iter < iterations:
        iterations, src["max_iterations"] = rec_iter, "assessment"
    rec_mode = assessment.get("recommended_mode")
    if isinstance(rec_mode, str) and rec_mode in MODES and rec_mode != mode:
        if rec_mode == SINGLE:
            mode, src["mode"] = SINGLE, "assessment"
        elif mode != SINGLE and multi:
            mode, src["mode"] = rec_mode, "assessment"
    if assessment.get("recommend_confirm_dangerous") is True and not confirm:
        confirm, src["dangerous_requires_confirm"] = True, "assessment"

    # -- context signals ----------------------------------------------------------------------
    pressure = signals.get("token_pressure")
    errors = _int(signals.get("recent_errors"), 0) or 0
    event_class = signals.get("event_class")
    if pressure == "critical" and mode != SINGLE:
        mode, src["mode"] = SINGLE, "signal:token_pressure"
    elif pressure == "high" and iterations > 2:
        iterations, src["max_iterations"] = 2, "signal:token_pressure"
    if errors >= 3:
        if mode != SINGLE:
            mode, src["mode"] = SINGLE, "signal:recent_errors"
        if not confirm:
            confirm, src["dangerous_requires_confirm"] = True, "signal:recent_errors"
    elif errors >= 2 and iterations > 2:
        iterations, src["max_iterations"] = 2, "signal:recent_errors"
    if event_class == "communication" and mode != SINGLE:
        mode, src["mode"] = SINGLE, "signal:event_class"
    if event_class == "building" and not confirm:
        confirm, src["dangerous_requires_confirm"] = True, "signal:event_class"
    urgency = signals.get("goal_urgency")
    if urgency is not None:
        src["goal_urgency"] = f"signal:goal_urgency={urgency}"

    if mode == SINGLE:
        if iterations != 1:
            iterations = 1
        if multi:
            multi = False
            src["multi_tool_enabled"] = src["mode"]
    return ExecutionPattern(
        mode=mode,
        max_iterations=iterations,
        allowed_categories=categories,
        terminal_ends_loop=terminal_ends,
        dangerous_requires_confirm=confirm,
        multi_tool_enabled=multi,
        sub_agents_enabled=sub_agents,
        sub_agent_budget=budget if sub_agents else 0,
        signals=signals,
        source_layers=src,
    )
