"""Admin commands over an AI NPC's cognitive workspace: goals, projects, session memory,
journal and learned behavioural rules.

Every command is thin glue over the pure functions of :mod:`evennia_ai.workspace` (the same
ones the model's tools call): it reads a plain copy of the state, applies one operation and,
when it succeeded, writes the new value once. A failed operation's message (and suggestion)
is shown to the caller as is.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from evennia_ai.commands.base import CommandError, SwitchedCommand, parse_switch, partition_bar
from evennia_ai.formatting import timestamp
from evennia_ai.npc_state import BEHAVIOUR_RULES, JOURNAL, PROJECTS, SESSION_MEMORY
from evennia_ai.workspace import behaviour_rules as rules_mod
from evennia_ai.workspace import goals as goals_mod
from evennia_ai.workspace import journal as journal_mod
from evennia_ai.workspace import projects as projects_mod
from evennia_ai.workspace import session_memory as memory_mod

# How an entry the operator writes is trusted (the operator tells the NPC directly).
OPERATOR_SOURCE = "told_directly"
DEFAULT_JOURNAL_COUNT = 10


# -- shared helpers (also used by evennia_ai.commands.memory) -------------------------------------
# The workspace's messages are written for the NPC's model and name its tools; an operator reads
# them with the command that does the same.
TOOL_COMMANDS = {
    "create_project": "aiproject/create",
    "swap_project": "aiproject/activate",
    "update_project": "aiproject/update",
}
_TOOL_NAMES = re.compile(r"\b(" + "|".join(TOOL_COMMANDS) + r")\b")


def for_operator(text: str) -> str:
    """``text`` with the NPC's tool names replaced by the admin commands doing the same."""
    return _TOOL_NAMES.sub(lambda match: TOOL_COMMANDS[match.group(1)], text)


def checked(op) -> Any:
    """``op`` when it succeeded, else a :class:`CommandError` with its message and suggestion."""
    if op.success:
        return op
    text = op.message
    if getattr(op, "suggestion", None):
        text += f" {op.suggestion}"
    raise CommandError(for_operator(text))


def apply_character(npc, key: str, change: Callable[[Any], tuple[Any, Any]]):
    """Run ``change(plain) -> (new, result)`` on a character-held key; write once on success.

    Returns:
        The successful result (a failure raises :class:`CommandError`).
    """
    new, op = change(npc.ai.get(key))
    checked(op)
    npc.ai.set(key, new)
    return op


def apply_goals(npc, change: Callable[[list], tuple[list, Any]]):
    """As :func:`apply_character`, for the goals (held on the NPC's script)."""
    new, op = change(npc.ai.goals)
    checked(op)
    npc.ai.update_goals(lambda _old: new)
    return op


def parse_assignments(text: str, keys: Iterable[str], what: str = "field") -> dict[str, str]:
    """``"status=completed progress=100"`` -> ``{"status": "completed", "progress": "100"}``.

    Values run to the next ``key=`` (so they may hold spaces); keys are matched in any case.

    Raises:
        CommandError: When ``text`` does not start with one of ``keys`` followed by ``=``.
    """
    keys = tuple(keys)
    pattern = re.compile(r"(?:^|\s)(" + "|".join(map(re.escape, keys)) + r")\s*=", re.I)
    matches = list(pattern.finditer(text or ""))
    if not matches or (text or "")[: matches[0].start()].strip():
        raise CommandError(f"Give {what}=value pairs; {what}s: {', '.join(keys)}.")
    out = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        value = text[match.end() : end].strip()
        if not value:
            raise CommandError(f"No value given for {match.group(1).lower()}.")
        out[match.group(1).lower()] = value
    return out


def current_tick(npc) -> int:
    """The NPC's tick counter (0 without a script), for new goal ids."""
    script = npc.ai.script
    return int(getattr(script, "tick_count", 0) or 0) if script is not None else 0


# -- goals -----------------------------------------------------------------------------------------
_UNDER = re.compile(r"\s+under\s+(goal_\d+_\d+)\s*$", re.I)
_PRIORITY = re.compile(r"\s+priority\s+(\S+)\s*$", re.I)
_AUDIENCE = re.compile(r"\s+audience\s+(\S+)\s*$", re.I)


class CmdAIGoal(SwitchedCommand):
    """
    Show and edit an AI NPC's goals.

    Usage:
      aigoal <npc>
      aigoal/add <npc> = <description> [under <goal id>]
                         [priority <high||medium||low>] [audience <yes||no>]
      aigoal/update <npc> = <goal id> <field>=<value> [<field>=<value> ...]
      aigoal/decompose <npc> = <goal id>: <subtask>; <subtask>; <subtask>[; ...]
      aigoal/prune <npc>

    Switches:
      add       - add a goal; "under <goal id>" makes it a subtask of that goal.
                  "audience no" lets the NPC work on it with no player around
                  (autonomous ticks cost tokens; by default they wait for one).
      update    - change status (active, completed, abandoned), progress (0-100),
                  priority (high, medium, low), description, or audience (yes, no:
                  whether a player must be within earshot; subtasks follow).
                  A parent's progress is computed from its subtasks.
      decompose - break an active goal into 3 to 7 subtasks, separated by ';'.
      prune     - drop every finished (completed or abandoned) goal tree.

    Goals are never deleted one by one: abandon them with /update, then /prune.
    Without a switch, shows the goal tree.

    Examples:
      aigoal Innkeeper
      aigoal/add Innkeeper = Build a tavern priority high
      aigoal/add Innkeeper = Lay the foundation under goal_12_0
      aigoal/update Innkeeper = goal_12_0 status=completed
      aigoal/update Innkeeper = goal_12_1 progress=40 description=Raise the walls
      aigoal/update Innkeeper = goal_12_0 audience=no
      aigoal/decompose Innkeeper = goal_12_0: Lay foundation; Build walls; Add roof
    """

    key = "aigoal"
    aliases = ["aigoals"]
    switch_options = ("add", "update", "decompose", "prune")

    def do_default(self):
        npc = self.find_npc(self.args)
        text = goals_mod.render_goals(npc.ai.goals, max_goals=goals_mod.MAX_GOALS + 1)
        self.msg(f"|wGoals of {npc.key}|n\n{text}" if text else f"{npc.key} has no goals.")

    def do_add(self):
        npc, text = self.npc_and_rhs("<description>")
        priority, parent, needs_audience = "medium", None, True
        for _ in range(3):  # "under", "priority" and "audience" in any order, at the end
            match = _PRIORITY.search(text)
            if match:
                priority, text = match.group(1), text[: match.start()]
                continue
            match = _AUDIENCE.search(text)
            if match:
                needs_audience = parse_switch(match.group(1), "audience", "yes or no")
                text = text[: match.start()]
                continue
            match = _UNDER.search(text)
            if match:
                parent, text = match.group(1), text[: match.start()]
        op = apply_goals(
            npc,
            lambda goals: goals_mod.add_goal(
                goals,
                text,
                tick=current_tick(npc),
                priority=priority,
                parent_id=parent,
                needs_audience=needs_audience,
            ),
        )
        self.msg(op.message)

    def do_update(self):
        npc, text = self.npc_and_rhs("<goal id> <field>=<value>")
        goal_id, _, rest = text.partition(" ")
        fields = parse_assignments(
            rest.strip(), ("status", "progress", "priority", "description", "audience")
        )
        messages = []
        if "audience" in fields:
            needs = parse_switch(fields.pop("audience"), "audience", "yes or no")
            op = apply_goals(npc, lambda goals: goals_mod.set_needs_audience(goals, goal_id, needs))
            messages.append(op.message)
        if fields:
            op = apply_goals(npc, lambda goals: goals_mod.update_goal(goals, goal_id, **fields))
            messages.append(op.message)
        self.msg("\n".join(messages))

    def do_decompose(self):
        npc, text = self.npc_and_rhs("<goal id>: <subtask>; <subtask>; ...")
        goal_id, sep, rest = text.partition(":")
        subtasks = [part.strip() for part in rest.split(";") if part.strip()]
        if not sep or not subtasks:
            raise CommandError("Give the goal id, a colon, then the subtasks separated by ';'.")
        op = apply_goals(
            npc,
            lambda goals: goals_mod.apply_decomposition(
                goals, goal_id.strip(), subtasks, tick=current_tick(npc)
            ),
        )
        self.msg(op.message)

    def do_prune(self):
        npc = self.find_npc(self.lhs)
        op = apply_goals(npc, lambda goals: goals_mod.prune_goals(goals, keep=0))
        self.msg(op.message)


# -- projects --------------------------------------------------------------------------------------
class CmdAIProject(SwitchedCommand):
    """
    Show and edit an AI NPC's projects (pageable context slots).

    Usage:
      aiproject <npc>
      aiproject/show <npc> = <project>
      aiproject/create <npc> = <project>: <summary> [|| <context>]
      aiproject/activate <npc> = <project>
      aiproject/update <npc> = <field>=<value> [<field>=<value> ...]
      aiproject/complete <npc>

    Switches:
      show     - show one project in full (summary, status, context).
      create   - create a paused project; text after '||' is its starting context.
      activate - make a project the active one (the current one is paused).
      update   - change the ACTIVE project's summary, context or status
                 (active, paused, completed).
      complete - mark the active project completed (no project is active after).

    Without a switch, lists the projects, the active one first.

    Examples:
      aiproject Innkeeper
      aiproject/create Innkeeper = build_tavern: Build a tavern || Need timber.
      aiproject/activate Innkeeper = build_tavern
      aiproject/update Innkeeper = context=Walls are up; roof next.
      aiproject/complete Innkeeper
    """

    key = "aiproject"
    aliases = ["aiprojects"]
    switch_options = ("show", "create", "activate", "update", "complete")

    def do_default(self):
        npc = self.find_npc(self.args)
        rows = projects_mod.list_projects(npc.ai.projects)
        if not rows:
            self.msg(f"{npc.key} has no projects.")
            return
        lines = [f"|wProjects of {npc.key}|n"]
        for row in rows:
            mark = "*" if row["active"] else " "
            lines.append(f"{mark} {row['key']} [{row['status']}] {row['summary']}")
        self.msg("\n".join(lines))

    def do_show(self):
        npc, name = self.npc_and_rhs("<project>")
        projects = npc.ai.projects
        key = projects_mod.normalise_key(name)
        slot = (projects.get("slots") or {}).get(key)
        if slot is None:
            known = ", ".join(sorted(projects.get("slots") or {})) or "none"
            raise CommandError(f"{npc.key} has no project '{name}'. Projects: {known}.")
        active = " (active)" if projects.get("active") == key else ""
        self.msg(
            f"|wProject {key}|n of {npc.key}{active}\n"
            f"Status: {slot.get('status')}\nSummary: {slot.get('summary', '')}\n"
            f"Created: {timestamp(slot.get('created_at'))}  "
            f"Last active: {timestamp(slot.get('last_active'))}\n"
            f"Context:\n{slot.get('context') or '(none)'}"
        )

    def do_create(self):
        npc, text = self.npc_and_rhs("<project>: <summary>")
        key, sep, rest = text.partition(":")
        if not sep:
            raise CommandError("Give the project key, a colon, then its summary.")
        summary, _, context = partition_bar(rest)
        op = apply_character(
            npc,
            PROJECTS,
            lambda p: projects_mod.create_project(p, key.strip(), summary.strip(), context.strip()),
        )
        self.msg(op.message)

    def do_activate(self):
        npc, key = self.npc_and_rhs("<project>")
        op = apply_character(npc, PROJECTS, lambda p: projects_mod.swap_project(p, key))
        self.msg(op.message)

    def do_update(self):
        npc, text = self.npc_and_rhs("<field>=<value>")
        fields = parse_assignments(text, ("summary", "context", "status"))
        op = apply_character(npc, PROJECTS, lambda p: projects_mod.update_project(p, **fields))
        self.msg(op.message)

    def do_complete(self):
        npc = self.find_npc(self.lhs)
        op = apply_character(
            npc, PROJECTS, lambda p: projects_mod.update_project(p, status="completed")
        )
        self.msg(op.message)


# -- session memory --------------------------------------------------------------------------------
def session_section(word: str) -> str:
    """The session-memory list a word names (``fact``, ``facts``, ``pattern``, ``tasks``...)."""
    word = (word or "").strip().lower()
    section = memory_mod.KINDS.get(word) or memory_mod.KINDS.get(word.rstrip("s"))
    if section is None:
        raise CommandError(f"Unknown session memory kind '{word}'. Use fact, pattern or task.")
    return section


class CmdAISession(SwitchedCommand):
    """
    Show and edit an AI NPC's session memory: key facts, learned patterns and
    completed tasks.

    Usage:
      aisession <npc>
      aisession/set <npc> = <fact||pattern||task>=<text>
      aisession/clear <npc> [= <facts||patterns||tasks>]
      aisession/compact <npc>

    Switches:
      set     - remember a fact, a pattern or a completed task. Session memory is
                about the world, players and events: first-person text is refused.
      clear   - forget everything, or only one kind.
      compact - drop duplicates and trim each list to its cap.

    Examples:
      aisession Innkeeper
      aisession/set Innkeeper = fact=Alice prefers formal address
      aisession/set Innkeeper = task=Served the harvest feast
      aisession/clear Innkeeper = patterns
    """

    key = "aisession"
    switch_options = ("set", "clear", "compact")

    def do_default(self):
        npc = self.find_npc(self.args)
        text = memory_mod.render_session_memory(npc.ai.session_memory)
        self.msg(
            text.replace("## Session memory", f"|wSession memory of {npc.key}|n", 1)
            if text
            else f"{npc.key}'s session memory is empty."
        )

    def do_set(self):
        npc, text = self.npc_and_rhs("<kind>=<text>")
        kind, sep, content = text.partition("=")
        if not sep:
            raise CommandError("Give <fact||pattern||task>=<text>.")
        section = session_section(kind)
        names = [npc.key] + list(npc.aliases.all())
        op = apply_character(
            npc,
            SESSION_MEMORY,
            lambda mem: memory_mod.add_session_memory(mem, section, content, self_names=names),
        )
        self.msg(op.message)

    def do_clear(self):
        npc = self.find_npc(self.lhs)
        if self.rhs:
            section = session_section(self.rhs)

            def clear(mem):
                mem = dict(mem or memory_mod.empty_session_memory())
                mem[section] = []
                return mem

            npc.ai.update(SESSION_MEMORY, clear)
            self.msg(f"Cleared the {section.replace('_', ' ')} of {npc.key}'s session memory.")
            return
        npc.ai.set(SESSION_MEMORY, memory_mod.empty_session_memory())
        self.msg(f"Cleared {npc.key}'s session memory.")

    def do_compact(self):
        npc = self.find_npc(self.lhs)
        op = apply_character(npc, SESSION_MEMORY, memory_mod.compact_session_memory)
        self.msg(op.message)


# -- journal ---------------------------------------------------------------------------------------
_IMPORTANCE = re.compile(r"^(\d{1,2})\s*:\s+(.*)$", re.S)


class CmdAIJournal(SwitchedCommand):
    """
    Read and write an AI NPC's journal.

    Usage:
      aijournal <npc> [<count>]
      aijournal/search <npc> = <words>
      aijournal/add <npc> = [<importance 1-10>:] <text>

    Switches:
      search - entries whose text or tags hold every word, newest first.
      add    - write an entry (importance 5 unless given); the operator's entries
               are trusted as told directly.

    Without a switch, shows the newest entries (10 unless a count is given).

    Examples:
      aijournal Innkeeper
      aijournal Innkeeper 25
      aijournal/search Innkeeper = well poison
      aijournal/add Innkeeper = 8: The well was poisoned by the miller.
    """

    key = "aijournal"
    switch_options = ("search", "add")

    def do_default(self):
        name, count = self.args, DEFAULT_JOURNAL_COUNT
        head, _, last = self.args.rpartition(" ")
        if head.strip() and last.isdigit():
            name = head
            count = self.parse_int(last, "The count", 1, journal_mod.MAX_REVIEW)
        npc = self.find_npc(name)
        self.show(npc, journal_mod.review_journal(npc.ai.journal, limit=count))

    def do_search(self):
        npc, words = self.npc_and_rhs("<words>")
        self.show(
            npc,
            journal_mod.review_journal(npc.ai.journal, limit=journal_mod.MAX_REVIEW, query=words),
        )

    def show(self, npc, op):
        checked(op)
        if not op.data.get("entries"):
            self.msg(
                f"{npc.key}'s journal has no matching entries."
                if self.switch()
                else f"{npc.key}'s journal is empty."
            )
            return
        self.msg(f"|wJournal of {npc.key}|n: {op.message}\n{op.data['text']}")

    def do_add(self):
        npc, text = self.npc_and_rhs("<text>")
        importance: Any = 5
        match = _IMPORTANCE.match(text)
        if match:
            importance, text = match.group(1), match.group(2)
        op = apply_character(
            npc,
            JOURNAL,
            lambda journal: journal_mod.add_entry(
                journal, text, importance=importance, source=OPERATOR_SOURCE
            ),
        )
        self.msg(op.message)


# -- learned behavioural rules ---------------------------------------------------------------------
class CmdAIRule(SwitchedCommand):
    """
    Show and edit the behavioural rules an AI NPC learned by reflecting.

    Usage:
      airule <npc>
      airule/add <npc> = <rule>
      airule/delete <npc> = <number or exact text>

    Switches:
      add    - add a rule. Rules that would set aside instructions, widen
               permissions or skip confirmations are refused.
      delete - remove a rule by its number in the list, or by its text.

    The rules appear in the NPC's system prompt under [LEARNED BEHAVIOURAL RULES],
    below its own guidelines and above the operator's prompt, which always wins.

    Examples:
      airule Innkeeper
      airule/add Innkeeper = Greet regulars by name.
      airule/delete Innkeeper = 2
    """

    key = "airule"
    aliases = ["airules"]
    switch_options = ("add", "delete")

    def do_default(self):
        npc = self.find_npc(self.args)
        rules = [r for r in npc.ai.behaviour_rules or [] if isinstance(r, str)]
        if not rules:
            self.msg(f"{npc.key} has learned no behavioural rules.")
            return
        lines = [f"|wLearned rules of {npc.key}|n"]
        lines += [f"{number}. {rule}" for number, rule in enumerate(rules, 1)]
        self.msg("\n".join(lines))

    def do_add(self):
        npc, text = self.npc_and_rhs("<rule>")
        new, added, rejected = rules_mod.add_rules(npc.ai.behaviour_rules, [text])
        if rejected:
            raise CommandError(f"Rule refused: {rejected[0]['reason']}.")
        npc.ai.set(BEHAVIOUR_RULES, new)
        self.msg(f"{npc.key} now follows the rule: {added[0]}")

    def do_delete(self):
        npc, text = self.npc_and_rhs("<number or text>")
        which: Any = int(text) if text.isdigit() else text
        op = apply_character(
            npc, BEHAVIOUR_RULES, lambda rules: rules_mod.remove_rule(rules, which)
        )
        self.msg(op.message)


COMMANDS = [CmdAIGoal, CmdAIProject, CmdAISession, CmdAIJournal, CmdAIRule]
