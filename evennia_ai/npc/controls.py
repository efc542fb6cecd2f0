"""What staff change on an AI NPC, checked once and written once: running or paused, model,
persona, whether it hosts its room, its lines for when no model answers, operator prompt, tool
lists and categories, tool rules and the NPC's own budget (its routine and goods:
:mod:`evennia_ai.npc.world_controls`).

The admin commands (``aitools``, ``ainpc/budget``) and the dashboard call these same functions,
so a setting is validated by the same rules and described in the same words wherever it is
changed. Each change is one write of the Attribute it changes. Messages are plain text (the
commands escape them for Evennia's markup, the web pages for HTML); a refusal raises
:class:`ControlError` whose message is for the person who asked.

Who may call which is the caller's business (:mod:`evennia_ai.access`): running, model,
persona, host and lines are ``OPERATE``, every other change ``EDIT``, the reports ``VIEW``.
"""

from __future__ import annotations

from dataclasses import dataclass

from evennia_ai.engine import audience
from evennia_ai.engine.audience import LINE_KINDS, Line
from evennia_ai.npc import spending
from evennia_ai.npc_state import BUDGET, HOST, LINES, TOOL_ALLOW, TOOL_DENY, TOOL_RULES, npc_state
from evennia_ai.prompt.execution_pattern import ALL_TOOL_CATEGORIES
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.registry import TOOL_REGISTRY, passes_lock
from evennia_ai.tools.rules import (
    REQUIRES_PRIOR,
    ToolRule,
    parse_rules,
    render_tool_rules,
    rule_conflict,
)
from evennia_ai.utils import is_assistant, truncate

MAX_MODEL_NAME = 200  # characters of a model name (litellm's are far shorter)


class ControlError(ValueError):
    """A change staff asked for is refused; the message says why, in plain text."""


# -- running, model, persona, operator prompt ------------------------------------------------------
def pause(npc) -> str:
    """Stop ticking; what the NPC perceives stays queued."""
    if npc.ai.paused:
        raise ControlError(f"{npc.key} is already paused.")
    npc.ai.pause()
    return f"{npc.key} is paused; what it perceives stays queued."


def resume(npc) -> str:
    """Tick again and answer what was queued meanwhile."""
    if not npc.ai.paused:
        raise ControlError(f"{npc.key} is not paused.")
    npc.ai.resume()
    return f"{npc.key} resumes ({npc.ai.status()['queued_events']} queued event(s) to answer)."


def set_model(npc, text: str) -> str:
    """The NPC's own model (``default``, ``none`` or empty: the server default)."""
    model = str(text or "").strip()
    if model.lower() in ("default", "none"):
        model = ""
    if any(ch.isspace() for ch in model):
        raise ControlError(f"A model name has no spaces: {truncate(model, 80)!r}.")
    if len(model) > MAX_MODEL_NAME:
        raise ControlError(f"A model name is at most {MAX_MODEL_NAME} characters.")
    npc.ai.set_model(model)
    return (
        f"{npc.key} now uses {npc.ai.status()['model']}"
        + ("" if model else " (the server default)")
        + "."
    )


def set_persona(npc, text: str) -> str:
    """Who the NPC is and how it speaks (must not be empty)."""
    text = str(text or "").strip()
    if not text:
        raise ControlError("Missing persona text.")
    npc.ai.set_persona(text)
    return f"{npc.key}'s persona is set ({len(text)} characters)."


def set_operator_prompt(npc, text: str) -> str:
    """The operator's prompt, which overrides the NPC's own guidelines (empty clears it)."""
    text = str(text or "").strip()
    npc.ai.set_user_system_prompt(text)
    if text:
        return f"{npc.key}'s operator prompt is set ({len(text)} characters)."
    return f"{npc.key}'s operator prompt is cleared."


# -- the room's host ------------------------------------------------------------------------------
#: How staff say yes or no to a flag (any case).
YES_WORDS = ("yes", "on", "true")
NO_WORDS = ("no", "off", "false")


def flag_value(text: str, what: str) -> bool:
    """``text`` (yes/no, on/off, true/false, any case) as a flag for ``what``.

    Raises:
        ControlError: it is none of these words.
    """
    typed = str(text or "").strip().lower()
    if typed in YES_WORDS:
        return True
    if typed in NO_WORDS:
        return False
    shown = f"'{truncate(typed, 40)}'" if typed else "nothing"
    raise ControlError(f"{what} is yes or no (on or off, true or false), not {shown}.")


def other_hosts(npc) -> list:
    """The other AI NPCs in ``npc``'s room that are hosts, by id (the first answers first)."""
    location = npc.location
    if location is None:
        return []
    return sorted(
        (
            obj
            for obj in location.contents
            if obj is not npc and is_assistant(obj) and npc_state(obj).host
        ),
        key=lambda obj: obj.id,
    )


def host_text(npc, was: bool | None = None) -> str:
    """Whether ``npc`` is a host, and what that means where it is, in words (``was``: whether
    it was one before it was just set; None: it was not set)."""
    host = bool(npc.ai.host)
    room = npc.location.key if npc.location else None
    if not host:
        if room is None:
            return f"{npc.key} is {'no longer' if was else 'not'} a host."
        return (
            f"{npc.key} is {'no longer' if was else 'not'} the host of {room}: lines there that "
            "name no AI NPC go to the one the speaker talked with last, else to the room's "
            "host, else to one picked for that speaker."
        )
    now = " now" if was is False else ""
    if room is None:
        return (
            f"{npc.key} is{now} a host, in no room at the moment: in a room, the lines there "
            f"that name no AI NPC go to {npc.key} first."
        )
    text = (
        f"{npc.key} is{now} the host of {room}: lines there that name no AI NPC go to "
        f"{npc.key} first, unless the speaker was talking with another."
    )
    others = other_hosts(npc)
    if others:
        names = ", ".join(f"{other.key}(#{other.id})" for other in others)
        text += f" Also hosts there: {names}; the lowest #id goes first."
    return text


def set_host(npc, text: str) -> str:
    """Make ``npc`` the host of its room, or not (``yes``/``no``, ``on``/``off``,
    ``true``/``false``): the lines there that name no AI NPC go to a host first, unless the
    speaker was talking with another NPC (:mod:`evennia_ai.engine.floor`). The flag stays with
    the NPC: it hosts whichever room it is in."""
    host = flag_value(text, "The host flag")
    was = bool(npc.ai.host)
    if was != host:
        npc.ai.set(HOST, host)
    return host_text(npc, was=was)


# -- lines for when no model answers --------------------------------------------------------------
def line_kind(text: str) -> str:
    """One of :data:`~evennia_ai.engine.audience.LINE_KINDS` as staff type it (a unique
    prefix will do, any case)."""
    typed = str(text or "").strip().lower()
    matches = [kind for kind in LINE_KINDS if kind == typed] or [
        kind for kind in LINE_KINDS if typed and kind.startswith(typed)
    ]
    if len(matches) != 1:
        raise ControlError(
            f"'{truncate(typed, 40)}' is not a kind of line; the kinds: {', '.join(LINE_KINDS)}."
        )
    return matches[0]


def lines_of(npc) -> list[Line]:
    """Every kind of line of ``npc`` as it stands (its own, else the setting's)."""
    return [audience.line_of(npc, kind) for kind in LINE_KINDS]


def set_line(npc, kind: str, text: str) -> str:
    """Staff's own line of ``kind`` for ``npc`` (empty text: back to the setting's)."""
    kind = line_kind(kind)
    if not str(text or "").strip():
        return reset_line(npc, kind)
    try:
        line = audience.check_line(text)
    except ValueError as err:
        raise ControlError(str(err)) from None
    npc.ai.update(LINES, lambda lines: {**lines, kind: line})
    return f"{npc.key}'s {kind} line is set: {line}"


def reset_line(npc, kind: str | None = None) -> str:
    """Forget ``npc``'s own line of ``kind`` (None: every kind): the setting's is used."""
    kinds = LINE_KINDS if kind is None else (line_kind(kind),)
    own = npc.ai.lines or {}
    if not any(k in own for k in kinds):
        which = "lines" if kind is None else f"{kinds[0]} line"
        return f"{npc.key} has no {which} of its own: the settings' are used."
    npc.ai.set(LINES, {k: v for k, v in own.items() if k not in kinds})
    if kind is None:
        return f"{npc.key}'s own lines are removed: the settings' are used."
    return (
        f"{npc.key}'s {kinds[0]} line is the setting's again ({audience.LINE_SETTINGS[kinds[0]]})."
    )


def line_setter(kind: str):
    """``set_line`` for one kind, as the dashboard's controls call it: ``(npc, value)``."""

    def set_kind(npc, value: str) -> str:
        return set_line(npc, kind, value)

    return set_kind


# -- tools ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolRow:
    """One registered tool as it stands for one NPC."""

    name: str
    category: str
    verdict: str  # allowed | denied | not in allow list | category off | lock fails

    @property
    def allowed(self) -> bool:
        return self.verdict == "allowed"


def known_tools(names) -> list[str]:
    """``names`` as given, when every one is a registered tool.

    Raises:
        ControlError: naming the unknown ones.
    """
    load_builtin_tools()
    names = [str(name).strip() for name in names if str(name).strip()]
    if not names:
        raise ControlError("Name at least one tool.")
    unknown = [name for name in names if name not in TOOL_REGISTRY]
    if unknown:
        raise ControlError(
            f"Unknown tool(s): {', '.join(truncate(n, 64) for n in unknown)}. "
            "The NPC's tool list names them all."
        )
    return names


def split_names(text: str) -> list[str]:
    """Names separated by commas or spaces (``"look, say give"``)."""
    return [name for name in str(text or "").replace(",", " ").split() if name]


def tool_rows(npc) -> list[ToolRow]:
    """Every registered tool with what stands between it and ``npc``, in registry order."""
    load_builtin_tools()
    allowed = npc.ai.tool_allow
    denied = set(npc.ai.tool_deny or [])
    categories = npc.ai.execution_config.get("allowed_tool_categories")
    rows = []
    for tool in TOOL_REGISTRY.all():
        if tool.name in denied:
            verdict = "denied"
        elif allowed is not None and tool.name not in allowed:
            verdict = "not in allow list"
        elif categories is not None and tool.category not in categories:
            verdict = "category off"
        elif not passes_lock(npc, tool):
            verdict = "lock fails"
        else:
            verdict = "allowed"
        rows.append(ToolRow(tool.name, tool.category, verdict))
    return rows


def allow_tools(npc, names) -> str:
    """Take tools off the deny list (and onto the allow list, if there is one)."""
    names = known_tools(names)
    npc.ai.set(TOOL_DENY, [n for n in npc.ai.tool_deny or [] if n not in names])
    allowed = npc.ai.tool_allow
    if allowed is not None:
        npc.ai.set(TOOL_ALLOW, sorted(set(allowed) | set(names)))
    return (
        f"{npc.key} may use {', '.join(names)} again (if its context, category and lock "
        "allow it)."
    )


def deny_tools(npc, names) -> str:
    """Never offer these tools to the NPC."""
    names = known_tools(names)
    npc.ai.set(TOOL_DENY, sorted(set(npc.ai.tool_deny or []) | set(names)))
    return f"{npc.key} may no longer use {', '.join(names)}."


def only_tools(npc, names) -> str:
    """Offer these tools and no others (an allow list)."""
    names = sorted(set(known_tools(names)))
    npc.ai.set(TOOL_ALLOW, names)
    return (
        f"{npc.key} is offered only {', '.join(names)} (within its contexts, categories and "
        "locks)."
    )


def set_categories(npc, text: str) -> str:
    """The tool categories the NPC may use (``all`` removes the restriction)."""
    words = [w.upper() for w in split_names(text)]
    if not words:
        raise ControlError("Name the categories (" + ", ".join(ALL_TOOL_CATEGORIES) + ") or all.")
    if words == ["ALL"]:
        npc.ai.set_allowed_tool_categories(None)
        return f"{npc.key} may use tools of every category its contexts allow."
    try:
        npc.ai.set_allowed_tool_categories(words)
    except ValueError as err:
        raise ControlError(str(err)) from None
    kept = [c for c in ALL_TOOL_CATEGORIES if c in words]
    return f"{npc.key} may use tools of the categories {', '.join(kept)} only."


def reset_tools(npc) -> str:
    """Remove the allow list, the deny list and the category restriction (rules stay)."""
    npc.ai.set(TOOL_ALLOW, None)
    npc.ai.set(TOOL_DENY, [])
    npc.ai.set_allowed_tool_categories(None)
    return f"{npc.key}'s tool restrictions are removed."


# -- tool rules -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleRow:
    """One stored tool rule: its number, as typed, and what an operator should know."""

    number: int
    text: str
    note: str  # e.g. the tool is never offered ("" when nothing to say)
    error: str = ""  # why the stored rule is ignored ("" for a valid rule)


def stored_rule_text(data) -> str:
    """A stored rule as it was typed (``max_calls look 2``), whatever it holds."""
    if not isinstance(data, dict):
        return truncate(repr(data), 80)
    words = [data.get("type"), data.get("tool"), data.get("value")]
    return " ".join(str(word) for word in words if word not in (None, ""))


def unoffered(npc, name: str) -> str | None:
    """Why the NPC is never offered tool ``name`` (unknown, denied, off its allow list), or None."""
    load_builtin_tools()
    allowed = npc.ai.tool_allow
    if name not in TOOL_REGISTRY:
        return f"`{name}` is no registered tool now"
    if name in (npc.ai.tool_deny or []) or (allowed is not None and name not in allowed):
        return f"`{name}` is not offered to {npc.key} (its tool lists)"
    return None


def rule_notes(npc, rule: ToolRule) -> str:
    """What an operator should know about ``rule`` on ``npc``, or "".

    A rule on a tool the NPC is never offered has no effect, except a ``requires_prior`` whose
    first tool is never offered: that one keeps its tool from running.
    """
    notes = [why for why in (unoffered(npc, name) for name in rule.tools) if why]
    if rule.type == REQUIRES_PRIOR and unoffered(npc, rule.value):
        notes.append(f"so `{rule.tool}` cannot run")
    return "; ".join(notes)


def rule_rows(npc) -> list[RuleRow]:
    """The NPC's stored tool rules, numbered from 1 (a broken one says it is ignored)."""
    rows = []
    for number, data in enumerate(npc.ai.tool_rules or [], start=1):
        try:
            rows.append(
                RuleRow(number, stored_rule_text(data), rule_notes(npc, ToolRule.from_dict(data)))
            )
        except ValueError as err:
            rows.append(RuleRow(number, stored_rule_text(data), "", str(err)))
    return rows


def rendered_rules(npc) -> str:
    """The "# Tool Execution Rules" section of the NPC's system prompt ("" without rules)."""
    return render_tool_rules(npc.ai.tool_rules or []) or ""


def add_rule(npc, text: str) -> str:
    """Add the rule ``text`` (``max_calls look 2``) after validating it against the others.

    Raises:
        ControlError: an unknown type or tool, a wrong form, a duplicate or a loop.
    """
    try:
        rule = ToolRule.parse(text)
    except ValueError as err:
        raise ControlError(str(err)) from None
    known_tools(rule.tools)
    stored = npc.ai.tool_rules or []
    problem = rule_conflict(parse_rules(stored)[0], rule)
    if problem:
        raise ControlError(problem)
    npc.ai.set(TOOL_RULES, stored + [rule.to_dict()])
    notes = rule_notes(npc, rule)
    return f"{npc.key} has a new tool rule (#{len(stored) + 1}): {rule.describe()}." + (
        f" Note: {notes}." if notes else ""
    )


def remove_rule(npc, which: str) -> str:
    """Remove rule number ``which`` (from 1, as :func:`rule_rows` numbers them) or ``all``.

    Raises:
        ControlError: no rules, or a number that is not one of them.
    """
    stored = npc.ai.tool_rules or []
    if not stored:
        raise ControlError(f"{npc.key} has no tool rules.")
    which = str(which or "").strip()
    if which.lower() == "all":
        npc.ai.set(TOOL_RULES, [])
        return f"{npc.key}'s {len(stored)} tool rule(s) are removed."
    if not which:
        raise ControlError("Missing rule number (or all).")
    try:
        number = int(which.lstrip("#"))
    except ValueError:
        raise ControlError(f"The rule number must be a whole number, not {which!r}.") from None
    if number < 1:
        raise ControlError("The rule number must be at least 1.")
    if number > len(stored):
        raise ControlError(f"The rule number must be at most {len(stored)}.")
    removed = stored[number - 1]
    npc.ai.set(TOOL_RULES, stored[: number - 1] + stored[number:])
    return f"{npc.key}'s tool rule #{number} is removed: {stored_rule_text(removed)}."


# -- budget ---------------------------------------------------------------------------------------
def parse_budget(text: str) -> dict:
    """``tokens=<count> cost=<dollars>`` (either, in any order) or ``none`` (both) as the
    changes to an NPC's own budget: ``{"tokens": 20000}``; None clears a limit.

    Raises:
        ControlError: a word that is not ``tokens=`` or ``cost=``, or a bad number.
    """
    words = str(text or "").split()
    if not words:
        raise ControlError("Give tokens=<count> and/or cost=<dollars>, or none.")
    if [word.lower() for word in words] in (["none"], ["off"], ["clear"]):
        return dict.fromkeys(spending.MAX_OWN_LIMITS)
    changes = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.strip().lower()
        if not sep or not value.strip():
            raise ControlError(
                f"'{truncate(word, 60)}' is not tokens=<count> or cost=<dollars> (or give none)."
            )
        try:
            changes[key] = spending.parse_own_limit(key, value)
        except ValueError as err:
            raise ControlError(str(err)) from None
    return changes


def set_budget(npc, text: str) -> dict:
    """Apply :func:`parse_budget` of ``text`` to the NPC's own budget (one write); the new
    budget (``{}`` when it has none)."""
    budget = {**(npc.ai.budget or {}), **parse_budget(text)}
    budget = {key: value for key, value in budget.items() if value is not None}
    npc.ai.set(BUDGET, budget)
    return budget
