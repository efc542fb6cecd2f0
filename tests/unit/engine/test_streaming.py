"""A say shown while the model writes it: the consumer alone (sentences, partial JSON, the
three shapes of answer, batching, late pieces), then whole ticks of an assistant in a test
game answered by a fake streaming client (what players see, the say's checks on each sentence,
one utterance, the same result and requests as without streaming).
"""

import json
import random
from collections import deque
from unittest import mock

import pytest
from django.test import override_settings
from evennia import create_object
from twisted.internet import defer
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine import streaming
from evennia_ai.engine.react import streams
from evennia_ai.engine.recording import RecordingClient
from evennia_ai.engine.streaming import ReplyStream, split_sentences
from evennia_ai.engine.tick import TickRunner
from evennia_ai.llm.json_protocol import (
    first_call_so_far,
    parse_tool_calls_from_text,
    partial_object,
    starts_as_json,
)
from evennia_ai.llm.types import LLMResult, LLMUsage, StreamDelta, ToolCall, ToolCallDelta
from evennia_ai.testing.scripted_model import ScriptedModel
from evennia_ai.tools import world
from evennia_ai.tools.base import ToolResult
from evennia_ai.typeclasses import AIAssistantCharacter


# -- sentences ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, sentences",
    [
        ("Hello there. How are you? Fine!", ["Hello there.", "How are you?", "Fine!"]),
        ("Mr. Lee paid 3.5 crowns. He left.", ["Mr. Lee paid 3.5 crowns.", "He left."]),
        ("Ask Dr. Ames, e.g. tonight. Or not.", ["Ask Dr. Ames, e.g. tonight.", "Or not."]),
        ("J. R. R. Tolkien wrote it. Yes.", ["J. R. R. Tolkien wrote it.", "Yes."]),
        ("Well... maybe. Wait... No.", ["Well... maybe.", "Wait...", "No."]),
        ("So\u2026 Then we go.", ["So\u2026", "Then we go."]),
        ('"Stop!" he said. She ran.', ['"Stop!" he said.', "She ran."]),
        ('She said "Go." Then left.', ['She said "Go."', "Then left."]),
        ("It costs 12.50 today. 3 left.", ["It costs 12.50 today.", "3 left."]),
        ("No stop at the end", ["No stop at the end"]),
        ("Two (really!) Ok.", ["Two (really!)", "Ok."]),
        ("", []),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text, final=True)[0] == sentences


def test_a_stop_is_only_decided_once_the_next_word_begins():
    assert split_sentences("Hello there.") == ([], 0)
    assert split_sentences("Hello there. ") == ([], 0)
    assert split_sentences("Hello there. H") == (["Hello there."], 13)
    assert split_sentences("Wait... m") == ([], 0)  # "Wait... maybe": not a sentence yet
    assert split_sentences("Hello there. How", 13) == ([], 13)


def test_sentences_are_found_from_where_the_last_ones_ended():
    text = "One. Two. Three. Fo"
    first, offset = split_sentences(text[:7])
    rest, end = split_sentences(text, offset)
    assert first + rest == ["One.", "Two.", "Three."]
    assert text[end:] == "Fo"


# -- partial JSON (the JSON protocol, native arguments) ------------------------------------------
def test_a_json_reply_is_read_as_far_as_it_is_written():
    assert starts_as_json('  {"tool"') is True
    assert starts_as_json("```json\n{") is True
    assert starts_as_json("Hello") is False
    assert starts_as_json("   ") is None and starts_as_json("``") is None
    assert first_call_so_far('{"tool": "sa') == (None, None)  # the name is not written yet
    assert first_call_so_far('{"tool": "say", "arguments": {"message": "Hi. Th') == (
        "say",
        {"message": "Hi. Th"},
    )
    assert first_call_so_far('{"tool_calls": [{"tool": "look", "arguments": {}}, {"tool": "s')[
        0
    ] == ("look")
    assert partial_object('{"message": "caf\\u00') == {"message": "caf"}
    assert partial_object("not json") is None


# -- the consumer --------------------------------------------------------------------------------
class Room:
    """A fake utterance: records what it was asked to show; refuses sentences containing
    ``refuse``."""

    def __init__(self, refuse=None):
        self.shown = []
        self.refuse = refuse
        self.ended = 0

    def add(self, sentence):
        if self.refuse and self.refuse in sentence:
            return f"Refused: {self.refuse}"
        self.shown.append(sentence)
        return None

    def end(self):
        self.ended += 1

    def result(self, withheld):
        speech = " ".join(self.shown)
        return ToolResult.fail(withheld) if withheld else ToolResult.ok(speech)


class Reactor:
    """``callFromThread`` that queues; :meth:`run` is the reactor's turn."""

    def __init__(self):
        self.queue = []
        self.calls = 0

    def __call__(self, fn, *args):
        self.calls += 1
        self.queue.append((fn, args))

    def run(self):
        queue, self.queue = self.queue, []
        for fn, args in queue:
            fn(*args)


def stream_of(room=None, **kwargs):
    reactor = Reactor()
    stream = ReplyStream(
        room or Room(), call_from_thread=reactor, known_tools=["say", "look"], **kwargs
    )
    return stream, reactor


def native(*pieces, index=0, name="say"):
    deltas = [StreamDelta(tool_calls=(ToolCallDelta(index=index, name=name),))]
    deltas += [StreamDelta(tool_calls=(ToolCallDelta(index=index, arguments=p),)) for p in pieces]
    return deltas


def chunks(text, size):
    return [text[i : i + size] for i in range(0, len(text), size)]


MESSAGE = 'Caf\u00e9 "Chez L\u00e9a" opens at 6. Mr. Brown says \U0001f600 to you. Sit!'
SENTENCES = ['Caf\u00e9 "Chez L\u00e9a" opens at 6.', "Mr. Brown says \U0001f600 to you."]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_native_say_arguments_split_anywhere_even_mid_escape(size):
    arguments = json.dumps({"message": MESSAGE})  # \" and \u00e9 and a surrogate pair
    assert "\\ud83d\\ude00" in arguments and '\\"' in arguments
    stream, reactor = stream_of()
    for delta in native(*chunks(arguments, size)):
        stream.on_delta(delta)
        reactor.run()
    assert stream.utterance.shown == SENTENCES  # the last waits for the whole answer
    result = stream.finish(MESSAGE)
    assert stream.utterance.shown == [*SENTENCES, "Sit!"]
    assert result.success and result.content == MESSAGE  # the assembled text is the reply


def test_random_chunkings_show_the_same_sentences():
    arguments = json.dumps({"message": MESSAGE})
    rng = random.Random(33)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(arguments)), rng.randint(1, 30)))
        pieces = [arguments[a:b] for a, b in zip([0, *cuts], [*cuts, len(arguments)])]
        stream, reactor = stream_of()
        for delta in native(*pieces):
            stream.on_delta(delta)
        reactor.run()
        stream.finish(MESSAGE)
        assert stream.utterance.shown == [*SENTENCES, "Sit!"], pieces


def test_the_json_protocol_say_streams():
    content = json.dumps({"tool": "say", "arguments": {"message": "One here. Two there. Three"}})
    stream, reactor = stream_of()
    for piece in chunks("```json\n" + content + "\n```", 4):
        stream.on_delta(StreamDelta(content=piece))
    reactor.run()
    assert stream.utterance.shown == ["One here.", "Two there."]
    stream.finish("One here. Two there. Three")
    assert stream.utterance.shown == ["One here.", "Two there.", "Three"]


def test_the_json_protocol_streams_only_a_first_say():
    for first in ({"tool": "look", "arguments": {}}, {"tool": "remember", "arguments": {}}):
        content = json.dumps(
            {"tool_calls": [first, {"tool": "say", "arguments": {"message": "Hi. Ho. Hu."}}]}
        )
        stream, reactor = stream_of()
        for piece in chunks(content, 3):
            stream.on_delta(StreamDelta(content=piece))
        reactor.run()
        assert stream.utterance.shown == [] and not stream.started
        assert reactor.calls == 0


def test_a_native_call_other_than_say_is_not_streamed():
    stream, reactor = stream_of()
    for delta in native('{"message": "Hi. Ho. Hu."}', name="shout"):
        stream.on_delta(delta)
    for delta in native('{"message": "Hi. Ho. Hu."}', index=1):  # a say after another call
        stream.on_delta(delta)
    reactor.run()
    assert stream.utterance.shown == [] and reactor.calls == 0


def test_plain_content_streams_and_the_assembled_text_is_the_reply():
    text = "Evening, Alice. The stew is lamb tonight. Sit anywhere you like."
    stream, reactor = stream_of()
    for word in text.split(" "):
        stream.on_delta(StreamDelta(content=word + " "))
        reactor.run()
    assert stream.utterance.shown == ["Evening, Alice.", "The stew is lamb tonight."]
    assert stream.follows_text
    result = stream.finish(text)
    assert result.content == text


def test_text_before_a_json_call_stops_and_its_last_sentence_is_not_shown():
    stream, reactor = stream_of()
    for piece in ["Hello Bob. ", "I should greet him. ", '{"tool": "say", ', '"arguments": {']:
        stream.on_delta(StreamDelta(content=piece))
    reactor.run()
    assert stream.utterance.shown == ["Hello Bob."]  # shown before the JSON began
    result = stream.finish(None)
    assert "call tools" in stream.report.withheld and not result.success
    assert stream.utterance.ended == 1


def test_text_then_a_native_tool_call_stops_the_text():
    stream, reactor = stream_of()
    stream.on_delta(StreamDelta(content="Let me look. Then "))
    for delta in native('{"target": "here"}', name="look"):
        stream.on_delta(delta)
    stream.on_delta(StreamDelta(content="More words. And more."))
    reactor.run()
    assert stream.utterance.shown == ["Let me look."]
    stream.finish(None)
    assert stream.report.describe() == (
        "streamed 1 sentence; withheld the rest: the answer went on to call tools after its text"
    )


def test_a_later_sentence_that_fails_a_check_withholds_the_rest():
    stream, reactor = stream_of(Room(refuse="cellar"))
    for delta in native(json.dumps({"message": "Welcome. The cellar key is here. Enjoy."})):
        stream.on_delta(delta)
    reactor.run()
    result = stream.finish("Welcome. The cellar key is here. Enjoy.")
    assert stream.utterance.shown == ["Welcome."]
    assert not result.success and stream.report.withheld == "Refused: cellar"
    assert stream.report.describe() == "streamed 1 sentence; withheld the rest: Refused: cellar"


def test_pieces_are_handed_to_the_reactor_in_batches_not_per_token():
    stream, reactor = stream_of()
    words = ("Word " * 40 + "end. ") * 3 + "Tail"
    for word in words.split(" "):
        stream.on_delta(StreamDelta(content=word + " "))
    assert reactor.calls == 1  # everything queued meanwhile goes in the one pending call
    reactor.run()
    assert len(stream.utterance.shown) == 3
    for word in "Again here. And again. X".split(" "):
        stream.on_delta(StreamDelta(content=" " + word))
        reactor.run()
    assert reactor.calls == 3  # one per sentence at most, never one per token


def test_a_piece_after_the_call_returned_or_the_tick_ended_is_dropped():
    stream, reactor = stream_of()
    stream.on_delta(StreamDelta(content="First one. Sec"))
    reactor.run()
    stream.seal()
    stream.on_delta(StreamDelta(content="ond one. Third one. Fourth"))
    reactor.run()
    assert stream.utterance.shown == ["First one."]
    stream.abandon("the tick was cancelled")
    stream.on_delta(StreamDelta(content="Fifth. Sixth. "))
    reactor.run()
    assert stream.utterance.shown == ["First one."] and stream.utterance.ended == 1
    assert stream.report.withheld == "the tick was cancelled"


def test_a_cancelled_tick_shows_nothing_more_and_the_first_words_are_announced_once():
    cancelled = []
    first_words = []
    stream, reactor = stream_of(
        is_cancelled=lambda: cancelled[0] if cancelled else None,
        on_first_words=lambda: first_words.append(1),
    )
    stream.on_delta(StreamDelta(content="One. Two. "))
    stream.on_delta(StreamDelta(content="Three"))
    reactor.run()
    cancelled.append("the NPC moved away")
    stream.on_delta(StreamDelta(content=". Four. Five"))
    reactor.run()
    assert stream.utterance.shown == ["One.", "Two."] and first_words == [1]
    assert stream.report.withheld == "the NPC moved away"


def test_a_failing_game_hook_withholds_the_rest_and_the_call_still_ends():
    class Broken(Room):
        def add(self, sentence):
            if self.shown:
                raise KeyError("speech")
            return super().add(sentence)

    stream, reactor = stream_of(Broken())
    stream.on_delta(StreamDelta(content="One. Two. Three. Four"))
    reactor.run()
    result = stream.finish("One. Two. Three. Four")
    assert stream.utterance.shown == ["One."] and stream.utterance.ended == 1
    assert not result.success and stream.report.withheld == (
        "the reply could not be shown (an unexpected error; the log has the details)"
    )


def test_a_rewritten_answer_shows_nothing_more():
    stream, reactor = stream_of()
    stream.on_delta(StreamDelta(content="One. Two. Th"))
    reactor.run()
    result = stream.finish("Something else entirely. Two.")
    assert stream.utterance.shown == ["One.", "Two."] and not result.success
    assert "differs" in stream.report.withheld


# -- whole ticks in a test game ------------------------------------------------------------------
class FakeReactor:
    """The reactor as a stream sees it: ``callFromThread`` queues; :meth:`run` is its turn."""

    def __init__(self):
        self.queue = []

    def callFromThread(self, fn, *args):  # noqa: N802 (Twisted's name)
        self.queue.append((fn, args))

    def run(self):
        queue, self.queue = self.queue, []
        for fn, args in queue:
            fn(*args)


class StreamingModel:
    """Answers like the plugin's client (``complete(..., on_delta=None)``): with a sink, each
    answer goes to it in small pieces first, the reactor's queued work run between them.

    Answers: ``("say", message)``, ``("calls", [(name, arguments), ...])``, ``("text", text)``
    or ``("json", object)`` (the JSON tool protocol: the content is the object's JSON).
    """

    supports_streaming = True

    def __init__(self, reactor, piece=5):
        self.reactor = reactor
        self.piece = piece
        self.answers = deque()
        self.requests = []
        self.sinks = []
        self.between = None  # called with the piece's number after each piece
        self.before_answer = None  # called once every piece was sent, before the answer

    def resolve_model(self, model=None):
        return model or "fake/model"

    def complete(self, messages, tools=None, *, model=None, on_delta=None, **options):
        self.requests.append({"messages": messages, "tools": tools, "streamed": bool(on_delta)})
        deltas, result = self._answer(*(self.answers.popleft() if self.answers else ("calls", [])))
        if on_delta is not None:
            self.sinks.append(on_delta)
            for number, delta in enumerate(deltas):
                on_delta(delta)
                self.reactor.run()
                if self.between:
                    self.between(number)
        if self.before_answer:
            self.before_answer()
        return defer.succeed(result)

    def _answer(self, kind, value):
        usage = LLMUsage(prompt_tokens=100, completion_tokens=20, total_tokens=120)
        if kind == "say":
            kind, value = "calls", [("say", {"message": value})]
        if kind == "calls":
            deltas, calls = [], []
            for index, (name, arguments) in enumerate(value):
                raw = json.dumps(arguments)
                deltas.append(StreamDelta(tool_calls=(ToolCallDelta(index=index, name=name),)))
                deltas += [
                    StreamDelta(tool_calls=(ToolCallDelta(index=index, arguments=part),))
                    for part in chunks(raw, self.piece)
                ]
                calls.append(ToolCall(f"call_{index}", name, arguments, raw_arguments=raw))
            return deltas, LLMResult(tool_calls=calls, usage=usage, model="fake/model")
        content = value if kind == "text" else json.dumps(value)
        deltas = [StreamDelta(content=part) for part in chunks(content, self.piece)]
        if kind == "text":
            return deltas, LLMResult(text=content, usage=usage, model="fake/model")
        text, calls = parse_tool_calls_from_text(content, ["say", "look"])
        result = LLMResult(text=text, tool_calls=calls, usage=usage, native_tools=False)
        return deltas, result


def heard(msg_mock) -> list[str]:
    """The say lines of the Innkeeper a patched ``msg`` received, as plain text."""
    out = []
    for call in msg_mock.call_args_list:
        text = call.kwargs.get("text", call.args[0] if call.args else None)
        if isinstance(text, tuple) and (text[1] or {}).get("type") == "say":
            if world._text_of(text).startswith("Innkeeper"):
                out.append(world._text_of(text))
    return out


REPLY = "Evening, Char. The stew is lamb tonight. Sit anywhere you like."
SECRET = "The cellar key is hidden under the third barrel"


class StreamedTickTest(AssistantTestBase):
    """An assistant whose ticks are answered by :class:`StreamingModel`; Char2 watches."""

    def setUp(self):
        super().setUp()
        self.reactor = FakeReactor()
        self.model = StreamingModel(self.reactor)
        for patcher in (
            mock.patch("evennia_ai.engine.tick.get_client", return_value=self.model),
            mock.patch.object(streaming, "reactor", self.reactor),
        ):
            patcher.start()
            self.addCleanup(patcher.stop)
        self.watcher = mock.patch.object(self.char2, "msg").start()
        self.addCleanup(mock.patch.stopall)
        self.seen_before_answer = None
        self.model.before_answer = lambda: setattr(self, "seen_before_answer", heard(self.watcher))

    def answer(self, *answers, line="Hello Innkeeper!"):
        self.model.answers.extend(answers)
        self.speak(line)
        trace = self.tick()
        assert trace is not None, self.npc.ai.metrics.get("last_error")
        return trace

    def say_call(self, trace):
        return next(c for c in trace.tool_calls if c.name == "say")

    def test_the_first_sentence_is_shown_while_the_model_still_writes(self):
        trace = self.answer(("say", REPLY))
        assert self.model.requests[0]["streamed"]
        assert self.seen_before_answer == [
            'Innkeeper says, "Evening, Char."',
            'Innkeeper adds, "The stew is lamb tonight."',
        ]
        assert heard(self.watcher) == [
            *self.seen_before_answer,
            'Innkeeper adds, "Sit anywhere you like."',
        ]
        call = self.say_call(trace)
        assert call.status == "ran" and call.stream == "streamed 3 sentences"
        assert call.result == f'You said: "{REPLY}" Heard by: Char, Char2.'

    def test_streaming_off_is_todays_say_with_the_same_result_and_request(self):
        streamed = self.say_call(self.answer(("say", REPLY)))
        streamed_lines = heard(self.watcher)
        self.watcher.reset_mock()
        with override_settings(EVENNIA_AI_STREAM_REPLIES=False):
            whole = self.say_call(self.answer(("say", REPLY)))
        assert heard(self.watcher) == [f'Innkeeper says, "{REPLY}"']
        assert not self.model.requests[1]["streamed"] and self.seen_before_answer == []
        assert whole.result == streamed.result and whole.stream == ""
        # the assembled text is the reply as a say not streamed shows it
        spoken = " ".join(line.split('"', 1)[1][:-1] for line in streamed_lines)
        assert spoken == REPLY
        # the request is the same but for the sink (the client adds only stream fields)
        first, second = self.model.requests[0], self.model.requests[1]
        assert first["tools"] == second["tools"]

    def test_an_npc_can_have_streaming_off(self):
        self.npc.ai.set_execution_config(stream_replies="off")
        self.answer(("say", REPLY))
        assert not self.model.requests[0]["streamed"]
        assert heard(self.watcher) == [f'Innkeeper says, "{REPLY}"']

    def test_a_streamed_say_is_one_utterance(self):
        other = create_object(AIAssistantCharacter, key="Barmaid", location=self.room1)
        self.addCleanup(other.delete)
        before = len(self.npc.ai.history)
        trace = self.answer(("say", REPLY))
        says = [c for c in trace.tool_calls if c.name == "say"]
        assert len(says) == 1 and says[0].status == "ran"
        added = self.npc.ai.history[before:]
        replies = [m for m in added if m.get("role") == "assistant"]
        assert len(replies) == 1 and json.loads(
            replies[0]["tool_calls"][0]["function"]["arguments"]
        ) == {"message": REPLY}
        # another assistant hears the whole line once, as it hears a say not streamed
        lines = [entry.get("text", "") for entry in other.ai.context_buffer]
        assert sum(line.startswith("Innkeeper") for line in lines) == 1
        assert any(REPLY in line for line in lines)
        # the whisper guard's window noted it once
        window = self.npc.ndb.ai_spoken_window
        assert window[self.char2.dbref].count("evening char") == 1

    def test_a_later_sentence_repeating_a_whisper_is_withheld_and_the_line_ends_cleanly(self):
        self.char1.at_say(SECRET, whisper=True, receivers=[self.npc])
        reply = f"Good evening. {SECRET}, they say. Enjoy your stay."
        trace = self.answer(("say", reply), line="Innkeeper, any news?")
        assert heard(self.watcher) == ['Innkeeper says, "Good evening."']
        call = self.say_call(trace)
        assert call.status == "error" and "whispered to you in private" in call.error
        assert 'Only the first part was said: "Good evening."' in call.error
        assert call.stream.startswith("streamed 1 sentence; withheld the rest: Refused")

    def test_markup_in_a_sentence_is_inert(self):
        reply = "Ale is |lcbuy ale|ltcheap|le here.|/It costs $random(1,5) coins. Cheers!"
        with override_settings(FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED=True):
            self.answer(("say", reply))
            expected = world.inert(reply)
        lines = heard(self.watcher)
        assert len(lines) == 2 and "|l" not in "".join(lines) and "\\$random" in lines[0]
        spoken = " ".join(line.split('"', 1)[1][:-1] for line in lines)
        assert spoken == expected

    def test_a_say_after_another_call_is_not_streamed(self):
        self.answer(("calls", [("look", {}), ("say", {"message": REPLY})]))
        assert self.model.requests[0]["streamed"] and self.seen_before_answer == []

    def test_the_json_protocol_say_streams(self):
        trace = self.answer(("json", {"tool": "say", "arguments": {"message": REPLY}}))
        assert self.seen_before_answer[:1] == ['Innkeeper says, "Evening, Char."']
        assert len(heard(self.watcher)) == 3
        assert self.say_call(trace).result == f'You said: "{REPLY}" Heard by: Char, Char2.'

    def test_plain_text_streams_as_said(self):
        trace = self.answer(("text", REPLY))
        assert self.seen_before_answer[:1] == ['Innkeeper says, "Evening, Char."']
        call = self.say_call(trace)
        assert call.id == "text_reply" and call.stream == "streamed 3 sentences"

    def test_a_piece_after_the_tick_ended_is_dropped(self):
        self.answer(("say", REPLY))
        lines = heard(self.watcher)
        late = self.model.sinks[-1]
        late(StreamDelta(tool_calls=(ToolCallDelta(index=0, arguments=" More. And more. X"),)))
        self.reactor.run()
        assert heard(self.watcher) == lines

    def test_a_tick_cancelled_mid_reply_shows_nothing_more(self):
        self.model.between = lambda number: number == 6 and self.npc.ai.pause()
        trace = self.answer(("say", REPLY))
        assert heard(self.watcher) == ['Innkeeper says, "Evening, Char."']
        assert trace.stop_reason == "cancelled"

    def test_the_output_cap_counts_the_whole_utterance(self):
        with override_settings(EVENNIA_AI_MAX_OUTPUT_CHARS=30):
            streamed = self.say_call(self.answer(("say", REPLY)))
            expected = world.inert(REPLY)
            lines = heard(self.watcher)
            with override_settings(EVENNIA_AI_STREAM_REPLIES=False):
                whole = self.say_call(self.answer(("say", REPLY)))
        assert lines == [
            'Innkeeper says, "Evening, Char."',
            'Innkeeper adds, "The stew is la\u2026"',
        ]
        assert " ".join(line.split('"', 1)[1][:-1] for line in lines) == expected
        assert streamed.result == whole.result and streamed.status == "ran"

    def test_the_thinking_sign_stops_at_the_first_words(self):
        stops = []
        original = TickRunner._stop_thinking

        def stop(runner):
            stops.append(1)
            original(runner)

        self.model.before_answer = lambda: setattr(self, "stops_before_answer", len(stops))
        with mock.patch.object(TickRunner, "_stop_thinking", stop):
            self.answer(("say", REPLY))
        assert self.stops_before_answer == 1


class Transport:
    """A client whose coroutine takes ``on_delta`` and says so (as the plugin's does)."""

    supports_streaming = True

    async def acomplete(self, messages, tools=None, *, model=None, on_delta=None, **options):
        raise NotImplementedError

    def complete(self, messages, tools=None, **options):
        raise NotImplementedError


def test_only_a_client_that_says_it_streams_is_streamed():
    from evennia_ai.llm.client import UnifiedLLMClient

    assert streams(UnifiedLLMClient())
    assert streams(StreamingModel(FakeReactor()))
    assert streams(Transport())
    assert streams(RecordingClient(Transport(), []))  # a recorded tick passes it through
    assert not streams(ScriptedModel())  # the loop's older tests: requests as before

    class Quiet(Transport):
        supports_streaming = False

    class Unsure(Transport):
        supports_streaming = "yes"  # only True is a yes

    assert not streams(Quiet()) and not streams(Unsure())
