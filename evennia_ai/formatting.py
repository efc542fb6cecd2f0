"""How numbers, money, times and tool calls read for people, in game and on the web.

One rule for each, so a figure reads the same in ``aistatus`` and on the dashboard:

- **counts** (tokens, characters, ticks): thousands separators, ``149,483``.
- **shares** (of a window, of a cap): whole percents, ``12%``; ``<1%`` for a share that would
  show as zero but is not.
- **money** (US dollars): ``$0.00`` for nothing; four decimals below one dollar (``$0.0123``,
  ``$0.0004``), so the cost of one model call stays visible; two decimals with separators
  from one dollar (``$1.23``, ``$1,204.50``); ``<$0.0001`` for a cost that would show as
  zero but is not.
- **timestamps**: UTC to the second, ``2026-11-25 14:03:07 UTC`` (never microseconds); in a
  narrow table, relative (``3 min ago``) or the day alone (``2026-11-25``).
- **durations**: milliseconds below a second (``21 ms``), seconds with one decimal below a
  minute (``4.2 s``), then minutes and seconds (``2 min 05 s``).
- **the loop's steps**: ``step 1``, ``step 2``, ... numbered from 1.
- **tool arguments and results**: ``name: value`` lines and plain words, never raw JSON or a
  Python dict.

Pure module: no Django, Evennia or Twisted import; the commands and the dashboard's template
filters (:mod:`evennia_ai.web.templatetags.ai_format`) both call it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from evennia_ai.utils import one_line, parse_iso, to_utc

MISSING = "-"  # what an absent number, time or duration reads as


# -- numbers and money -----------------------------------------------------------------------------
def count(value: Any) -> str:
    """A whole number with thousands separators (``149,483``); ``-`` when not a number."""
    try:
        return f"{int(value or 0):,}"
    except (TypeError, ValueError):
        return MISSING


def percent(part: Any, whole: Any) -> str:
    """``part`` as a share of ``whole`` in whole percents: ``12%``, ``<1%``; ``-`` when
    ``whole`` is not a positive number."""
    try:
        part, whole = float(part or 0), float(whole or 0)
    except (TypeError, ValueError):
        return MISSING
    if whole <= 0:
        return MISSING
    ratio = part / whole
    if 0 < ratio < 0.005:
        return "<1%"
    return f"{ratio:.0%}"


def money(value: Any) -> str:
    """US dollars by the module's one rule: ``$0.0123`` below a dollar, ``$1.23`` from one."""
    try:
        amount = float(value or 0)
    except (TypeError, ValueError):
        return MISSING
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == 0:
        return "$0.00"
    if amount >= 1:
        return f"{sign}${amount:,.2f}"
    if amount < 0.00005:  # would round to $0.0000
        return f"{sign}<$0.0001"
    return f"{sign}${amount:.4f}"


# -- times -----------------------------------------------------------------------------------------
def timestamp(value: Any) -> str:
    """An ISO-8601 string or datetime as ``2026-11-25 14:03:07 UTC``; ``-`` when empty.

    Text that is not a timestamp is shown as it is (it says something, e.g. ``never``).
    """
    moment = parse_iso(value)
    if moment is None:
        return str(value).strip() if value not in (None, "") else MISSING
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def date(value: Any) -> str:
    """The UTC day of an ISO-8601 string or datetime, ``2026-11-25``; ``-`` when not a time."""
    moment = parse_iso(value)
    return moment.strftime("%Y-%m-%d") if moment is not None else MISSING


def ago(value: Any, now: datetime | None = None) -> str:
    """How long before ``now`` (default: the current time) ``value`` was: ``3 min ago``."""
    moment = parse_iso(value)
    if moment is None:
        return MISSING
    seconds = int((to_utc(now) - moment).total_seconds())
    if seconds < 0:
        return "in " + _span(-seconds)
    if seconds < 5:
        return "just now"
    return _span(seconds) + " ago"


def _span(seconds: int) -> str:
    """A whole number of seconds in its largest sensible unit: ``45 s``, ``3 min``, ``2 days``."""
    for size, unit in ((86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            amount = seconds // size
            return f"{amount} {unit}" + ("s" if unit == "day" and amount != 1 else "")
    return f"{seconds} s"


def duration(seconds: Any) -> str:
    """Seconds as ``21 ms``, ``4.2 s`` or ``2 min 05 s``; ``-`` when not a number."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return MISSING
    if value < 0:
        return MISSING
    if value < 0.9995:  # would round to 1000 ms
        return f"{round(value * 1000)} ms"
    if value < 59.95:  # would round to 60.0 s
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest:02d} s"


# -- the loop --------------------------------------------------------------------------------------
def step_label(index: Any, kind: str = "") -> str:
    """The name of one model call of a tick: ``step 1`` for the loop's first (index 0).

    Calls outside the loop (index -1: assessment, summaries, memory) are named by their kind.
    """
    try:
        number = int(index)
    except (TypeError, ValueError):
        number = -1
    return f"step {number + 1}" if number >= 0 else (kind or "other call")


# -- tool calls ------------------------------------------------------------------------------------
# A tool call's outcome in words, by its status in the trace (a call that ran says whether it
# succeeded: :func:`tool_outcome`).
TOOL_STATUS_WORDS = {
    "refused": "refused",
    "pending": "waits for approval (aiconfirm)",
    "skipped": "not run (the tick ended before it)",
    "error": "failed",
}


def tool_outcome(status: Any, success: Any = True) -> str:
    """What came of a tool call, in words: ``ran``, ``ran and failed``, ``refused``, ``not run
    (the tick ended before it)``... (a trace's ``status`` and ``success`` of the call)."""
    if status == "ran":
        return "ran" if success else "ran and failed"
    return TOOL_STATUS_WORDS.get(str(status or ""), str(status or "unknown outcome"))


def value_text(value: Any, limit: int = 200) -> str:
    """One argument or result value in words: text as is, numbers with separators, lists
    joined, yes/no for booleans, anything else as compact JSON; on one line, clipped."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, int):
        text = count(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        text = ", ".join(str(v) for v in value) or "(none)"
    elif value is None:
        text = "(none)"
    else:
        text = json.dumps(value, default=str, ensure_ascii=False)
    return one_line(text, limit) if text.strip() else '""'


def argument_items(arguments: Any, limit: int = 200) -> list[tuple[str, str]]:
    """A tool call's arguments as ``(name, value in words)`` pairs, in their given order."""
    if isinstance(arguments, str):
        arguments = _json_or_text(arguments)
    if not isinstance(arguments, dict):
        return [("value", value_text(arguments, limit))] if arguments not in (None, "") else []
    return [(str(name), value_text(value, limit)) for name, value in arguments.items()]


def arguments_text(arguments: Any, limit: int = 200) -> str:
    """A tool call's arguments on one line: ``message: Hello; target: Bob`` (``(none)``)."""
    items = argument_items(arguments, limit)
    return "; ".join(f"{name}: {value}" for name, value in items) or "(none)"


def result_text(result: Any, limit: int = 300) -> str:
    """What a tool or an approved action answered, in words instead of its JSON.

    ``{"success": false, "error": "no such exit"}`` reads ``no such exit``;
    ``{"success": true}`` reads ``done``; a dict with a ``message`` reads as the message;
    other dicts read ``name: value; ...``; plain text stays as it is.
    """
    data = _json_or_text(result) if isinstance(result, str) else result
    if isinstance(data, dict):
        for key in ("error", "message", "result", "text"):
            if isinstance(data.get(key), str) and data[key].strip():
                return one_line(data[key], limit)
        rest = {k: v for k, v in data.items() if k != "success"}
        if not rest:
            return "done" if data.get("success", True) else "failed"
        return one_line(arguments_text(rest, limit), limit)
    if data in (None, ""):
        return ""
    return value_text(data, limit)


def action_arguments(entry: dict) -> Any:
    """What a confirmation entry would run with: a tool call's arguments, or the whole payload
    of another kind of action (a memory block write's label, operation and values)."""
    payload = entry.get("payload") or {}
    return payload.get("arguments", payload) if isinstance(payload, dict) else payload


def decision_text(entry: dict, limit: int = 300, *, name_decider: bool = False) -> str:
    """A decided confirmation in a sentence: what was decided, what ran and what it said.

    With ``name_decider``, who decided follows the id (``Approved c_1a2b3c4d by Ann: ...``).
    """
    who = f"{entry.get('npc_key') or '?'}'s {entry.get('action') or '?'}"
    said = result_text(entry.get("result"), limit)
    status = entry.get("status")
    decided = entry.get("id")
    if name_decider:
        decided = f"{decided} by {entry.get('decided_by') or 'someone'}"
    if status == "approved":
        text = f"Approved {decided}: {who} ran"
    elif status == "failed":
        text = f"Approved {decided}, but {who} failed"
    elif status == "rejected":
        text = f"Rejected {decided}: {who} did not run"
        said = f"reason given: {said}" if said else ""
    else:
        text = f"{entry.get('id')}: {who} is {status}"
    if not said:
        return f"{text}."
    said = said[:1].upper() + said[1:]
    return f"{text}. {said}" + ("" if said.endswith((".", "!", "?")) else ".")


def _json_or_text(text: str) -> Any:
    """``text`` parsed as JSON when it is a JSON object or array, else ``text`` itself."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        return json.loads(stripped)
    except ValueError:
        return text
