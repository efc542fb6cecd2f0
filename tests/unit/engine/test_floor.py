"""The room's floor: one decision per line says which AI NPCs a line wakes (database tests with
several NPCs in one room; each NPC's tick starts are counted, no model is called)."""

from collections import Counter
from unittest import mock

from django.test import override_settings
from evennia import create_object
from evennia.contrib.rpg.rpsystem.rpsystem import ContribRPCharacter, send_emote
from evennia.objects.objects import DefaultCharacter
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine import audience, floor
from evennia_ai.memory import events as ev
from evennia_ai.npc_state import HOST
from evennia_ai.typeclasses import AIAssistantCharacter, AIAssistantMixin
from evennia_ai.workspace.sleep import go_to_sleep


class RPAssistant(AIAssistantMixin, ContribRPCharacter):
    """An AI NPC in an rpsystem game (short descriptions and recogs)."""


class FloorBase(AssistantTestBase):
    """The Innkeeper and ``NAMES`` in room1 with the connected player char1."""

    NAMES = ("Bard", "Smith", "Guard", "Cook")
    TYPECLASS = AIAssistantCharacter

    def setUp(self):
        super().setUp()
        assert audience.is_player(self.char1)  # the test player is connected
        self.ticks = Counter()
        self.npcs = {"Innkeeper": self.npc}
        self.count_ticks(self.npc)
        for key in self.NAMES:
            self.add_npc(key)

    def add_npc(self, key, typeclass=None, **kwargs):
        npc = create_object(typeclass or self.TYPECLASS, key=key, location=self.room1, **kwargs)
        self.addCleanup(lambda: npc.pk and (npc.ai.script.delete(), npc.delete()))
        self.count_ticks(npc)
        self.npcs[key] = npc
        return npc

    def count_ticks(self, npc):
        def trigger(key=npc.key):
            self.ticks[key] += 1

        npc.ai.script.trigger_tick = trigger

    def woken(self, line, speaker=None, kind="say"):
        """Who ``line`` (said, or posed) wakes: the NPCs whose tick it starts, in key order."""
        before = Counter(self.ticks)
        speaker = speaker or self.char1
        if kind == "pose":
            speaker.location.msg_contents(
                (f"{speaker.key} {line}", {"type": "pose"}), from_obj=speaker
            )
        else:
            speaker.at_say(line)
        return sorted(key for key in self.ticks if self.ticks[key] > before[key])

    def queued(self, npc):
        return [e.text for e in ev.pending_events(npc.ai.event_queue)]

    def heard(self, npc):
        return " ".join(str(entry.get("text")) for entry in npc.ai.context_buffer)


class TestWhoAnswers(FloorBase):
    def test_a_line_to_one_npc_wakes_only_it(self):
        assert self.woken("Bard, play me a song!") == ["Bard"]
        assert self.woken("Is the forge hot today, Smith?") == ["Smith"]
        assert self.woken("Lovely evening, Cook, the pie smells fine") == ["Cook"]
        assert self.queued(self.npcs["Bard"]) == ["Bard, play me a song!"]
        for key in ("Innkeeper", "Guard"):  # the others heard every line, and queued nothing
            assert self.queued(self.npcs[key]) == []
            assert "the pie smells fine" in self.heard(self.npcs[key])
            assert "play me a song" in self.heard(self.npcs[key])
        (event,) = ev.pending_events(self.npcs["Bard"].ai.event_queue)
        assert event.addressed and event.data["floor"] == "named"
        assert event.priority == ev.PRIORITY_ADDRESSED

    def test_an_unaddressed_line_wakes_the_one_talked_with_last(self):
        self.npcs["Cook"].ai.set(HOST, True)
        assert self.woken("Guard, is the road safe?") == ["Guard"]
        assert self.woken("What a lovely evening.") == ["Guard"]
        _, event = ev.pending_events(self.npcs["Guard"].ai.event_queue)
        assert event.data["floor"] == "talked with Char last" and not event.addressed
        assert self.woken("Smith, the usual.") == ["Smith"]
        assert self.woken("And a pie.") == ["Smith"]  # the last one talked with
        later = floor.time.monotonic() + 301
        with mock.patch.object(floor.time, "monotonic", return_value=later):
            assert self.woken("Nice weather.") == ["Cook"]  # that talk is over: the host

    def test_else_the_host_else_the_same_choice_for_the_same_speaker(self):
        first = self.woken("What a lovely evening.")
        assert len(first) == 1
        floor.forget(self.room1)  # a reload: who talked with whom is forgotten
        assert self.woken("What a lovely evening.") == first  # the same choice
        floor.forget(self.room1)
        host = "Cook" if first != ["Cook"] else "Bard"
        self.npcs[host].ai.set(HOST, True)
        assert floor.is_host(self.npcs[host])
        assert self.woken("What a lovely evening.") == [host]
        (event,) = ev.pending_events(self.npcs[host].ai.event_queue)
        assert event.data["floor"] == "room host"

    def test_hello_all_wakes_answerers_plus_one(self):
        assert len(self.woken("Hello all!")) == 2
        assert len(self.woken("Good evening, everyone!")) == 2
        assert self.woken("I ate it all.") != []  # not to everyone: one answers it
        assert len(self.woken("I ate it all.")) == 1
        with override_settings(EVENNIA_AI_ROOM_ANSWERERS=2):
            assert len(self.woken("Evening, folks.")) == 3
        woken = self.woken("Hello all! And you, Smith!")  # named first, then filled up
        assert "Smith" in woken and len(woken) == 2

    def test_naming_every_npc_wakes_no_more_than_the_limit(self):
        line = "Innkeeper, Bard, Smith, Guard, Cook, hello!"
        assert self.woken(line) == ["Bard", "Innkeeper"]  # the first two named
        decision = floor.room_floor(self.room1).last
        assert decision.heard[self.npcs["Cook"].id] == "named with too many others"
        with override_settings(EVENNIA_AI_ROOM_ANSWERERS=0):
            assert self.woken(line) == ["Innkeeper"]

    def test_an_unaddressed_question_is_given_to_one_even_with_answerers_zero(self):
        with override_settings(EVENNIA_AI_ROOM_ANSWERERS=0):
            assert self.woken("What a lovely evening.") == []
            woken = self.woken("What is my horse called?")
            assert len(woken) == 1
            (event,) = ev.pending_events(self.npcs[woken[0]].ai.event_queue)
            assert event.data["floor"] == "question to the room"
            # the player waits for that answer: they hear the "thinking" line if it is slow
            assert audience.waiting_speakers(self.npcs[woken[0]], [event]) == [self.char1]

    def test_a_question_to_a_sleeping_npc_goes_to_one_awake(self):
        go_to_sleep(self.npcs["Smith"], "test")
        with override_settings(EVENNIA_AI_WAKE_WHEN_ADDRESSED=False):
            woken = self.woken("Smith, is the forge hot?")
            assert len(woken) == 1 and woken != ["Smith"]
            decision = floor.room_floor(self.room1).last
            assert decision.heard[self.npcs["Smith"].id] == "named; asleep"
            assert decision.woken == {self.npcs[woken[0]].id: "question nobody named could answer"}
            assert self.woken("Smith, good night.") == []  # not a question: only heard
        assert self.woken("Smith, is the forge hot?") == ["Smith"]  # wakes when addressed

    def test_a_paused_npc_named_only_hears(self):
        self.npcs["Bard"].ai.pause()
        assert self.woken("Bard, a song.") == []
        assert floor.room_floor(self.room1).last.heard[self.npcs["Bard"].id] == "named; paused"
        assert "a song" in self.heard(self.npcs["Bard"])

    def test_a_pose_wakes_the_npc_it_names(self):
        assert self.woken("waves at the Smith.", kind="pose") == ["Smith"]
        assert len(self.woken("sighs.", kind="pose")) == 1  # to the room: one answers


class TestAlone(AssistantTestBase):
    def test_alone_with_one_npc_every_line_is_addressed(self):
        self.speak("What a lovely evening.")
        (event,) = ev.pending_events(self.npc.ai.event_queue)
        assert event.addressed and event.data["floor"] == "alone with you"
        self.speak("Hello Innkeeper!")
        assert ev.pending_events(self.npc.ai.event_queue)[-1].data["floor"] == "named"


class TestOneDecisionPerLine(FloorBase):
    NAMES = tuple(f"Patron{n}" for n in range(9))

    def test_one_decision_per_line_for_ten_listeners(self):
        with mock.patch.object(floor, "_decide_new", wraps=floor._decide_new) as new:
            assert len(self.woken("What a lovely evening.")) == 1
            assert new.call_count == 1
            assert len(self.woken("What a lovely evening.")) == 1  # said again: a new line
            assert new.call_count == 2
            self.woken("Patron3, hello!", speaker=self.char2)
            assert new.call_count == 3
        decision = floor.room_floor(self.room1).last
        assert decision.delivered == {npc.id for npc in self.npcs.values()}

    def test_a_listener_not_woken_notes_why_for_its_trace(self):
        self.woken("Patron1, hello!")
        self.woken("Patron2, hello!")
        notes = floor.heard_notes(self.npcs["Patron5"])
        assert notes == ["heard 2 line(s); not addressed (Char 2)"]
        assert floor.heard_notes(self.npcs["Patron5"]) == []  # read once
        batch = ev.pending_events(self.npcs["Patron1"].ai.event_queue)
        assert floor.woken_notes(batch) == ["woken: named (Char)"]
        self.woken("Nice evening.")  # to the one Char talked with last
        self.woken("Patron1, a song!", speaker=self.npcs["Patron7"])
        batch = ev.pending_events(self.npcs["Patron2"].ai.event_queue)
        assert floor.woken_notes(batch) == [
            "woken: named (Char)",
            "woken: talked with Char last (nobody named)",
        ]
        batch = ev.pending_events(self.npcs["Patron1"].ai.event_queue)
        assert floor.woken_notes(batch)[-1] == "woken: named by Patron7"
        assert floor.heard_notes(self.npcs["Patron5"]) == [
            "heard 2 line(s); not addressed (Char 1, Patron7 1)"
        ]


class TestFloods(FloorBase):
    def test_a_flooding_speaker_is_limited_per_room_naming_npcs_in_turn(self):
        names = list(self.npcs)
        with (
            override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=3),
            mock.patch.object(self.char1, "msg") as told,
        ):
            for i in range(10):
                self.woken(f"{names[i % len(names)]}, hello {i}!")
            assert sum(self.ticks.values()) == 3
            flood_lines = [c for c in told.call_args_list if "so many lines" in str(c)]
            assert len(flood_lines) == 1  # told once, by the NPC the line was for
            assert "Guard cannot follow" in str(flood_lines[0])
            for npc in self.npcs.values():  # every NPC still heard every line
                assert "hello 9" in self.heard(npc) or "hello 9" in str(self.queued(npc))
        # the NPC each flooded line would have woken notes it as dropped, for its next trace
        dropped = sum((npc.ndb.ai_floods or {}).get("Char", 0) for npc in self.npcs.values())
        assert dropped == 10 - 3

    def test_a_speakers_wakes_are_counted_only_as_far_as_the_limit_needs(self):
        """A room keeps at most the limit's number of a speaker's wake times (the newest),
        and none while there is no limit: its flood count costs the same on every line."""
        names = list(self.npcs)
        room_floor = floor.room_floor(self.room1)
        with override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0):
            for i in range(30):
                self.woken(f"{names[i % len(names)]}, hello {i}!")
            assert self.char1.id not in room_floor.speaker_wakes
        with override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=2):
            self.woken(f"{names[0]}, hello again!")
            assert len(room_floor.speaker_wakes[self.char1.id]) == 1
            self.woken(f"{names[1]}, and you!")
            assert len(room_floor.speaker_wakes[self.char1.id]) == 2
            assert self.woken(f"{names[2]}, and you too!") == []  # the limit still holds
            assert len(room_floor.speaker_wakes[self.char1.id]) == 2

    def test_bad_input_naming_everyone_wakes_no_more_than_two(self):
        woken = self.woken("Innkeeper, Bard, Smith, Guard, Cook, hello!")
        assert len(woken) <= 2


class TestNpcTalkEnds(FloorBase):
    NAMES = ("Bard", "Smith")

    def test_npc_lines_are_counted_per_room_whatever_names(self):
        bard, smith, inn = self.npcs["Bard"], self.npcs["Smith"], self.npc
        self.woken("Hello all!")
        ring = [(bard, "Smith"), (smith, "Innkeeper"), (inn, "Bard")] * 3
        woken = [
            self.woken(f"{target}, what do you think?", speaker=speaker) for speaker, target in ring
        ]
        assert sum(len(w) for w in woken) == 4  # EVENNIA_AI_NPC_EXCHANGE_TURNS, per room
        assert woken[:4] == [["Smith"], ["Innkeeper"], ["Bard"], ["Smith"]]
        decision = floor.room_floor(self.room1).last
        assert decision.heard[bard.id] == "the room's NPC talk has had its 4 lines"
        assert "what do you think" in self.heard(bard)
        self.woken("Carry on, you three.")  # a player speaks: the talk may start again
        assert self.woken("Bard, a song?", speaker=smith) == ["Bard"]

    def test_an_npc_line_wakes_only_the_first_it_names_and_never_the_room(self):
        bard = self.npcs["Bard"]
        assert self.woken("Smith, Innkeeper, a toast!", speaker=bard) == ["Smith"]
        assert self.woken("Hello all! Who wants a song?", speaker=bard) == []
        (event,) = ev.pending_events(self.npcs["Smith"].ai.event_queue)
        assert event.priority == ev.PRIORITY_ADDRESSED_BY_NPC and event.addressed
        assert event.data == {**event.data, "floor": "named by Bard", "from_assistant": True}

    def test_a_mob_line_does_not_restart_npc_talk(self):
        parrot = create_object(DefaultCharacter, key="Parrot", location=self.room1)
        self.addCleanup(parrot.delete)
        bard = self.npcs["Bard"]
        for i in range(4):
            assert self.woken(f"Innkeeper, verse {i}.", speaker=bard) == ["Innkeeper"]
        assert self.woken("Innkeeper, verse 4.", speaker=bard) == []
        assert self.woken("Squawk! Pieces of eight!", speaker=parrot) == []
        assert self.woken("Innkeeper, verse 5.", speaker=bard) == []
        assert self.woken("Smith, crackers?", speaker=parrot) == ["Smith"]  # a mob may name
        assert self.woken("Innkeeper, verse 6.", speaker=bard) == []
        self.char1.at_say("psst, carry on", whisper=True, receivers=[self.npc])
        assert self.woken("Innkeeper, verse 7.", speaker=bard) == ["Innkeeper"]

    def test_players_wait_for_nobody_and_npc_batches_wait_for_players(self):
        smith = self.npcs["Smith"]
        assert not floor.player_waiting(smith)
        self.woken("Innkeeper, an ale!")
        assert floor.player_waiting(smith) and not floor.player_waiting(self.npc)
        floor.tick_ended(self.npc, [])  # a compaction first: the ale is still owed
        assert floor.player_waiting(smith)
        taken = ev.pending_events(self.npc.ai.event_queue)
        assert [e.data["floor"] for e in taken] == ["named"]
        floor.tick_ended(self.npc, taken)  # the tick that took the player's line
        assert not floor.player_waiting(smith)
        self.woken("Innkeeper, another!")
        late = floor.time.monotonic() + 3 + floor.WAITING_GRACE_SECONDS + 1
        with (
            override_settings(EVENNIA_AI_TIMEOUT=3),
            mock.patch.object(floor.time, "monotonic", return_value=late),
        ):
            assert not floor.player_waiting(smith)  # a tick that never ended keeps nobody


class TestWaitsThatEnd(FloorBase):
    """A player's wait ends with the tick that takes the line, and only then (or at expiry)."""

    def test_a_line_its_npc_did_not_queue_keeps_nobody_waiting(self):
        smith = self.npcs["Smith"]
        with mock.patch.object(self.npc.ai, "perceive", return_value=False):  # its own flood
            self.char1.at_say("Innkeeper, an ale!")
        assert not floor.player_waiting(smith)

    def test_the_wait_ends_in_the_room_the_line_was_heard_in(self):
        smith = self.npcs["Smith"]
        self.woken("Innkeeper, an ale!")
        taken = ev.pending_events(self.npc.ai.event_queue)
        self.npc.move_to(self.room2, quiet=True)  # it left during its tick
        floor.tick_ended(self.npc, taken)
        assert not floor.player_waiting(smith)

    def test_a_flooding_speakers_lines_are_seen_but_never_written_to_history(self):
        with override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=2):
            for i in range(30):
                self.char1.at_say(f"Lovely evening ({i}).")
        for npc in self.npcs.values():  # the first two woke an NPC: the rest were a flood
            history = str(npc.ai.history)
            assert not any(f"({i})." in history for i in range(2, 30)), npc.key
            kept = [e for e in npc.ai.context_buffer if "Lovely evening" in e["text"]]
            assert kept and not any(e.get("heard") for e in kept[-10:]), npc.key


class TestFloorMemory(FloorBase):
    def test_the_room_stays_flushable_and_a_room_taking_its_id_starts_afresh(self):
        """Evennia's object cache never lets go of an object with ndb data: the floor keeps
        none on the room. A room created with a deleted one's id gets a floor of its own."""
        self.woken("Innkeeper, an ale!")
        assert not self.room1.nattributes.all()
        floor.room_floor(self.room1).npc_lines = 3
        assert floor.floor_of(self.room1).npc_lines == 3
        self.room1.db_date_created = self.room1.db_date_created.replace(year=2001)  # in memory
        assert floor.floor_of(self.room1) is None
        assert floor.room_floor(self.room1).npc_lines == 0


class TestRPSystem(FloorBase):
    NAMES = ()
    TYPECLASS = RPAssistant

    def setUp(self):
        super().setUp()
        self.alice = create_object(ContribRPCharacter, key="Alice", location=self.room1)
        self.addCleanup(self.alice.delete)
        self.alice.sessions.add(self.session)
        self.addCleanup(lambda: self.alice.sessions.remove(self.session))
        self.npc.location = self.room2  # only rpsystem NPCs here
        for key, sdesc in (("Olaf", "a stout barkeep"), ("Tobias", "a lanky guard")):
            self.add_npc(key).sdesc.add(sdesc)
        self.add_npc("Marta").sdesc.add("a tall woman")

    def say(self, speech):
        before = Counter(self.ticks)
        send_emote(
            self.alice,
            list(self.room1.contents),
            f'/Me says, "{speech}"',
            msg_type="say",
            anonymous_add=None,
        )
        return sorted(key for key in self.ticks if self.ticks[key] > before[key])

    def test_rpsystem_sdesc_ref_and_recog_wake_only_that_npc(self):
        assert self.say("/barkeep, an ale please.") == ["Olaf"]
        assert self.say("Barkeep, another!") == ["Olaf"]
        assert self.say("Stout barkeep, and one for my friend.") == ["Olaf"]
        assert self.say("/guard, is the gate open?") == ["Tobias"]
        self.alice.recog.add(self.npcs["Tobias"], "Gatekeeper")
        assert self.say("Gatekeeper, is the gate shut?") == ["Tobias"]
        texts = {key: self.queued(npc) for key, npc in self.npcs.items() if key != "Innkeeper"}
        assert texts["Marta"] == []
        assert "is the gate shut?" in texts["Tobias"][-1]
