"""Trades above the approval value wait for a Builder; the approval runs the trade again
through every check, so stock sold meanwhile or a purse emptied meanwhile refuses it."""

from django.test.utils import override_settings
from unit.world.test_trade import TradeTestBase

from evennia_ai.engine.confirmations import queue_trade
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.world.trade import execute


@override_settings(EVENNIA_AI_TRADE_APPROVAL_ABOVE=10)
class TestTradeApprovals(TradeTestBase):
    def setUp(self):
        super().setUp()
        self.queue = get_confirmation_queue()

    def tearDown(self):
        self.queue.delete()
        super().tearDown()

    def test_an_approved_trade_runs_once_with_its_approval_recorded(self):
        order = self.order(via="words")
        assert "needs an operator's approval" in execute(order).refused
        entry_id = queue_trade(order)
        entry = self.queue.get_entry(entry_id)
        assert entry["kind"] == "trade" and "(above 10)" in entry["reason"]
        decided = self.queue.approve(entry_id, self.char2)
        assert decided["status"] == "approved", decided["result"]
        assert self.lantern.location == self.char1 and self.char1.db.coins == 38
        [row] = self.npc.ai.ledger["entries"]
        assert (row["via"], row["approval"]) == ("approval", entry_id)

    def test_approval_rechecks_stock_and_purse(self):
        entry_id = queue_trade(self.order(via="words"))
        self.char1.db.coins = 4  # spent meanwhile
        decided = self.queue.approve(entry_id, self.char2)
        assert decided["status"] == "failed" and decided["refused"]
        assert decided["result"] == (
            "refused at approval: Char has only 4 coins; 1 lantern at 12 coins cost 12"
        )
        assert self.lantern.location == self.npc and self.npc.db.coins == 100

    def test_approval_racing_a_direct_purchase_is_refused_clearly(self):
        entry_id = queue_trade(self.order(via="words"))
        with override_settings(EVENNIA_AI_TRADE_APPROVAL_ABOVE=None):
            assert execute(self.order(partner=self.char2, via="command")).done  # Bob buys it
        decided = self.queue.approve(entry_id, self.char2)
        assert decided["result"] == "refused at approval: the lantern is sold out"
        assert self.lantern.location == self.char2
        assert (self.char1.db.coins, self.char2.db.coins, self.npc.db.coins) == (50, 18, 112)
        assert len(self.npc.ai.ledger["entries"]) == 1

    def test_an_order_whose_partner_is_gone_is_refused(self):
        entry_id = queue_trade(self.order(partner=self.char2, via="words"))
        self.char2.delete()
        decided = self.queue.approve(entry_id, self.char1)
        assert decided["result"] == "refused at approval: Char2 no longer exists"
        assert self.lantern.location == self.npc
