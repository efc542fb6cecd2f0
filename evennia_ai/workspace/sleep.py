"""Sleep: the daily sleep window, falling asleep and waking (state in the NPC's ``sleep``).

An asleep NPC's next ticks run the sleep phases (``sleep_consolidate``, then
``pre_compaction``) and then rest until it is woken, its ``until`` time passes, its
scheduled window (``EVENNIA_AI_SLEEP_SCHEDULE``) ends, or the sleep slot of its routine ends
(reason ``routine``; the sleep keeps the slot's night in ``slot``, and a wake-up in it is kept
in ``woken_in_slot`` so that the NPC stays awake until that slot ends).

What outlives one sleep (:data:`KEPT_ACROSS_SLEEPS`): when memory was last consolidated, how
many consolidations ran on the real (UTC) day (``consolidated``: ``{"day": "YYYY-MM-DD",
"count": n}``, capped by ``EVENNIA_AI_CONSOLIDATIONS_PER_DAY``), and the routine's slot
a wake-up cut short. The functions take the NPC and write its
``sleep`` state through ``npc_state(npc)`` once per change; the tick, the ``go_to_sleep`` tool and
``aisleep`` all use them.
"""

from __future__ import annotations

from datetime import datetime

from evennia_ai import conf
from evennia_ai.npc_state import SLEEP, npc_state
from evennia_ai.utils import iso_utc

SLEEP_PHASES = ("sleep_consolidate", "pre_compaction")
# What a sleep remembers across falling asleep and waking: the next consolidation takes the
# journal entries written since the last one; the day's consolidations are counted against
# their cap; a routine's sleep slot a wake-up cut short is not slept again.
KEPT_ACROSS_SLEEPS = ("last_consolidated", "consolidated", "woken_in_slot")


def in_sleep_window(schedule, now: datetime | None = None) -> bool:
    """Whether ``now`` (server local time) falls inside a daily ("HH:MM", "HH:MM") window."""
    if not schedule:
        return False
    try:
        start, end = schedule
        sh, sm = (int(x) for x in str(start).split(":"))
        eh, em = (int(x) for x in str(end).split(":"))
    except (TypeError, ValueError):
        return False
    now = now or datetime.now()
    minute = now.hour * 60 + now.minute
    begin, finish = sh * 60 + sm, eh * 60 + em
    if begin <= finish:
        return begin <= minute < finish
    return minute >= begin or minute < finish


def go_to_sleep(npc, reason: str, until: str | None = None, slot: str | None = None) -> None:
    """Put ``npc`` to sleep (one write); its next ticks run the sleep phases.

    Args:
        npc: The assistant.
        reason: Why (``"scheduled"``, ``"routine"``, the tool's reason...).
        until: When it wakes by itself (ISO time), if it does.
        slot: For a routine sleep, the night of its sleep slot (``"12/20:00-05:00"``): the
            sleep ends when the slot does.
    """
    state = npc_state(npc)
    sleep = {
        **_kept(state.sleep),
        "asleep": True,
        "since": iso_utc(),
        "reason": reason,
        "phase": SLEEP_PHASES[0],
        "until": until,
    }
    if slot:
        sleep["slot"] = slot
    state.set(SLEEP, sleep)


def wake_up(npc, reason: str = "woken") -> None:
    """Wake ``npc`` (one write). A scheduled sleep stays woken until its window ends, a
    routine sleep until its slot ends (``woken_in_slot``)."""
    state = npc_state(npc)
    sleep = state.sleep
    woken = {
        **_kept(sleep),
        "asleep": False,
        "since": None,
        "reason": reason,
        "phase": None,
        "until": None,
        "woken_in_window": bool(
            sleep.get("reason") == "scheduled"
            and in_sleep_window(conf.get_optional_pair("EVENNIA_AI_SLEEP_SCHEDULE"))
        ),
    }
    if sleep.get("reason") == "routine" and sleep.get("slot"):
        woken["woken_in_slot"] = sleep["slot"]
    state.set(SLEEP, woken)


def _kept(sleep) -> dict:
    """The values of ``sleep`` that outlive one sleep (:data:`KEPT_ACROSS_SLEEPS`)."""
    return {key: sleep[key] for key in KEPT_ACROSS_SLEEPS if (sleep or {}).get(key)}
