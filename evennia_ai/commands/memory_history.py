"""``aihistory``: an AI NPC's conversation history and its compaction state. Re-exported by
:mod:`evennia_ai.commands.memory`.
"""

from __future__ import annotations

from evennia.utils.ansi import raw

from evennia_ai.commands.base import AICommand
from evennia_ai.formatting import count, percent, timestamp
from evennia_ai.memory.history import render_text
from evennia_ai.npc.history_report import history_report

# -- conversation history --------------------------------------------------------------------------
HISTORY_SHOWN = 10  # messages aihistory/last shows by default


class CmdAIHistory(AICommand):
    """
    Show the size of an AI NPC's conversation history and its compaction state.

    Usage:
      aihistory <npc>
      aihistory/last <npc> [= <count>]

    Switches:
      last - the last <count> messages (default 10) as a transcript, by tick.

    Without a switch: the history's messages and ticks, its size in tokens
    (counted for the NPC's model), characters and messages against the caps that
    call for a compaction, its share of the model's window, the last compaction
    (when, and what it folded) and whether one is pending or due.

    A compaction folds the oldest ticks (all but the last
    EVENNIA_AI_COMPACTION_KEEP_RECENT messages) into one summary, or drops them
    (EVENNIA_AI_COMPACTION_STRATEGY). It is due past
    EVENNIA_AI_COMPACTION_EMERGENCY_RATIO of a cap at any time, past
    EVENNIA_AI_COMPACTION_SLEEP_RATIO while asleep, never on the tick right after
    the last one; once due it is pending and runs on a following tick.

    Examples:
      aihistory Marta
      aihistory/last Marta = 20
    """

    key = "aihistory"
    switch_options = ("last",)

    def run(self):
        if self.switch() == "last":
            self.msg(self.last(self.find_npc(self.lhs)))
        else:
            self.msg(self.report(self.find_npc(self.args)))

    def last(self, npc) -> str:
        wanted = self.parse_int(self.rhs, "The count", 1, 200) if self.rhs else HISTORY_SHOWN
        shown = npc.ai.history[-wanted:]
        if not shown:
            return f"{npc.key} has no conversation history."
        text = raw(render_text(shown, assistant_name=npc.key))
        return f"|wThe last {len(shown)} message(s) of {npc.key}'s history|n\n{text}"

    def report(self, npc) -> str:
        report = history_report(npc)
        lines = [
            f"|wHistory of {npc.key}({npc.dbref})|n: {count(report.messages)} message(s) from "
            f"{count(report.ticks)} tick(s), {count(report.tokens)} tokens for {report.model} "
            f"({percent(report.tokens, report.window)} of its {count(report.window)}-token "
            "window)",
        ]
        if report.messages:
            lines.append(f"  oldest {timestamp(report.oldest)}, newest {timestamp(report.newest)}")
        if report.summary_chars:
            lines.append(
                "  starts with a summary of earlier conversation "
                f"({count(report.summary_chars)} characters)"
            )
        table = self.table("Size", "Now", "Cap", "Share", "Compacts at", keep=(0,))
        for m in report.measures:
            table.add_row(
                m.what,
                count(m.used),
                count(m.cap),
                percent(m.used, m.cap),
                f"{count(m.compacts_at)} (asleep {count(m.compacts_asleep_at)})",
            )
        lines.append(str(table))
        lines.append(
            "  caps: tokens - the history's share of the window; characters - "
            "EVENNIA_AI_HISTORY_MAX_CHARS; messages - EVENNIA_AI_HISTORY_MAX_MESSAGES"
        )
        last = raw(report.last_compaction)
        if report.last_failed:
            last = last.replace(": failed: ", ": |rfailed|n: ", 1)
        lines.append(f"|wLast compaction|n: {last}")
        state = report.state if report.state == "not due" else f"|y{report.state}|n"
        lines.append(
            f"|wNow|n: {state}{'; ' if report.state == 'not due' else ' '}{report.now}; "
            f"strategy {report.strategy}, keeps the last {count(report.keep_recent)} messages"
        )
        return "\n".join(lines)
