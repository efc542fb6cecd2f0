"""Hierarchical goals with automatic progress rollup (pure logic).

The goals of an assistant are a plain list of dicts (kept on its script as ``current_goals``)::

    {"id": "goal_42_0", "description": "Build a complete tavern", "priority": "high",
     "status": "active", "progress": 33, "created": "2025-12-06T10:00:00Z",
     "parent_id": None, "subtask_ids": ["goal_42_1", ...], "auto_generated": False,
     "needs_audience": True}

``needs_audience`` (default True; older goals without it count as True): the NPC works on the
goal in autonomous ticks only while a player is within earshot (``EVENNIA_AI_IDLE_NEEDS_AUDIENCE``).
Only an operator marks a goal as needing none (``aigoal``); its subtasks inherit the mark.

Functions that change goals take the current list and return ``(new_goals, OpResult)``; the
list passed in is never modified, so the caller writes the Attribute once with the new list
(``npc_state(npc).update_goals(lambda goals: add_goal(goals, ...))``). On failure the new list is the
one passed in.

Rollup rules, applied to the whole list after every change:

- A subtask's ``parent_id`` is the source of truth; each parent's ``subtask_ids`` is rebuilt
  from it (in list order) so the two never disagree.
- Abandoned subtasks do not count: a parent's progress is the mean of its *non-abandoned*
  subtasks, rounded half up to an int, and it completes when all of those are completed (and
  reopens to active when one of them is reopened or a new one is added). A parent whose
  subtasks are all abandoned behaves like a leaf again: its own progress is kept and can be set.
- An abandoned goal is frozen: rollup changes neither its progress nor its status.
- Completing a goal sets its progress to 100 and completes its still-active descendants (the
  whole task is done); abandoning a goal abandons its still-active descendants.
- Progress of a parent with counting subtasks is computed, so setting it is refused.

Ids are ``goal_{tick}_{index}`` where index is one more than the highest index already used
for that tick, so ids stay unique among the goals kept.
"""

from __future__ import annotations

import copy
import json
import math
import re
from datetime import datetime
from typing import Any, Iterable

from evennia_ai.llm.contracts import DECOMPOSE_INSTRUCTION, render_task
from evennia_ai.utils import iso_utc
from evennia_ai.workspace.results import OpResult, clean_text, normalise

PRIORITIES = ("high", "medium", "low")
PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2}
STATUSES = ("active", "completed", "abandoned")

MAX_DESCRIPTION = 300  # characters of a goal's description
MAX_ACTIVE_GOALS = 50  # active goals at once; more is a sign of a runaway loop
MAX_DEPTH = 5  # levels of nesting below a root goal
MAX_GOALS = 100  # goals kept; add_goal prunes finished trees beyond this
MIN_SUBTASKS = 3  # decompose_goal: fewest subtasks accepted
MAX_SUBTASKS = 7  # decompose_goal: most subtasks accepted

_ID = re.compile(r"^goal_(\d+)_(\d+)$")


# -- ids and lookups ------------------------------------------------------------------------------
def make_goal_id(tick: int, existing_goals: Iterable[dict] | None) -> str:
    """Return ``goal_{tick}_{index}`` with the next free index for ``tick``.

    Args:
        tick: The assistant's tick counter (an int >= 0).
        existing_goals: The goals already kept.

    Raises:
        ValueError: If ``tick`` is not an int >= 0 (a caller error, not the model's).
    """
    if isinstance(tick, bool) or not isinstance(tick, int) or tick < 0:
        raise ValueError(f"tick must be an int >= 0, got {tick!r}")
    highest = -1
    for goal in existing_goals or []:
        match = _ID.match(str(goal.get("id", "")))
        if match and int(match.group(1)) == tick:
            highest = max(highest, int(match.group(2)))
    return f"goal_{tick}_{highest + 1}"


def _by_id(goals: list[dict]) -> dict[str, dict]:
    return {g.get("id"): g for g in goals if g.get("id")}


def _children(goals: list[dict], goal_id: str) -> list[dict]:
    return [g for g in goals if g.get("parent_id") == goal_id and g.get("id") != goal_id]


def _counted(children: list[dict]) -> list[dict]:
    """The subtasks that count towards a parent (abandoned ones do not)."""
    return [c for c in children if c.get("status") != "abandoned"]


def _descendants(goals: list[dict], goal_id: str) -> list[dict]:
    out, seen, stack = [], {goal_id}, [goal_id]
    while stack:
        for child in _children(goals, stack.pop()):
            if child["id"] not in seen:
                seen.add(child["id"])
                out.append(child)
                stack.append(child["id"])
    return out


def _ancestors(by_id: dict[str, dict], goal: dict) -> list[dict]:
    out, seen = [], {goal.get("id")}
    parent = by_id.get(goal.get("parent_id"))
    while parent is not None and parent.get("id") not in seen:
        seen.add(parent["id"])
        out.append(parent)
        parent = by_id.get(parent.get("parent_id"))
    return out


def _round_half_up(value: float) -> int:
    return int(math.floor(value + 0.5))


def _progress_of(goal: dict) -> int:
    """A goal's stored progress as an int 0-100 (corrupted values count as 0)."""
    value = goal.get("progress", 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return 0
    return max(0, min(100, _round_half_up(float(value))))


def _unknown(goal_id: Any, goals: list[dict]) -> OpResult:
    active = [g["id"] for g in goals if g.get("status") == "active"][:10]
    hint = f" Active goals: {', '.join(active)}." if active else " There are no active goals."
    return OpResult.fail(f"No goal with id {goal_id!r}.{hint}")


# -- rollup -----------------------------------------------------------------------------------
def rollup(goals: list[dict]) -> list[dict]:
    """Recompute subtask links, parent progress and parent status in place (see module doc).

    Args:
        goals: A plain list the caller owns (it is modified).

    Returns:
        The same list.
    """
    by_id = _by_id(goals)
    done: set[str] = set()

    def visit(goal: dict, path: set[str]) -> None:
        gid = goal["id"]
        if gid in done or gid in path:  # cycles in corrupted data are left alone
            return
        children = _children(goals, gid)
        for child in children:
            visit(child, path | {gid})
        goal["subtask_ids"] = [c["id"] for c in children]
        done.add(gid)
        if goal.get("status") == "abandoned":
            return
        counted = _counted(children)
        if not counted:
            if goal.get("status") == "completed":
                goal["progress"] = 100
            return
        goal["progress"] = _round_half_up(sum(_progress_of(c) for c in counted) / len(counted))
        all_done = all(c.get("status") == "completed" for c in counted)
        goal["status"] = "completed" if all_done else "active"

    for goal in goals:
        if goal.get("id"):
            visit(goal, set())
    # Goals whose parent was removed become roots.
    for goal in goals:
        if goal.get("parent_id") and goal["parent_id"] not in by_id:
            goal["parent_id"] = None
    return goals


# -- validation helpers ----------------------------------------------------------------------------
def _check_description(description: Any) -> tuple[str | None, str | None]:
    text = clean_text(description)
    if not text:
        return None, "The goal description must be a non-empty text."
    if len(text) > MAX_DESCRIPTION:
        return (
            None,
            f"The goal description is too long ({len(text)} characters, at most {MAX_DESCRIPTION}).",
        )
    return text, None


def _check_priority(priority: Any) -> tuple[str | None, str | None]:
    value = clean_text(priority).lower() if isinstance(priority, str) else None
    if value not in PRIORITIES:
        return None, f"Priority must be one of {', '.join(PRIORITIES)} (got {priority!r})."
    return value, None


def _check_progress(progress: Any) -> tuple[int | None, str | None]:
    value: Any = progress
    if isinstance(value, str):
        text = value.strip().rstrip("%").strip()
        try:
            value = float(text)
        except ValueError:
            return None, f"Progress must be a number from 0 to 100 (got {progress!r})."
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None, f"Progress must be a number from 0 to 100 (got {progress!r})."
    if not 0 <= value <= 100:
        return None, f"Progress must be between 0 and 100 (got {progress!r})."
    return _round_half_up(float(value)), None


def _depth(by_id: dict[str, dict], goal: dict) -> int:
    return len(_ancestors(by_id, goal))


# -- adding goals -----------------------------------------------------------------------------
def add_goal(
    goals: list[dict] | None,
    description: Any,
    *,
    tick: int,
    priority: Any = "medium",
    parent_id: str | None = None,
    auto_generated: bool = False,
    needs_audience: bool = True,
    now: datetime | None = None,
) -> tuple[list[dict], OpResult]:
    """Add a goal, optionally as a subtask of ``parent_id``.

    Adding a subtask to a completed parent reopens the parent; an abandoned parent is refused.
    When more than :data:`MAX_GOALS` goals are kept, finished trees are pruned (oldest first).

    Args:
        goals: The current goals (not modified).
        description: What the goal is (non-empty, at most :data:`MAX_DESCRIPTION` characters).
        tick: The current tick, for the id.
        priority: "high", "medium" or "low" (any case).
        parent_id: Id of the parent goal, for a subtask.
        auto_generated: True when the system, not the model, created it (decomposition).
        needs_audience: False when the NPC may work on it with no player within earshot (an
            operator's choice); a subtask of a goal that needs none needs none either.
        now: Creation time (default: the clock).

    Returns:
        ``(new_goals, result)``; ``result.data["goal"]`` is the goal added.
    """
    goals = list(goals or [])
    text, error = _check_description(description)
    if error:
        return goals, OpResult.fail(error)
    prio, error = _check_priority(priority)
    if error:
        return goals, OpResult.fail(error)
    by_id = _by_id(goals)
    parent = None
    if parent_id not in (None, ""):
        parent = by_id.get(parent_id)
        if parent is None:
            return goals, _unknown(parent_id, goals)
        if parent.get("status") == "abandoned":
            return goals, OpResult.fail(
                f"Goal {parent_id} is abandoned; reopen it (status 'active') before adding subtasks."
            )
        if _depth(by_id, parent) + 1 > MAX_DEPTH:
            return goals, OpResult.fail(
                f"Goals nest at most {MAX_DEPTH} levels deep; add this one under a higher-level goal."
            )
    if sum(1 for g in goals if g.get("status") == "active") >= MAX_ACTIVE_GOALS:
        return goals, OpResult.fail(
            f"There are already {MAX_ACTIVE_GOALS} active goals; complete or abandon some first."
        )
    new = copy.deepcopy(goals)
    goal = {
        "id": make_goal_id(tick, new),
        "description": text,
        "priority": prio,
        "status": "active",
        "progress": 0,
        "created": iso_utc(now),
        "parent_id": parent["id"] if parent else None,
        "subtask_ids": [],
        "auto_generated": bool(auto_generated),
        "needs_audience": bool(needs_audience) and goal_needs_audience(parent),
    }
    new.append(goal)
    rollup(new)
    message = f"Added goal {goal['id']} [{prio}]: {text}"
    if parent:
        after = _by_id(new)[parent["id"]]
        message += f" (subtask of {parent['id']}, now {after['progress']}%"
        message += ", reopened)" if parent.get("status") == "completed" else ")"
    if len(new) > MAX_GOALS:
        new, _ = prune_goals(new, keep=MAX_GOALS)
    return new, OpResult.ok(message, goal=copy.deepcopy(goal), goal_id=goal["id"])


def goal_needs_audience(goal: dict | None) -> bool:
    """Whether ``goal`` is worked on only with a player within earshot (None: True)."""
    return goal is None or goal.get("needs_audience", True) is not False


def works_unwatched(goals: Iterable[dict] | None) -> bool:
    """Whether an active goal may be worked on with nobody within earshot."""
    return any(g.get("status") == "active" and not goal_needs_audience(g) for g in goals or [])


def set_needs_audience(
    goals: list[dict] | None, goal_id: str, needs_audience: bool
) -> tuple[list[dict], OpResult]:
    """Mark ``goal_id`` and its subtasks as needing an audience or not (an operator's call)."""
    goals = list(goals or [])
    by_id = _by_id(goals)
    if goal_id not in by_id:
        return goals, _unknown(goal_id, goals)
    new = copy.deepcopy(goals)
    marked = {goal_id}
    for goal in new:  # parents come before their subtasks
        if goal.get("id") in marked or goal.get("parent_id") in marked:
            marked.add(goal.get("id"))
            goal["needs_audience"] = bool(needs_audience)
    how = "only with a player within earshot" if needs_audience else "with or without an audience"
    return new, OpResult.ok(f"Goal {goal_id} ({len(marked)} goal(s)) is worked on {how}.")


# -- updating goals ---------------------------------------------------------------------------
def update_goal(
    goals: list[dict] | None,
    goal_id: str,
    *,
    status: Any = None,
    progress: Any = None,
    description: Any = None,
    priority: Any = None,
) -> tuple[list[dict], OpResult]:
    """Change a goal's status, progress, description or priority, then roll up.

    Args:
        goals: The current goals (not modified).
        goal_id: The goal to change.
        status: "active" (reopen), "completed" (progress 100, active descendants completed too)
            or "abandoned" (active descendants abandoned too).
        progress: 0-100 (a number, or a string like "40%"), only for goals without counting
            subtasks and not together with a conflicting status.
        description: New description.
        priority: New priority.

    Returns:
        ``(new_goals, result)``; ``result.data["goal"]`` is the goal after the change and
        ``result.data["rolled_up"]`` the ancestors whose progress or status changed.
    """
    goals = list(goals or [])
    if all(v is None for v in (status, progress, description, priority)):
        return goals, OpResult.fail(
            "Nothing to update: give a status, progress, description or priority."
        )
    by_id = _by_id(goals)
    goal = by_id.get(goal_id)
    if goal is None:
        return goals, _unknown(goal_id, goals)

    changes: dict[str, Any] = {}
    if description is not None:
        text, error = _check_description(description)
        if error:
            return goals, OpResult.fail(error)
        changes["description"] = text
    if priority is not None:
        prio, error = _check_priority(priority)
        if error:
            return goals, OpResult.fail(error)
        changes["priority"] = prio
    current = goal.get("status", "active")
    new_status = current
    if status is not None:
        value = clean_text(status).lower() if isinstance(status, str) else None
        if value not in STATUSES:
            return goals, OpResult.fail(
                f"Status must be one of {', '.join(STATUSES)} (got {status!r})."
            )
        new_status = value
    counted = _counted(_children(goals, goal_id))
    if (
        new_status == "active"
        and current != "active"
        and counted
        and all(c.get("status") == "completed" for c in counted)
    ):
        return goals, OpResult.fail(
            f"All subtasks of {goal_id} are completed, so it would complete again at once; "
            "reopen one of its subtasks or add a new one instead."
        )
    if progress is not None:
        value, error = _check_progress(progress)
        if error:
            return goals, OpResult.fail(error)
        if counted:
            return goals, OpResult.fail(
                f"The progress of {goal_id} is computed from its {len(counted)} subtasks; "
                "update those instead."
            )
        if new_status == "abandoned":
            return goals, OpResult.fail(
                f"Goal {goal_id} is abandoned; reopen it (status 'active') to set progress."
            )
        if new_status == "completed" and value != 100:
            hint = "reopen it with status 'active'" if status is None else "leave status out"
            return goals, OpResult.fail(
                f"A completed goal has progress 100; to set {value}% on {goal_id}, {hint}."
            )
        changes["progress"] = value

    new = copy.deepcopy(goals)
    new_by_id = _by_id(new)
    target = new_by_id[goal_id]
    before = {g["id"]: (g.get("progress"), g.get("status")) for g in new if g.get("id")}
    target.update(changes)
    cascaded = 0
    if new_status != current:
        target["status"] = new_status
        if new_status in ("completed", "abandoned"):
            for desc in _descendants(new, goal_id):
                if desc.get("status") == "active":
                    desc["status"] = new_status
                    if new_status == "completed":
                        desc["progress"] = 100
                    cascaded += 1
    if new_status == "completed":
        target["progress"] = 100
    rollup(new)

    rolled = [
        {"id": a["id"], "progress": a.get("progress"), "status": a.get("status")}
        for a in _ancestors(new_by_id, target)
        if before.get(a["id"]) != (a.get("progress"), a.get("status"))
    ]
    parts = [f"Goal {goal_id} is {target['status']} at {target['progress']}%"]
    if status is not None and new_status == current:
        parts.append(f"(it was already {current})")
    if cascaded:
        parts.append(f"; {cascaded} active subtask(s) {new_status} with it")
    for anc in rolled:
        parts.append(f"; {anc['id']} is now {anc['status']} at {anc['progress']}%")
    message = " ".join(parts).replace(" ;", ";") + "."
    return new, OpResult.ok(message, goal=copy.deepcopy(target), rolled_up=rolled)


# -- decomposition ----------------------------------------------------------------------------
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.*\S)\s*$")


def _parse_reply(reply: str) -> Any:
    text = _FENCE.sub("", reply.strip())
    try:
        return json.loads(text)
    except ValueError:
        pass
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except ValueError:
                continue
    items = [m.group(1) for m in map(_BULLET.match, text.splitlines()) if m]
    return items or None


def validate_decomposition(parsed: Any) -> OpResult:
    """Check the model's answer to a decomposition request.

    Accepted shapes: a list of strings, a list of ``{"description", "priority"?}`` dicts (or a
    mix), ``{"subtasks": [...]}``, or the raw reply text holding one of those as JSON (code
    fences allowed) or as a bulleted/numbered list.

    Args:
        parsed: The parsed JSON, or the reply text.

    Returns:
        On success ``data["subtasks"]`` is a list of ``{"description", "priority"}`` dicts
        (priority "medium" when not given); on failure the message says what to fix.
    """
    if isinstance(parsed, str):
        parsed = _parse_reply(parsed)
    if isinstance(parsed, dict):
        if "subtasks" not in parsed:
            return OpResult.fail('Expected a list of subtasks or {"subtasks": [...]}.')
        parsed = parsed["subtasks"]
    if not isinstance(parsed, list):
        return OpResult.fail(
            'Expected a JSON list of subtasks, e.g. ["Lay foundation", "Build walls", "Add roof"].'
        )
    if not MIN_SUBTASKS <= len(parsed) <= MAX_SUBTASKS:
        return OpResult.fail(
            f"A goal breaks into {MIN_SUBTASKS} to {MAX_SUBTASKS} subtasks (got {len(parsed)})."
        )
    subtasks: list[dict] = []
    seen: set[str] = set()
    for number, item in enumerate(parsed, 1):
        prio_raw: Any = "medium"
        if isinstance(item, dict):
            desc_raw = next(
                (item[k] for k in ("description", "title", "task") if item.get(k)), None
            )
            prio_raw = item.get("priority") or "medium"
        else:
            desc_raw = item
        text, error = _check_description(desc_raw)
        if error:
            return OpResult.fail(f"Subtask {number}: {error}")
        prio, error = _check_priority(prio_raw)
        if error:
            return OpResult.fail(f"Subtask {number}: {error}")
        key = normalise(text)
        if key in seen:
            return OpResult.fail(
                f"Subtask {number} repeats an earlier one ({text!r}); subtasks must differ."
            )
        seen.add(key)
        subtasks.append({"description": text, "priority": prio})
    return OpResult.ok(f"{len(subtasks)} subtasks.", subtasks=subtasks)


def decomposition_prompt(goal: dict) -> str:
    """The task sent to the model to break ``goal`` into subtasks (its contract's shape)."""
    instruction = DECOMPOSE_INSTRUCTION.format(min_subtasks=MIN_SUBTASKS, max_subtasks=MAX_SUBTASKS)
    described = f"{goal.get('id', '?')}: {goal.get('description', '')}"
    return render_task("goal_decompose", instruction, {"goal": described})


def apply_decomposition(
    goals: list[dict] | None,
    goal_id: str,
    subtasks: Any,
    *,
    tick: int,
    now: datetime | None = None,
) -> tuple[list[dict], OpResult]:
    """Add validated subtasks (see :func:`validate_decomposition`) as children of ``goal_id``.

    The goal must be active and have no counting subtasks yet (decomposing twice would mix two
    plans). The subtasks are marked ``auto_generated``.

    Returns:
        ``(new_goals, result)``; ``result.data["subtask_ids"]`` lists the new ids.
    """
    goals = list(goals or [])
    goal = _by_id(goals).get(goal_id)
    if goal is None:
        return goals, _unknown(goal_id, goals)
    if goal.get("status") != "active":
        return goals, OpResult.fail(
            f"Goal {goal_id} is {goal.get('status')}; only active goals can be decomposed."
        )
    existing = _counted(_children(goals, goal_id))
    if existing:
        return goals, OpResult.fail(
            f"Goal {goal_id} already has {len(existing)} subtasks; update or abandon them instead."
        )
    checked = validate_decomposition(subtasks)
    if not checked.success:
        return goals, checked
    new = goals
    ids = []
    for item in checked.data["subtasks"]:
        new, result = add_goal(
            new,
            item["description"],
            tick=tick,
            priority=item["priority"],
            parent_id=goal_id,
            auto_generated=True,
            now=now,
        )
        if not result.success:
            return goals, result
        ids.append(result.data["goal_id"])
    return new, OpResult.ok(
        f"Goal {goal_id} broken into {len(ids)} subtasks: {', '.join(ids)}.", subtask_ids=ids
    )


# -- reading goals ----------------------------------------------------------------------------
def active_goals(goals: list[dict] | None) -> list[dict]:
    """The active goals, in list order."""
    return [g for g in goals or [] if g.get("status") == "active"]


def sort_by_priority(goals: Iterable[dict]) -> list[dict]:
    """Goals sorted high -> medium -> low, keeping list order within a priority."""
    return sorted(goals, key=lambda g: PRIORITY_RANK.get(g.get("priority"), len(PRIORITIES)))


def goal_urgency(goals: list[dict] | None) -> str | None:
    """The highest priority among active goals ("high", "medium", "low"), or None."""
    ranked = sort_by_priority(active_goals(goals))
    return ranked[0].get("priority") if ranked and ranked[0].get("priority") in PRIORITIES else None


def goal_tree(goals: list[dict] | None) -> list[dict]:
    """The goals as nested copies: each node is the goal plus ``"children"`` (list order).

    Goals whose parent is missing, and goals caught in a parent cycle, appear as roots.
    """
    goals = list(goals or [])
    by_id = _by_id(goals)
    placed: set[str] = set()

    def build(goal: dict) -> dict:
        placed.add(goal["id"])
        node = {k: copy.deepcopy(v) for k, v in goal.items()}
        node["children"] = [build(c) for c in _children(goals, goal["id"]) if c["id"] not in placed]
        return node

    roots = [build(g) for g in goals if g.get("id") and g.get("parent_id") not in by_id]
    for goal in goals:  # cycles: never reached from a root
        if goal.get("id") and goal["id"] not in placed:
            roots.append(build(goal))
    return roots


def _line(goal: dict, depth: int) -> str:
    unwatched = "" if goal_needs_audience(goal) else " (worked on unwatched)"
    return (
        f"{'  ' * depth}- {goal.get('id')} [{goal.get('priority', 'medium')}] "
        f"{goal.get('status', 'active')} {goal.get('progress', 0)}% - {goal.get('description', '')}"
        f"{unwatched}"
    )


def render_goals(goals: list[dict] | None, max_goals: int = 20) -> str:
    """Text of the goals for the prompt ("" when there are none).

    Active root goals come first (by priority, then age) with their subtasks indented below
    (subtasks in their planned order); finished root goals follow, newest first, one line each.
    At most ``max_goals`` lines are shown, then a line saying how many were left out.
    """
    tree = goal_tree(goals)
    if not tree:
        return ""
    active = sort_by_priority([n for n in tree if n.get("status") == "active"])
    finished = [n for n in tree if n.get("status") != "active"][::-1]
    lines: list[str] = []

    def walk(node: dict, depth: int) -> None:
        lines.append(_line(node, depth))
        for child in node["children"]:
            walk(child, depth + 1)

    for node in active:
        walk(node, 0)
    for node in finished:
        line = _line(node, 0)
        if node["children"]:
            line += f" ({len(node['children'])} subtasks)"
        lines.append(line)
    limit = max(1, int(max_goals))
    if len(lines) > limit:
        hidden = len(lines) - limit
        lines = lines[:limit] + [f"... {hidden} more goal(s) not shown"]
    return "\n".join(lines)


# -- pruning ------------------------------------------------------------------------------------
def prune_goals(goals: list[dict] | None, keep: int = MAX_GOALS) -> tuple[list[dict], OpResult]:
    """Drop the oldest finished goal trees until at most ``keep`` goals remain.

    Only whole trees whose every goal is completed or abandoned are dropped (a finished subtask
    of an unfinished goal still counts towards its parent's progress), oldest root first. Active
    goals and their ancestors are never dropped, so fewer may remain than asked.

    Returns:
        ``(new_goals, result)``; ``result.data["removed_ids"]`` lists what was dropped.
    """
    goals = list(goals or [])
    keep = max(0, int(keep))
    if len(goals) <= keep:
        return goals, OpResult.ok("Nothing to prune.", removed=0, removed_ids=[])
    tree = goal_tree(goals)

    def members(node: dict) -> list[dict]:
        out = [node]
        for child in node["children"]:
            out.extend(members(child))
        return out

    removed: set[str] = set()
    excess = len(goals) - keep
    for root in tree:  # list order is creation order: oldest trees first
        if excess <= 0:
            break
        group = members(root)
        if all(m.get("status") in ("completed", "abandoned") for m in group):
            removed.update(m["id"] for m in group)
            excess -= len(group)
    new = [copy.deepcopy(g) for g in goals if g.get("id") not in removed]
    ids = [g["id"] for g in goals if g.get("id") in removed]
    return new, OpResult.ok(
        f"Pruned {len(ids)} finished goal(s).", removed=len(ids), removed_ids=ids
    )
