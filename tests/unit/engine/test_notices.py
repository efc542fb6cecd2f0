"""Staff are told when an action starts waiting for approval and when it is decided."""

from __future__ import annotations

from unittest import mock

import evennia
import pytest
from django.test import override_settings
from evennia.server.serversession import ServerSession
from evennia.utils import create
from evennia.utils.ansi import strip_ansi
from support.commands import AICommandTestBase, words

from evennia_ai.commands.runtime import CmdAIConfirm
from evennia_ai.engine import notices
from evennia_ai.memory import block_admin
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import APPROVER_LOCK, get_confirmation_queue
from evennia_ai.tools.base import ToolContext
from evennia_ai.tools.registry import TOOL_REGISTRY

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)

CHANNEL = "ainotices"


class NoticeTestBase(AICommandTestBase):
    """Online: a Builder puppeting ``char1`` and a Player puppeting ``char2``. Offline: an Admin.

    Every ``msg`` of theirs is recorded.
    """

    def setUp(self):
        super().setUp()
        self.undo = []  # before the base's tearDown, which deletes the accounts
        self.account.permissions.clear()
        self.account.permissions.add("Builder")
        self.char1.permissions.clear()
        self.puppet(self.session, self.char1)
        self.player()
        self.puppet(self.connect(self.account2, sessid=2), self.char2)
        self.offline = create.create_account("Offline", email="off@test.com", password="x1y2z3w4")
        self.offline.permissions.add("Admin")
        self.addCleanup(self.offline.delete)
        self.received = {}
        for who in (self.char1, self.char2, self.account, self.account2, self.offline):
            patcher = mock.patch.object(who, "msg")
            self.received[who] = patcher.start()
            self.addCleanup(patcher.stop)
        self.queue = get_confirmation_queue()

    def connect(self, account, sessid: int):
        session = ServerSession()
        session.init_session("telnet", ("localhost", "testmode"), evennia.SESSION_HANDLER)
        session.sessid = sessid
        evennia.SESSION_HANDLER.portal_connect(session.get_sync_data())
        session = evennia.SESSION_HANDLER.session_from_sessid(sessid)
        evennia.SESSION_HANDLER.login(session, account, testmode=True)
        self.undo.append(lambda: evennia.SESSION_HANDLER.pop(sessid, None))
        return session

    def puppet(self, session, character):
        session.puid, session.puppet = character.id, character
        character.sessions.add(session)
        self.undo.append(lambda: character.sessions.remove(session))

    def tearDown(self):
        for step in reversed(self.undo):
            step()
        super().tearDown()

    def notices_to(self, who) -> list[str]:
        calls = self.received[who].call_args_list
        return [c.args[0] for c in calls if c.args and str(c.args[0]).startswith(notices.PREFIX)]

    def make_channel(self):
        channel = create.create_channel(CHANNEL, aliases=["ain"])
        self.addCleanup(channel.delete)
        patcher = mock.patch.object(channel, "msg")
        self.addCleanup(patcher.stop)
        return patcher.start()

    def wait(self, action="execute_command", **arguments) -> str:
        return self.queue.add_entry(self.npc, action, {"arguments": arguments})


class TestWhoIsTold(NoticeTestBase):
    def test_an_online_builder_gets_one_notice_with_the_commands(self):
        cid = self.wait(command="open door")
        (line,) = self.notices_to(self.char1)
        # one notice, its lines wrapped to the session's width under the [AI] tag
        shown = strip_ansi(line).split("\n")
        assert len(shown) == 2 and all(len(text) <= 78 for text in shown)
        assert shown[1].startswith("     aiconfirm/approve")
        line = words(line)
        assert f"Innkeeper(#{self.npc.id}) wants to run execute_command: command: open door" in line
        assert f"aiconfirm/approve {cid}" in line and f"aiconfirm/reject {cid}" in line
        session = self.received[self.char1].call_args.kwargs["session"]
        assert session.sessid == self.session.sessid

    def test_players_and_offline_staff_are_not_told(self):
        self.wait(command="open door")
        for who in (self.char2, self.account2, self.offline, self.account):
            assert not self.notices_to(who), who

    def test_the_approver_lock_is_aiconfirms(self):
        assert CmdAIConfirm.locks == APPROVER_LOCK

    def test_a_memory_block_write_names_the_writer_the_block_and_its_owner(self):
        bard = self.make_npc("Bard")
        payload = {
            "label": "persona",
            "op": "replace_text",
            "args": {"old": "warm", "new": "cold"},
            "author": "Bard",
            "requested_by": bard.id,
            "requested_by_key": "Bard",
        }
        cid = self.queue.add_entry(self.npc, "replace_text", payload, kind="block_write")
        (line,) = self.notices_to(self.char1)
        assert (
            f"Bard(#{bard.id}) wants to replace text in memory block 'persona' of "
            f"Innkeeper(#{self.npc.id}): old: warm; new: cold"
        ) in words(line)
        assert f"aiconfirm/approve {cid}" in line

    def test_a_models_write_to_a_human_block_is_noticed_as_it_is_queued(self):
        load_builtin_tools()
        block_admin.create_block(self.npc, "vows", permission="Human", schema="map")
        result = TOOL_REGISTRY.get("block_set_field").safe_run(
            ToolContext(npc=self.npc, tick_id=3), {"label": "vows", "field": "oath", "value": "x"}
        )
        cid = result.content["confirmation_id"]
        (line,) = self.notices_to(self.char1)
        assert (
            f"Innkeeper(#{self.npc.id}) wants to set field in memory block 'vows': "
            "field: oath; value: x."
        ) in words(line)
        assert f"aiconfirm/approve {cid}" in line


class TestChannel(NoticeTestBase):
    def test_the_named_channel_gets_the_same_line(self):
        channel_msg = self.make_channel()
        with override_settings(EVENNIA_AI_CONFIRMATION_CHANNEL=CHANNEL):
            self.wait(command="open door")
        (line,) = self.notices_to(self.char1)
        channel_msg.assert_called_once()
        sent = channel_msg.call_args.args[0]
        assert words(sent) == words(line)
        # wrapped narrower by the channel's prefix, which its first line gets
        prefix = len(f"[{CHANNEL}] ")
        assert all(len(text) <= 78 - prefix for text in strip_ansi(sent).split("\n"))

    def test_an_alias_names_the_channel_too(self):
        channel_msg = self.make_channel()
        with override_settings(EVENNIA_AI_CONFIRMATION_CHANNEL="ain"):
            self.wait(command="open door")
        assert channel_msg.call_count == 1

    def test_an_unknown_channel_only_logs(self):
        with (
            override_settings(EVENNIA_AI_CONFIRMATION_CHANNEL="nosuchchannel"),
            mock.patch.object(notices.logger, "log_warn") as log_warn,
            mock.patch.object(notices.logger, "log_trace") as log_trace,
        ):
            cid = self.wait(command="open door")
        assert self.queue.get_entry(cid)["status"] == "pending"
        log_warn.assert_called_once()
        assert "nosuchchannel" in log_warn.call_args.args[0]
        log_trace.assert_not_called()
        assert len(self.notices_to(self.char1)) == 1

    def test_no_channel_by_default(self):
        with mock.patch.object(notices.ChannelDB.objects, "get_channel") as get_channel:
            self.wait(command="open door")
        get_channel.assert_not_called()


class TestDecisions(NoticeTestBase):
    def test_an_approval_is_announced_with_its_outcome(self):
        channel_msg = self.make_channel()
        cid = self.wait("say", message="Welcome!")
        with override_settings(EVENNIA_AI_CONFIRMATION_CHANNEL=CHANNEL):
            self.queue.approve(cid, approver=self.offline)  # e.g. from the dashboard
        waiting, decided = self.notices_to(self.char1)
        assert f"Approved {cid} by Offline: Innkeeper's say ran." in decided
        channel_msg.assert_called_once()
        assert words(channel_msg.call_args.args[0]) == words(decided)
        assert not self.notices_to(self.char2)

    def test_a_rejection_is_announced_with_the_reason(self):
        cid = self.wait(command="dig cellar")
        self.queue.reject(cid, rejecter=self.offline, reason="Not during the festival")
        decided = self.notices_to(self.char1)[-1]
        assert (
            f"Rejected {cid} by Offline: Innkeeper's execute_command did not run. "
            "Reason given: Not during the festival."
        ) in words(decided)

    def test_who_decided_in_game_has_the_reply_and_the_channel_the_notice(self):
        channel_msg = self.make_channel()
        cid = self.wait(command="dig cellar")
        with override_settings(EVENNIA_AI_CONFIRMATION_CHANNEL=CHANNEL):
            self.call(CmdAIConfirm(), f"/reject {cid} = no", f"Rejected {cid}: Innkeeper's")
        assert len(self.notices_to(self.char1)) == 1  # the waiting line only
        assert f"Rejected {cid} by Char:" in channel_msg.call_args.args[0]


class TestLiteral(NoticeTestBase):
    def test_markup_in_the_arguments_is_shown_literally_and_long_text_clipped(self):
        command = "say |rRED|n |lclook|ltclick|le " + "x" * 2000
        self.wait(command=command)
        (line,) = self.notices_to(self.char1)
        assert "||rRED||n ||lclook||ltclick||le" in line
        assert "|rRED" not in line.replace("||", "")
        assert len(line) < 400 and "...." not in line

    def test_inline_functions_do_not_run_when_the_game_parses_them(self):
        with override_settings(FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED=True):
            self.wait(command="say $space(300000)")
        (line,) = self.notices_to(self.char1)
        assert "\\$space(300000)" in line

    def test_a_reason_with_markup_is_literal_in_the_decision(self):
        cid = self.wait(command="dig cellar")
        self.queue.reject(cid, rejecter=self.offline, reason="|500no\nnever")
        decided = self.notices_to(self.char1)[-1]
        assert "Reason given: ||500no never." in decided

    def test_the_notice_reads_as_evennia_renders_it(self):
        self.wait(command="say |rRED|n")
        (line,) = self.notices_to(self.char1)
        shown = evennia.utils.ansi.strip_ansi(line)
        assert "say |rRED|n" in shown and "[AI] Innkeeper" in shown


class TestOutageNotices(NoticeTestBase):
    def test_staff_online_are_told_when_an_endpoint_stops_and_starts_answering(self):
        from evennia_ai.engine.outages import BOARD
        from evennia_ai.llm.usage import UsageRecord

        model = "openai/test-model"
        failed = UsageRecord(
            kind="act", model=model, error="connection refused", error_kind="connection"
        )
        with override_settings(EVENNIA_AI_API_BASE="http://127.0.0.1:5100/v1"):
            BOARD.observe([failed] * 5, npc=self.npc)
            BOARD.observe([UsageRecord(kind="act", model=model)])
        started, ended = self.notices_to(self.char1)
        for line in (started, ended):
            assert all(len(text) <= 80 for text in strip_ansi(line).split("\n"))
        started, ended = words(strip_ansi(started)), words(strip_ansi(ended))
        assert started.startswith(
            "[AI] openai/test-model at http://127.0.0.1:5100/v1: model unreachable since"
        )
        assert "Waiting for it: Innkeeper. Lines said meanwhile are answered" in started
        assert "answers again (unreachable since" in ended
        assert not self.notices_to(self.char2)  # players are not told
