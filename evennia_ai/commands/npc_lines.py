"""``ailines``: what an AI NPC's listeners hear when no model answers for it.

Past its budget, while it is held, when its model fails, while the model is slow, and when an
action it wanted waits for approval, no model writes what the player hears: it is a line staff
set for the NPC, or the setting's (:mod:`evennia_ai.engine.audience`). The dashboard's NPC
page changes the same lines through the same functions (:mod:`evennia_ai.npc.controls`).
"""

from __future__ import annotations

from evennia_ai.commands.base import BUILDER_LOCK, CommandError, SwitchedCommand
from evennia_ai.engine import audience
from evennia_ai.engine.audience import LINE_KINDS, LINE_USES, NAME_FIELD, Line, render_line
from evennia_ai.npc import controls
from evennia_ai.tools.world import escape_inline_functions


def shown(text: str) -> str:
    """``text`` as typed: its markup escaped so the caller reads it, not its colours."""
    return escape_inline_functions(text.replace("|", "||"))


class CmdAILines(SwitchedCommand):
    """
    Show or set what an AI NPC's listeners hear when no model answers.

    Usage:
      ailines <npc>
      ailines/set <npc> = <kind> <text>
      ailines/reset <npc> [= <kind>]

    Switches:
      set    - the NPC's own line of that kind
      reset  - back to the setting's line (every kind when none is named)

    Kinds:
      unavailable - its model fails, or it is past its budget or held
                    (EVENNIA_AI_UNAVAILABLE_MESSAGE)
      thinking    - its model is slow to answer (EVENNIA_AI_THINKING_MESSAGE)
      approval    - an action it wanted waits for staff's approval
                    (EVENNIA_AI_APPROVAL_MESSAGE)

    No model is called for these lines. {name} is replaced by the NPC's
    name as each listener sees it; the text is shown as written (its colour
    codes are not run). A line is at most 300 characters.

    Examples:
      ailines Marta
      ailines/set Marta = unavailable Marta is busy at the hearth.
      ailines/set Marta = approval {name} says, "I'll ask the owner."
      ailines/reset Marta = thinking
    """

    key = "ailines"
    locks = BUILDER_LOCK
    switch_options = ("set", "reset")

    def do_default(self):
        if self.rhs is not None:
            raise CommandError("Use ailines/set to change a line.\n" + self.usage())
        self.msg(self._listing(self.find_npc(self.args)))

    def do_set(self):
        npc, rest = self.npc_and_rhs("<kind> <text>")
        kind, _sep, text = rest.strip().partition(" ")
        if not text.strip():
            raise CommandError(
                f"Missing the text after '{shown(kind)}'. To use the setting's line, "
                f"use ailines/reset {shown(npc.key)} = {shown(kind)}."
            )
        kind = controls.line_kind(kind)
        self.msg(shown(controls.set_line(npc, kind, text)))
        self.msg(f"Heard as: {self._heard_one(npc, audience.line_of(npc, kind))}")

    def do_reset(self):
        npc = self.find_npc(self.lhs)
        kind = (self.rhs or "").strip() or None
        self.msg(shown(controls.reset_line(npc, kind)))

    def _listing(self, npc) -> str:
        """Every kind of line of ``npc``: where it comes from, its text, how it is heard."""
        out = [f"|w{shown(npc.key)}'s lines|n, heard when no model answers for it:"]
        for line in controls.lines_of(npc):
            source = "its own" if line.own else f"setting {line.setting}"
            out.append(f"|w{line.kind}|n - when {LINE_USES[line.kind]}")
            out.append(f"  {source}: {shown(line.text) if line.text else '(empty)'}")
            out.append(f"  heard: {self._heard_one(npc, line)}")
        out.append(f"({NAME_FIELD} is the NPC's name; kinds: {', '.join(LINE_KINDS)}.)")
        return "\n".join(out)

    def _heard_one(self, npc, line: Line) -> str:
        text = render_line(npc, line, self.caller)
        return text if text else "(no line: they hear nothing)"


COMMANDS = [CmdAILines]
