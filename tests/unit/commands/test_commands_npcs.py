"""The ainpc and aistatus admin commands."""

import os
from unittest import mock

import pytest
from django.test import Client, modify_settings, override_settings
from support.commands import AICommandTestBase, words

from evennia_ai import conf
from evennia_ai.commands.cmdset import AIAdminCmdSet
from evennia_ai.commands.npcs import COMMANDS, CmdAINpc, CmdAIStatus
from evennia_ai.engine import floor
from evennia_ai.engine.accounting import count_error
from evennia_ai.formatting import timestamp
from evennia_ai.npc.handler import describe_last_error
from evennia_ai.npc.lookup import all_ai_npcs
from evennia_ai.npc_state import npc_state
from evennia_ai.utils import parse_iso
from evennia_ai.web import data as web_data

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)


class NpcCommandTest(AICommandTestBase):
    npc_aliases = ("keeper",)


class TestAINpc(NpcCommandTest):
    def test_exports(self):
        assert COMMANDS == [CmdAINpc, CmdAIStatus]

    def test_usage_and_unknown_switch(self):
        self.call(CmdAINpc(), "", "Usage:")
        self.call(CmdAINpc(), "Innkeeper", "Give a switch")
        out = self.call(CmdAINpc(), "/fly Innkeeper", "Unknown switch /fly. Valid: /list")
        assert "Usage:" in out
        self.call(
            CmdAINpc(),
            "/p Innkeeper",
            "Ambiguous switch /p. Did you mean /pause, /persona, /prompt?",
        )
        self.call(CmdAINpc(), "/pau Innkeeper", "Innkeeper is paused")  # a unique prefix

    def test_list(self):
        out = self.call(CmdAINpc(), "/list", "AI NPCs (1):")
        assert "Innkeeper(#" in out and "running" in out and "within" in out

    def test_create_with_aliases_and_model(self):
        self.call(CmdAINpc(), "/create Marta;barkeep = openai/test-model", "Created AI NPC Marta")
        marta = [n for n in all_ai_npcs() if n.key == "Marta"][0]
        assert marta.location == self.room1
        assert "barkeep" in marta.aliases.all()
        assert marta.ai.model == "openai/test-model"
        assert marta.ai.script is not None and marta.ai.enabled
        assert marta.access(self.char1, "delete")

    def test_create_bad_arguments(self):
        self.call(CmdAINpc(), "/create ;alias", "The NPC needs a name")
        self.call(CmdAINpc(), "/create Innkeeper", "An AI NPC called 'Innkeeper' already exists")
        self.call(CmdAINpc(), "/create Bob = bad model", "A model name has no spaces")
        self.call(
            CmdAINpc(), "/create Bad\x80name", "A name cannot hold control or unassigned characters"
        )
        self.call(CmdAINpc(), "/create " + "x" * 81, "A name can be at most 80 characters long.")
        assert [npc.key for npc in all_ai_npcs()] == ["Innkeeper"]  # nothing was created

    def test_create_refuses_dbref_like_and_empty_names(self):
        self.call(CmdAINpc(), "/create #5", "A name cannot start with #: '#5' reads as a dbref")
        self.call(CmdAINpc(), "/create Marta;#12", "A name cannot start with #: '#12'")
        self.call(CmdAINpc(), "/create |r|n", "A name needs letters or digits")
        self.call(CmdAINpc(), "/create", "Missing NPC name.")
        assert [npc.key for npc in all_ai_npcs()] == ["Innkeeper"]  # nothing was created
        self.call(CmdAINpc(), "/create Marta#2", "Created AI NPC Marta#2")

    def test_create_requires_builder(self):
        self.call(
            CmdAINpc(), "/create Bob", "Only Builders may create AI NPCs", caller=self.player()
        )
        assert not [n for n in all_ai_npcs() if n.key == "Bob"]

    def test_delete(self):
        dbref = self.npc.dbref
        self.call(CmdAINpc(), "/delete Innkeeper", f"Deleted AI NPC Innkeeper({dbref})")
        assert not all_ai_npcs()

    def test_delete_only_ai_npcs(self):
        self.call(CmdAINpc(), "/delete Obj", "No AI NPC called 'Obj'")
        assert self.obj1.pk

    def test_start_stop_pause_resume(self):
        self.call(CmdAINpc(), "/stop Innkeeper", "Innkeeper is stopped")
        assert not self.npc.ai.enabled and not self.npc.ai.script.is_active
        out = self.call(CmdAINpc(), "/list", "AI NPCs")
        assert "stopped" in out
        self.call(CmdAINpc(), "/start keeper", "Innkeeper is enabled")
        assert self.npc.ai.enabled and self.npc.ai.script.is_active
        self.npc.ai.script.trigger_tick = lambda: None
        self.call(CmdAINpc(), "/pause Innkeeper", "Innkeeper is paused")
        assert self.npc.ai.paused
        self.call(CmdAINpc(), "/pause Innkeeper", "Innkeeper is already paused")
        self.call(CmdAINpc(), "/resume Innkeeper", "Innkeeper resumes")
        assert not self.npc.ai.paused
        self.call(CmdAINpc(), "/resume Innkeeper", "Innkeeper is not paused")
        self.call(CmdAINpc(), "/pause Nobody", "No AI NPC called 'Nobody'")

    def test_model_and_persona(self):
        self.call(CmdAINpc(), "/model Innkeeper = openai/gpt-x", "Innkeeper now uses openai/gpt-x")
        assert self.npc.ai.model == "openai/gpt-x"
        self.call(CmdAINpc(), "/model Innkeeper = default", "Innkeeper now uses")
        assert self.npc.ai.model == ""
        self.call(CmdAINpc(), "/model Innkeeper", "Give the model after '='")
        self.call(CmdAINpc(), "/persona Innkeeper = A gruff dwarf.", "Innkeeper's persona is set")
        assert self.npc.ai.persona == "A gruff dwarf."
        self.call(CmdAINpc(), "/persona Innkeeper =", "Missing persona text")

    def test_prompt_is_developer_only(self):
        self.call(CmdAINpc(), "/prompt Innkeeper = Be kind.", "Innkeeper's operator prompt is set")
        assert self.npc.ai.user_system_prompt == "Be kind."
        builder = self.char2
        builder.account.permissions.clear()
        builder.permissions.clear()
        builder.account.permissions.add("Builder")
        assert CmdAINpc().access(builder, "cmd")
        self.call(CmdAINpc(), "/prompt Innkeeper = Be rude.", "Only Developers", caller=builder)
        assert self.npc.ai.user_system_prompt == "Be kind."

    def test_locked_for_players(self):
        player = self.player()
        assert not CmdAINpc().access(player, "cmd")
        assert not CmdAIStatus().access(player, "cmd")
        assert CmdAINpc().access(self.char1, "cmd")
        cmdset = AIAdminCmdSet()
        assert any(cmd.key == "ainpc" for cmd in cmdset.commands)


@override_settings(ROOT_URLCONF="web_test_urls")
@modify_settings(INSTALLED_APPS={"append": "evennia_ai.web"})
class TestHost(NpcCommandTest):
    """The room's host (issue 34): the lines of its room that name no AI NPC go to it first."""

    def web_session(self, permission: str) -> Client:
        """A dashboard session of char2's account with only ``permission``."""
        self.with_permission(permission)
        self.account2.is_staff = False
        client = Client()
        client.force_login(self.account2)
        return client

    def test_ainpc_host_and_dashboard_set_the_flag(self):
        marta = self.make_npc("Marta")
        room = self.room1.key
        floor.room_floor(self.room1)  # the flag is the NPC's, not the room's memory
        self.call_says(CmdAINpc(), "/host Marta", f"Marta is not the host of {room}")
        self.call_says(
            CmdAINpc(),
            "/host Marta = on",
            f"Marta is now the host of {room}: lines there that name no AI NPC go to Marta "
            "first, unless the speaker was talking with another.",
        )
        assert npc_state(marta).host is True and marta.ai.host is True
        self.call_says(CmdAINpc(), "/host Marta", f"Marta is the host of {room}")
        assert "host: yes" in words(self.call(CmdAIStatus(), "Marta"))
        assert "host: no" in words(self.call(CmdAIStatus(), "Innkeeper"))
        listing = words(self.call(CmdAINpc(), "/list", "AI NPCs (2):"))  # its cell may wrap
        innkeeper_row, marta_row = listing.split(f"Innkeeper({self.npc.dbref})")[1].split(
            f"Marta({marta.dbref})"
        )
        assert "(host)" in marta_row and "(host)" not in innkeeper_row
        self.call_says(
            CmdAINpc(),
            "/host Innkeeper = YES",
            f"Innkeeper is now the host of {room}: lines there that name no AI NPC go to "
            f"Innkeeper first, unless the speaker was talking with another. Also hosts there: "
            f"Marta(#{marta.id}); the lowest #id goes first.",
        )
        self.call_says(
            CmdAINpc(), "/host Innkeeper = false", f"Innkeeper is no longer the host of {room}"
        )
        self.call_says(CmdAINpc(), "/host Innkeeper = off", f"Innkeeper is not the host of {room}")
        self.call_says(CmdAINpc(), "/host Marta = on", f"Marta is the host of {room}")
        for bad in ("maybe", "1", "<b>"):
            self.call_says(
                CmdAINpc(),
                f"/host Marta = {bad}",
                f"The host flag is yes or no (on or off, true or false), not '{bad}'.",
            )
        self.call_says(CmdAINpc(), "/host Marta =", "Missing on or off after '='.")
        self.call_says(CmdAINpc(), "/host Nobody = on", "No AI NPC called 'Nobody'")
        assert marta.ai.host is True and self.npc.ai.host is False
        # a Builder may (OPERATE, like the persona); a Player may not run ainpc at all
        self.call_says(
            CmdAINpc(), "/host Marta = off", "Marta is no longer the host", caller=self.builder()
        )
        assert marta.ai.host is False
        assert not CmdAINpc().access(self.player(), "cmd")

        # the dashboard: a select on the NPC page's settings, as a Builder
        builder = self.web_session("Builder")
        url = f"/ai/npc/{marta.id}/control/host/"
        page = builder.post(url, {"value": "yes"}, follow=True).content.decode()
        assert f"Marta is now the host of {room}" in page and marta.ai.host is True
        control = page.split('id="ai-control-host"')[1].split("</form>")[0]
        assert '<option value="yes" selected>yes</option>' in control
        assert "disabled" not in control
        assert f"Marta is the host of {room}" in page.split('id="ai-host-text">')[1]
        listing = builder.get("/ai/").content.decode()
        row = listing.split('data-npc="Marta"')[1].split("</tr>")[0]
        assert "(host)" in row
        page = builder.post(url, {"value": "perhaps"}, follow=True).content.decode()
        assert "The host flag is yes or no" in page and marta.ai.host is True

        # the JSON API follows the dashboard's controls
        api = f"/ai/api/npcs/{marta.id}/settings/host/"
        response = builder.post(api, {"value": "off"}, content_type="application/json")
        assert response.status_code == 200, response.content
        assert response.json()["npc"]["host"] is False and marta.ai.host is False
        assert "Marta is no longer the host" in response.json()["detail"]
        response = builder.post(api, {"value": "perhaps"}, content_type="application/json")
        assert response.status_code == 400 and "yes or no" in response.json()["detail"]
        assert builder.get(f"/ai/api/npcs/{marta.id}/").json()["host"] is False

        # players: 403 on the page and the API, the flag unchanged
        player = self.web_session("Player")
        assert player.post(url, {"value": "yes"}).status_code == 403
        response = player.post(api, {"value": "yes"}, content_type="application/json")
        assert response.status_code == 403
        assert marta.ai.host is False
        assert "host" in web_data.CONTROLS and web_data.control_level("host") == "Builder"

    def test_the_flag_goes_with_the_npc(self):
        """It hosts whichever room it is in; in none, it says so."""
        self.call_says(CmdAINpc(), "/host Innkeeper = on", "Innkeeper is now the host of Room")
        self.npc.location = self.room2
        self.call_says(CmdAINpc(), "/host Innkeeper", f"Innkeeper is the host of {self.room2.key}")
        self.npc.location = None
        self.call_says(
            CmdAINpc(),
            "/host Innkeeper",
            "Innkeeper is a host, in no room at the moment: in a room, the lines there that "
            "name no AI NPC go to Innkeeper first.",
        )
        self.call_says(CmdAINpc(), "/host Innkeeper = off", "Innkeeper is no longer a host.")


class TestAIStatus(NpcCommandTest):
    def test_server_summary_without_args(self):
        out = self.call(CmdAIStatus(), "", "AI NPCs (1)")
        assert "Innkeeper" in out and "Server:" in out

    def test_npc_status(self):
        self.npc.ai.record_trace(
            {
                "tick_id": 3,
                "context_type": "tick_event",
                "stop_reason": "error",
                "error": "model down",
                "started": "2026-01-01T10:00:00+00:00",
            }
        )
        self.npc.ai.update("metrics", lambda m: {**m, "last_error": "model down", "errors": 1})
        out = self.call(CmdAIStatus(), "Innkeeper", f"Innkeeper({self.npc.dbref})")
        for part in (
            "model:",
            "budget: within budget",
            "sleep: awake",
            "queue: 0 pending",
            "#3 2026-01-01 10:00:00 UTC tick_event error",
            "last error: model down (past: later ticks succeeded)",
        ):
            assert part in out, part
        # the last error is shown once, not again among the errors of the last ticks
        assert out.count("model down") == 1 and "errors in the last ticks" not in out

    def test_errors_of_other_ticks_are_listed_under_the_last_one(self):
        for tick, error in ((2, "model down"), (3, "model still down")):
            self.npc.ai.record_trace(
                {
                    "tick_id": tick,
                    "context_type": "tick_event",
                    "stop_reason": "error",
                    "error": error,
                    "started": "2026-01-01T10:00:00+00:00",
                }
            )
            self.npc.ai.update("metrics", lambda m, e=error, t=tick: (count_error(m, e, t), m)[1])
        out = self.call(CmdAIStatus(), "Innkeeper")
        assert "errors in the last ticks:\n    #2 2026-01-01 10:00:00 UTC: model down" in out
        assert out.count("model still down") == 1  # tick 3's is the last error, shown once

    def test_bad_npc(self):
        self.call(CmdAIStatus(), "Nobody", "No AI NPC called 'Nobody'")


class TestSettingSources(NpcCommandTest):
    """``aistatus <npc>`` says where each setting the NPC uses comes from."""

    def settings_lines(self, npc="Innkeeper") -> dict[str, str]:
        out = self.call(CmdAIStatus(), npc)
        block = out.split("settings in use (value - where it comes from):\n", 1)[1]
        lines = {}
        label = ""
        for line in block.splitlines():
            if not line.startswith("    "):
                break
            if line.startswith("     ") and label:  # a long line wrapped to the client's width
                lines[label] += " " + line.strip()
                continue
            label, _, rest = line.strip().partition(": ")
            lines[label] = rest
        return lines

    def test_defaults(self):
        with override_settings(), mock.patch.dict(os.environ, clear=False) as env:
            for name in ("EVENNIA_AI_MODEL", "EVENNIA_AI_API_BASE", "EVENNIA_AI_API_KEY"):
                env.pop(name, None)
            lines = self.settings_lines()
        assert "memory" in lines and "api base" not in lines  # offline model: no endpoint
        assert lines["tokens a day (this NPC)"] == (
            "none - default (EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC)"
        )

    def test_environment_settings_file_and_npc(self):
        self.npc.ai.set_model("openai/npc-model")
        self.npc.ai.set("budget", {"tokens": 500})
        env = {"EVENNIA_AI_API_BASE": "http://127.0.0.1:9/v1", "EVENNIA_AI_API_KEY": "sk-secret"}
        with (
            override_settings(
                EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000, EVENNIA_AI_DAILY_COST_BUDGET_SERVER=2.5
            ),
            mock.patch.dict(os.environ, env),
        ):
            lines = self.settings_lines()
        assert lines["model"] == "openai/npc-model - this NPC's own (set with ainpc/model)"
        assert lines["api base"] == (
            "http://127.0.0.1:9/v1 - environment (EVENNIA_AI_API_BASE; a change applies after "
            "evennia reboot, not reload)"
        )
        assert lines["api key"].startswith("set - environment (EVENNIA_AI_API_KEY;")
        assert "sk-secret" not in str(lines)
        assert lines["tokens a day (this NPC)"] == (
            "500 - this NPC's own budget (tighter than EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC)"
        )
        assert lines["cost a day (server)"] == (
            "$2.50 - settings file (EVENNIA_AI_DAILY_COST_BUDGET_SERVER)"
        )

    def test_per_model_settings_and_wider_npc_budget(self):
        self.npc.ai.set_model("openai/npc-model")
        self.npc.ai.set("budget", {"tokens": 5000})  # an override never widens a limit
        models = {"openai/npc-model": {"api_base": "http://10.0.0.1/v1"}}
        with (
            override_settings(
                EVENNIA_AI_MODEL_SETTINGS=models, EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000
            ),
            mock.patch.dict(os.environ, {"EVENNIA_AI_API_BASE": "http://ignored/v1"}),
        ):
            lines = self.settings_lines()
        assert lines["api base"] == (
            "http://10.0.0.1/v1 - settings file (EVENNIA_AI_MODEL_SETTINGS['openai/npc-model'])"
        )
        assert lines["tokens a day (this NPC)"] == (
            "1,000 - settings file (EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC)"
        )

    def test_server_summary_names_the_default_models_source(self):
        with mock.patch.dict(os.environ, {"EVENNIA_AI_MODEL": "ollama/llama3"}):
            out = self.call(CmdAIStatus(), "")
        assert (
            "Default model: ollama/llama3 - environment (EVENNIA_AI_MODEL; a change applies "
            "after evennia reboot, not reload)"
        ) in words(out)


def test_conf_lookup_names_the_source():
    with override_settings(EVENNIA_AI_TIMEOUT=12.0):
        with mock.patch.dict(os.environ, {"EVENNIA_AI_TIMEOUT": "7"}):
            assert conf.lookup("EVENNIA_AI_TIMEOUT") == (7.0, conf.FROM_ENVIRONMENT)
        with mock.patch.dict(os.environ, {"EVENNIA_AI_TIMEOUT": ""}):
            assert conf.lookup("EVENNIA_AI_TIMEOUT") == (12.0, conf.FROM_SETTINGS)
    assert conf.lookup("EVENNIA_AI_TRACE_RING_SIZE") == (50, conf.FROM_DEFAULT)


class TestLastError(NpcCommandTest):
    """The last error is shown with its tick and time, and as past once a later tick succeeded."""

    def fail_tick(self, tick: int, error: str = "model call failed: openai/x: could not connect"):
        self.npc.ai.update("metrics", lambda m: (count_error(m, error, tick), m)[1])

    def succeed_tick(self):
        self.npc.ai.update("metrics", lambda m: {**m, "consecutive_errors": 0})

    def test_current_then_past(self):
        self.fail_tick(7)
        status = self.npc.ai.status()
        assert status["last_error_current"] and status["last_error_tick"] == 7
        assert parse_iso(status["last_error_time"]) is not None
        shown = describe_last_error(status)
        assert (
            shown
            == f"tick 7, {timestamp(status['last_error_time'])}: model call failed: openai/x: could not connect"
        )
        out = self.call(CmdAIStatus(), "Innkeeper", noansi=False)
        assert "last error: \x1b[1m\x1b[31mtick 7," in out  # red while it lasts
        listing = self.call(CmdAINpc(), "/list")
        assert f"failing: Innkeeper: {shown}" in words(listing)

        self.succeed_tick()
        status = self.npc.ai.status()
        assert not status["last_error_current"]
        out = self.call(CmdAIStatus(), "Innkeeper")
        assert f"last error: {shown} (past: later ticks succeeded)" in words(out)
        assert "failing" not in self.call(CmdAINpc(), "/list")  # hidden once past

    def test_dashboard_data(self):
        self.fail_tick(3, "model call failed: openai/x: server error (HTTP 500): down")
        row = web_data.npc_summary(self.npc)
        assert row["last_error_current"] is True and row["last_error_tick"] == 3
        assert row["last_error_text"].startswith("tick 3, ")
        self.succeed_tick()
        row = web_data.npc_summary(self.npc)
        assert row["last_error_current"] is False
        assert row["last_error_text"].endswith("(past: later ticks succeeded)")

    def test_never_failed(self):
        status = self.npc.ai.status()
        assert describe_last_error(status) == "" and status["last_error_current"] is False
        assert "last error" not in self.call(CmdAIStatus(), "Innkeeper")


class TestNotAnswering(NpcCommandTest):
    """An outage of the model's endpoint, as every command that lists NPCs shows it."""

    def outage(self) -> str:
        from evennia_ai.engine.outages import BOARD
        from evennia_ai.llm.models import resolve_model
        from evennia_ai.llm.usage import UsageRecord

        model = resolve_model(None)
        error = "could not connect: connection refused to http://127.0.0.1:5100/v1"
        failed = UsageRecord(kind="act", model=model, error=error, error_kind="connection")
        BOARD.observe([failed] * 3, npc=self.npc)
        return BOARD.unreachable(model).describe()

    def fitted(self, command, args: str, start: str) -> str:
        """The reply of ``command`` as the caller's screen gets it; every line fits 80 columns.

        (The test harness's ``call`` strips table borders with the line breaks after them, so
        the lines are read as :class:`FitsScreen` sends them.)
        """
        from evennia.utils.ansi import strip_ansi

        from evennia_ai import screen

        sent, real = [], screen.fit_lines

        def fit(text, width):
            sent.append(real(text, width))
            return sent[-1]

        with mock.patch("evennia_ai.commands.base.screen.fit_lines", fit):
            self.call(command, args, start)
        text = strip_ansi("\n".join(sent))
        wide = [line for line in text.split("\n") if len(line) > 80]
        assert not wide, wide
        return text

    def test_every_npc_on_the_endpoint_is_listed_as_not_answering(self):
        cook = self.make_npc("Cook")
        status = self.outage()
        out = self.fitted(CmdAINpc(), "/list", "AI NPCs (2):")
        text = words(out)
        assert "running" not in text
        assert f"not answering: Innkeeper: {status}" in text
        assert f"not answering: Cook: {status}" in text
        assert cook.ai.status()["state_label"] == status

    def test_aistatus_says_why_instead_of_running(self):
        status = self.outage()
        out = self.fitted(CmdAIStatus(), "", "AI NPCs (1)")
        assert f"Innkeeper({self.npc.dbref}) {status} -" in words(out)
        out = self.fitted(CmdAIStatus(), "Innkeeper", f"Innkeeper({self.npc.dbref}) at")
        text = words(out)
        assert f": {status}" in text.split(" enabled:")[0]
        assert f"not answering: {status}: " in text and "3 calls in a row" in text
        assert "connection refused to http://127.0.0.1:5100/v1" in text

    def test_held_npcs_say_so_in_the_same_status(self):
        self.npc.ai.set_user_system_prompt("x")
        self.npc.attributes.add("user_system_prompt", ["not text"], category="ai")
        out = words(self.call(CmdAIStatus(), "Innkeeper", None))
        assert "not answering: held: its stored user_system_prompt cannot be read" in out

    def test_when_it_is_back_it_runs_again(self):
        from evennia_ai.engine.outages import BOARD
        from evennia_ai.llm.models import resolve_model
        from evennia_ai.llm.usage import UsageRecord

        self.outage()
        BOARD.observe([UsageRecord(kind="act", model=resolve_model(None))])
        out = words(self.call(CmdAINpc(), "/list", "AI NPCs (1):"))
        assert "running" in out and "not answering" not in out
