"""Self-management tools over the assistant's workspace: projects, goals, session memory, journal.

Thin glue: each tool reads a plain copy of one piece of state, calls the pure function of
:mod:`evennia_ai.workspace`, and writes the result back once (only when it succeeded). The
model never chooses a journal entry's trust: it comes from how the tick's event reached the NPC.
"""

from __future__ import annotations

from twisted.internet import defer

from evennia_ai.llm.client import get_client
from evennia_ai.npc_state import BEHAVIOUR_RULES, JOURNAL, PROJECTS, SESSION_MEMORY, npc_state
from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.registry import register_tool
from evennia_ai.wording import GOAL_PLANNER_SYSTEM
from evennia_ai.workspace import behaviour_rules
from evennia_ai.workspace import goals as goals_mod
from evennia_ai.workspace import journal as journal_mod
from evennia_ai.workspace import projects as projects_mod
from evennia_ai.workspace import session_memory as memory_mod


def _result(op) -> ToolResult:
    if op.success:
        return ToolResult.ok(op.to_dict())
    extra = {"suggestion": op.suggestion} if op.suggestion else {}
    return ToolResult.fail(op.message, **extra)


def _apply_character(ctx: ToolContext, key: str, change) -> ToolResult:
    """Run ``change(plain) -> (new, OpResult)`` on a character-held key; write on success."""
    state = npc_state(ctx.npc)
    new, op = change(state.get(key))
    if op.success:
        state.set(key, new)
    return _result(op)


def _apply_goals(ctx: ToolContext, change) -> ToolResult:
    state = npc_state(ctx.npc)
    new, op = change(state.goals)
    if op.success:
        state.update_goals(lambda _old: new)
    return _result(op)


def _tick(ctx: ToolContext) -> int:
    return int(ctx.tick_id or 0)


# -- projects ------------------------------------------------------------------------------------
@register_tool
class CreateProject(Tool):
    name = "create_project"
    group = "goals"
    description = "Create a project slot for long-running work (summary and starting notes)."
    parameters = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "short id, e.g. build_tavern"},
            "summary": {"type": "string"},
            "context": {"type": "string", "description": "initial notes"},
            "activate": {"type": "boolean"},
        },
        "required": ["key", "summary"],
        "additionalProperties": False,
    }

    def run(self, ctx, key, summary, context="", activate=False):
        return _apply_character(
            ctx,
            PROJECTS,
            lambda p: projects_mod.create_project(p, key, summary, context, activate=activate),
        )


@register_tool
class ListProjects(Tool):
    name = "list_projects"
    group = "goals"
    description = "List your projects with summaries and status."
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    cacheable = True

    def run(self, ctx):
        projects = npc_state(ctx.npc).projects
        return ToolResult.ok(
            {
                "success": True,
                "active": projects.get("active"),
                "projects": projects_mod.list_projects(projects),
            }
        )


@register_tool
class SwapProject(Tool):
    name = "swap_project"
    group = "goals"
    description = (
        "Switch to another project, saving where you are in the current one "
        "(current_project_update replaces the current project's notes)."
    )
    parameters = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "current_project_update": {"type": "string"}},
        "required": ["key"],
        "additionalProperties": False,
    }

    def run(self, ctx, key, current_project_update=None):
        return _apply_character(
            ctx, PROJECTS, lambda p: projects_mod.swap_project(p, key, current_project_update)
        )


@register_tool
class UpdateProject(Tool):
    name = "update_project"
    group = "goals"
    description = "Update the active project's notes, summary or status (active|paused|completed)."
    parameters = {
        "type": "object",
        "properties": {
            "context": {"type": "string"},
            "summary": {"type": "string"},
            "status": {"type": "string", "enum": ["active", "paused", "completed"]},
        },
        "additionalProperties": False,
    }

    def run(self, ctx, context=None, summary=None, status=None):
        return _apply_character(
            ctx,
            PROJECTS,
            lambda p: projects_mod.update_project(
                p, context=context, summary=summary, status=status
            ),
        )


# -- goals ---------------------------------------------------------------------------------------
@register_tool
class AddGoal(Tool):
    name = "add_goal"
    group = "goals"
    description = "Add a goal (optionally as a subtask of another goal)."
    parameters = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 3},
            "priority": {"type": "string", "enum": ["high", "medium", "low"]},
            "parent_id": {"type": "string"},
        },
        "required": ["description"],
        "additionalProperties": False,
    }

    def run(self, ctx, description, priority="medium", parent_id=None):
        return _apply_goals(
            ctx,
            lambda g: goals_mod.add_goal(
                g, description, tick=_tick(ctx), priority=priority, parent_id=parent_id
            ),
        )


@register_tool
class UpdateGoal(Tool):
    name = "update_goal"
    group = "goals"
    description = (
        "Update a goal's status (active|completed|abandoned) or progress (0-100). Parents roll "
        "up: their progress is the mean of their subtasks; they complete when all subtasks do."
    )
    parameters = {
        "type": "object",
        "properties": {
            "goal_id": {"type": "string"},
            "status": {"type": "string", "enum": ["active", "completed", "abandoned"]},
            "progress": {"type": "integer", "minimum": 0, "maximum": 100},
            "description": {"type": "string"},
            "priority": {"type": "string", "enum": ["high", "medium", "low"]},
        },
        "required": ["goal_id"],
        "additionalProperties": False,
    }

    def run(self, ctx, goal_id, status=None, progress=None, description=None, priority=None):
        return _apply_goals(
            ctx,
            lambda g: goals_mod.update_goal(
                g,
                goal_id,
                status=status,
                progress=progress,
                description=description,
                priority=priority,
            ),
        )


@register_tool
class DecomposeGoal(Tool):
    name = "decompose_goal"
    group = "goals"
    description = "Break a goal into 3-7 subtasks (a separate planning call)."
    parameters = {
        "type": "object",
        "properties": {"goal_id": {"type": "string"}},
        "required": ["goal_id"],
        "additionalProperties": False,
    }
    category = ToolCategory.ASYNC_REQUIRED

    def run(self, ctx, goal_id):
        goal = next((g for g in npc_state(ctx.npc).goals if g.get("id") == goal_id), None)
        if goal is None:
            return ToolResult.fail(f"No goal with id '{goal_id}'.")
        services = ctx.services
        if services.over_budget():
            return ToolResult.fail("Today's budget is reached: plan the subtasks yourself.")
        return decompose(
            ctx.npc,
            goal,
            services.client or get_client(),
            services.model,
            _tick(ctx),
            build_request=services.build_request,
            usage=services.usage,
        )


def decompose(npc, goal: dict, client, model, tick: int, build_request=None, usage=None):
    """One ``goal_decompose`` call (no tools); validated subtasks are added. Fires ToolResult.

    Args:
        build_request: ``(context type, task) -> Deferred of messages``: the tick's builder, so
            the request follows the operator's ``goal_decompose`` customisation (components,
            overrides, budget). None sends a plain system prompt and the task.
        usage: The tick's UsageAccountant; the planning call's tokens are counted there.
    """
    task = goals_mod.decomposition_prompt(goal)
    if build_request is not None:
        request = defer.maybeDeferred(build_request, "goal_decompose", task)
    else:
        system = GOAL_PLANNER_SYSTEM.format(name=npc.key)
        request = defer.succeed(
            [{"role": "system", "content": system}, {"role": "user", "content": task}]
        )

    def parsed(result):
        if usage is not None:
            usage.record_result(result, "decompose_goal")
        if result.error:
            return ToolResult.fail(f"The planning call failed: {result.error}")
        check = goals_mod.validate_decomposition(result.text or "")
        if not check.success:
            return _result(check)
        if not getattr(npc, "pk", None):
            return ToolResult.fail("The NPC no longer exists.")
        state = npc_state(npc)
        new, op = goals_mod.apply_decomposition(
            state.goals, goal["id"], check.data["subtasks"], tick=tick
        )
        if op.success:
            state.update_goals(lambda _old: new)
        return _result(op)

    def send(messages):
        return client.complete(messages, None, model=model, kind="goal_decompose")

    return request.addCallback(send).addCallback(parsed)


# -- session memory ------------------------------------------------------------------------------
@register_tool
class AddSessionMemory(Tool):
    bookkeeping = True
    name = "add_session_memory"
    group = "goals"
    description = (
        "Remember a fact about the world, a player or an event (kind=fact), a pattern in how "
        "players behave (kind=pattern), or a finished task (kind=completed_task). Third person; "
        "about the world, not about yourself."
    )
    parameters = {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["fact", "pattern", "completed_task"]},
            "content": {"type": "string", "minLength": 3, "maxLength": 500},
        },
        "required": ["kind", "content"],
        "additionalProperties": False,
    }

    def run(self, ctx, kind, content):
        names = [ctx.npc.key] + list(ctx.npc.aliases.all())
        return _apply_character(
            ctx,
            SESSION_MEMORY,
            lambda m: memory_mod.add_session_memory(m, kind, content, self_names=names),
        )


@register_tool
class CompactSessionMemory(Tool):
    name = "compact_session_memory"
    group = "goals"
    description = "Tidy session memory: drop duplicates and trim each list to its cap."
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}

    def run(self, ctx):
        return _apply_character(ctx, SESSION_MEMORY, memory_mod.compact_session_memory)


# -- journal -------------------------------------------------------------------------------------
def event_source(ctx: ToolContext) -> str:
    """How the NPC learned what it is noting: from the tick's event, else its own inference."""
    event = ctx.event or {}
    trust = event.get("trust_source")
    if trust in journal_mod.TRUST:
        return trust
    if trust == "system":
        return "observed"
    return journal_mod.DEFAULT_SOURCE


@register_tool
class AddJournalEntry(Tool):
    bookkeeping = True
    name = "add_journal_entry"
    group = "memory"
    description = (
        "Write a journal entry (importance 1-10). During reflection, an entry starting with "
        "'RULE:' becomes a behavioural rule you follow from then on."
    )
    parameters = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 3, "maxLength": 2000},
            "importance": {"type": "integer", "minimum": 1, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
        },
        "required": ["content"],
        "additionalProperties": False,
    }

    def run(self, ctx, content, importance=5, tags=None):
        result = _apply_character(
            ctx,
            JOURNAL,
            lambda j: journal_mod.add_entry(
                j, content, importance=importance, source=event_source(ctx), tags=tags
            ),
        )
        if result.success and ctx.context_type in ("reflection", "reflection_cont"):
            found = behaviour_rules.extract_rules([content])  # every RULE: line, any position
            if found:
                state = npc_state(ctx.npc)
                new, added, rejected = behaviour_rules.add_rules(state.behaviour_rules, found)
                if added:
                    state.set(BEHAVIOUR_RULES, new)
                result.content = dict(result.content, rules_added=added, rules_rejected=rejected)
        return result


@register_tool
class ReviewJournal(Tool):
    bookkeeping = True  # a look-up: the answer still comes in a single-action tick
    name = "review_journal"
    group = "memory"
    description = (
        "Read your journal, newest first (optionally filtered); offset skips that many "
        "matching entries, to read on."
    )
    parameters = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "offset": {"type": "integer", "minimum": 0},
            "min_importance": {"type": "integer", "minimum": 1, "maximum": 10},
            "query": {"type": "string"},
        },
        "additionalProperties": False,
    }
    cacheable = True

    def run(self, ctx, limit=10, min_importance=None, query=None, offset=0):
        return _result(
            journal_mod.review_journal(
                npc_state(ctx.npc).journal,
                limit=limit,
                min_importance=min_importance,
                query=query,
                offset=offset,
            )
        )
