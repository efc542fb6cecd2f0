"""The streamed say's consumer, without a game: sentences, partial JSON, modes, batching.

The game side (the checks, what players see, one utterance) is in ``test_streaming_tick.py``.
"""

import json
import random

import pytest

from evennia_ai.engine.streaming import ReplyStream, split_sentences
from evennia_ai.llm.json_protocol import first_call_so_far, partial_object, starts_as_json
from evennia_ai.llm.types import StreamDelta, ToolCallDelta
from evennia_ai.tools.base import ToolResult


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


def test_a_rewritten_answer_shows_nothing_more():
    stream, reactor = stream_of()
    stream.on_delta(StreamDelta(content="One. Two. Th"))
    reactor.run()
    result = stream.finish("Something else entirely. Two.")
    assert stream.utterance.shown == ["One.", "Two."] and not result.success
    assert "differs" in stream.report.withheld
