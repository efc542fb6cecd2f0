"""The context builder: sources -> components -> a chat request within the model's window.

For one tick it gathers the value of every source the context type's enabled components need,
and the parts of the operator's section (:mod:`evennia_ai.prompt.operator`), which every
request carries first whatever its components, concurrently (database reads on the reactor
thread; slow sources such as long-term memory return Deferreds from threads; all combined with
a DeferredList), renders the operator's section and the registry's components in ID order into
chat messages (:mod:`evennia_ai.prompt.assembly`), counts the tokens of the request exactly as
it will be sent, per section, and checks it against its kind's contract
(:func:`request_contract_problems`; a tick does not send a request that breaks it).

Sources are pluggable: :func:`register_source` maps a placeholder name to a function
``(builder) -> value | Deferred``. A failing source is logged and renders empty; it never
fails the tick, except one the operator's instructions depend on (:data:`OPERATOR_SOURCES`):
then the request is not sent.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Callable, TypeVar

from evennia.utils import logger
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.llm import contracts, tokens
from evennia_ai.llm.errors import reason
from evennia_ai.llm.models import resolve_model
from evennia_ai.memory.events import render_events
from evennia_ai.prompt import operator as operator_section
from evennia_ai.prompt.assembly import (
    CHAT_ROLES,
    AssembledPrompt,
    assemble_messages,
    select_components,
)
from evennia_ai.prompt.components import PromptComponent, anchor_of, get_static_components
from evennia_ai.prompt.fitting import fit_to_window
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.prompt.snapshot import PromptSnapshot, own_model
from evennia_ai.prompt.tasks import TaskBuilder
from evennia_ai.prompt.templates import extract_placeholders
from evennia_ai.utils import log_prefix

# placeholder name -> the function that fills it (see register_source)
Source = Callable[["ContextBuilder"], Any]
"""A context source: ``(builder) -> value | Deferred`` (see :func:`register_source`)."""
_SourceT = TypeVar("_SourceT", bound=Source)
_SOURCES: dict[str, Source] = {}
_THREADED: set[str] = set()  # sources whose work runs in another thread (started first)
RequestKey = tuple[str, list[str]]
"""A request as a provider's prompt cache sees it (:func:`request_key_of`)."""

# Sources that have no component of their own render inside a host component's placeholder,
# after the host's own text. Fitting to the window still shrinks each of them separately.
COMPOSED_SOURCES: dict[str, tuple[str, ...]] = {
    "system_prompt": ("fewshot_examples",),
    "character_context": ("place", "wares", "self_model", "procedural_hints"),
    "entity_context": ("memory_blocks",),
    "semantic_memories": ("archival_hits",),
}
# The parts of the operator's section (:mod:`evennia_ai.prompt.operator`): gathered for every
# request, whatever the context's components, and put first in the system message by assembly.
OPERATOR_PARTS: tuple[str, ...] = operator_section.PARTS + (operator_section.TRUST_PART,)
# Sources the operator's instructions depend on: when one fails, the request is not sent (the
# model is never called without them). The NPC's own system prompt carries the trust note.
OPERATOR_SOURCES = frozenset(("system_prompt",) + OPERATOR_PARTS)


def _texts(values: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    found = [values.pop(name, None) for name in names]
    return [text.strip() for text in found if isinstance(text, str) and text.strip()]


def compose(values: Mapping[str, Any]) -> dict[str, Any]:
    """Fold composed sources into their host placeholders, after the host's own text
    (:data:`COMPOSED_SOURCES`)."""
    out = dict(values)
    for host, names in COMPOSED_SOURCES.items():
        after = _texts(out, names)
        if after:
            text = out.get(host)
            own = [text.strip()] if isinstance(text, str) and text.strip() else []
            out[host] = "\n\n".join(own + after)
    return out


def register_source(name: str, *, threaded: bool = False) -> Callable[[_SourceT], _SourceT]:
    """Decorator registering ``fn(builder) -> value | Deferred`` as the source of ``name``.

    Args:
        threaded: The source hands its work to another thread: it is started before the
            others, so that work runs while the reactor gathers the rest.
    """

    def decorator(fn: _SourceT) -> _SourceT:
        _SOURCES[name] = fn
        if threaded:
            _THREADED.add(name)
        return fn

    return decorator


def get_sources() -> dict[str, Source]:
    """The registered sources (name -> function)."""
    return dict(_SOURCES)


@dataclass
class BuiltContext:
    """A request ready for the ReAct loop.

    Attributes:
        messages: Chat messages exactly as they will be sent.
        tool_schemas: The tools offered, as sent.
        sections: Token count per section (component key, plus "tools").
        total_tokens: Tokens of the whole request as sent.
        window: The model's context window.
        token_pressure: "normal", "high" (>= 60 %) or "critical" (>= 80 %).
        values: The source values used (for debugging and the trace).
        limit: The token limit the request was fitted to.
        shrunk: Sources the budget shrank, and how.
        history_cut: Whether history had to be left out to fit (a compaction should fold it).
        fits: Whether the request fits its limit (when not, it must not be sent).
        blocked: Why the request must not be sent at all: a source the operator's instructions
            depend on failed (:data:`OPERATOR_SOURCES`). None when it may be sent.
        prefix_share: Share of this request's tokens that repeat the previous request's prefix
            for the same NPC (what a provider's prompt cache can reuse); None on the first.
        request_key: What the next request of the NPC is compared with for ``prefix_share``;
            the tick keeps it (``npc.ndb.ai_last_request``) once the request is sent.
        sources: The source values as gathered, before fitting: with the task, what
            :meth:`ContextBuilder.finish` builds this request from (a tick recording keeps them).
        task: The task message the request was built with, or None.
        operator: The operator's section the request opens with ("" when the operator said
            nothing; :mod:`evennia_ai.prompt.operator`).
        contract_problems: What the request lacks that its kind of call must carry
            (:func:`request_contract_problems`); a tick does not send a request with any.
    """

    messages: list[dict[str, Any]]
    tool_schemas: list[dict[str, Any]] = field(default_factory=list)
    sections: dict[str, int] = field(default_factory=dict)
    total_tokens: int = 0
    window: int = 0
    token_pressure: str = "normal"
    values: dict[str, Any] = field(default_factory=dict)
    limit: int = 0
    shrunk: dict[str, str] = field(default_factory=dict)
    prefix_share: float | None = None
    request_key: RequestKey | None = None
    history_cut: bool = False
    fits: bool = True
    blocked: str | None = None
    sources: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    operator: str = ""
    contract_problems: list[str] = field(default_factory=list)

    @property
    def public_messages(self) -> list[dict[str, Any]]:
        """The messages with the operator's ``Secret:`` lines left out: what a request that
        only transforms text (the assessment) may carry of this one."""
        return operator_section.without_secrets(self.messages, self.operator)


class ContextBuilder:
    """Build the request of one tick.

    Args:
        npc: The assistant.
        context_config: The effective ContextConfig of the tick.
        snapshot: The NPC's state as the tick read it (:class:`PromptSnapshot`); the sources
            read it instead of ``npc.ai``. None (``aiprompt/show``, a request built by a tool):
            the builder reads one itself, once, when a source first needs it.
        batch: Events the tick answers (Event objects), or empty.
        batch_text: The batch rendered (the tick renders it once); None renders it here.
        tools: Tools offered this tick.
        tool_result: A tool result to show (reflection_cont and similar), or None.
        extra: Additional placeholder values (they win over sources).
        model: The model the request goes to (for token counting and the window); None: the
            snapshot's (the NPC's own, or the server default).
        metrics: The NPC's metrics, when they are to differ from the snapshot's (a request
            built inside a tick counts with the tick's); None: the snapshot's.

    Building has no side effect: the same NPC can be built for again (``aiprompt/show``).
    """

    def __init__(
        self,
        npc: Any,
        context_config: Any,
        *,
        snapshot: PromptSnapshot | None = None,
        batch: Iterable[Any] = (),
        batch_text: str | None = None,
        tools: Iterable[Any] = (),
        tool_result: Any = None,
        extra: Mapping[str, Any] | None = None,
        model: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> None:
        self.npc = npc
        self.config = context_config
        self._snapshot = snapshot
        self.batch = list(batch)
        if batch_text is None:
            batch_text = render_events(self.batch) if self.batch else ""
        self.batch_text = batch_text
        self._metrics = metrics
        self.tools = list(tools)
        self.tool_result = tool_result
        self.extra: dict[str, Any] = dict(extra or {})
        if not model:
            model = snapshot.model if snapshot is not None else own_model(npc)
        self.model = resolve_model(model)
        self._task: str | None | bool = False  # not rendered yet
        self.blocked: list[str] = []  # failed sources the operator's instructions depend on

    @property
    def snapshot(self) -> PromptSnapshot:
        """The NPC's state this request reads (read once, here, when none was given)."""
        if self._snapshot is None:
            self._snapshot = PromptSnapshot.read(self.npc, metrics=self._metrics)
        return self._snapshot

    @property
    def task(self) -> str | None:
        """The task message of this request (None for ``tick_event``: its event is the task)."""
        if self._task is False:
            self._task = None if self.batch else TaskBuilder(self).render()
        return self._task if isinstance(self._task, str) else None

    @property
    def metrics(self) -> dict[str, Any]:
        """The NPC's metrics: those given, else the snapshot's."""
        if self._metrics is None:
            self._metrics = self.snapshot.metrics
        return self._metrics

    # -- components ----------------------------------------------------------------------------
    def components(self) -> list[PromptComponent]:
        """All prompt components (static and pluggable, operator overrides applied)."""
        try:
            return get_prompt_registry().get_all_prompt_components()
        except Exception:
            logger.log_trace("evennia_ai: prompt registry unavailable; using static components")
            return get_static_components()

    def needed_sources(self, components: Iterable[PromptComponent]) -> list[str]:
        """Placeholder names the enabled components of this context type use."""

        enabled = set(self.config.enabled_components)
        names: list[str] = []
        for comp in components:
            static_anchor = comp.id if comp.is_static else (comp.after_static or 0)
            if static_anchor not in enabled or not comp.enabled:
                continue
            content = assembly_config(self.config).get_component_content_override(comp.key)
            content = content or comp.content
            for name in extract_placeholders(content):
                for needed in (name,) + COMPOSED_SOURCES.get(name, ()):
                    if needed not in names:
                        names.append(needed)
        return names

    def request_sources(self, components: Iterable[PromptComponent]) -> list[str]:
        """Every source the request needs: the operator's section's parts, then the components'."""
        names = list(OPERATOR_PARTS)
        names += [name for name in self.needed_sources(components) if name not in names]
        return names

    # -- gathering -----------------------------------------------------------------------------
    def gather(self, names: list[str]) -> defer.Deferred[dict[str, Any]]:
        """Fetch every named source concurrently; fires with {name: value}."""
        names = [n for n in names if n not in self.extra]
        names.sort(key=lambda name: name not in _THREADED)  # stable: threaded ones first
        deferreds: list[defer.Deferred[Any]] = []
        for name in names:
            fn = _SOURCES.get(name)
            if fn is None:
                deferreds.append(defer.succeed(""))
                continue
            deferreds.append(defer.maybeDeferred(fn, self))

        def combine(results: list[tuple[bool, Any]]) -> dict[str, Any]:
            values = dict(self.extra)
            for name, (ok, value) in zip(names, results):
                if ok:
                    values[name] = value if value is not None else ""
                else:
                    message = value.getErrorMessage()
                    logger.log_err(
                        f"{log_prefix(self.npc)}: context source '{name}' failed: {message}"
                    )
                    values[name] = ""
                    if name in OPERATOR_SOURCES:
                        self.blocked.append(f"{name}: {message}")
            return values

        return defer.DeferredList(deferreds, consumeErrors=True).addCallback(combine)

    @defer.inlineCallbacks
    def build(self) -> Generator[defer.Deferred[Any], Any, BuiltContext]:
        """Gather, fit to the budget, assemble and count. Fires with a :class:`BuiltContext`."""
        components = self.components()
        values = yield self.gather(self.request_sources(components))
        return self.finish(values, components)

    def finish(
        self, values: dict[str, Any], components: list[PromptComponent] | None = None
    ) -> BuiltContext:
        """Everything after gathering (synchronous): budget, assembly, counting."""

        components = components if components is not None else self.components()
        sources = dict(values)
        own_prompt = values.get("system_prompt")
        operator = operator_section.section_text(
            values, own_prompt=own_prompt if isinstance(own_prompt, str) else None
        )
        task = self.task
        if task and not values.get("pending_event"):
            values = {**values, "pending_event": task}  # appended when no component shows it
        values = suppress_duplicates(values)
        config: Any = assembly_config(self.config)
        if conf.get("EVENNIA_AI_COMPONENT_ORDER") == "cache_friendly":
            components = cache_friendly_order(select_components(components, config))
            config = None  # already selected, overrides applied
        counter = tokens.TokenCounter(self.model)
        offered = OfferedTools(counter, [tool.to_schema() for tool in self.tools])
        limits = tokens.get_model_limits(self.model)
        limit = limits.request_limit(token_budget=self.config.token_budget)
        request = _Measure(components, config, operator, bool(task), counter, offered)
        reserve = continuation_reserve(limit) if offered.schemas else 0
        fitted = fit_to_window(
            values, request.measure, limit, drop_tools=offered.drop_optional, reserve=reserve
        )
        if fitted.shrunk:  # the last measure was of the final values unless nothing shrank
            request.measure(fitted.values)
        assembled = request.assembled
        problems = request_contract_problems(self.config.context_type, assembled.messages, operator)
        request_key = request_key_of(assembled.messages, offered.schemas)
        return BuiltContext(
            messages=assembled.messages,
            tool_schemas=offered.schemas,
            sections=request.sections(),
            total_tokens=request.total,
            window=limits.max_tokens,
            token_pressure=tokens.token_pressure(request.total, limits.max_tokens),
            values=fitted.values,
            limit=limit,
            shrunk=fitted.shrunk,
            prefix_share=prefix_cache_share(
                getattr(self.npc.ndb, "ai_last_request", None),
                request_key,
                request.message_tokens,
                offered.tokens,
            ),
            request_key=request_key,
            history_cut=fitted.history_cut,
            fits=fitted.fits,
            blocked=self._blocked_reason(),
            sources=sources,
            task=task,
            operator=operator,
            contract_problems=problems,
        )

    def _blocked_reason(self) -> str | None:
        """Why the request must not be sent (a source of the operator's failed), or None."""
        if not self.blocked:
            return None
        return (
            "the operator's instructions could not be read ("
            + "; ".join(self.blocked)
            + "); the model was not called without them"
        )


class _Measure:
    """Assemble and count a request's candidate values (the fitter's ``measure``).

    Keeps the last assembly measured: once fitting is done, the request as it will be sent.

    Args:
        components: The components to assemble (selected already when ``config`` is None).
        config: The context config assembly applies, or None.
        operator: The operator's section.
        has_task: Whether the request has a task message (its ``pending_event`` value).
        counter: The model's token counter.
        offered: The tool schemas offered (the fitter may leave optional ones out).
    """

    def __init__(
        self,
        components: list[PromptComponent],
        config: Any,
        operator: str,
        has_task: bool,
        counter: tokens.TokenCounter,
        offered: OfferedTools,
    ) -> None:
        self.components = components
        self.config = config
        self.operator = operator
        self.has_task = has_task
        self.counter = counter
        self.offered = offered
        self.assembled = AssembledPrompt(messages=[])
        self.message_tokens: list[int] = []
        self.total = 0

    def measure(self, candidate: dict[str, Any]) -> int:
        """Tokens of the request ``candidate`` makes, as sent (messages, priming, tools)."""
        assembled = assemble_messages(
            self.components,
            self.config,
            compose(candidate),
            task=candidate.get("pending_event") if self.has_task else None,
            operator=self.operator,
        )
        message_tokens = [self.counter.count_message(m) for m in assembled.messages]
        total = sum(message_tokens) + tokens.REPLY_PRIMING + self.offered.tokens
        self.assembled, self.message_tokens, self.total = assembled, message_tokens, total
        return total

    def sections(self) -> dict[str, int]:
        """Tokens per section of the last request measured (and ``tools``, when offered)."""
        sections: dict[str, int] = {}
        for section in self.assembled.sections:
            sections[section.key] = sections.get(section.key, 0) + self.counter.count_text(
                section.text
            )
        if self.offered.schemas:
            sections["tools"] = self.offered.tokens
        return sections


def request_contract_problems(
    kind: str, messages: list[dict[str, Any]], operator: str
) -> list[str]:
    """What an acting request of ``kind`` lacks: its contract's task and inputs
    (:func:`~evennia_ai.llm.contracts.contract_problems`), and the operator's section first in
    its system message. Empty when it may be sent."""
    problems = list(contracts.contract_problems(kind, list(messages)))
    first = messages[0].get("content") if messages else None
    if operator and not (isinstance(first, str) and first.startswith(operator)):
        problems.append("the operator's section does not open the system message")
    return problems


CONTINUATION_SHARE = 0.05
"""Share of a request's limit its optional sections leave free when tools are offered: the
loop's next request adds the model's tool call and its result (cut, or collapsed, to fit)."""


def continuation_reserve(limit: int) -> int:
    """Tokens a first request with tools keeps free for the loop's next request."""
    return max(64, int(limit * CONTINUATION_SHARE))


def assembly_config(config: Any) -> Any:
    """``config`` as assembly applies it: without a ``system_prompt`` content override.

    A context's system prompt override (reflection's) is the *base template* of the NPC's own
    system prompt (:func:`~evennia_ai.prompt.sources.own_system_prompt`), which keeps the
    identity and the NPC's guidelines around it; replacing the whole component with it would
    drop them. (The operator's section is not a component: nothing here can drop it.)
    """
    overrides = dict(getattr(config, "component_overrides", None) or {})
    if "system_prompt" not in overrides:
        return config
    overrides.pop("system_prompt")
    return replace(config, component_overrides=overrides)


class OfferedTools:
    """The tool schemas of a request, and their tokens; the fitter may leave optional ones out.

    Optional: every tool not in ``EVENNIA_AI_CORE_TOOLS``.
    """

    def __init__(self, counter: tokens.TokenCounter, schemas: list[dict[str, Any]]) -> None:
        self.counter = counter
        self.schemas = schemas
        self.tokens = counter.count_tools(schemas) if schemas else 0

    def drop_optional(self) -> str | None:
        """Leave out the optional schemas; what was done, or None when there were none."""
        core = set(conf.get("EVENNIA_AI_CORE_TOOLS") or ())
        kept = [s for s in self.schemas if schema_name(s) in core]
        if len(kept) == len(self.schemas):
            return None
        dropped = len(self.schemas) - len(kept)
        self.schemas = kept
        self.tokens = self.counter.count_tools(kept) if kept else 0
        return f"{dropped} tool schemas left out, {len(kept)} kept"


def schema_name(schema: Mapping[str, Any]) -> str:
    """The tool name of an OpenAI-format tool schema."""
    return str((schema.get("function") or {}).get("name") or schema.get("name") or "")


# Stable text first, volatile text last: what providers' prompt caches reward.
CACHE_FRIENDLY_ORDER = (
    "system_prompt",
    "character_context",
    "goals",
    "conversation_history",
    "entity_context",
    "semantic_memories",
    "context_buffer",
    "pending_event",
    "tool_result",
)


def cache_friendly_order(selected: list[PromptComponent]) -> list[PromptComponent]:
    """Reorder already-selected components (opt-in preset ``EVENNIA_AI_COMPONENT_ORDER``).

    Static components follow :data:`CACHE_FRIENDLY_ORDER`; each pluggable one stays right after
    the static component it follows. Components are renumbered 0, 1, 2, ... in that order, so
    assembly (which orders by ID) keeps it.
    """

    rank = {key: index for index, key in enumerate(CACHE_FRIENDLY_ORDER)}
    statics = {c.id: c for c in selected if c.is_static}

    def sort_key(comp: PromptComponent) -> tuple[int, int, int]:
        anchor = comp.id if comp.is_static else (comp.after_static or anchor_of(comp.id))
        anchor_key = statics[anchor].key if anchor in statics else ""
        return (rank.get(anchor_key, len(rank)), 0 if comp.is_static else 1, comp.id)

    ordered = sorted(selected, key=sort_key)
    return [
        replace(comp, id=index, is_static=False, after_static=None)
        for index, comp in enumerate(ordered)
    ]


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:  # binary search on slices: fast for long prompts
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def request_key_of(messages: list[dict[str, Any]], schemas: list[dict[str, Any]]) -> RequestKey:
    """A request as a provider's prompt cache sees it: the tools, then each message, serialised."""
    serial = [_message_key(m) for m in messages]
    return (json.dumps(schemas, sort_keys=True) if schemas else "", serial)


def _message_key(message: dict[str, Any]) -> str:
    """One message as the cache sees it: the role, a newline and the text for a plain text
    message of a chat role (most of a request; such a key never starts a JSON object, and
    no role holds a newline), JSON otherwise."""
    if len(message) == 2 and message.get("role") in CHAT_ROLES:
        content = message.get("content")
        if isinstance(content, str):
            return f"{message['role']}\n{content}"
    return json.dumps(message, sort_keys=True, default=str)


def prefix_cache_share(
    previous: RequestKey | None, current: RequestKey, message_tokens: list[int], tool_tokens: int
) -> float | None:
    """Share of ``current``'s tokens repeating the prefix of the ``previous`` request.

    A provider reads the tool schemas, then the messages in order; the shared prefix is the
    tools (when unchanged) and every leading message identical to the previous request's, plus
    the identical leading characters of the first message that differs (its tokens prorated).
    Both requests are :func:`request_key_of` tuples; None when there is no previous one.
    """

    tools_key, serial = current
    total = tool_tokens + sum(message_tokens)
    if not previous or not total:
        return None
    prev_tools, prev_serial = previous
    if prev_tools != tools_key:
        return 0.0
    shared = tool_tokens
    for index, text in enumerate(serial):
        if index < len(prev_serial) and prev_serial[index] == text:
            shared += message_tokens[index]
            continue
        if index < len(prev_serial):
            common = common_prefix_length(prev_serial[index], text)
            shared += int(message_tokens[index] * common / max(1, len(text)))
        break
    return round(shared / total, 4)


def suppress_duplicates(values: dict[str, Any]) -> dict[str, Any]:
    """Drop a source whose content another source already carries.

    When one rendered value contains another in full (e.g. an entity profile repeated by a
    memory block), the contained one is emptied so the same text is not paid for twice. Short
    values (< 40 chars) are kept.
    """
    texts = {k: v for k, v in values.items() if isinstance(v, str) and len(v.strip()) >= 40}
    out = dict(values)
    for key, text in texts.items():
        for other, other_text in texts.items():
            if (
                other != key
                and out.get(other)
                and text.strip() in other_text
                and len(other_text) > len(text)
            ):
                out[key] = ""
                break
    return out


# -- operator override file ------------------------------------------------------------------
class OperatorSourceError(RuntimeError):
    """The operator's instructions are configured but cannot be read."""


def read_operator_override() -> str:
    """The operator override file's text (``EVENNIA_AI_OPERATOR_OVERRIDE``), read at every build.

    Read each time rather than cached by modification time: an edit within the clock's
    resolution, or a file replaced by one with an older time, still takes effect at once. The
    file is small; reading it costs tens of microseconds.

    Raises:
        OperatorSourceError: The setting names a file that cannot be read (missing, no
            permission, not UTF-8). The tick then fails closed: no model call without the
            operator's instructions. Remove the setting to run without the file.
    """
    path = conf.get("EVENNIA_AI_OPERATOR_OVERRIDE")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError) as err:
        raise OperatorSourceError(
            f"EVENNIA_AI_OPERATOR_OVERRIDE names {path}, which cannot be read "
            f"({reason(err)}); fix the file or remove the setting"
        ) from None
