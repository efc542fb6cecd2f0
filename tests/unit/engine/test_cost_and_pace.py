"""Cost and pace: conversations that end, idle that costs nothing, tools that fit, windows that
are known, and players never left in silence (database tests, loopback model server)."""

from unittest import mock

from django.test import override_settings
from evennia import create_object
from evennia.utils.test_resources import EvenniaCommandTestMixin
from twisted.internet import task
from unit.engine.test_assistant_cycles import ModelBase, call

from evennia_ai.engine import audience
from evennia_ai.engine.tick import TickRunner
from evennia_ai.llm import served_windows, tokens
from evennia_ai.memory import events as ev
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.tools.groups import REQUEST_TOOLS, choose_tools, situation_groups
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.workspace import goals as goals_mod


def offered(request) -> set[str]:
    return {t["function"]["name"] for t in (request.body.get("tools") or [])}


class PlayerBase(EvenniaCommandTestMixin, ModelBase):
    """The test player (char1) is connected and stands in the NPC's room."""

    def setUp(self):
        super().setUp()
        self.char1.sessions.add(self.session)

    def tearDown(self):
        self.char1.sessions.remove(self.session)
        super().tearDown()

    def second_npc(self, key="Bard"):
        bard = create_object(AIAssistantCharacter, key=key, location=self.room1)
        bard.ai.set_persona("A bard.")
        bard.ai.script.trigger_tick = lambda: None
        self.addCleanup(lambda: bard.pk and bard.delete())
        return bard

    def tick_of(self, npc):
        d = npc.ai.script.run_tick()
        return d.result if d is not None else None


class TestConversationsThatEnd(PlayerBase):
    def test_unaddressed_npc_speech_reaches_the_buffer_not_the_queue(self):
        bard = self.second_npc()
        bard.at_say("What a fine evening.")  # char1 and char2 are here too: not addressed
        assert not ev.pending_events(self.npc.ai.event_queue)
        assert "What a fine evening." in str(self.npc.ai.context_buffer)

    def test_addressed_npc_speech_is_answered_after_a_players_line(self):
        bard = self.second_npc()
        bard.at_say("Innkeeper, a song for you?")
        self.speak("Innkeeper, an ale please.")
        events = ev.pending_events(self.npc.ai.event_queue)
        by_speaker = {e.source_name: e.priority for e in events}
        assert by_speaker["Bard"] == ev.PRIORITY_ADDRESSED_BY_NPC < by_speaker["Char"]
        queue, batch = ev.take_batch(self.npc.ai.event_queue)
        assert ev.main_event(batch).source_name == "Char"

    def test_an_exchange_between_npcs_stops_after_its_turns_until_a_player_speaks(self):
        bard = self.second_npc()
        with override_settings(EVENNIA_AI_NPC_EXCHANGE_TURNS=2):
            for i in range(4):
                bard.at_say(f"Innkeeper, line {i}.")
            lines = [e.text for e in ev.pending_events(self.npc.ai.event_queue)]
            assert lines == ["Innkeeper, line 0.", "Innkeeper, line 1."]
            assert "line 3" in str(self.npc.ai.context_buffer)
            self.speak("Carry on, you two.")
            bard.at_say("Innkeeper, line 4.")
            assert "Innkeeper, line 4." in [
                e.text for e in ev.pending_events(self.npc.ai.event_queue)
            ]

    def npc_says(self, npcs, rounds=20):
        """Run ``rounds`` of ticks of ``npcs``; how many of their ticks said something."""
        says = 0
        for _ in range(rounds):
            traces = [self.tick_of(npc) for npc in npcs]
            says += sum(
                1 for t in traces if t for c in t.tool_calls if c.name == "say" and c.success
            )
        return says

    def test_two_npcs_alone_stop_talking(self):
        """Two NPCs with nobody else in the room, naming each other in every line: they stop
        after the room's EVENNIA_AI_NPC_EXCHANGE_TURNS lines (4), not 4 each."""
        bard = self.second_npc()
        for obj in (self.char1, self.char2):
            obj.location = self.room2
        reply = {"tool_calls": [call("say", message="Innkeeper, Bard, and to you, friend!")]}
        self.server.default_reply = reply
        bard.at_say("Good evening, Innkeeper.")
        assert self.npc_says([self.npc, bard]) == 4  # each answers a line of the other's
        assert not ev.pending_events(self.npc.ai.event_queue)
        assert not ev.pending_events(bard.ai.event_queue)

    def test_npc_talk_ends_after_four_lines_per_room_whatever_names(self):
        """Three NPCs in a ring, each naming the next in every line, after one player line:
        at most 4 NPC lines between them (answers to the player not counted), then quiet until
        the player speaks again."""
        bard, smith = self.second_npc(), self.second_npc("Smith")
        ring = {"Innkeeper": "Smith", "Smith": "Bard", "Bard": "Innkeeper"}

        def chatty(body):
            system = str(body["messages"][0]["content"])
            me = next(key for key in ring if f"You are {key}," in system)
            return {"tool_calls": [call("say", message=f"{ring[me]}, what do you think?")]}

        self.server.responder = chatty
        npcs = [self.npc, bard, smith]
        self.speak("Innkeeper, what is the news?")
        # the Innkeeper answers the player (naming Smith), then Smith, Bard, Innkeeper, Smith
        assert self.npc_says(npcs) == 1 + 4
        assert not any(ev.pending_events(npc.ai.event_queue) for npc in npcs)
        assert "what do you think" in str(bard.ai.context_buffer)  # heard, not answered
        self.speak("Carry on, you three.")  # the player speaks: the talk may start again
        assert self.npc_says(npcs) == 1 + 4  # to the one it talked with last, and 4 more


class TestIdleCostsNothing(PlayerBase):
    def setUp(self):
        super().setUp()
        goals, _ = goals_mod.add_goal([], "Polish the tankards", tick=1)
        self.npc.ai.update_goals(lambda _old: goals)
        self.server.default_reply = {"tool_calls": [call("noop")]}
        patch = override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0)
        patch.enable()
        self.addCleanup(patch.disable)

    def test_autonomy_waits_for_an_audience(self):
        self.char1.location = self.room2  # the player leaves
        audience.forget_audience(self.npc)
        assert self.tick() is None
        assert not self.server.requests_to("/v1/chat/completions")
        self.char1.location = self.room1  # and comes back
        assert self.tick().context_type == "tick_autonomous"

    def test_the_audience_lingers_for_its_window(self):
        audience.note_audience(self.npc)
        self.char1.location = self.room2
        with mock.patch.object(audience.time, "time", return_value=audience.time.time() + 5):
            assert self.tick().context_type == "tick_autonomous"
        with (
            mock.patch.object(audience.time, "time", return_value=audience.time.time() + 601),
            mock.patch("evennia_ai.engine.agenda.time.time", return_value=10**10),
        ):
            assert self.tick() is None

    def test_the_audience_note_lives_as_long_as_the_npc_object(self):
        """It is kept on the NPC's object, not in ``ndb``: Evennia's cache must keep the object
        (it keeps any object holding ``ndb`` data, and an AI NPC always holds some)."""
        audience.note_audience(self.npc)
        assert self.npc.nattributes.all()
        assert self.npc.at_idmapper_flush() is False  # not dropped from the cache
        assert audience.last_audience(self.npc) is not None

    def test_a_goal_marked_unwatched_is_worked_on_alone(self):
        self.char1.location = self.room2
        audience.forget_audience(self.npc)
        goal_id = self.npc.ai.goals[0]["id"]
        goals, op = goals_mod.set_needs_audience(self.npc.ai.goals, goal_id, False)
        assert op.success
        self.npc.ai.update_goals(lambda _old: goals)
        assert self.tick().context_type == "tick_autonomous"

    def test_reflection_waits_for_an_audience_unless_asked(self):
        self.char1.location = self.room2
        audience.forget_audience(self.npc)
        with override_settings(EVENNIA_AI_AUTONOMY=False, EVENNIA_AI_REFLECTION_INTERVAL=1):
            self.script.attributes.add("tick_count", 5, category="ai")
            assert self.tick() is None
            self.npc.ai.update("reflection", lambda s: {**s, "requested": True})
            assert self.tick().context_type == "reflection"

    def test_the_setting_off_works_unwatched(self):
        self.char1.location = self.room2
        audience.forget_audience(self.npc)
        with override_settings(EVENNIA_AI_IDLE_NEEDS_AUDIENCE=False):
            assert self.tick().context_type == "tick_autonomous"

    def test_a_sleep_with_nothing_new_makes_no_call(self):
        from evennia_ai.workspace.sleep import go_to_sleep

        with override_settings(EVENNIA_AI_AUTONOMY=False):
            go_to_sleep(self.npc, "test")
            assert self.tick() is None  # no journal, no talk: nothing to consolidate or compact
            assert not self.server.requests_to("/v1/chat/completions")
            assert self.npc.ai.sleep["phase"] == "rest"

    def test_aigoal_marks_a_goal_unwatched(self):
        from evennia_ai.commands.workspace import CmdAIGoal

        goal_id = self.npc.ai.goals[0]["id"]
        self.call(CmdAIGoal(), f"/update Innkeeper = {goal_id} audience=no", "Goal")
        assert self.npc.ai.goals[0]["needs_audience"] is False
        before = self.npc.ai.goals
        out = self.call(CmdAIGoal(), "/add Innkeeper = Sweep audience maybe")
        assert "audience must be yes or no, not 'maybe'" in out
        out = self.call(CmdAIGoal(), f"/update Innkeeper = {goal_id} audience=perhaps")
        assert "audience must be yes or no" in out
        assert self.npc.ai.goals == before  # refused input changes nothing
        self.call(CmdAIGoal(), "/add Innkeeper = Sweep the floor audience no", "Added goal")
        assert self.npc.ai.goals[-1]["needs_audience"] is False
        assert self.npc.ai.goals[-1]["description"] == "Sweep the floor"


class TestToolsThatFit(PlayerBase):
    def test_an_ordinary_event_sends_the_conversation_tools_and_request_tools(self):
        self.server.enqueue({"tool_calls": [call("say", message="Welcome!")]})
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        request = self.server.requests_to("/v1/chat/completions")[0]
        names = offered(request)
        assert {"say", "emote", "look", "noop", REQUEST_TOOLS} <= names
        assert not names & {"dig", "execute_command", "block_set_text", "add_goal"}
        counted = tokens.TokenCounter("gpt-4o-mini").count_tools(request.body["tools"])
        assert counted <= 1000, counted
        assert trace.tool_groups == ["conversation"]

    def test_words_of_the_event_bring_their_group(self):
        assert "memory" in situation_groups('Alice says to you: "Remember my name."')
        assert "items" in situation_groups("", kinds=["give"])
        self.server.enqueue({"tool_calls": [call("noop")]})
        self.speak("Innkeeper, look in your journal please.")
        self.tick()
        assert "review_journal" in offered(self.server.requests_to("/v1/chat/completions")[0])

    def test_request_tools_sends_a_group_with_the_next_request(self):
        self.server.enqueue(
            {"tool_calls": [call(REQUEST_TOOLS, group="goals")]},
            {"tool_calls": [call("add_goal", description="Bake bread")]},
            {"tool_calls": [call("say", message="Done.")]},
        )
        self.speak("Hello Innkeeper!")
        self.tick()
        first, second = self.server.requests_to("/v1/chat/completions")[:2]
        assert "add_goal" not in offered(first) and "add_goal" in offered(second)
        assert [g["description"] for g in self.npc.ai.goals] == ["Bake bread"]

    def test_request_tools_cannot_widen_what_the_npc_may_use(self):
        self.npc.ai.set("tool_deny", ["add_goal"])
        self.server.enqueue(
            {"tool_calls": [call(REQUEST_TOOLS, group="goals")]},
            {"tool_calls": [call("add_goal", description="Bake bread")]},
            {"tool_calls": [call("say", message="Done.")]},
        )
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        second = self.server.requests_to("/v1/chat/completions")[1]
        assert "add_goal" not in offered(second)
        refused = [c for c in trace.tool_calls if c.name == "add_goal"]
        assert refused and not refused[0].success
        assert not self.npc.ai.goals

    def test_choose_tools_keeps_ungrouped_tools_and_sends_all_without_groups(self):
        class Mine:
            name, group, category = "juggle", None, "SAFE_CHAIN"

        class Theirs:
            name, group, category = "dig", "building", "SAFE_CHAIN"

        chosen = choose_tools([Mine(), Theirs()], ["conversation"])
        assert [t.name for t in chosen.offered] == ["juggle", REQUEST_TOOLS]
        assert chosen.withheld == {"building": ["dig"]}
        assert [t.name for t in choose_tools([Mine(), Theirs()], None).offered] == [
            "juggle",
            "dig",
        ]


class TestWindowsThatAreKnown(PlayerBase):
    def tearDown(self):
        tokens.set_served_window("openai/test-model", None)
        tokens.set_served_window("openai/unknown-model", None)
        super().tearDown()

    def test_the_server_reports_its_window(self):
        with ModelServer(models=["unknown-model"], window_of=lambda _m: 32768) as server:
            with override_settings(EVENNIA_AI_API_BASE=server.url, EVENNIA_AI_CONTEXT_WINDOWS={}):
                assert tokens.window_source("openai/unknown-model") == "guess"
                learnt = served_windows.learn_windows(["openai/unknown-model"])
                assert learnt == {"openai/unknown-model": 32768}
                assert tokens.get_context_window("openai/unknown-model") == 32768
                assert tokens.window_source("openai/unknown-model") == "server"
                with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/unknown-model": 4096}):
                    assert (
                        tokens.get_context_window("openai/unknown-model") == 4096
                    )  # operator wins

    def test_ollama_window_is_the_num_ctx_it_runs_with(self):
        with override_settings(EVENNIA_AI_MODEL_SETTINGS={"ollama/llama3": {"num_ctx": 16384}}):
            assert served_windows.probe_window("ollama/llama3") == 16384

    def test_a_server_that_does_not_answer_leaves_a_guess(self):
        assert served_windows.probe_window("openai/x", api_base="http://127.0.0.1:9/v1") is None

    def test_a_guessed_window_warns_in_status_and_aistatus(self):
        from evennia_ai.commands.npcs import CmdAINpc, CmdAIStatus

        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={}):
            self.npc.ai.set_model("openai/unknown-model")
            status = self.npc.ai.status()
            assert status["window_source"] == "guess"
            assert any("is a guess" in w for w in status["warnings"])
            assert "is a guess" in self.call(CmdAIStatus(), "Innkeeper")
            assert "is a guess" in self.call(CmdAINpc(), "/list")


class TestNeverInSilence(PlayerBase):
    def heard(self) -> list[str]:
        return [str(c) for c in self.char1_msg.call_args_list]

    def setUp(self):
        super().setUp()
        self.char1_msg = mock.Mock()
        patch = mock.patch.object(self.char1, "msg", self.char1_msg)
        patch.start()
        self.addCleanup(patch.stop)

    def test_a_slow_model_shows_the_speaker_a_sign(self):
        clock = task.Clock()
        self.server.enqueue({"tool_calls": [call("say", message="Here you are.")]})
        self.speak("Hello Innkeeper!")
        started = {}

        real_start = TickRunner._start_thinking

        def start_and_wait(runner, state):
            real_start(runner, state)
            started["call"] = runner._thinking
            clock.advance(2.5)  # the model takes longer than the delay

        with (
            mock.patch.object(TickRunner, "clock", clock),
            mock.patch.object(TickRunner, "_start_thinking", start_and_wait),
        ):
            self.tick()
        assert any("Innkeeper pauses, thinking." in line for line in self.heard())

    def test_a_fast_model_shows_no_sign(self):
        clock = task.Clock()
        self.server.enqueue({"tool_calls": [call("say", message="Here you are.")]})
        self.speak("Hello Innkeeper!")
        with mock.patch.object(TickRunner, "clock", clock):
            self.tick()
            clock.advance(5)
        assert not any("pauses, thinking" in line for line in self.heard())

    def test_a_failed_model_tells_the_speaker_and_the_log(self):
        self.server.enqueue({"fault": "500"})
        self.speak("Hello Innkeeper!")
        with mock.patch("evennia_ai.engine.bookkeeping.logger.log_err") as log_err:
            self.tick()
        assert any("seems lost in thought" in line for line in self.heard())
        logged = " ".join(str(c) for c in log_err.call_args_list)
        assert "got no answer from model openai/test-model" in logged

    def test_model_failure_and_recovery_are_logged_with_the_npc_model_and_reason(self):
        who = f"evennia_ai [Innkeeper{self.npc.dbref}]"
        self.server.enqueue({"fault": "500"})
        self.speak("Hello Innkeeper!")
        with mock.patch("evennia_ai.engine.bookkeeping.logger.log_err") as log_err:
            trace = self.tick()
        assert log_err.call_args_list == [
            mock.call(
                f"{who}: tick_event tick {trace.tick_id} got no answer from model "
                "openai/test-model: model call failed: the provider failed (500): scripted "
                "server error"
            )
        ]
        self.server.enqueue({"tool_calls": [call("say", message="Sorry, I was miles away.")]})
        with mock.patch("evennia_ai.engine.accounting.logger.log_info") as log_info:
            self.tick()
        assert (
            mock.call(f"{who}: model openai/test-model answers again after 1 failed tick(s)")
            in log_info.call_args_list
        )

    def test_past_the_budget_in_message_mode_the_speaker_is_told(self):
        with override_settings(
            EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1, EVENNIA_AI_BUDGET_EXCEEDED_ACTION="message"
        ):
            from evennia_ai.utils import today

            self.npc.ai.set("metrics", {"daily": {today(): {"tokens": 5, "cost": 0.0}}})
            self.speak("Hello Innkeeper!")
            trace = self.tick()
        assert trace.stop_reason == "budget"
        assert not self.server.requests_to("/v1/chat/completions")
        assert any("seems lost in thought" in line for line in self.heard())

    def test_a_paid_model_with_no_budget_warns(self):
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={}):
            self.npc.ai.set_model("openai/gpt-4o-mini")
            assert any("spending is unbounded" in w for w in self.npc.ai.status()["warnings"])
            with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_SERVER=5):
                assert not any("unbounded" in w for w in self.npc.ai.status()["warnings"])


class TestRefusalsAnsweredAtOnce(PlayerBase):
    """A refused call is not the tick's one action: the model hears why in the same tick."""

    def check(self, fault: str):
        self.server.enqueue({"fault": fault}, {"tool_calls": [call("say", message="Sorry!")]})
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        requests = self.server.requests_to("/v1/chat/completions")
        assert len(requests) == 2
        assert [c.status for c in trace.tool_calls] == ["refused", "ran"]
        assert requests[1].body["messages"][-1]["role"] == "tool"  # the refusal, read back
        assert not ev.pending_events(self.npc.ai.event_queue)

    def test_arguments_that_are_not_json(self):
        self.check("invalid_args")

    def test_an_unknown_tool(self):
        self.check("unknown_tool")

    def test_three_refusals_in_a_row_end_the_tick(self):
        self.server.default_reply = {"tool_calls": [call("no_such_tool")]}
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        assert trace.stop_reason == "error"
        assert len(self.server.requests_to("/v1/chat/completions")) == 3


class TestNoWaitAfterCompaction(PlayerBase):
    def test_a_line_waiting_behind_an_emergency_compaction_is_answered_next(self):
        self.npc.ai.set("compaction", {"pending": True, "reason": "emergency", "last_tick": None})
        self.speak("Innkeeper, another ale!")
        self.server.default_reply = {"tool_calls": [call("noop")]}
        triggered = []
        self.script.trigger_tick = lambda: triggered.append(1)
        assert self.tick().context_type == "pre_compaction"
        assert triggered, "the waiting line must not wait for the next interval"


class TestWhatWasLeftOutIsShown(PlayerBase):
    def test_aitrace_shows_the_groups_sent_and_what_was_dropped(self):
        from evennia_ai.commands.runtime import CmdAITrace

        self.server.enqueue({"tool_calls": [call("say", message="Welcome!")]})
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        self.npc.ai.record_trace({**trace.to_dict(), "shrunk": {"context_buffer": "dropped"}})
        out = self.call(CmdAITrace(), f"/show Innkeeper = {trace.tick_id}")
        assert "tool groups sent: conversation" in out
        assert "left out to fit the window: context_buffer: dropped" in out


class TestQuietNights(PlayerBase):
    def test_a_scheduled_night_after_a_quiet_day_makes_no_call(self):
        with (
            mock.patch("evennia_ai.engine.agenda.in_sleep_window", lambda _s: True),
            override_settings(EVENNIA_AI_SLEEP_SCHEDULE=("22:00", "06:00")),
        ):
            assert self.tick() is None
        assert self.npc.ai.sleep["asleep"] and self.npc.ai.sleep["phase"] == "rest"
        assert not self.server.requests_to("/v1/chat/completions")


class TestBadInputAroundGroups(PlayerBase):
    def test_a_malformed_tool_groups_customisation_is_refused_with_a_message(self):
        from evennia_ai.prompt.contexts import validate_context_customization

        problems = validate_context_customization("tick_event", {"tool_groups": "conversation"})
        assert problems and "tool_groups must be a list of tool group names" in problems[0]
        assert validate_context_customization("tick_event", {"tool_groups": ["items"]}) == []

    def test_request_tools_for_a_group_not_withheld_is_refused_and_adds_nothing(self):
        self.server.enqueue(
            {"tool_calls": [call(REQUEST_TOOLS, group="dragons")]},
            {"tool_calls": [call("say", message="Hello!")]},
        )
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        first, second = self.server.requests_to("/v1/chat/completions")[:2]
        refused = trace.tool_calls[0]
        assert refused.status == "refused" and "group" in refused.error
        assert offered(second) == offered(first)
