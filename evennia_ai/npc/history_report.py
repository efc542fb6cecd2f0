"""Where an NPC's conversation history stands: its size against each cap, the last compaction
and whether one is pending or due. ``aihistory`` and the dashboard show this same report.

The figures come from :func:`evennia_ai.engine.tick.history_pressure`, the test the tick
runner schedules compactions by, so the report says what the next tick will do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evennia_ai import conf
from evennia_ai.engine.tick import history_pressure
from evennia_ai.formatting import ago, count, timestamp
from evennia_ai.memory.compression import SUMMARY_BATCH
from evennia_ai.prompt.tasks import compaction_batch

# How each compaction strategy treated the messages it folded.
FOLDED = {"summarize": "summarised into one message", "truncate": "dropped"}


@dataclass(frozen=True)
class HistoryMeasure:
    """One size of the history against its cap (``tokens``, ``characters``, ``messages``)."""

    what: str
    used: int
    cap: int
    compacts_at: int  # awake, past EVENNIA_AI_COMPACTION_EMERGENCY_RATIO of the cap
    compacts_asleep_at: int  # asleep, past EVENNIA_AI_COMPACTION_SLEEP_RATIO

    @property
    def share(self) -> float:
        return self.used / self.cap if self.cap else 0.0


@dataclass(frozen=True)
class HistoryReport:
    """An NPC's history and compaction state, plain data (see :func:`history_report`)."""

    messages: int
    ticks: int
    model: str
    window: int
    tokens: int
    oldest: str | None
    newest: str | None
    summary_chars: int
    measures: list[HistoryMeasure] = field(default_factory=list)
    last_compaction: str = "never"
    last_failed: bool = False
    state: str = "not due"  # pending | due | not due
    now: str = ""
    strategy: str = ""
    keep_recent: int = 0


def last_compaction_text(compaction: dict) -> tuple[str, bool]:
    """The last compaction in words (when, and what it folded or why it failed), and whether
    it failed."""
    if compaction.get("last_tick") is None:
        return "never", False
    when = f"tick {compaction['last_tick']}"
    if compaction.get("time"):
        when += f", {timestamp(compaction['time'])} ({ago(compaction['time'])})"
    if compaction.get("error"):
        return f"{when}: failed: {compaction['error']}", True
    removed = compaction.get("removed")
    how = FOLDED.get(compaction.get("strategy"), "folded")
    if removed:
        return f"{when}: {count(removed)} older message(s) {how}", False
    return f"{when}: nothing old enough to fold", False


def compaction_now(compaction: dict, due: str | None, folds: int) -> tuple[str, str]:
    """Whether a compaction is ``pending`` (scheduled), ``due`` (a threshold is passed) or
    ``not due``, and the rest of the sentence: when it runs, what it would fold."""
    fold = f"it would fold {count(folds)} message(s)" if folds else "nothing is old enough to fold"
    if compaction.get("pending"):
        reason = compaction.get("reason") or "scheduled"
        when = (
            "at once, before any queued events"
            if reason == "emergency"
            else "on the next tick without events, or in sleep"
        )
        return "pending", f"({reason}): runs {when}; {fold}"
    if due:
        return "due", f"({due}): a cap's threshold is passed, the next tick schedules it; {fold}"
    return "not due", fold


def history_report(npc) -> HistoryReport:
    """The history and compaction state of ``npc`` for its model at its next tick."""
    history = npc.ai.history
    script = npc.ai.script
    pressure = history_pressure(
        npc.ai, npc.ai.model or None, (script.tick_count if script else 0) + 1
    )
    sleep = conf.get_float("EVENNIA_AI_COMPACTION_SLEEP_RATIO")
    emergency = conf.get_float("EVENNIA_AI_COMPACTION_EMERGENCY_RATIO")
    compaction = npc.ai.compaction
    last, failed = last_compaction_text(compaction)
    state, now = compaction_now(compaction, pressure.reason, len(compaction_batch(history)))
    return HistoryReport(
        messages=len(history),
        ticks=len({m.get("batch") for m in history} - {SUMMARY_BATCH}),
        model=pressure.model,
        window=pressure.window,
        tokens=pressure.measures[0][1],
        oldest=history[0].get("ts") if history else None,
        newest=history[-1].get("ts") if history else None,
        summary_chars=sum(
            len(str(m.get("content") or "")) for m in history if m.get("batch") == SUMMARY_BATCH
        ),
        measures=[
            HistoryMeasure(what, used, cap, int(cap * emergency), int(cap * sleep))
            for what, used, cap in pressure.measures
        ],
        last_compaction=last,
        last_failed=failed,
        state=state,
        now=now,
        strategy=conf.get_str("EVENNIA_AI_COMPACTION_STRATEGY"),
        keep_recent=conf.get_int("EVENNIA_AI_COMPACTION_KEEP_RECENT"),
    )
