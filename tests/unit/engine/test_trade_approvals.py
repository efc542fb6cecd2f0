"""Trades above the approval value wait for a Builder; the approval runs the trade again
through every check, so stock sold meanwhile or a purse emptied meanwhile refuses it."""

from unittest import mock

from django.test.utils import override_settings
from unit.world.test_trade import TradeTestBase

from evennia_ai.engine.confirmations import queue_trade
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.world import trade
from evennia_ai.world.trade import TradeOrder, approval_needed, execute


def trade_words(order):
    return approval_needed(order)


@override_settings(EVENNIA_AI_TRADE_APPROVAL_ABOVE=10)
class ApprovalTestBase(TradeTestBase):
    """A shop whose trades above 10 coins wait for a Builder, and the confirmation queue."""

    def setUp(self):
        super().setUp()
        self.queue = get_confirmation_queue()

    def tearDown(self):
        self.queue.delete()
        super().tearDown()


class TestTradeApprovals(ApprovalTestBase):

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

    def test_an_approval_decided_twice_after_a_crash_runs_its_trade_once(self):
        self.make("lantern")  # a second one: a second run would sell it
        entry_id = queue_trade(self.order(via="words"))
        assert self.queue.approve(entry_id, self.char2)["status"] == "approved"
        # the server died after the trade's commit, before the "decided" write: still pending
        entries = self.queue.attributes.get("entries").deserialize()
        entries[entry_id].update(status="pending", decided_at=None, result=None)
        self.queue.db.entries = entries
        decided = self.queue.approve(entry_id, self.char2)
        assert decided["status"] == "approved"
        assert decided["result"].startswith("The trade was already done (t_")
        assert self.char1.db.coins == 38 and self.npc.db.coins == 112
        assert [obj.key for obj in self.char1.contents].count("lantern") == 1
        assert len(self.npc.ai.ledger["entries"]) == 1

    def test_an_approval_runs_once_after_its_entry_left_the_ledger(self):
        """The ledger keeps the approvals of its trades apart from its bounded entries: an
        approval decided again after its entry dropped out still moves nothing."""
        order = self.order(via="approval", approval="c_old")
        assert execute(order).done
        self.make("lantern")
        with override_settings(EVENNIA_AI_LEDGER_SIZE=1, EVENNIA_AI_TRADE_APPROVAL_ABOVE=None):
            assert execute(self.order(partner=self.char2, via="command")).done
            assert self.npc.ai.ledger["approvals"] == ["c_old"]
            assert [row.get("approval") for row in self.npc.ai.ledger["entries"]] == [None]
            self.make("lantern")
            result = execute(order)
        assert result.done and result.already and "no longer in the ledger" in result.to_model()
        assert self.char1.db.coins == 38 and self.npc.db.coins == 124

    def test_an_approval_found_in_the_ledger_inside_the_transaction_moves_nothing(self):
        order = self.order(via="approval", approval="c_twice")
        assert execute(order).done
        self.make("lantern")
        first = trade._plan  # the check before the transaction misses it; the one inside sees it
        calls = {"n": 0}

        def plan_missing_first(again):
            calls["n"] += 1
            if calls["n"] == 1:
                return first(TradeOrder(**{**again.__dict__, "approval": "c_other"}))
            return first(again)

        with mock.patch.object(trade, "_plan", plan_missing_first):
            result = execute(order)
        assert result.done and result.already and calls["n"] == 2
        assert len(self.npc.ai.ledger["entries"]) == 1 and self.npc.db.coins == 112


@override_settings(EVENNIA_AI_TRADE_APPROVAL_ABOVE=20)
class TestSplitOrders(TradeTestBase):
    """The approval value counts the partner's trades with the NPC in the same real day."""

    def tearDown(self):
        get_confirmation_queue().delete()
        super().tearDown()

    def test_two_orders_under_the_value_make_the_second_wait(self):
        self.make("lantern")
        assert execute(self.order()).done  # 12: under 20
        second = self.order()
        assert trade_words(second) == (
            "Innkeeper sells Char 1 lantern for 12 coins (24 coins with today's earlier trades, "
            "above 20)"
        )
        refused = execute(second).refused
        assert refused == (
            "a trade worth more than 20 coins (with today's earlier trades) needs an operator's "
            "approval first"
        )
        other = self.order(partner=self.char2)  # another partner: counted apart
        assert trade_words(other) is None and execute(other).done

    def test_the_count_starts_again_the_next_real_day(self):
        self.make("lantern")
        assert execute(self.order()).done
        with mock.patch("evennia_ai.world.trade.today", return_value="2999-01-01"):
            assert trade_words(self.order()) is None
