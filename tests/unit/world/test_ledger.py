"""An NPC's ledger: bounded entries, and the day's counts kept apart from them (pure)."""

from evennia_ai.world import ledger
from evennia_ai.world.ledger import (
    blocked,
    mark_restocked,
    record,
    restocked_at,
    rows,
    today_of,
)


def sale(n, units=1, total=12):
    return {"id": f"t_{n}", "kind": "sale", "item": "lantern", "quantity": units, "total": total}


def test_the_oldest_entries_are_dropped_but_the_day_s_counts_are_kept():
    ledger = {"entries": [], "today": {}, "restocked": {}}
    for n in range(5):
        ledger = record(ledger, sale(n), 3, "2026-11-27")
    assert [e["id"] for e in ledger["entries"]] == ["t_2", "t_3", "t_4"]
    today = today_of(ledger, "2026-11-27")
    assert (today.sold, today.sold_units, today.taken) == ({"lantern": 5}, 5, 60)


def test_purchases_count_units_bought_and_money_paid():
    ledger = record(
        {}, {"kind": "purchase", "item": "scrap iron", "quantity": 3, "total": 6}, 9, "d"
    )
    today = today_of(ledger, "d")
    assert (today.bought, today.paid, today.sold_units) == ({"scrap iron": 3}, 6, 0)


def test_a_new_day_starts_the_counts_again():
    ledger = record({}, sale(1), 9, "2026-11-27")
    assert today_of(ledger, "2026-11-28").sold_units == 0
    ledger = record(ledger, sale(2), 9, "2026-11-28")
    assert ledger["today"]["sold_units"] == 1 and len(ledger["entries"]) == 2


def test_unreadable_counts_read_as_zero_and_a_blocked_ledger_is_known():
    ledger = {"day": "d", "today": {"sold": {"x": "lots"}, "sold_units": -4, "paid": True}}
    today = today_of(ledger, "d")
    assert (today.sold, today.sold_units, today.paid) == ({}, 0, 0)
    assert blocked({"entries": [], "blocked": True}) and not blocked(ledger)


def test_rows_are_newest_first_for_staff():
    ledger = {"entries": [sale(n) for n in range(4)]}
    assert [e["id"] for e in rows(ledger, 2)] == ["t_3", "t_2"]
    assert rows(ledger, 0) == [] and rows({}, 5) == []


def test_restock_times():
    ledger = mark_restocked({}, "proto:nails", 3600)
    assert restocked_at(ledger, "proto:nails") == 3600.0
    assert restocked_at(ledger, "proto:bread") is None


def test_approvals_are_kept_apart_and_bounded():
    kept: dict = {}
    for number in range(ledger.APPROVALS_KEPT + 2):
        entry = {"kind": "sale", "item": "x", "quantity": 1, "total": 1, "approval": f"c_{number}"}
        kept = ledger.record(kept, entry, 1, "2026-11-27")
    kept = ledger.record(kept, {"kind": "sale", "item": "x", "approval": None}, 1, "2026-11-27")
    assert len(kept["approvals"]) == ledger.APPROVALS_KEPT and kept["approvals"][-1] == "c_501"
    assert ledger.approval_done(kept, "c_501") == {"id": None, "approval": "c_501"}
    assert ledger.approval_done(kept, "c_0") is None and ledger.approval_done(kept, "") is None
    kept = ledger.record(kept, {"kind": "sale", "item": "x", "approval": "c_9"}, 1, "2026-11-27")
    assert ledger.approval_done(kept, "c_9")["item"] == "x"  # the entry, while it is kept
