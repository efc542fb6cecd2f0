"""A ``say`` shown sentence by sentence while the model is still writing it.

With ``EVENNIA_AI_STREAM_REPLIES`` on (and the NPC's ``stream_replies`` execution setting not
off), the ReAct loop asks the client to stream each ``act`` call of a tick that can speak, and
hands each piece of the answer (a :class:`~evennia_ai.llm.types.StreamDelta`) to one
:class:`ReplyStream`. Three shapes of answer are followed:

- a native ``say`` tool call, the first call of the answer: its arguments are read as partial
  JSON as they arrive (:func:`pydantic_core.from_json`, ``allow_partial="trailing-strings"``);
- plain content, which the loop says aloud through ``say`` when the answer calls no tool
  (``react.py``, ``_text_reply``);
- the JSON tool protocol (:mod:`evennia_ai.llm.json_protocol`), whose content is the JSON text
  of the calls: read partially the same way; only a first call to ``say`` streams.

Any other tool, or a ``say`` after another call, waits for the whole answer as before.

Each time the ``message`` gains a whole sentence (:func:`split_sentences`), the sentence is
queued and the reactor is asked, once for all that is queued, to show it
(``reactor.callFromThread``: the pieces arrive on the model-call loop's thread; one reactor call
per sentence at most, never one per token). There, the say tool's own checks run on it
(:meth:`~evennia_ai.tools.world.Say.utterance`: the whisper and secret guards with the
speakable lines, the length caps, inert output, ``at_pre_say``) before anyone sees it. When one
fails, the rest of the reply is withheld: the lines already shown are whole lines, and the
trace says why. When the whole answer has come, the loop answers the ``say`` call (or the plain
reply) from the stream (:meth:`ReplyStream.finish`) instead of running the tool again: the
sentences not yet shown are shown, and the utterance ends as one, with one result for the model
(the same as a ``say`` that was not streamed), one entry in the history and one count against
the tool rules.

Plain content is said aloud before anyone knows whether the answer goes on to call a tool (the
tool calls come after the text): when one does, what was shown stays said (the trace says so),
the rest of the text is not shown, and the calls run as usual. On the JSON protocol, text
stops streaming at the first ``{`` or code fence.

Example::

    stream = ReplyStream(utterance, tool_name="say", known_tools=["say", "look"])
    result = yield client.complete(messages, tools, on_delta=stream.on_delta)
    stream.seal()
    ... stream.finish(message)  # on the reactor, once the loop has the whole answer
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from evennia.utils import logger
from twisted.internet import reactor

from evennia_ai.llm.errors import reason
from evennia_ai.llm.json_protocol import first_call_so_far, partial_object, starts_as_json
from evennia_ai.llm.types import StreamDelta

#: Words that end with a full stop inside a sentence (lowercase, without the stop).
ABBREVIATIONS = frozenset(
    "mr mrs ms mx dr st jr sr prof mt ft vs etc e.g i.e eg ie no nos vol fig capt cpt col gen "
    "lt sgt cmdr rev hon ave rd sq approx dept est inc ltd co corp op cf al".split()
)
# A sentence's end: its stop(s), closing quotes or brackets, then the space after it.
_STOP = re.compile(r"(?:\.\.\.|[.!?\u2026])+[\"'\u201d\u2019)\]]*(?=\s)")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
# Where plain text turns to JSON or a code fence (the JSON protocol's call after prose).
_CALL_START = re.compile(r"[{\[]|```")

# Modes of a stream: what the answer turned out to be so far.
UNDECIDED, TEXT, NATIVE, JSON, STOPPED = "undecided", "text", "native", "json", "stopped"


def _is_stop(text: str, match: re.Match, final: bool) -> bool | None:
    """Whether the stop ``match`` ends a sentence; None when it cannot be told yet."""
    rest = text[match.end() :]
    following = rest.lstrip()
    if not following:
        return True if final else None
    if following[0].islower():
        return False  # "Well... maybe", '"Stop!" he said'
    stops = match.group(0).rstrip("\"'\u201d\u2019)]")
    if stops != ".":
        return True
    word = _WORD_BEFORE.search(text, 0, match.start())
    if word is None:
        return True
    token = word.group(1).lower().strip(".")
    if token in ABBREVIATIONS:
        return False  # "Mr. Smith"
    return not (len(token) == 1 and token.isalpha())  # an initial: "J. R. Tolkien"


def split_sentences(text: str, start: int = 0, final: bool = False) -> tuple[list[str], int]:
    """The whole sentences of ``text`` from ``start`` on, and where the unfinished rest begins.

    A sentence ends at ``.``, ``!``, ``?``, an ellipsis (``...`` or ``…``), with any closing
    quotes or brackets, followed by a space and a word that does not start in lowercase; not
    at a number's point ("3.5"), an abbreviation ("Mr.", "e.g.") or an initial ("J."). Whether a
    stop ends a sentence is only decided once the next word has begun, unless ``final`` (the
    text is complete): then the rest is the last sentence, with or without a stop.

    Args:
        text: The message as far as it is written.
        start: Where the sentences not yet taken begin (a previous call's second value).
        final: The message is complete.

    Returns:
        ``(sentences, offset)``: the sentences found (stripped, none empty) and the offset of
        what follows them.

    Example:
        >>> split_sentences("Mr. Lee paid 3.5 crowns. He left! And")
        (['Mr. Lee paid 3.5 crowns.', 'He left!'], 33)
    """
    sentences = []
    position = start
    for match in _STOP.finditer(text, start):
        decided = _is_stop(text, match, final)
        if decided is None:
            break
        if not decided:
            continue
        sentence = text[position : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        position = match.end() + (len(text[match.end() :]) - len(text[match.end() :].lstrip()))
    if final and text[position:].strip():
        sentences.append(text[position:].strip())
        position = len(text)
    return sentences, position


class Utterance(Protocol):
    """The game side of one streamed ``say`` (:meth:`evennia_ai.tools.world.Say.utterance`).

    Every method runs on the reactor thread.
    """

    @property
    def shown(self) -> list[str]: ...

    def add(self, sentence: str) -> str | None:
        """Check ``sentence`` and show it (or leave it out, past the output cap); the reason
        when it may not be shown, else None."""
        ...

    def end(self) -> None:
        """The utterance is over: it reaches everyone else as one line (idempotent)."""
        ...

    def result(self, withheld: str | None) -> Any:
        """The say's result for the model (``withheld``: why the rest was not said)."""
        ...


@dataclass
class StreamReport:
    """What a stream did, for the trace.

    Attributes:
        sentences: Sentences shown.
        withheld: Why the rest of the reply was not shown, if it was not.
    """

    sentences: int = 0
    withheld: str | None = None

    def describe(self) -> str:
        """``streamed 2 sentences; withheld the rest: ...`` (for the trace)."""
        text = f"streamed {self.sentences} sentence{'s' if self.sentences != 1 else ''}"
        return f"{text}; withheld the rest: {self.withheld}" if self.withheld else text


@dataclass
class _Reader:
    """What the model-call thread has read of the answer (touched on that thread only)."""

    mode: str = UNDECIDED
    content: str = ""
    name: str = ""
    arguments: str = ""
    message: str = ""
    taken: int = 0  # offset in ``message`` of the first sentence not yet taken
    source: str = UNDECIDED  # the mode the message was read in
    stop_reason: str | None = None
    sentences: list[str] = field(default_factory=list)


class ReplyStream:
    """The consumer of one streamed model call of a tick (see the module docstring).

    Args:
        utterance: Shows checked sentences to the room (the ``say`` tool's).
        tool_name: The name of the speech tool whose first call streams.
        known_tools: The names of the offered tools (the JSON protocol's reading).
        is_cancelled: ``() -> reason or None``: asked on the reactor before each sentence is
            shown (the NPC paused, deleted or moved away: the rest is withheld).
        on_first_words: Called on the reactor once the first sentence is shown (the tick
            stops its "thinking" sign).
        call_from_thread: Hands work to the reactor thread (``reactor.callFromThread``).
    """

    def __init__(
        self,
        utterance: Utterance,
        *,
        tool_name: str = "say",
        known_tools: Iterable[str] = (),
        is_cancelled: Callable[[], str | None] | None = None,
        on_first_words: Callable[[], None] | None = None,
        call_from_thread: Callable[..., Any] | None = None,
    ):
        self.utterance = utterance
        self.tool_name = tool_name
        self.known_tools = tuple(known_tools)
        self.is_cancelled = is_cancelled or (lambda: None)
        self.on_first_words = on_first_words
        self.call_from_thread = call_from_thread or reactor.callFromThread  # type: ignore[attr-defined]
        self.report = StreamReport()
        self._read = _Reader()
        self._lock = threading.Lock()
        self._queued: list[str] = []
        self._scheduled = False
        self._sealed = False  # no more pieces are taken (the call returned, or the tick ended)
        self._done = False  # finished or abandoned: nothing more is shown

    # -- the model-call loop's thread ------------------------------------------------------------
    def on_delta(self, delta: StreamDelta) -> None:
        """Take one piece of the answer (the client calls this on the model-call thread)."""
        if self._sealed or self._read.mode == STOPPED:
            return
        before = len(self._read.sentences)
        if delta.content:
            self._take_content(delta.content)
        for piece in delta.tool_calls:
            self._take_tool_call(piece.index, piece.name, piece.arguments)
        new = self._read.sentences[before:]
        if new:
            self._queue(new)

    def _take_content(self, text: str) -> None:
        reader = self._read
        reader.content += text
        if reader.mode == UNDECIDED:
            opens_json = starts_as_json(reader.content)
            if opens_json is None:
                return
            reader.mode = JSON if opens_json else TEXT
        if reader.mode == TEXT:
            cut = _CALL_START.search(reader.content)
            if cut is not None:  # what comes before a call is a thought: its last words stay
                self._read_message(reader.content[: cut.start()].lstrip())
                self._stop("the answer went on to call tools after its text")
                return
            self._read_message(reader.content.lstrip())
        elif reader.mode == JSON:
            name, arguments = first_call_so_far(reader.content, self.known_tools)
            self._follow_call(name, arguments)

    def _take_tool_call(self, index: int, name: str, arguments: str) -> None:
        reader = self._read
        if reader.mode == TEXT:
            self._stop("the answer went on to call tools after its text")
            return
        if index != 0 or reader.mode not in (UNDECIDED, NATIVE):
            return  # only the answer's first call streams
        reader.mode = NATIVE
        reader.name += name
        reader.arguments += arguments
        if not reader.name:
            return
        if reader.name != self.tool_name:
            self._stop(f"the answer's first call is {reader.name}, not {self.tool_name}")
            return
        self._follow_call(reader.name, partial_object(reader.arguments))

    def _follow_call(self, name: str | None, arguments: object) -> None:
        if name is None:
            return
        if name != self.tool_name:
            self._stop(f"the answer's first call is {name}, not {self.tool_name}")
            return
        if isinstance(arguments, dict) and isinstance(arguments.get("message"), str):
            self._read_message(arguments["message"])

    def _read_message(self, message: str, complete: bool = False) -> None:
        reader = self._read
        if not message.startswith(reader.message[: reader.taken]):
            self._stop("the answer was rewritten while it was being shown")
            return
        reader.message, reader.source = message, reader.mode
        sentences, reader.taken = split_sentences(message, reader.taken, final=complete)
        reader.sentences.extend(sentences)

    def _stop(self, why: str) -> None:
        self._read.mode = STOPPED
        self._read.stop_reason = why

    def _queue(self, sentences: list[str]) -> None:
        with self._lock:
            self._queued.extend(sentences)
            if self._scheduled:
                return
            self._scheduled = True
        self.call_from_thread(self._flush)

    # -- the reactor thread ----------------------------------------------------------------------
    def _take_queued(self) -> list[str]:
        with self._lock:
            queued, self._queued, self._scheduled = self._queued, [], False
        return queued

    def _flush(self) -> None:
        """Show the sentences queued so far (on the reactor)."""
        for sentence in self._take_queued():
            self._show(sentence)

    def _show(self, sentence: str) -> None:
        if self._done or self.report.withheld:
            return
        try:
            why = self.is_cancelled() or self.utterance.add(sentence)
        except Exception as err:  # a game hook failed: nothing more is shown, the tick goes on
            logger.log_trace("evennia_ai: a streamed reply could not be shown")
            why = f"the reply could not be shown ({reason(err)})"
        if why:
            self.report.withheld = why
            return
        before, self.report.sentences = self.report.sentences, len(self.utterance.shown)
        if not before and self.report.sentences and self.on_first_words is not None:
            self.on_first_words()

    @property
    def started(self) -> bool:
        """Whether any sentence was shown (or refused): the stream then answers its call."""
        return bool(self.report.sentences)

    @property
    def follows_text(self) -> bool:
        """Whether what was shown came from plain content (not a tool call's arguments)."""
        return self.started and self._read.source == TEXT

    def seal(self) -> None:
        """Take no more pieces: the model call has returned (on the reactor)."""
        self._sealed = True

    def finish(self, message: str | None) -> Any:
        """Show the rest of ``message`` (the whole answer's), end the utterance, and return the
        say's result (on the reactor, once).

        ``message`` None: the answer did not say what was streamed (it went on to call tools,
        or was cut off); nothing more is shown.
        """
        self.seal()
        self._flush()
        if message is not None and not self.report.withheld and not self._done:
            message = message.strip()
            shown = self._read.message[: self._read.taken].strip()
            if message.startswith(shown):
                rest, _ = split_sentences(message, len(shown), final=True)
                for sentence in rest:
                    self._show(sentence)
            else:
                self.report.withheld = "the whole answer differs from what was shown"
        elif message is None and not self.report.withheld:
            self.report.withheld = self._read.stop_reason or "the answer did not say the rest"
        self._done = True
        self.utterance.end()
        return self.utterance.result(self.report.withheld)

    def abandon(self, why: str) -> None:
        """The tick ended before the answer was used: end the utterance as far as it was shown
        (on the reactor; idempotent)."""
        self.seal()
        if self._done:
            return
        self._done = True
        if self.started:
            self.report.withheld = self.report.withheld or why
            self.utterance.end()
