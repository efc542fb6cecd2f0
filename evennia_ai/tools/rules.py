"""Tool rules: constraints on how an NPC calls its tools within one tick.

Pure module. The rule types (those of Letta's tool rules; docs/commands.md, ``aitools``):

- ``exit_loop``: the turn ends after this tool runs, whatever its category.
- ``continue_loop``: after this tool runs the model is called again, even if the tool is
  TERMINAL or the execution pattern would stop there; the tick's iteration limit still
  applies. When a tool has both, ``exit_loop`` wins.
- ``max_calls``: the tool may run at most ``value`` times per tick (refused calls do not count;
  calls that ran and failed do).
- ``requires_prior``: the tool may run only after the tool named in ``value`` ran
  successfully this tick.
- ``start_constraint``: the first tool call of the tick must be this tool (with several start
  constraints, any one of them).

Rules are stored as plain dicts on the NPC (:meth:`ToolRule.to_dict`), rendered into the
system prompt by :func:`render_tool_rules`, and enforced by the ReAct loop through a
:class:`ToolRuleState` made fresh for each tick. That one state counts every call of the tick:
the calls of a ``delegate_task`` helper count with its parent's (``max_calls give 1`` is one
``give`` for the two together), and a call parked for an operator's approval counts as the
call of the tick that asked for it (:meth:`ToolRuleState.snapshot` is stored with it, and the
approval checks the rules again against that snapshot, :meth:`ToolRuleState.restore`). Operators list, add and remove them with
``aitools/rules``, ``aitools/addrule`` and ``aitools/delrule`` (typed as :data:`RULE_FORMS`
says, read by :meth:`ToolRule.parse`, checked by :func:`rule_conflict`).

Rules only ever restrict: they refuse calls or end the turn early, and ``continue_loop`` asks
for another model call within the tick's iteration limit. No rule offers a tool the NPC's
filter, categories, locks or lists leave out, or lets a call skip its confirmation.

Example:
    rules = [ToolRule.start_constraint("look"), ToolRule.exit_loop("say")]
    state = ToolRuleState(rules)
    state.check("say")          # "Rule: call `look` first, before any other tool."
    state.record("look")
    state.after_call("say")     # "exit"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

EXIT_LOOP = "exit_loop"
CONTINUE_LOOP = "continue_loop"
MAX_CALLS = "max_calls"
REQUIRES_PRIOR = "requires_prior"
START_CONSTRAINT = "start_constraint"

RULE_TYPES = (START_CONSTRAINT, EXIT_LOOP, CONTINUE_LOOP, MAX_CALLS, REQUIRES_PRIOR)
"""Every rule type, in the order :func:`render_tool_rules` lists them."""

RULE_FORMS = {
    START_CONSTRAINT: "start_constraint <tool>",
    EXIT_LOOP: "exit_loop <tool>",
    CONTINUE_LOOP: "continue_loop <tool>",
    MAX_CALLS: "max_calls <tool> <count>",
    REQUIRES_PRIOR: "requires_prior <tool> <tool that must succeed first>",
}
"""How an operator types each rule type (:meth:`ToolRule.parse`)."""

EXIT = "exit"
CONTINUE = "continue"


@dataclass(frozen=True)
class ToolRule:
    """One rule about one tool. Build with the class methods or :meth:`from_dict`.

    Attributes:
        type: One of :data:`RULE_TYPES`.
        tool: The tool the rule is about.
        value: ``max_calls``: the number of calls; ``requires_prior``: the tool that must come
            first; None for the other types.
    """

    type: str
    tool: str
    value: int | str | None = None

    @classmethod
    def exit_loop(cls, tool: str) -> "ToolRule":
        """The turn ends after ``tool``."""
        return cls.from_dict({"type": EXIT_LOOP, "tool": tool})

    @classmethod
    def continue_loop(cls, tool: str) -> "ToolRule":
        """The model is called again after ``tool``."""
        return cls.from_dict({"type": CONTINUE_LOOP, "tool": tool})

    @classmethod
    def max_calls(cls, tool: str, n: int) -> "ToolRule":
        """``tool`` runs at most ``n`` times per tick."""
        return cls.from_dict({"type": MAX_CALLS, "tool": tool, "value": n})

    @classmethod
    def requires_prior(cls, tool: str, prior: str) -> "ToolRule":
        """``tool`` runs only after ``prior`` ran successfully this tick."""
        return cls.from_dict({"type": REQUIRES_PRIOR, "tool": tool, "value": prior})

    @classmethod
    def start_constraint(cls, tool: str) -> "ToolRule":
        """``tool`` must be the first call of the tick."""
        return cls.from_dict({"type": START_CONSTRAINT, "tool": tool})

    def to_dict(self) -> dict:
        """Plain data for an Attribute: ``{"type", "tool", "value"}``."""
        return {"type": self.type, "tool": self.tool, "value": self.value}

    @classmethod
    def from_dict(cls, data: Mapping) -> "ToolRule":
        """Build a rule from a dict, validating it.

        ``max_calls`` takes a whole number >= 1 (a string of digits is accepted, as typed by an
        operator); ``requires_prior`` the name of another tool; other types ignore ``value``.
        Unknown keys are ignored.

        Raises:
            ValueError: Saying what is wrong and what is expected.
        """
        if not isinstance(data, Mapping):
            raise ValueError(
                f"A tool rule must be a mapping like {{'type': 'max_calls', 'tool': 'say', "
                f"'value': 2}}, not {type(data).__name__}."
            )
        rtype, tool, value = data.get("type"), data.get("tool"), data.get("value")
        if rtype not in RULE_TYPES:
            raise ValueError(
                f"Unknown tool rule type {rtype!r}; use one of: {', '.join(RULE_TYPES)}."
            )
        if not isinstance(tool, str) or not tool.strip():
            raise ValueError(f"A {rtype} rule needs the name of its tool in 'tool'.")
        tool = tool.strip()
        if rtype == MAX_CALLS:
            value = _call_count(value)
        elif rtype == REQUIRES_PRIOR:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"A requires_prior rule for `{tool}` needs, in 'value', the name of the tool "
                    "that must be called first."
                )
            value = value.strip()
            if value == tool:
                raise ValueError(f"`{tool}` cannot require itself to be called first.")
        else:
            value = None
        return cls(rtype, tool, value)

    @classmethod
    def parse(cls, text: str) -> "ToolRule":
        """Build a rule from the words an operator types: ``max_calls look 2`` (see
        :data:`RULE_FORMS`; the type is case-insensitive).

        Raises:
            ValueError: Saying what is wrong and showing the expected form.
        """
        words = str(text or "").split()
        rtype = words[0].lower() if words else ""
        if rtype not in RULE_FORMS:
            forms = "; ".join(RULE_FORMS.values())
            shown = f"Unknown tool rule type {words[0]!r}. " if words else "Give a rule. "
            raise ValueError(f"{shown}Rules are: {forms}.")
        wanted = 3 if rtype in (MAX_CALLS, REQUIRES_PRIOR) else 2  # type, tool[, value]
        if len(words) != wanted:
            raise ValueError(f"A {rtype} rule reads: {RULE_FORMS[rtype]}.")
        value = words[2] if wanted == 3 else None
        return cls.from_dict({"type": rtype, "tool": words[1], "value": value})

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools the rule names: its own, and for ``requires_prior`` the one before it."""
        return (self.tool, self.value) if self.type == REQUIRES_PRIOR else (self.tool,)

    def describe(self) -> str:
        """The rule as one line of the system prompt's rules section."""
        if self.type == START_CONSTRAINT:
            return f"Call `{self.tool}` first before any other tools"
        if self.type == EXIT_LOOP:
            return f"The conversation will end after calling `{self.tool}`"
        if self.type == CONTINUE_LOOP:
            return f"The conversation will be continued after calling `{self.tool}`"
        if self.type == MAX_CALLS:
            return f"Call `{self.tool}` at most {self.value} {_times(self.value)}"
        return f"Call `{self.tool}` only after calling `{self.value}`"


def _times(count: int) -> str:
    return "time" if count == 1 else "times"


def _call_count(value) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"A max_calls rule needs, in 'value', a whole number of calls >= 1, not {value!r}."
        )
    return value


def rule_conflict(rules: Iterable[ToolRule], new: ToolRule) -> str | None:
    """Why ``new`` should not join ``rules``, or None when it may.

    Refused: the same rule again; a second ``max_calls`` for one tool (say which limit holds:
    remove the old one first); a ``requires_prior`` that closes a circle (``give`` after
    ``look`` and ``look`` after ``give``: neither could ever run).
    """
    rules = list(rules)
    if new in rules:
        return f"That rule is there already: {new.describe()}."
    if new.type == MAX_CALLS:
        for rule in rules:
            if rule.type == MAX_CALLS and rule.tool == new.tool:
                return (
                    f"`{new.tool}` is already limited: {rule.describe()}. Remove that rule "
                    "first to set another count."
                )
    if new.type == REQUIRES_PRIOR:
        after = {}
        for rule in rules:
            if rule.type == REQUIRES_PRIOR:
                after.setdefault(rule.tool, set()).add(rule.value)
        # new.tool waits on new.value: a circle if new.value already waits (maybe through
        # others) on new.tool.
        seen, waiting = set(), [new.value]
        while waiting:
            tool = waiting.pop()
            if tool == new.tool:
                return (
                    f"`{new.value}` already has to wait for `{new.tool}`: with this rule neither "
                    "could ever run."
                )
            if tool not in seen:
                seen.add(tool)
                waiting.extend(after.get(tool, ()))
    return None


def parse_rules(data: Iterable[Mapping] | None) -> tuple[list[ToolRule], list[str]]:
    """Rules from stored dicts, skipping bad ones.

    Returns:
        ``(rules, errors)``: the valid rules, and one message per dict that was skipped.
    """
    rules, errors = [], []
    for index, item in enumerate(data or ()):
        try:
            rules.append(item if isinstance(item, ToolRule) else ToolRule.from_dict(item))
        except ValueError as err:
            errors.append(f"rule {index + 1}: {err}")
    return rules, errors


def render_tool_rules(rules: Iterable[ToolRule | Mapping] | None) -> str:
    """The system prompt's "# Tool Execution Rules" section, or "" without rules.

    Rules are listed by type (start constraints first, then exit, continue, max calls and
    requires-prior rules), in their given order within a type; repeated rules appear once.
    Stored dicts are accepted too (invalid ones are left out).
    """
    unique = list(dict.fromkeys(parse_rules(rules)[0]))
    unique.sort(key=lambda rule: RULE_TYPES.index(rule.type))
    if not unique:
        return ""
    return "# Tool Execution Rules\n\n" + "\n".join(f"- {rule.describe()}" for rule in unique)


class ToolRuleState:
    """Enforces tool rules over the calls of one tick.

    Ask :meth:`check` before running a call; if it returns a message, refuse the call with it.
    Then :meth:`begin` the call, run it, :meth:`finish` it with its success (or :meth:`record`
    both at once), and ask :meth:`after_call` whether the loop must end or go on. A call counts
    toward ``max_calls`` and the start constraint from :meth:`begin`, so a call still running
    (a helper's ``delegate_task``) is already the tick's first call.

    Args:
        rules: The NPC's rules.
        available: Names of the tools offered this tick, if known. A start constraint on a tool
            that is not offered is dropped (it could never be met and would block every call).
    """

    def __init__(self, rules: Iterable[ToolRule] = (), available: Iterable[str] | None = None):
        self.rules = list(rules or ())
        self.available = set(available) if available is not None else None
        self.calls: list[str] = []
        self.succeeded: set[str] = set()
        starts = [r.tool for r in self.rules if r.type == START_CONSTRAINT]
        if self.available is not None:
            starts = [name for name in starts if name in self.available]
        self.start_tools = list(dict.fromkeys(starts))

    @classmethod
    def restore(
        cls,
        rules: Iterable[ToolRule],
        snapshot: Mapping | None,
        available: Iterable[str] | None = None,
    ) -> "ToolRuleState":
        """A state for ``rules`` that has seen the calls of ``snapshot`` (:meth:`snapshot`).

        Used to check a parked call again when it is approved: the rules as they are now, the
        calls its tick had made when it asked. Names that are not strings are skipped.
        """
        state = cls(rules, available)
        snapshot = snapshot if isinstance(snapshot, Mapping) else {}
        calls, succeeded = snapshot.get("calls"), snapshot.get("succeeded")
        state.calls = [n for n in calls if isinstance(n, str)] if isinstance(calls, list) else []
        if isinstance(succeeded, list):
            state.succeeded = {n for n in succeeded if isinstance(n, str)}
        return state

    def snapshot(self) -> dict:
        """The calls so far as plain data: ``{"calls": [names in order], "succeeded": [names]}``."""
        return {"calls": list(self.calls), "succeeded": sorted(self.succeeded)}

    def check(self, tool_name: str, available: Iterable[str] | None = None) -> str | None:
        """A refusal message if calling ``tool_name`` now breaks a rule, else None.

        Args:
            tool_name: The tool about to be called.
            available: The tools the caller can use, when fewer than the state's (a helper
                has fewer than its parent): a prior tool outside them is named as unavailable.
        """
        if not self.calls and self.start_tools and tool_name not in self.start_tools:
            first = " or ".join(f"`{name}`" for name in self.start_tools)
            return f"Rule: call {first} first, before any other tool."
        usable = set(available) if available is not None else self.available
        for rule in self.rules:
            if rule.tool != tool_name:
                continue
            if rule.type == MAX_CALLS:
                made = self.calls.count(tool_name)
                if made >= rule.value:
                    return (
                        f"Rule: `{tool_name}` may be called at most {rule.value} "
                        f"{_times(rule.value)} per turn, and it has been "
                        "called that often already. Use another tool or finish your turn."
                    )
            elif rule.type == REQUIRES_PRIOR and rule.value not in self.succeeded:
                if usable is not None and rule.value not in usable:
                    return (
                        f"Rule: `{tool_name}` may only be called after `{rule.value}`, which is "
                        "not available now."
                    )
                return f"Rule: call `{rule.value}` successfully before `{tool_name}`."
        return None

    def begin(self, tool_name: str) -> None:
        """Note that ``tool_name`` is being called (it counts from now on)."""
        self.calls.append(tool_name)

    def finish(self, tool_name: str, success: bool = True) -> None:
        """Note how a call :meth:`begin` noted ended (``success``: it did what was asked)."""
        if success:
            self.succeeded.add(tool_name)

    def record(self, tool_name: str, success: bool = True) -> None:
        """Note that ``tool_name`` ran (``success``: whether it did what was asked)."""
        self.begin(tool_name)
        self.finish(tool_name, success)

    def after_call(self, tool_name: str) -> str | None:
        """``"exit"`` when the turn ends after this tool, ``"continue"`` when the model must be
        called again, else None (the category and execution pattern decide)."""
        types = {rule.type for rule in self.rules if rule.tool == tool_name}
        if EXIT_LOOP in types:
            return EXIT
        if CONTINUE_LOOP in types:
            return CONTINUE
        return None
