"""The ReAct loop: model call, tool calls, results back, repeat, until a typed stop reason.

One :class:`ReactLoop` runs one tick's thinking for one assistant. It runs on the reactor
thread: the model call is a Deferred from the LLM client (a thread underneath), world tools run
inline on the reactor (they touch the ORM), ASYNC_REQUIRED tools may return a Deferred and get
a timeout. The loop never raises for anything the model or the provider does: bad tool calls
become error results the model sees, provider failures end the tick with ``StopReason.ERROR``.

How the :class:`~evennia_ai.prompt.execution_pattern.ExecutionPattern` is honoured:

- ``single_action``: one model call; only its first tool call runs (the others are answered
  with a "not run" result so the history stays a valid chat transcript), except that
  ``bookkeeping`` tools (memory and journal notes) placed before it run too.
- ``react_loop``: model call, every tool call of the response in order, results back to the
  model, repeat, at most ``max_iterations`` model calls.
- ``plan_execute``: a first model call without tools asks for a short numbered plan, which is
  kept in the conversation; then the loop runs as ``react_loop``. The planning call is traced
  as ``kind="plan"`` and does not count toward ``max_iterations`` (it cannot act), but its
  tokens count toward the tick's limits.
- TERMINAL tools end the loop when ``terminal_ends_loop``; an exit-loop tool rule ends it too,
  a continue-loop rule keeps it going.
- At most one DANGEROUS tool per tick. With ``dangerous_requires_confirm`` it is not run: it is
  handed to ``on_dangerous`` (which stores a pending confirmation), the model's history is told
  so, and the tick ends with ``StopReason.AWAITING_APPROVAL`` in every execution mode (calls
  after it in the same answer are not run). Whoever the tick was answering hears the NPC's
  approval line (:func:`~evennia_ai.engine.audience.tell_speakers`, no model call), unless
  the NPC already spoke this tick.
- A plain-text reply with no tool call is spoken through the speech tool when the context offers
  one, and otherwise only recorded in the trace.
- With ``EVENNIA_AI_STREAM_REPLIES`` (and the NPC's ``stream_replies`` execution setting) on, an
  ``act`` call of a loop that may ``say`` is streamed when the client takes ``on_delta``: the
  first sentence of a ``say`` call (or of plain text) is shown while the model still writes,
  and that ``say`` is then answered from its :class:`~evennia_ai.engine.streaming.ReplyStream`
  rather than run again (:mod:`evennia_ai.engine.streaming`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from evennia.utils import logger
from twisted.internet import defer, reactor
from twisted.python.failure import Failure

from evennia_ai import conf
from evennia_ai.engine import audience, scheduler
from evennia_ai.engine.streaming import ReplyStream
from evennia_ai.engine.trace import IterationTrace, StopReason, TickTrace, ToolCallTrace
from evennia_ai.llm import tokens
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.types import LLMResult, ToolCall
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.prompt.builder import BuiltContext, schema_name
from evennia_ai.tools.base import TickServices, Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.rules import ToolRuleState
from evennia_ai.utils import defuse_tags, log_prefix, truncate
from evennia_ai.wording import APPROVAL_PENDING_RESULT
from evennia_ai.wording import PLAN_INSTRUCTION as PLAN_INSTRUCTION
from evennia_ai.wording import TOOL_RESULT_LABEL

SPEECH_TOOL_NAMES = ("say", "reply", "respond", "speak")
#: Tools whose successful call means the NPC spoke to someone this tick (so no approval line
#: is added for it).
SPOKEN_TOOL_NAMES = SPEECH_TOOL_NAMES + ("whisper", "page")
CHARS_PER_TOKEN = 3  # a cautious characters-per-token ratio for cutting tool results

# Opens a tool result kept as a user message ("[Tool result:"), to recognise one.
_RESULT_LABEL_START = TOOL_RESULT_LABEL.partition("{")[0].rstrip()


class Timer(Protocol):
    """A call scheduled by a :class:`Clock`."""

    def active(self) -> bool: ...

    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the loop needs of the reactor: tool timeouts (a ``task.Clock`` in tests)."""

    def callLater(self, delay: float, function: Callable[[], None], /) -> Timer: ...


@dataclass(frozen=True)
class TickLimits:
    """Caps on the model calls of one loop (a ``delegate_task`` helper's); None means no cap.

    The day's budgets are not here: the loop asks ``ctx.services`` before every call
    (:meth:`~evennia_ai.tools.base.TickServices.over_budget`).

    Attributes:
        max_tokens: Prompt plus completion tokens the loop's calls may use in total.
        max_cost: USD they may spend (only enforced where litellm knows the cost).
    """

    max_tokens: int | None = None
    max_cost: float | None = None

    def allows(self, used_tokens: int, used_cost: float, request_tokens: int) -> bool:
        """Whether a request of ``request_tokens`` may be sent after the loop's calls so far.

        Args:
            used_tokens: Prompt plus completion tokens of the loop's calls so far.
            used_cost: USD they cost.
            request_tokens: Prompt tokens of the request about to be sent.
        """
        if self.max_tokens is not None and used_tokens + request_tokens > self.max_tokens:
            return False
        return self.max_cost is None or used_cost < self.max_cost


@dataclass
class LoopRequest:
    """A first request the prompt builder did not make (a helper's), for :class:`ReactLoop`.

    A tick's loop starts from the builder's :class:`~evennia_ai.prompt.builder.BuiltContext`,
    which has the same fields.

    Attributes:
        messages: Chat messages exactly as they will be sent.
        tool_schemas: The tool schemas it was made with; None: those of the loop's tools.
        sections: Token count per prompt section, for the trace.
        total_tokens: Tokens of the request as sent, as its maker counted them; None when it
            was not counted: then the loop counts none of its requests (the client's gate
            still checks each against the window).
        limit: Most prompt tokens one request may have; 0 for the model's
            (:func:`~evennia_ai.llm.tokens.request_limit`).
    """

    messages: list[dict]
    tool_schemas: list[dict] | None = None
    sections: dict[str, int] = field(default_factory=dict)
    total_tokens: int | None = None
    limit: int = 0


FirstRequest = BuiltContext | LoopRequest
"""What a :class:`ReactLoop` starts from: the builder's request, or one made by hand."""


@dataclass
class LoopOutcome:
    """What a finished loop hands back to the tick runner.

    Attributes:
        stop_reason: Why the loop ended.
        trace: The tick trace with every iteration added.
        new_messages: Assistant and tool messages produced this tick (for the history).
        final_text: The last text the model produced, if any.
        failures: Tool calls that failed or were refused this tick.
        confirmations: Ids of pending confirmations created this tick.
        tool_names: Names of the tools that ran successfully, in order.
    """

    stop_reason: StopReason
    trace: TickTrace
    new_messages: list[dict] = field(default_factory=list)
    final_text: str | None = None
    failures: int = 0
    confirmations: list[str] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)


def _named_error(result) -> str:
    """A failed call's error naming the model as the operator configured it (``openai/x: ...``);
    the client's "every model failed - a: ...; b: ..." already names each."""
    error = str(result.error)
    model = getattr(result, "model", "") or ""
    if not model or error.startswith(("every model failed", f"{model}:")):
        return error
    return f"{model}: {error}"


def _category(tool) -> str:
    return str(getattr(tool, "category", "") or "")


def _speech_tool(tools: dict) -> Any:
    for name in SPEECH_TOOL_NAMES:
        if name in tools:
            return tools[name]
    return None


def streams(client) -> bool:
    """Whether ``client`` says it streams (``supports_streaming``: its calls take
    ``on_delta``; the plugin's client does, a scripted or replayed one does not): only then is
    a reply streamed."""
    return getattr(client, "supports_streaming", False) is True


def _speech_arguments(tool, text: str) -> dict:
    """Arguments that make the speech tool say ``text``: its first required string field."""
    params = getattr(tool, "parameters", None) or {}
    props = params.get("properties", {}) or {}
    required = params.get("required") or list(props)
    for name in required:
        if (props.get(name) or {}).get("type", "string") == "string":
            return {name: text}
    return {"message": text}


class ReactLoop:
    """Run one tick's ReAct loop (or a helper's) from the tick's context and its first request.

    What the tick lends is read from ``ctx.services``
    (:class:`~evennia_ai.tools.base.TickServices`): the model ``client`` and the ``model``, the
    execution ``pattern``, the ``tools`` this loop may call (already filtered by context,
    categories, locks and the NPC's tool set), the NPC's tool ``rules`` and the ``rule_state``
    counting them (a helper's services carry its parent's, so the helper's calls join the
    tick's count; None starts a count), ``budget_reached`` (today's budgets, counting every call
    of the tick; asked before every model call) and the tick's ``usage`` accountant, on which
    every model call is recorded. The loop puts its ``rule_state`` and its :meth:`offer_tools`
    there for the tools.

    What the request holds is read from ``request``: the messages, the tool schemas it was built
    with, the sections (for the trace), its token count and its limit, the most prompt tokens
    one request may have. The first call is not counted again; each later request is counted
    with the model's counter (:func:`~evennia_ai.llm.tokens.request_counter`), unless the maker
    did not count the first (a helper's): then none is, and the client's gate checks the window.
    Before each call the loop collapses this tick's older tool results to stay under the limit;
    a request still over it is not sent (``context_overflow``, worded by
    :func:`~evennia_ai.llm.tokens.overflow_message`).

    Args:
        ctx: The tick's ToolContext, handed to every tool.
        request: The first request: the builder's
            :class:`~evennia_ai.prompt.builder.BuiltContext`, or a :class:`LoopRequest`.
        trace: The TickTrace to fill.
        schemas: The tool schemas of the first request when the caller narrowed them to the
            tools of ``ctx.services``; None narrows ``request.tool_schemas`` here (every tool's
            schema when the request names none).
        is_cancelled: Called before and after every model call; returns a reason string when
            the tick must stop (NPC paused, deleted or moved), else None.
        on_dangerous: ``(tool, arguments, ctx) -> confirmation id``; stores a pending
            confirmation. Required for DANGEROUS tools to be runnable under confirmation.
        limits: Caps on this loop's own model calls (a helper's budget); None: none.
        record_as: Record this loop's calls under this kind and leave them out of ``trace``'s
            totals (a ``delegate_task`` helper: the tick adds them to its own trace); None
            records them as ``act``/``plan`` calls already in ``trace``.
        clock: The reactor (or a ``task.Clock`` in tests) for tool timeouts.
        on_first_words: Called on the reactor when the first sentence of a streamed reply is
            shown (the tick stops its "thinking" sign).
        stream_replies: False: never stream (the NPC's ``stream_replies`` execution setting);
            None or True: as ``EVENNIA_AI_STREAM_REPLIES`` says.
        askers: Returns who the tick answers (the speakers waiting for it); they hear the NPC's
            approval line when a call is parked for approval and it has not spoken. None: no
            one is told.

    Raises:
        ValueError: ``ctx.services`` has no model client.
    """

    MAX_CONSECUTIVE_FAILURES = 3
    """Failed tool calls in a row that end the tick with ERROR."""

    def __init__(
        self,
        ctx: ToolContext,
        request: FirstRequest,
        *,
        trace: TickTrace,
        schemas: list[dict] | None = None,
        is_cancelled: Callable[[], str | None] | None = None,
        on_dangerous: Callable[[Tool, dict, ToolContext], str] | None = None,
        limits: TickLimits | None = None,
        record_as: str | None = None,
        clock: Clock | None = None,
        on_first_words: Callable[[], None] | None = None,
        stream_replies: bool | None = None,
        askers: Callable[[], list] | None = None,
    ):
        services = ctx.services
        if services.client is None:
            raise ValueError("the tick lends this loop no model client (ctx.services.client)")
        self.ctx, self.services, self.request, self.trace = ctx, services, request, trace
        self.client = services.client
        self.model = services.model
        self.pattern = services.pattern
        self.tools = {tool.name: tool for tool in services.tools}
        self.rule_state = self._join_rule_state(services)
        services.offer_tools = self.offer_tools
        self.is_cancelled = is_cancelled or (lambda: None)
        self.on_dangerous = on_dangerous
        self.limits = limits or TickLimits()
        self.record_as = record_as
        self.kind = record_as or ctx.context_type  # the call's contract
        self.clock = clock
        self.on_first_words = on_first_words
        self.stream_replies = stream_replies
        self.askers = askers
        self._stream: ReplyStream | None = None  # the last model call's, until it is answered
        self._live: tuple[ReplyStream, ToolCall] | None = None  # a streamed say call's
        # this loop's own calls (its limits count them); each record goes on to the tick's
        self.spent = UsageAccountant(parent=services.usage)
        self._measure_request(request, schemas)
        self.max_calls_per_reply = max(1, conf.get_int("EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY"))
        self._tick_start: int | None = None  # index of the first message this loop added
        self.dangerous_used = False
        self.outcome = LoopOutcome(stop_reason=StopReason.ERROR, trace=trace)
        self._consecutive_failures = 0
        self._only_bookkeeping = False  # the last answer's calls were all note-taking
        self._only_refused = False  # the last answer's calls were all refused before running

    def _join_rule_state(self, services: TickServices) -> ToolRuleState:
        """The count of calls this loop's rules hold over: the services' (a helper shares its
        parent's), else a new one, which the tools then find there."""
        if services.rule_state is None:
            services.rule_state = ToolRuleState(list(services.rules), available=list(self.tools))
        return services.rule_state

    def _measure_request(self, request: FirstRequest, schemas: list[dict] | None) -> None:
        """The first request's schemas and tokens; how later requests are counted and capped."""
        built_schemas = request.tool_schemas
        if schemas is None:
            schemas = (
                [s for s in built_schemas if schema_name(s) in self.tools]
                if built_schemas is not None
                else [tool.to_schema() for tool in self.tools.values()]
            )
        self.schemas = list(schemas)
        self.sections = dict(request.sections)
        counted = request.total_tokens is not None
        self.count_tokens = tokens.request_counter(self.model) if counted else None
        # the maker's count holds while the pattern left every tool in the request
        same_tools = built_schemas is None or len(self.schemas) == len(built_schemas)
        self._first_request_tokens = request.total_tokens if same_tools else None
        self.request_limit = int(request.limit or tokens.request_limit(resolve_model(self.model)))
        self.result_chars = max(
            400,
            int(self.request_limit * conf.get_float("EVENNIA_AI_TOOL_RESULT_SHARE"))
            * CHARS_PER_TOKEN,
        )

    # -- helpers -------------------------------------------------------------------------------
    def offer_tools(self, names) -> list[str]:
        """Send the schemas of ``names`` with the next request (``request_tools``).

        Only tools this loop may run are added (the tick's filter, categories, locks and
        pattern chose them); returns the names added.
        """
        sent = {schema_name(s) for s in self.schemas}
        added = [n for n in names if n in self.tools and n not in sent]
        self.schemas = self.schemas + [self.tools[n].to_schema() for n in added]
        return added

    @property
    def single_action(self) -> bool:
        return self.pattern.mode == "single_action" or not self.pattern.multi_tool_enabled

    def _budget_left(self, request_tokens: int) -> bool:
        if self.services.over_budget():
            return False
        return self.limits.allows(self.spent.tokens, self.spent.cost, request_tokens)

    def _rule_refusal(self, tool_name: str) -> str | None:
        """Why the tool rules refuse ``tool_name`` now (counting the whole tick), or None."""
        return self.rule_state.check(tool_name, available=self.tools)

    def _count(self, messages: list, schemas: list) -> int:
        if self.count_tokens is None:
            return 0
        try:
            return int(self.count_tokens(messages, schemas))
        except Exception:
            return 0

    def _set_loop_state(self, iteration: int, pending: list[str]) -> None:
        state = self.ctx.state
        state.iteration = iteration + 1
        state.max_iterations = self.pattern.max_iterations
        state.tools_this_cycle = list(self.outcome.tool_names)
        state.pending_tools = list(pending)
        state.in_chain = not self.single_action

    def _finish(self, reason: StopReason, error: str | None = None) -> LoopOutcome:
        self.outcome.stop_reason = reason
        self.trace.stop_reason = reason.value
        if error:
            self.trace.error = error
        return self.outcome

    # -- the loop ------------------------------------------------------------------------------
    @defer.inlineCallbacks
    def run(self):
        """Run the loop on the first request's messages. Fires with a LoopOutcome."""
        messages = list(self.request.messages)
        self._tick_start = len(messages)
        try:
            if self.pattern.mode == "plan_execute" and not self.single_action:
                stopped = yield self._plan(messages)
                if stopped is not None:
                    return stopped
            max_iterations = 1 if self.single_action else max(1, int(self.pattern.max_iterations))
            iteration, extended = 0, False
            while iteration < max_iterations:
                self._only_bookkeeping = self._only_refused = False
                stopped = yield self._iterate(iteration, messages)
                if stopped is not None:
                    return stopped
                iteration += 1
                if self.single_action and iteration == max_iterations:
                    if self._only_refused:
                        # a refused call (bad arguments, an unknown tool) is not the one action:
                        # the refusal goes back to the model at once; three in a row end the tick
                        max_iterations += 1
                    elif self._only_bookkeeping and not extended:
                        # notes are not the one action: one more call, for the answer itself
                        max_iterations, extended = max_iterations + 1, True
            return self._finish(StopReason.MAX_ITERATIONS)
        except Exception as err:  # a bug of ours: end the tick cleanly, keep the Script alive
            logger.log_trace(f"{log_prefix(self.ctx.npc)}: ReAct loop failed")
            return self._finish(StopReason.ERROR, f"internal error: {err}")

    def _request_tokens(self, messages: list[dict], schemas: list, kind: str) -> int:
        """Tokens of the request about to be sent: the maker's count for the first, else
        counted; this tick's older tool results collapsed while it is over the limit."""
        known, self._first_request_tokens = self._first_request_tokens, None
        if known is not None and kind == "act" and schemas == self.schemas:
            request_tokens = int(known)  # the builder counted this very request
        else:
            request_tokens = self._count(messages, schemas)
        if request_tokens > self.request_limit:
            request_tokens = self._collapse(messages, schemas, request_tokens)
        return request_tokens

    def _refusal_to_send(self, request_tokens: int) -> LoopOutcome | None:
        """The outcome when the request must not be sent (over the limit, over budget)."""
        if request_tokens > self.request_limit:
            return self._finish(
                StopReason.CONTEXT_OVERFLOW,
                tokens.overflow_message(request_tokens, self.request_limit, self.model),
            )
        if not self._budget_left(request_tokens):
            return self._finish(StopReason.BUDGET, "tick token or cost budget exhausted")
        return None

    @defer.inlineCallbacks
    def _call_model(self, messages: list[dict], schemas: list, index: int, kind: str):
        """Make one model call; returns (IterationTrace, LLMResult) or a LoopOutcome to stop."""
        reason = self.is_cancelled()
        if reason:
            return self._finish(StopReason.CANCELLED, reason), None
        request_tokens = self._request_tokens(messages, schemas, kind)
        refused = self._refusal_to_send(request_tokens)
        if refused is not None:
            return refused, None
        self.ctx.state.request_tokens = request_tokens  # what get_system_status reports now
        sections = dict(self.sections) if index <= 0 else {}
        if index > 0 or kind != "act":
            sections = {"request": request_tokens}
        it = IterationTrace(index=index, kind=kind, sections=sections, prompt_tokens=request_tokens)
        started = time.monotonic()
        stream = self._open_stream(kind)
        options = self._call_options(request_tokens, stream)
        result = yield self.client.complete(
            messages, tools=schemas or None, model=self.model, **options
        )
        if stream is not None:
            stream.seal()  # a piece coming after the answer is dropped
        self._stream = stream
        self.spent.record_result(result, self.record_as or kind, in_trace=self.record_as is None)
        yield scheduler.turn()  # many replies come back at once: continue in this NPC's turn
        self._fill_iteration(it, result, started)
        if result.error:
            if getattr(result, "error_kind", None) == "context_overflow":
                return self._finish(StopReason.CONTEXT_OVERFLOW, result.error), None
            return (
                self._finish(StopReason.ERROR, f"model call failed: {_named_error(result)}"),
                None,
            )
        reason = self.is_cancelled()
        if reason:
            return self._finish(StopReason.CANCELLED, reason), None
        return it, result

    def _call_options(self, request_tokens: int, stream: ReplyStream | None) -> dict:
        options: dict[str, Any] = {
            "kind": self.kind,
            "prompt_tokens": request_tokens if self.count_tokens else None,
            "caller": log_prefix(self.ctx.npc),
        }
        if stream is not None:
            options["on_delta"] = stream.on_delta
        return options

    def _open_stream(self, kind: str) -> ReplyStream | None:
        """The stream of this model call when a ``say`` in its answer may be shown while the
        model writes it (:mod:`evennia_ai.engine.streaming`), else None."""
        if kind != "act" or self.record_as is not None or self.stream_replies is False:
            return None
        if not conf.get_bool("EVENNIA_AI_STREAM_REPLIES") or not streams(self.client):
            return None
        speech = _speech_tool(self.tools)
        utterance = getattr(speech, "utterance", None)
        if speech is None or speech.name != "say" or not callable(utterance):
            return None
        if self._rule_refusal(speech.name):
            return None
        return ReplyStream(
            utterance(self.ctx),
            tool_name=speech.name,
            known_tools=list(self.tools),
            is_cancelled=self.is_cancelled,
            on_first_words=self.on_first_words,
        )

    def _fill_iteration(self, it: IterationTrace, result: LLMResult, started: float) -> None:
        """Put what the call returned in its iteration and the iteration in the trace."""
        it.latency = round(time.monotonic() - started, 4)
        it.model = getattr(result, "model", "") or ""
        usage = getattr(result, "usage", None)
        it.usage = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
        }
        it.cost = getattr(result, "cost", None)
        it.text = truncate(result.text, 4000) if result.text else result.text
        it.error = result.error
        self.trace.add_iteration(it)

    @defer.inlineCallbacks
    def _plan(self, messages: list[dict]):
        steps = max(1, int(self.pattern.max_iterations))
        request = messages + [{"role": "user", "content": PLAN_INSTRUCTION.format(steps=steps)}]
        it, result = yield self._call_model(request, [], -1, "plan")
        if result is None:
            return it
        if result.text:
            plan = {"role": "assistant", "content": f"Plan:\n{result.text.strip()}"}
            messages.append(plan)
            self.outcome.new_messages.append(plan)
        return None

    @defer.inlineCallbacks
    def _iterate(self, iteration: int, messages: list[dict]):
        """One model call and its tool calls. Returns a LoopOutcome to stop, else None."""
        self._set_loop_state(iteration, [])
        it, result = yield self._call_model(messages, self.schemas, iteration, "act")
        stream, self._stream = self._stream, None
        try:
            return (yield self._answer(iteration, it, result, messages, stream))
        finally:
            if stream is not None:  # whatever happened, a reply shown in part ends cleanly
                stream.abandon("the tick ended before the reply was answered")
            self._live = None

    @defer.inlineCallbacks
    def _answer(self, iteration, it, result, messages, stream: ReplyStream | None):
        """Act on one model call's answer: its tool calls, or its text."""
        if result is None:
            return it
        calls = list(result.tool_calls or [])
        if result.text:
            self.outcome.final_text = result.text

        if not calls:
            return (yield self._text_reply(result.text, messages, stream))
        if stream is not None and stream.follows_text:
            self._text_said(stream)  # shown before the calls came: it stays said
        elif stream is not None and stream.started and calls[0].name == stream.tool_name:
            self._live = (stream, calls[0])

        native = getattr(result, "native_tools", True)
        run_calls = self._single_action_calls(calls) if self.single_action else calls
        run_calls = run_calls[: self.max_calls_per_reply]
        self._only_bookkeeping = all(
            getattr(self.tools.get(c.name), "bookkeeping", False) for c in run_calls
        )
        assistant = self._assistant_message(result.text, calls, native)
        messages.append(assistant)
        self.outcome.new_messages.append(assistant)
        return (yield self._answer_calls(iteration, it, calls, run_calls, messages, native))

    @defer.inlineCallbacks
    def _answer_calls(self, iteration, it, calls, run_calls, messages, native):
        """Run ``run_calls`` of the answer's ``calls`` in order and answer each of ``calls``
        (the others are skipped, with why). Returns a LoopOutcome to stop, else None."""
        stop: StopReason | None = None
        force_continue = False
        for position, call in enumerate(calls):
            pending = [c.name for c in run_calls[position + 1 :]]
            self._set_loop_state(iteration, pending)
            if stop is not None or call not in run_calls:
                call_trace, text = self._skip(call, ran_out=call in run_calls)
            else:
                call_trace, text, control = yield self._run_call(call)
                if control == "parked":
                    stop, force_continue = StopReason.AWAITING_APPROVAL, False
                elif control == "stop":
                    stop = StopReason.TERMINAL_TOOL
                elif control == "continue":
                    force_continue = True
            it.tool_calls.append(call_trace)
            self._append_result(messages, call, text, native)
            if self._consecutive_failures >= self.MAX_CONSECUTIVE_FAILURES:
                return self._finish(
                    StopReason.ERROR,
                    f"{self._consecutive_failures} tool calls failed in a row",
                )
        ran = [c for c in it.tool_calls if c.status != "skipped"]
        self._only_refused = bool(ran) and all(c.status == "refused" for c in ran)
        if stop == StopReason.AWAITING_APPROVAL:
            self._tell_askers_it_waits()
            return self._finish(stop)
        if stop is not None and not force_continue:
            return self._finish(stop)
        return None

    def _tell_askers_it_waits(self) -> None:
        """A call was parked for approval: whoever asked hears the NPC's approval line, once,
        without a model call, unless the NPC already spoke to someone this tick."""
        if self.askers is None:
            return
        if any(name in SPOKEN_TOOL_NAMES for name in self.outcome.tool_names):
            return
        try:
            audience.tell_speakers(self.ctx.npc, self.askers(), "EVENNIA_AI_APPROVAL_MESSAGE")
        except Exception:  # the line is a courtesy: the parked call stands
            logger.log_trace(f"{log_prefix(self.ctx.npc)}: could not tell the asker it waits")

    def _skip(self, call: ToolCall, ran_out: bool) -> tuple[ToolCallTrace, str]:
        """The trace and the answer of a call that is not run (``ran_out``: the loop ended
        before it; else one action per tick, or past the cap of calls per answer)."""
        if ran_out:
            why = "not run: the loop ended before this call"
        elif self.single_action:
            why = "not run: only one action per tick in this situation"
        else:
            why = (
                f"not run: at most {self.max_calls_per_reply} tool calls are run from "
                "one answer; ask again for the rest if they are still needed"
            )
        call_trace = ToolCallTrace(
            id=call.id,
            name=call.name,
            arguments=call.arguments or {},
            status="skipped",
            error=why,
        )
        return call_trace, why

    def _single_action_calls(self, calls: list) -> list:
        """The calls a single-action tick runs: its first action, and the note-taking before it.

        One action per tick (docs/prompts.md, "Execution pattern"); tools marked ``bookkeeping``
        (remembering a fact, a journal entry, an entity observation) change nothing in the world
        and run when they come before that action, so an NPC answering a player still keeps
        what the player told it.
        """
        chosen = []
        for call in calls:
            tool = self.tools.get(call.name)
            chosen.append(call)
            if tool is None or not getattr(tool, "bookkeeping", False):
                break
        return chosen

    @defer.inlineCallbacks
    def _text_reply(self, text: str | None, messages: list[dict], stream=None):
        text = (text or "").strip()
        message = {"role": "assistant", "content": text or "(no reply)"}
        messages.append(message)
        self.outcome.new_messages.append(message)
        speech = _speech_tool(self.tools)
        refusal = self._rule_refusal(speech.name) if text and speech is not None else None
        if refusal:  # the NPC's tool rules hold for spoken text as for tool calls
            self.trace.iterations[-1].tool_calls.append(
                ToolCallTrace(
                    id="text_reply",
                    name=speech.name,
                    arguments=_speech_arguments(speech, text),
                    category=_category(speech),
                    success=False,
                    error=refusal,
                    status="refused",
                )
            )
        elif text and speech is not None:
            if stream is not None and stream.started:
                result = self._finish_stream(speech, stream, text)
            else:
                result = yield self._execute(speech, _speech_arguments(speech, text))
            self.rule_state.record(speech.name, success=bool(result.success))
            call_trace = ToolCallTrace(
                id="text_reply",
                name=speech.name,
                arguments=_speech_arguments(speech, text),
                category=_category(speech),
                success=bool(result.success),
                result=truncate(result.to_text(), 1000),
                error=result.error,
                status="ran" if result.success else "error",
                stream=stream.report.describe() if stream is not None and stream.started else "",
            )
            self.trace.iterations[-1].tool_calls.append(call_trace)
            if result.success:
                self.outcome.tool_names.append(speech.name)
        return self._finish(StopReason.TEXT_REPLY)

    def _finish_stream(self, tool: Tool, stream: ReplyStream, message) -> ToolResult:
        """The result of a say that was streamed: the rest shown, the utterance ended."""
        result = stream.finish(message if isinstance(message, str) else None)
        if result.success:
            self.ctx.forget_written(getattr(tool, "writes", None))  # as safe_run does
        return result

    def _text_said(self, stream: ReplyStream) -> None:
        """Plain text was shown while streaming, then the answer called tools: what was shown
        stays said (one utterance); the trace says so, and why the rest was not."""
        speech = self.tools[stream.tool_name]
        result = stream.finish(None)
        self.rule_state.record(speech.name, success=True)
        self.outcome.tool_names.append(speech.name)
        spoken = str((result.data or {}).get("spoken", ""))
        self.trace.iterations[-1].tool_calls.append(
            ToolCallTrace(
                id="text_reply",
                name=speech.name,
                arguments=_speech_arguments(speech, spoken),
                category=_category(speech),
                success=True,
                result=truncate(f'said while streaming: "{spoken}"', 1000),
                error=stream.report.withheld,
                stream=stream.report.describe(),
            )
        )

    def _assistant_message(self, text, calls, native: bool) -> dict:
        if not native:
            calls_json = json.dumps(
                {"tool_calls": [{"tool": c.name, "arguments": c.arguments} for c in calls]}
            )
            raw = f"{text.strip()}\n{calls_json}" if text and text.strip() else calls_json
            return {"role": "assistant", "content": raw}
        return {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": (
                            c.raw_arguments
                            if c.raw_arguments is not None and not c.error
                            else json.dumps(c.arguments or {})
                        ),
                    },
                }
                for c in calls
            ],
        }

    def _collapse(self, messages: list, schemas: list, request_tokens: int) -> int:
        """Collapse this tick's tool results, oldest first, until the request fits; its tokens.

        Only what this loop added is touched (the built request was fitted by the builder);
        each collapsed result keeps its first line and says it was collapsed.
        """
        start = self._tick_start if self._tick_start is not None else len(messages)
        for index in range(start, len(messages)):
            if request_tokens <= self.request_limit:
                break
            message = messages[index]
            content = message.get("content")
            is_result = message.get("role") == "tool" or (
                isinstance(content, str) and content.startswith(_RESULT_LABEL_START)
            )
            if not is_result or not isinstance(content, str) or len(content) <= 300:
                continue
            first = content.splitlines()[0][:200] if content else ""
            messages[index] = {
                **message,
                "content": f"{first}\n[collapsed to make room: {len(content)} characters; call "
                "the tool again if you need it]",
            }
            request_tokens = self._count(messages, schemas)
        return request_tokens

    def _cut_result(self, call, text: str) -> str:
        """A tool result cut to its share of the window, saying how much was cut and why."""
        if len(text) <= self.result_chars:
            return text
        tool = self.tools.get(call.name)
        properties = ((getattr(tool, "parameters", None) or {}).get("properties")) or {}
        if "offset" in properties:
            how = f"call {call.name} again with offset and limit to read the rest"
        elif "start_line" in properties:
            how = f"call {call.name} again with a later start_line to read the rest"
        else:
            how = "ask for less at a time if you need the rest"
        kept = text[: self.result_chars]
        return f"{kept}\n[cut: {len(text) - len(kept)} of {len(text)} characters not shown; {how}]"

    def _append_result(self, messages: list, call, text: str, native: bool) -> None:
        text = self._cut_result(call, defuse_tags(text))  # a description opens no element
        if native:
            message = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text}
        else:
            label = TOOL_RESULT_LABEL.format(name=call.name)
            message = {"role": "user", "content": f"{label} {text}"}
        messages.append(message)
        self.outcome.new_messages.append(message)

    # -- one tool call -------------------------------------------------------------------------
    def _refuse(self, call, error: str, category: str = "") -> tuple:
        self._consecutive_failures += 1
        self.outcome.failures += 1
        result = ToolResult.fail(error)
        call_trace = ToolCallTrace(
            id=call.id,
            name=call.name,
            arguments=call.arguments or {},
            category=category,
            success=False,
            error=error,
            status="refused",
            result=truncate(result.to_text(), 1000),
        )
        return call_trace, result.to_text(), None

    def _check_call(self, call: ToolCall, tool: Tool | None) -> tuple | None:
        """The refusal of a call that must not run (unknown tool, bad arguments, a tool rule,
        a second DANGEROUS action, one that waits for confirmation), else None."""
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return self._refuse(call, f"Unknown tool '{call.name}'. Available tools: {available}.")
        category = _category(tool)
        if call.error:
            if call.error.startswith("the arguments are too long"):
                message = f"Refused '{call.name}': {call.error}."
            else:
                message = f"Arguments for '{call.name}' are not valid JSON: {call.error}"
            return self._refuse(call, message, category)
        problems = tool.validate_arguments(call.arguments or {})
        if problems:
            return self._refuse(
                call, f"Invalid arguments for '{call.name}': " + "; ".join(problems), category
            )
        refusal = self._rule_refusal(call.name)
        if refusal:
            return self._refuse(call, refusal, category)
        if category == "DANGEROUS":
            if self.dangerous_used:
                return self._refuse(
                    call,
                    "Only one DANGEROUS action is allowed per tick; try again later.",
                    category,
                )
            self.dangerous_used = True
            if self.pattern.dangerous_requires_confirm:
                return self._queue_confirmation(tool, call)
        return None

    @defer.inlineCallbacks
    def _run_call(self, call):
        """Check and run one tool call. Returns (ToolCallTrace, text for the model, control)."""
        tool = self.tools.get(call.name)
        live = self._live[0] if self._live is not None and self._live[1] is call else None
        refused = self._check_call(call, tool)
        if refused is not None:
            if live is not None:  # what was shown stays said; the rest is not
                live.abandon(refused[0].error or "the call was refused")
                refused[0].stream = live.report.describe()
            return refused
        category = _category(tool)
        started = time.monotonic()
        self.rule_state.begin(call.name)  # counts while it runs (a helper's calls come after)
        if live is not None:
            result = self._finish_stream(tool, live, (call.arguments or {}).get("message"))
        else:
            result = yield self._execute(tool, call.arguments or {}, checked=True)
        self.rule_state.finish(call.name, success=bool(result.success))
        latency = round(time.monotonic() - started, 4)
        self._count_result(tool, category, result)
        text = result.to_text()
        pending = bool(getattr(result, "pending", False))
        if pending and result.data.get("confirmation_id"):
            self.outcome.confirmations.append(result.data["confirmation_id"])
        call_trace = ToolCallTrace(
            id=call.id,
            name=call.name,
            arguments=call.arguments or {},
            category=category,
            success=bool(result.success),
            result=truncate(text, 1000),
            error=result.error,
            status="pending" if pending else ("ran" if result.success else "error"),
            latency=latency,
            stream=live.report.describe() if live is not None else "",
        )
        return call_trace, text, self._control_after(call, category, result)

    def _count_result(self, tool: Tool, category: str, result: ToolResult) -> None:
        """Count a call that ran: its success, or one more failure (in a row)."""
        if result.success:
            self._consecutive_failures = 0
            self.outcome.tool_names.append(tool.name)
            # what the NPC looked at, not its own notes or speech: the memory gate's material
            if not getattr(tool, "bookkeeping", False) and category != ToolCategory.TERMINAL:
                self.ctx.state.world_results.append(result.to_text())
        else:
            self._consecutive_failures += 1
            self.outcome.failures += 1

    def _control_after(self, call: ToolCall, category: str, result: ToolResult) -> str | None:
        """What a call that ran does to the loop: "stop", "continue" (tool rules), or None."""
        control = self.rule_state.after_call(call.name)
        if control == "exit":
            return "stop"
        if control == "continue":
            return "continue"
        if result.success and (category == "TERMINAL" or getattr(result, "terminal", False)):
            if self.pattern.terminal_ends_loop:
                return "stop"
        return None

    def _queue_confirmation(self, tool, call) -> tuple:
        if self.on_dangerous is None:
            return self._refuse(
                call,
                f"'{tool.name}' needs an operator's confirmation, and none can be asked "
                "for here.",
                "DANGEROUS",
            )
        try:
            confirmation_id = self.on_dangerous(tool, dict(call.arguments or {}), self.ctx)
        except Exception as err:
            return self._refuse(
                call, f"could not queue '{tool.name}' for confirmation: {err}", "DANGEROUS"
            )
        self.outcome.confirmations.append(confirmation_id)
        self.rule_state.record(call.name)
        result = ToolResult(
            success=True,
            content={
                "status": "pending_confirmation",
                "confirmation_id": confirmation_id,
                "message": APPROVAL_PENDING_RESULT.format(tool=tool.name),
            },
            pending=True,
        )
        text = result.to_text()
        call_trace = ToolCallTrace(
            id=call.id,
            name=call.name,
            arguments=call.arguments or {},
            category="DANGEROUS",
            success=True,
            result=truncate(text, 1000),
            status="pending",
        )
        return call_trace, text, "parked"

    @defer.inlineCallbacks
    def _execute(self, tool, arguments: dict, checked: bool = False):
        """Run a tool (safe_run never raises); Deferred results get the tool's timeout.

        ``checked``: the arguments were validated already (a model's call, see ``_run_call``).
        """
        outcome = tool.safe_run(self.ctx, arguments, checked=checked)
        if isinstance(outcome, defer.Deferred):
            clock = self.clock or reactor
            timeout = float(tool.get_timeout() if hasattr(tool, "get_timeout") else 30.0)
            finished: defer.Deferred[ToolResult] = defer.Deferred()

            def expire():
                if not finished.called:
                    finished.callback(
                        ToolResult.fail(f"'{tool.name}' timed out after {timeout:g} s")
                    )

            timer = clock.callLater(timeout, expire)

            def done(value):
                if timer.active():
                    timer.cancel()
                if not finished.called:
                    if isinstance(value, Failure):
                        value = ToolResult.fail(f"'{tool.name}' failed: {value.getErrorMessage()}")
                    finished.callback(value)
                return None

            outcome.addBoth(done)
            outcome = yield finished
        if not isinstance(outcome, ToolResult):
            outcome = ToolResult.ok(outcome)
        return outcome
