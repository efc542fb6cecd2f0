"""A partner has at most one trade with an NPC waiting for a Builder's approval, so one player
cannot fill the NPC's share of the confirmation queue (pending orders reserve nothing)."""

import pytest
from unit.engine.test_trade_approvals import ApprovalTestBase

from evennia_ai.engine.confirmations import MAX_PENDING_PER_NPC, TradeAlreadyWaiting, queue_trade
from evennia_ai.npc.trade_answers import settle
from evennia_ai.tools.approvals import ConfirmationError


class TestOneWaitingTradePerPartner(ApprovalTestBase):
    def waiting_trades(self, partner):
        return [
            e
            for e in self.queue.list_entries(self.npc)
            if e.get("kind") == "trade" and e["payload"]["order"]["partner"] == partner.dbref
        ]

    def test_repeated_orders_queue_one_and_leave_room_for_others(self):
        assert settle(self.order(), "lantern").result.pending
        for _ in range(MAX_PENDING_PER_NPC):
            again = settle(self.order(), "lantern")
            assert not (again.result.pending or again.result.done)
            assert again.message == (
                "Your earlier order (buying 1 lantern from Innkeeper for 12 coins) still waits "
                "for an operator; Innkeeper takes no other order from you that needs approval "
                "until it is decided."
            )
        assert len(self.waiting_trades(self.char1)) == 1
        assert settle(self.order(partner=self.char2), "lantern").result.pending  # Bob's own
        assert self.queue.add_entry(self.npc, "execute_command", {"arguments": {}})  # the NPC's
        assert self.lantern.location == self.npc and self.char1.db.coins == 50

    def test_queue_trade_refuses_a_second_order(self):
        waiting = queue_trade(self.order(), name="lantern")
        with pytest.raises(TradeAlreadyWaiting) as refused:
            queue_trade(self.order(price=13), name="lantern")
        assert refused.value.entry["id"] == waiting
        assert isinstance(refused.value, ConfirmationError)

    def test_a_decided_order_makes_room_for_the_next(self):
        waiting = settle(self.order(), "lantern").result.pending
        self.queue.reject(waiting, self.char2)
        assert settle(self.order(), "lantern").result.pending
