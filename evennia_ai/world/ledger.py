"""An NPC's ledger: its latest trades, bounded, and today's counts for its daily limits.

The stored value (the state key ``ledger``)::

    {"entries": [{"id": "t_1a2b3c4d", "kind": "sale", "item": "lantern", ...}, ...],
     "day": "2026-11-27",
     "today": {"sold": {"lantern": 2}, "bought": {"scrap iron": 3}, "sold_units": 2,
               "taken": 24, "paid": 6, "partners": {"#7": 30}},
     "restocked": {"proto:iron_nails": 123456.0},
     "approvals": ["c_1a2b3c", ...]}

The day's counts live apart from the entries, so dropping the oldest entries never lowers a
limit's count; they start again when the real (UTC) day changes. The ids of the approvals whose
trades ran (the last :data:`APPROVALS_KEPT`) live apart too, so an approval runs its trade once
even after its entry dropped out. A ledger that could not be
read is stored as ``{"entries": [], "blocked": true}``, and an NPC whose ledger is blocked does
not trade (an unreadable ledger would otherwise reset its daily limits).

Pure: no Django, Evennia or Twisted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from evennia_ai.npc_state import JSONObject, JSONValue

#: Kinds of entry: the NPC sold, bought, gave an item freely, or restocked.
KINDS = ("sale", "purchase", "gift", "restock")
#: Ids of the approvals whose trades ran, kept apart from the entries (the newest): an
#: approval decided again after its entry left the ledger still runs its trade once.
APPROVALS_KEPT = 500


@dataclass(frozen=True)
class Today:
    """One real day's trading, for the daily limits.

    Attributes:
        day: The UTC day (``"2026-11-27"``).
        sold: Units sold today, by rule key.
        bought: Units bought today, by rule key.
        sold_units: Units sold today, all items together.
        taken: Money taken in today.
        paid: Money paid out today.
        partners: The value of today's trades with each partner, by the partner's dbref
            (sales and purchases together): an order's approval counts it, so splitting an
            order does not avoid the approval.
    """

    day: str
    sold: dict[str, int] = field(default_factory=dict)
    bought: dict[str, int] = field(default_factory=dict)
    sold_units: int = 0
    taken: int = 0
    paid: int = 0
    partners: dict[str, int] = field(default_factory=dict)


def _count(value: JSONValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _counts(value: JSONValue) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(key): _count(units) for key, units in value.items() if _count(units)}


def today_of(ledger: JSONObject, day: str) -> Today:
    """Today's counts in ``ledger`` (all zero when its counts are of another day)."""
    counts = ledger.get("today")
    if ledger.get("day") != day or not isinstance(counts, dict):
        return Today(day)
    return Today(
        day,
        sold=_counts(counts.get("sold")),
        bought=_counts(counts.get("bought")),
        sold_units=_count(counts.get("sold_units")),
        taken=_count(counts.get("taken")),
        paid=_count(counts.get("paid")),
        partners=_counts(counts.get("partners")),
    )


def new_id() -> str:
    """A fresh entry id (``"t_1a2b3c4d"``)."""
    return "t_" + uuid.uuid4().hex[:8]


def record(ledger: JSONObject, entry: JSONObject, size: int, day: str) -> JSONObject:
    """``ledger`` with ``entry`` appended (the oldest dropped beyond ``size``) and added to the
    counts of ``day``.

    Args:
        ledger: The stored ledger (a plain copy; not changed).
        entry: The entry: ``kind`` one of :data:`KINDS`, ``item`` (the rule key), ``quantity``
            and ``total``.
        size: Entries kept at most (``EVENNIA_AI_LEDGER_SIZE``).
        day: The real UTC day of the entry.

    Returns:
        The new ledger.
    """
    today = today_of(ledger, day)
    sold, bought = dict(today.sold), dict(today.bought)
    sold_units, taken, paid = today.sold_units, today.taken, today.paid
    partners = dict(today.partners)
    kind, item = entry.get("kind"), str(entry.get("item"))
    units, total = _count(entry.get("quantity")), _count(entry.get("total"))
    partner = entry.get("partner_id")
    if kind in ("sale", "purchase") and isinstance(partner, str) and total:
        partners[partner] = partners.get(partner, 0) + total
    if kind == "sale":
        sold[item] = sold.get(item, 0) + units
        sold_units += units
        taken += total
    elif kind == "purchase":
        bought[item] = bought.get(item, 0) + units
        paid += total
    entries = ledger.get("entries")
    kept: list[JSONValue] = list(entries) if isinstance(entries, list) else []
    kept.append(entry)
    new: JSONObject = dict(ledger)
    new.update(
        entries=kept[-max(1, size) :],
        day=day,
        today={
            "sold": dict(sold),
            "bought": dict(bought),
            "sold_units": sold_units,
            "taken": taken,
            "paid": paid,
            "partners": dict(partners),
        },
    )
    new.setdefault("restocked", {})
    approval = entry.get("approval")
    if isinstance(approval, str) and approval:
        done = ledger.get("approvals")
        ids = [key for key in done if isinstance(key, str)] if isinstance(done, list) else []
        ids.append(approval)
        new["approvals"] = list[JSONValue](ids[-APPROVALS_KEPT:])
    return new


def rows(ledger: JSONObject, last: int) -> list[JSONObject]:
    """The ``last`` newest entries of ``ledger``, newest first (for staff)."""
    entries = ledger.get("entries")
    if not isinstance(entries, list) or last <= 0:
        return []
    return [entry for entry in reversed(entries[-last:]) if isinstance(entry, dict)]


def by_approval(ledger: JSONObject, approval: str) -> JSONObject | None:
    """The entry of the trade that the confirmation ``approval`` ran, or None when it is not
    in ``ledger`` (an approved trade runs once, whatever happens to its confirmation)."""
    entries = ledger.get("entries")
    for entry in reversed(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and approval and entry.get("approval") == approval:
            return entry
    return None


def approval_done(ledger: JSONObject, approval: str) -> JSONObject | None:
    """Whether the confirmation ``approval`` already ran its trade: the trade's entry (see
    :func:`by_approval`), or ``{"id": None, "approval": approval}`` when the entry has left
    the ledger but the id is among the last :data:`APPROVALS_KEPT` approvals; None when it
    did not run."""
    if not approval:
        return None
    entry = by_approval(ledger, approval)
    if entry is not None:
        return entry
    done = ledger.get("approvals")
    if isinstance(done, list) and approval in done:
        return {"id": None, "approval": approval}
    return None


def blocked(ledger: JSONObject) -> bool:
    """Whether ``ledger`` is the stand-in for one that could not be read (no trading)."""
    return ledger.get("blocked") is True


def restocked_at(ledger: JSONObject, key: str) -> float | None:
    """Game seconds when the restock rule ``key`` last spawned, or None if it never did."""
    kept = ledger.get("restocked")
    when = kept.get(key) if isinstance(kept, dict) else None
    return float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None


def mark_restocked(ledger: JSONObject, key: str, seconds: float) -> JSONObject:
    """``ledger`` with the restock rule ``key`` marked as run at ``seconds`` (game time)."""
    kept = ledger.get("restocked")
    restocked: dict[str, JSONValue] = dict(kept) if isinstance(kept, dict) else {}
    restocked[key] = float(seconds)
    return {**ledger, "restocked": restocked}
