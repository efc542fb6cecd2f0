"""Tool rules: per-NPC constraints on how tools are called within one tick.

Pure module. Rule types (the spec's, Letta-style):

- ``exit_loop``: the turn ends after this tool runs.
- ``continue_loop``: after this tool runs the model is called again, even if the tool is
  TERMINAL (within the tick's iteration limit).
- ``max_calls``: the tool may run at most ``value`` times per tick.
- ``requires_prior``: the tool may run only after the tool named in ``value`` ran this tick.
- ``start_constraint``: this tool must be the first call of the tick.

Rules are rendered into the system prompt as a "Tool execution rules" section and enforced by
the ReAct loop through :class:`ToolRuleState`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

RULE_TYPES = ("exit_loop", "continue_loop", "max_calls", "requires_prior", "start_constraint")


@dataclass(frozen=True)
class ToolRule:
    """One rule about one tool."""

    type: str
    tool: str
    value: int | str | None = None

    @classmethod
    def exit_loop(cls, tool: str) -> "ToolRule":
        return cls("exit_loop", tool)

    @classmethod
    def continue_loop(cls, tool: str) -> "ToolRule":
        return cls("continue_loop", tool)

    @classmethod
    def max_calls(cls, tool: str, n: int) -> "ToolRule":
        return cls.from_dict({"type": "max_calls", "tool": tool, "value": n})

    @classmethod
    def requires_prior(cls, tool: str, prior: str) -> "ToolRule":
        return cls.from_dict({"type": "requires_prior", "tool": tool, "value": prior})

    @classmethod
    def start_constraint(cls, tool: str) -> "ToolRule":
        return cls("start_constraint", tool)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data) -> "ToolRule":
        """Build a rule from a dict, validating it.

        Raises:
            ValueError: Naming what is wrong.
        """
        if not isinstance(data, dict):
            raise ValueError("A tool rule must be a mapping with 'type' and 'tool'.")
        rtype, tool, value = data.get("type"), data.get("tool"), data.get("value")
        if rtype not in RULE_TYPES:
            raise ValueError(f"Unknown tool rule type {rtype!r}. Known: {', '.join(RULE_TYPES)}")
        if not isinstance(tool, str) or not tool.strip():
            raise ValueError("A tool rule needs the tool's name.")
        if rtype == "max_calls":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("max_calls needs a whole number of calls >= 1.")
        elif rtype == "requires_prior":
            if not isinstance(value, str) or not value.strip():
                raise ValueError("requires_prior needs the name of the tool that must come first.")
            value = value.strip()
        else:
            value = None
        return cls(rtype, tool.strip(), value)


def render_tool_rules(rules) -> str:
    """The system prompt's "Tool Execution Rules" section ("" without rules)."""
    lines = []
    for rule in rules or ():
        if rule.type == "start_constraint":
            lines.append(f"- Call `{rule.tool}` first before any other tools")
        elif rule.type == "exit_loop":
            lines.append(f"- The conversation will end after calling `{rule.tool}`")
        elif rule.type == "continue_loop":
            lines.append(f"- The conversation will be continued after calling `{rule.tool}`")
        elif rule.type == "max_calls":
            lines.append(f"- Call `{rule.tool}` at most {rule.value} times")
        elif rule.type == "requires_prior":
            lines.append(f"- Call `{rule.tool}` only after calling `{rule.value}`")
    if not lines:
        return ""
    return "# Tool Execution Rules\n\n" + "\n".join(lines)


class ToolRuleState:
    """Enforces rules over one tick's calls."""

    def __init__(self, rules=()):
        self.rules = list(rules or ())
        self.calls: list[str] = []

    def check(self, tool_name: str) -> str | None:
        """A refusal message if calling ``tool_name`` now breaks a rule, else None."""
        for rule in self.rules:
            if rule.type == "start_constraint" and not self.calls and rule.tool != tool_name:
                return f"Rule: call `{rule.tool}` first, before any other tool."
            if rule.tool != tool_name:
                continue
            if rule.type == "max_calls" and self.calls.count(tool_name) >= int(rule.value):
                return f"Rule: `{tool_name}` may be called at most {rule.value} times per turn."
            if rule.type == "requires_prior" and rule.value not in self.calls:
                return f"Rule: call `{rule.value}` before `{tool_name}`."
        return None

    def record(self, tool_name: str) -> None:
        """Note that ``tool_name`` ran."""
        self.calls.append(tool_name)

    def after_call(self, tool_name: str) -> str | None:
        """"exit" when the turn ends after this tool, "continue" when it must go on, else None."""
        for rule in self.rules:
            if rule.tool == tool_name and rule.type == "exit_loop":
                return "exit"
        for rule in self.rules:
            if rule.tool == tool_name and rule.type == "continue_loop":
                return "continue"
        return None
