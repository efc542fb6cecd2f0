"""The assistant's cognitive workspace: goals, projects, session memory, journal, learned rules.

Pure logic on plain data (no Django, Evennia or Twisted): each module works on exactly the
plain dicts and lists stored in the assistant's Attributes. Functions that change state take
the current value and return ``(new_value, OpResult)`` without modifying their argument, so
the caller writes the Attribute once::

    npc_state(npc).update_goals(lambda goals: add_goal(goals, "Build a tavern", tick=tick))

What the model can get wrong comes back as a failed :class:`OpResult` with a message it can
act on; exceptions are reserved for caller (programming) errors.

Modules:
    goals: hierarchical goals with progress rollup and decomposition.
    projects: pageable context slots.
    session_memory: facts, patterns and completed tasks, with persona protection.
    journal: entries with importance and source trust.
    behaviour_rules: short rules learned by reflection, with a permission guard.
    results: :class:`OpResult` and the ISO-8601 time helpers.
"""

from evennia_ai.utils import iso_utc, parse_iso
from evennia_ai.workspace.behaviour_rules import (
    add_rules,
    extract_rules,
    forbidden_reason,
    remove_rule,
    render_rules,
)
from evennia_ai.workspace.goals import (
    active_goals,
    add_goal,
    apply_decomposition,
    decomposition_prompt,
    goal_tree,
    goal_urgency,
    make_goal_id,
    prune_goals,
    render_goals,
    sort_by_priority,
    update_goal,
    validate_decomposition,
)
from evennia_ai.workspace.journal import (
    TRUST,
    add_entry,
    entries_since,
    importance_since,
    render_journal,
    review_journal,
)
from evennia_ai.workspace.projects import (
    active_project,
    create_project,
    empty_projects,
    list_projects,
    render_active_project,
    swap_project,
    update_project,
)
from evennia_ai.workspace.results import OpResult
from evennia_ai.workspace.session_memory import (
    add_session_memory,
    compact_session_memory,
    empty_session_memory,
    is_self_referential,
    render_session_memory,
)

__all__ = [
    "OpResult",
    "TRUST",
    "active_goals",
    "active_project",
    "add_entry",
    "add_goal",
    "add_rules",
    "add_session_memory",
    "apply_decomposition",
    "compact_session_memory",
    "create_project",
    "decomposition_prompt",
    "empty_projects",
    "empty_session_memory",
    "entries_since",
    "extract_rules",
    "forbidden_reason",
    "goal_tree",
    "goal_urgency",
    "importance_since",
    "is_self_referential",
    "iso_utc",
    "list_projects",
    "make_goal_id",
    "parse_iso",
    "prune_goals",
    "remove_rule",
    "render_active_project",
    "render_goals",
    "render_journal",
    "render_rules",
    "render_session_memory",
    "review_journal",
    "sort_by_priority",
    "swap_project",
    "update_goal",
    "update_project",
    "validate_decomposition",
]
