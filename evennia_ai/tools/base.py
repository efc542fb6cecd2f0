"""The Tool base class, its results, the context handed to it, and argument validation.

Pure module: no Django, Evennia or Twisted at import time.

A tool is a small class: a name, a description, a JSON schema for its arguments, a category,
an optional Evennia lock, and a ``run(ctx, **arguments)`` that returns a :class:`ToolResult`
(a dict or a string is accepted and normalised). Errors are results, never exceptions:
:meth:`Tool.safe_run` validates the arguments, serves cached results, calls ``run`` and turns
anything raised into a failed result with a short message (the traceback goes to the server
log).

Categories (:class:`ToolCategory`, plain strings so they compare with configuration lists):

- ``SAFE_CHAIN``: may be chained freely inside a ReAct loop (look, memory edits, goals).
- ``ASYNC_REQUIRED``: slow work; ``run`` may return a Twisted Deferred firing with the result.
  The loop gives it :meth:`Tool.get_timeout` seconds (``EVENNIA_AI_TOOL_TIMEOUT``, 30 s).
- ``TERMINAL``: ends the loop when the execution pattern says so (speech: the NPC waits for
  an answer).
- ``DANGEROUS``: at most one per tick, and only after a Builder's confirmation when the
  execution pattern requires it (``execute_command``, ``set_attribute``).

Within one tick a ``cacheable`` tool's successful result is served again for the same
arguments, until a successful call of a tool that writes what it reads
(:attr:`Tool.reads`, :attr:`Tool.writes`; a tool that does not say what it writes drops every
cached result): ``review_journal`` after ``add_journal_entry`` reads the journal again.

Arguments are checked against ``parameters`` by :mod:`evennia_ai.tools.arguments` (jsonschema,
every keyword of the schema's draft, NaN and infinities refused) before ``run`` is called; the
model reads the problems as short sentences. A float with no fraction (``3.0``) is an integer,
because JSON does not tell them apart; :meth:`Tool.safe_run` hands it to ``run`` as the int
``3`` (:func:`~evennia_ai.tools.arguments.coerce_integers`), so tools can index and count with it.

Example:
    class Wave(Tool):
        name = "wave"
        description = "Wave at someone in the room."
        parameters = {
            "type": "object",
            "properties": {"target": {"type": "string", "minLength": 1}},
            "required": ["target"],
            "additionalProperties": False,
        }

        def run(self, ctx, target):
            ctx.npc.location.msg_contents(f"{ctx.npc.key} waves at {target}.")
            return ToolResult.ok(f"You wave at {target}.")
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeGuard

from evennia_ai import conf
from evennia_ai.llm.types import JSONObject
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.tools.arguments import coerce_integers, is_number, validate_value
from evennia_ai.utils import one_line

if TYPE_CHECKING:  # Twisted is imported by whoever makes a Deferred, never here
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from evennia_ai.tools.rules import ToolRule

# The plugin's Python logger; evennia_ai.startstop forwards it to Evennia's server log.
_log = logging.getLogger("evennia_ai")

MAX_ERROR_LENGTH = 300
"""Longest exception message handed back to the model (the full trace is logged)."""


TEXT = {"type": "string", "minLength": 1}  # a required, non-empty string argument


def object_schema(properties: Mapping[str, object], required: Iterable[str] = ()) -> JSONObject:
    """A closed JSON-schema object for tool arguments (unknown arguments are refused).

    Example:
        parameters = object_schema({"item": TEXT}, required=["item"])
    """
    schema: JSONObject = {
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


class ToolCategory:
    """Tool categories (plain strings so they compare with configuration lists)."""

    SAFE_CHAIN = "SAFE_CHAIN"
    ASYNC_REQUIRED = "ASYNC_REQUIRED"
    TERMINAL = "TERMINAL"
    DANGEROUS = "DANGEROUS"


ALL_CATEGORIES = (
    ToolCategory.SAFE_CHAIN,
    ToolCategory.ASYNC_REQUIRED,
    ToolCategory.TERMINAL,
    ToolCategory.DANGEROUS,
)

# Keys of ToolResult.data that the model sees next to a failure's error.
MODEL_VISIBLE_FAILURE_KEYS = ("suggestion", "available")


@dataclass
class ToolResult:
    """What a tool hands back; :meth:`to_text` is what the model reads.

    Attributes:
        success: Whether the tool did what was asked.
        content: The result: text, or JSON-able data.
        error: What went wrong, for the model to read.
        terminal: The tool ended the NPC's turn (whatever its category).
        pending: The action awaits an operator's confirmation (DANGEROUS tools).
        data: Extra structured data for the engine. Not shown to the model, except the keys in
            :data:`MODEL_VISIBLE_FAILURE_KEYS` of a failure (``suggestion``, ``available``).
    """

    success: bool
    content: Any = None
    error: str | None = None
    terminal: bool = False
    pending: bool = False
    data: JSONObject = field(default_factory=dict)

    @classmethod
    def ok(cls, content: Any = None, **kwargs: Any) -> ToolResult:
        """A success carrying ``content`` (keywords set the other fields)."""
        return cls(success=True, content=content, **kwargs)

    @classmethod
    def fail(cls, error: str, **extra: Any) -> ToolResult:
        """A failure; ``extra`` goes to :attr:`data` (``suggestion=...`` reaches the model)."""
        return cls(success=False, error=str(error), data=dict(extra))

    def to_text(self) -> str:
        """The text fed back to the model: strings as they are, anything else as JSON."""
        if not self.success:
            payload: JSONObject = {"success": False, "error": self.error or "failed"}
            payload.update({k: self.data[k] for k in MODEL_VISIBLE_FAILURE_KEYS if k in self.data})
            return _dumps(payload)
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return _dumps({"success": True})
        return _dumps(self.content)


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # circular structures, odd keys
        return str(value)


@dataclass
class LoopState:
    """Where the tick's loop is, for tools that report on it (``get_system_status``).

    Attributes:
        iteration: The current iteration (1-based).
        max_iterations: Iterations the pattern allows.
        tools_this_cycle: Tools that ran successfully so far, in order.
        pending_tools: Tool calls of the current answer not yet run.
        in_chain: Whether the loop may call several tools (not single-action).
        depth: 0 in a tick, 1 in a ``delegate_task`` helper.
        window: The model's context window (tokens), 0 when unknown.
        request_tokens: Tokens of the tick's first request.
        metrics: The NPC's metrics as the tick read them.
        confirmed: The call runs because staff approved it (a DANGEROUS tool).
        helpers_started: ``delegate_task`` helpers this tick has started.
        world_results: Texts of this tick's successful results of tools that are neither
            bookkeeping nor speech (what the NPC looked at), for the memory gate.
    """

    iteration: int = 1
    max_iterations: int = 1
    tools_this_cycle: list[str] = field(default_factory=list)
    pending_tools: list[str] = field(default_factory=list)
    in_chain: bool = False
    depth: int = 0
    window: int = 0
    request_tokens: int = 0
    metrics: JSONObject | None = None
    world_results: list[str] = field(default_factory=list)
    confirmed: bool = False
    helpers_started: int = 0

    @property
    def tool_count_this_cycle(self) -> int:
        return len(self.tools_this_cycle)


@dataclass
class TickServices:
    """What the tick lends its tools: the model client, the model, the tick's accountant.

    Attributes:
        client: The LLM client (``complete(messages, tools, model=...)``), or None.
        model: The NPC's model for this tick (None: the server default).
        usage: The tick's :class:`~evennia_ai.llm.usage.UsageAccountant`; every model call a
            tool makes hands its record to it.
        pattern: The tick's ExecutionPattern.
        tools: The tools this tick offers.
        context_config: ``context type -> effective ContextConfig`` (operator customisations).
        run_helper: Starts a ``delegate_task`` helper (``(ctx, task) -> ToolResult``).
        rules: The NPC's tool rules (``ToolRule``); helpers run under them too.
        rule_state: The tick's :class:`~evennia_ai.tools.rules.ToolRuleState`, set by the loop:
            one count of the tick's calls, which a helper's calls join and a parked call's
            confirmation keeps a snapshot of.
        budget_reached: ``() -> bool``: today's budgets are reached (counting this tick's
            calls); a tool that would make a paid model call checks it first.
        build_request: ``(context type, task text) -> Deferred`` firing with the messages of
            a request built through that context type (its components, the operator's
            customisation, the window), the task as its pending event.
        offer_tools: ``(tool names) -> names added``: send these tools' schemas with the
            loop's next request (``request_tools``); only tools the tick may use are added.
    """

    client: Any = None
    model: str | None = None
    usage: UsageAccountant | None = None
    pattern: Any = None
    tools: list[Tool] = field(default_factory=list)
    context_config: Callable[[str], Any] | None = None
    run_helper: Callable[..., Any] | None = None
    rules: list[ToolRule] = field(default_factory=list)
    rule_state: Any = None
    budget_reached: Callable[[], bool] | None = None
    build_request: Callable[[str, str], Any] | None = None
    offer_tools: Callable[[list[str]], list[str]] | None = None

    def over_budget(self) -> bool:
        """Whether a paid model call must not be made now (see ``budget_reached``)."""
        return bool(self.budget_reached and self.budget_reached())


@dataclass
class ToolContext:
    """Everything a tool may need about the tick it runs in.

    Attributes:
        npc: The acting character.
        script: Its AssistantScript (None outside ticks).
        tick_id: The tick counter.
        context_type: Context type of the tick (``tick_event``, ``reflection``, ...).
        event: The event the tick answers, as a dict, if any.
        cache: Per-tick cache of cacheable tool results, keyed ``(tool name, arguments JSON)``.
            A successful call of a tool that writes drops the results it may have changed
            (:meth:`forget_written`); a helper shares its parent's cache.
        cache_reads: For each tool with a cached result, what it reads (its :attr:`Tool.reads`).
        state: Where the loop is (:class:`LoopState`).
        services: What the tick lends its tools (:class:`TickServices`).
    """

    npc: Any = None
    script: Any = None
    tick_id: int = 0
    context_type: str = "tick_event"
    event: JSONObject | None = None
    cache: dict[tuple[str, str], ToolResult] = field(default_factory=dict)
    cache_reads: dict[str, frozenset[str] | None] = field(default_factory=dict)
    state: LoopState = field(default_factory=LoopState)
    services: TickServices = field(default_factory=TickServices)

    def invalidate(self, *tool_names: str) -> None:
        """Drop cached results of ``tool_names`` (all cached results when none are given)."""
        names = set(tool_names)
        for key in list(self.cache):
            if not names or (isinstance(key, tuple) and key and key[0] in names):
                self.cache.pop(key, None)

    def forget_written(self, writes: frozenset[str] | None) -> None:
        """Drop the cached results a successful write of ``writes`` may have made stale.

        Args:
            writes: What the write changed (:attr:`Tool.writes`). None: anything, so every
                cached result goes. Otherwise the results of tools reading any of it go, and
                those of tools that did not say what they read.
        """
        if writes is None:
            self.invalidate()
            return
        if not writes:
            return
        stale = [
            name
            for name, reads in self.cache_reads.items()
            if reads is None or set(reads) & set(writes)
        ]
        if stale:
            self.invalidate(*stale)


class Tool:
    """Base class of every tool. Subclass, set the class attributes, implement :meth:`run`.

    Attributes:
        name: The function name the model calls (letters, digits, ``_`` and ``-``; at most 64).
        description: What the tool does, for the model.
        parameters: JSON schema of the arguments (an ``object`` schema).
        category: One of :data:`ALL_CATEGORIES`.
        lock: Optional Evennia lock the NPC must pass to be offered the tool, e.g.
            ``"perm(Builder)"`` (see :func:`evennia_ai.tools.registry.passes_lock`).
        cacheable: Within one tick, a second call with the same arguments returns the first
            call's successful result without running again.
        timeout: Seconds a Deferred returned by ``run`` may take; None uses
            ``EVENNIA_AI_TOOL_TIMEOUT``.
        contexts: Context types the tool is meant for (informational; context tool filters
            decide what is offered).
        needs_sub_agents: Offered only where the execution pattern enables sub-agents
            (``delegate_task``).
        bookkeeping: Note-taking or looking up one's own notes, which changes nothing in the
            world (a fact, a journal entry, a memory, reading the journal): in a
            single-action tick it runs before the one action, and a reply of bookkeeping only
            is followed by one more call for the answer.
        group: The tool group (:mod:`evennia_ai.tools.groups`: ``conversation``, ``movement``,
            ``items``, ``memory``, ``blocks``, ``goals``, ``building``, ``self``, or a game's
            own). A context sends the schemas of the groups its situation needs; the model asks
            for another group with ``request_tools``. None: sent in every request.
        reads: What the result of a cacheable tool depends on, as names of state (``"journal"``,
            ``"room"``, ``"projects"``, or a game's own): its cached results are dropped when a
            call writing any of it succeeds. None: dropped by every write.
        writes: What a successful call changes, in the same names. None (the default): it may
            change anything, so every cached result of the tick is dropped after it; an empty
            set declares a tool that changes nothing a cached result shows. Cacheable tools
            are reads and never drop anything.
    """

    name: str = ""
    description: str = ""
    parameters: JSONObject = {"type": "object", "properties": {}}
    category: str = ToolCategory.SAFE_CHAIN
    lock: str = ""
    cacheable: bool = False
    timeout: float | None = None
    contexts: frozenset[str] | None = None
    needs_sub_agents: bool = False
    bookkeeping: bool = False
    group: str | None = None
    reads: frozenset[str] | None = None
    writes: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.category})>"

    def of_use_to(self, npc: Any) -> bool:
        """Whether the tool is of any use to ``npc`` (a shop's tools to an NPC with goods). One
        of no use is left out of the NPC's tools as a lock leaves one out: it narrows what is
        allowed, never widens it. Every tool is of use unless it says otherwise."""
        return True

    # ``*args, **kwargs``: each tool names its own arguments (its schema's); the type checker
    # lets an override narrow this signature only.
    def run(self, ctx: ToolContext, *args: Any, **kwargs: Any) -> object:  # pragma: no cover
        """Do the work. Return a ToolResult, a dict, a string, or (ASYNC_REQUIRED) a Deferred."""
        raise NotImplementedError

    def to_schema(self) -> JSONObject:
        """The OpenAI tool schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters or {"type": "object", "properties": {}},
            },
        }

    def get_timeout(self) -> float:
        """Seconds an asynchronous run may take."""
        timeout = self.timeout
        if timeout is not None and is_number(timeout) and timeout > 0:
            return float(timeout)

        return conf.get_float("EVENNIA_AI_TOOL_TIMEOUT")

    def validate_arguments(self, arguments: object) -> list[str]:
        """Problems with ``arguments`` against :attr:`parameters` (empty when valid)."""
        return validate_value(arguments, self.parameters or {"type": "object"}, "arguments")

    def safe_run(
        self, ctx: ToolContext, arguments: Mapping[str, Any] | None = None, *, checked: bool = False
    ) -> ToolResult | Deferred[ToolResult]:
        """Validate, serve from the tick's cache, run; never raises.

        Args:
            ctx: The tick's context.
            arguments: The arguments the model gave (None means none).
            checked: The caller already validated ``arguments`` against :attr:`parameters`
                (the ReAct loop does, to refuse a bad call before counting it).

        Returns:
            A :class:`ToolResult`; or, when ``run`` returned a Deferred, that Deferred, firing
            with a ToolResult (failures included). The caller adds the timeout.
        """
        if arguments is None:
            arguments = {}
        problems = [] if checked else self.validate_arguments(arguments)
        if not problems:
            problems = _signature_problems(self.run, arguments)
        if problems:
            return ToolResult.fail(f"Invalid arguments for '{self.name}': " + "; ".join(problems))
        arguments = coerce_integers(dict(arguments), self.parameters or {})
        cache_key = self.cache_key(arguments) if self.cacheable else None
        if cache_key is not None and cache_key in ctx.cache:
            return ctx.cache[cache_key]
        try:
            outcome = self.run(ctx, **arguments)
            if _is_deferred(outcome):
                return outcome.addCallback(self._finish, ctx, cache_key).addErrback(
                    self._deferred_failure
                )
            return self._finish(outcome, ctx, cache_key)
        except Exception as err:
            _log_trace(f"evennia_ai: tool '{self.name}' raised")
            return ToolResult.fail(f"'{self.name}' failed: {one_line(err, MAX_ERROR_LENGTH)}")

    def cache_key(self, arguments: Mapping[str, Any]) -> tuple[str, str]:
        """The key of a cacheable call in :attr:`ToolContext.cache`."""
        return (self.name, json.dumps(arguments, sort_keys=True, default=str))

    def _finish(
        self, outcome: object, ctx: ToolContext, cache_key: tuple[str, str] | None
    ) -> ToolResult:
        result = normalise_result(outcome)
        if not result.success:
            return result
        if self.cacheable:
            if cache_key is not None:
                ctx.cache[cache_key] = result
                ctx.cache_reads[self.name] = self.reads
        else:  # a write (as far as anyone said): what it changed is read again
            ctx.forget_written(self.writes)
        return result

    def _deferred_failure(self, failure: Failure) -> ToolResult:
        error = failure.value if hasattr(failure, "value") else failure
        _log.error("evennia_ai: tool %r failed:\n%s", self.name, failure.getTraceback())
        return ToolResult.fail(f"'{self.name}' failed: {one_line(error, MAX_ERROR_LENGTH)}")


def normalise_result(outcome: object) -> ToolResult:
    """A ToolResult from whatever ``run`` returned.

    A ToolResult passes through; a dict with ``"success": False`` becomes a failure (its
    ``error``, other keys in ``data``); any other value is a success carrying it.
    """
    if isinstance(outcome, ToolResult):
        return outcome
    if isinstance(outcome, Mapping) and "success" in outcome:
        if outcome.get("success"):
            return ToolResult.ok(dict(outcome))
        extra = {k: v for k, v in outcome.items() if k not in ("success", "error")}
        return ToolResult.fail(outcome.get("error") or "failed", **extra)
    return ToolResult.ok(outcome)


def _is_deferred(value: object) -> TypeGuard[Deferred[Any]]:
    # Only a loaded Twisted can have made a Deferred: no import needed to check.
    defer_module = sys.modules.get("twisted.internet.defer")
    return defer_module is not None and isinstance(value, defer_module.Deferred)


def _signature_problems(run: Callable[..., object], arguments: Mapping[str, Any]) -> list[str]:
    """Arguments ``run`` would reject, as the model should read them (before a TypeError)."""
    try:
        params = list(inspect.signature(run).parameters.values())
    except (TypeError, ValueError):
        return []
    if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]  # ctx
    if any(p.kind is p.VAR_KEYWORD for p in params):
        accepted = None
    else:
        accepted = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    problems = []
    if accepted is not None:
        unknown = [name for name in arguments if name not in accepted]
        for name in unknown:
            listing = ", ".join(accepted) or "none"
            problems.append(f"unexpected argument '{name}' (accepted: {listing})")
    for p in params:
        if (
            p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.default is p.empty
            and p.name not in arguments
        ):
            problems.append(f"missing required argument '{p.name}'")
    return problems


def _log_trace(message: str) -> None:
    _log.exception(message)
