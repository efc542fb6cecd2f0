"""Tick recordings: what each tick built its requests from, what it sent and what came back.

With ``EVENNIA_AI_RECORD_TICKS`` on, every tick that calls a model appends one JSON line to
``<data dir>/recordings/<npc key>-<id>.jsonl`` (:func:`recording_path`). The line holds:

- ``snapshot``: everything the pure build step (:meth:`ContextBuilder.finish
  <evennia_ai.prompt.builder.ContextBuilder.finish>`) and the ReAct loop read: the source values
  as gathered, the task, the model, the registry's customisation (components, overrides, the
  context type's settings), the tools with their schemas, the execution settings, the
  assessment and the NPC's tool rules;
- ``calls``: every model request of the tick as the client was asked (messages, tool schemas,
  model, call kind, parameters) with its reply (text, tool calls, error), in order; the loop's
  calls carry their ``step`` (``act``, ``plan``) and the results of the tools they asked for;
- ``baseline``: the sections and tokens of the request rebuilt from the snapshot when it was
  recorded, which a replay compares its own build with.

Secrets never reach the file: the NPC's secrets (``EVENNIA_AI_SECRETS``, the operator prompt's
``Secret:`` lines, secret memory blocks) and the API keys are replaced by ``[redacted]`` on word
and token boundaries (:func:`~evennia_ai.engine.redaction.redact_secrets`: a short secret does
not eat into longer words, a long key is found inside a URL) before anything is written. The line is built and
written in a thread once the tick has finished; a file that would pass
``EVENNIA_AI_RECORD_MAX_BYTES`` is not written to again (one log line). Recording never fails a
tick: any error is logged and the tick goes on.

:func:`replay_tick` rebuilds a recorded tick with the current code, without a database, feeding
the recorded replies in order; ``python -m evennia_ai.engine.replay FILE`` prints what changed.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import Any, Iterable

from evennia.utils import logger
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine.react import ReactLoop
from evennia_ai.engine.redaction import npc_secrets, redact_secrets
from evennia_ai.engine.trace import TickTrace
from evennia_ai.llm.errors import reason
from evennia_ai.llm.threads import run_in_thread
from evennia_ai.llm.tokens import request_counter
from evennia_ai.llm.types import LLMResult, LLMUsage, ToolCall
from evennia_ai.memory.longterm import data_dir
from evennia_ai.npc_state import npc_state
from evennia_ai.prompt.builder import ContextBuilder
from evennia_ai.prompt.execution_pattern import select_execution_pattern
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.prompt.registry_io import components_of, context_config_of
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.base import LoopState, TickServices, ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.tools.rules import parse_rules
from evennia_ai.utils import iso_utc, log_prefix

#: How a recording line reaches its writing thread. Tests replace it with a synchronous call.
defer_to_thread = run_in_thread

FORMAT = 1
"""Version of a recording line's layout (``format``)."""

MAX_NESTING = 200
"""Deepest nesting of lists and objects a recording line may have (a recorded tick has about
fifteen levels); a deeper line is refused as unreadable instead of exhausting the stack."""

_FULL: set[str] = set()  # files found full in this process (logged once each)


def recording_path(npc) -> str:
    """Where ``npc``'s ticks are recorded: ``<data dir>/recordings/<key>-<id>.jsonl``."""
    key = re.sub(r"[^A-Za-z0-9_-]+", "_", str(npc.key)).strip("_") or "npc"
    return os.path.join(data_dir(), "recordings", f"{key}-{npc.id}.jsonl")


def recording_secrets(npc) -> list[str]:
    """The texts a recording of ``npc`` must not hold: its secrets and the API keys."""
    return list(npc_secrets(npc).texts)


def _reply(result) -> dict:
    """An LLMResult as a recording keeps it."""
    return {
        "text": result.text,
        "tool_calls": [asdict(call) for call in result.tool_calls or ()],
        "error": result.error,
        "error_kind": result.error_kind,
        "native_tools": bool(getattr(result, "native_tools", True)),
        "model": result.model,
    }


def _result(reply: dict) -> LLMResult:
    """A recorded reply as the LLMResult the client would return."""
    return LLMResult(
        text=reply.get("text"),
        tool_calls=[ToolCall(**call) for call in reply.get("tool_calls") or ()],
        usage=LLMUsage(),
        error=reply.get("error"),
        error_kind=reply.get("error_kind"),
        native_tools=bool(reply.get("native_tools", True)),
        model=reply.get("model") or "",
    )


class RecordingClient:
    """The LLM client of a recorded tick: every request and its reply go to the recorder."""

    def __init__(self, client, calls: list):
        self._client = client
        self._calls = calls

    def __getattr__(self, name):
        return getattr(self._client, name)

    def _entry(self, messages, tools, options: dict) -> dict:
        entry = {
            "kind": options.get("kind"),
            "model": options.get("model"),
            "messages": copy.deepcopy(list(messages)),
            "tools": copy.deepcopy(tools) if tools else None,
            "params": {
                key: options[key]
                for key in ("temperature", "max_tokens", "response_format")
                if options.get(key) is not None
            },
        }
        self._calls.append(entry)  # list.append is atomic: calls from threads keep their order
        return entry

    def complete(self, messages, tools=None, **options):
        """As the client's; the request is recorded now, the reply when it comes."""
        entry = self._entry(messages, tools, options)

        def keep(result):
            entry["reply"] = _reply(result)
            return result

        return self._client.complete(messages, tools, **options).addCallback(keep)

    def complete_sync(self, messages, tools=None, **options):
        """As the client's (summaries call it from a thread)."""
        entry = self._entry(messages, tools, options)
        result = self._client.complete_sync(messages, tools, **options)
        entry["reply"] = _reply(result)
        return result


class TickRecorder:
    """Collects one tick for its recording; :meth:`save` writes it once the tick is done.

    Args:
        npc: The assistant whose tick is recorded.
    """

    def __init__(self, npc):
        self.npc = npc
        self.path = recording_path(npc)
        self.calls: list[dict] = []
        self.snapshot: dict | None = None

    @classmethod
    def for_tick(cls, npc) -> "TickRecorder | None":
        """A recorder when ``EVENNIA_AI_RECORD_TICKS`` is on, else None."""
        return cls(npc) if conf.get("EVENNIA_AI_RECORD_TICKS") else None

    def client(self, client) -> RecordingClient:
        """``client`` with every call recorded."""
        return RecordingClient(client, self.calls)

    def keep_build(self, state, built) -> None:
        """Keep what the tick's request was built from (``state``: the TickState).

        Reads nothing the tick did not read (the registry's Attributes are cached); a failure
        is logged and the tick goes on unrecorded.
        """
        try:
            self.snapshot = self._snapshot(state, built)
        except Exception:
            logger.log_trace(f"{log_prefix(self.npc)}: recording the tick failed")
            self.snapshot = None

    def _snapshot(self, state, built) -> dict:
        tools = {t.name: t for t in list(state.tools) + list(state.offered)}
        return {
            "model": state.model,
            "context_type": state.context_type,
            "registry": get_prompt_registry().request_inputs(state.context_type),
            "sources": built.sources,
            "task": built.task,
            "tools": [
                {
                    "name": tool.name,
                    "category": str(getattr(tool, "category", "") or ""),
                    "bookkeeping": bool(getattr(tool, "bookkeeping", False)),
                    "needs_sub_agents": bool(getattr(tool, "needs_sub_agents", False)),
                    "allowed": tool in state.tools,
                    "offered": tool in state.offered,
                    "schema": tool.to_schema(),
                }
                for tool in tools.values()
            ],
            "execution_config": dict(state.execution_config),
            "tool_rules": list(npc_state(self.npc).tool_rules or []),
        }

    def keep_assessment(self, assessment: dict) -> None:
        """Keep the assessment the execution pattern was chosen with."""
        if self.snapshot is not None:
            self.snapshot["assessment"] = copy.deepcopy(assessment)

    def save(self, trace: TickTrace) -> defer.Deferred | None:
        """Write the tick's line in a thread (never raises; errors are logged)."""
        if self.snapshot is None:
            return None
        try:
            line = {
                "format": FORMAT,
                "time": iso_utc(precise=True),
                "npc": self.npc.key,
                "npc_id": self.npc.id,
                "tick_id": trace.tick_id,
                "context_type": trace.context_type,
                "stop_reason": trace.stop_reason,
                "snapshot": self.snapshot,
                "calls": label_loop_calls(self.calls, trace),
            }
            secrets = recording_secrets(self.npc)
        except Exception:
            logger.log_trace(f"{log_prefix(self.npc)}: recording the tick failed")
            return None
        caller = log_prefix(self.npc)
        written = defer_to_thread(_write_line, self.path, line, secrets)
        return written.addErrback(
            lambda failure: logger.log_err(
                f"{caller}: recording the tick failed: {failure.getErrorMessage()}"
            )
        )


def label_loop_calls(calls: list[dict], trace: TickTrace) -> list[dict]:
    """``calls`` with the loop's own marked by their ``step`` and tool results.

    The loop's calls are those of the tick's context type, in the order of the trace's
    iterations; each tool call's result is the text the next request shows for it (the last
    call's, the trace's).
    """
    loop = [c for c in calls if c.get("kind") == trace.context_type]
    for call, iteration in zip(loop, trace.iterations):
        call["step"] = iteration.kind
        call["tool_results"] = {
            t.id: {"status": t.status, "success": t.success, "text": t.result or t.error or ""}
            for t in iteration.tool_calls
        }
    for call, following in zip(loop, loop[1:]):
        for message in following.get("messages") or ():
            found = call.get("tool_results", {}).get(message.get("tool_call_id"))
            if message.get("role") == "tool" and found is not None:
                found["text"] = message.get("content") or ""
    return calls


def _write_line(path: str, line: dict, secrets: list[str]) -> None:
    """Redact, check the size cap, append (in a thread). One log line when the file is full."""
    text = json.dumps(redact_secrets(line, secrets), default=str, ensure_ascii=False)
    line = json.loads(text)
    try:
        line["baseline"] = build_request(line["snapshot"])[0].sections
    except Exception as err:  # the snapshot cannot be replayed: say so in the recording
        line["baseline_error"] = reason(err)
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
    cap = conf.get_int("EVENNIA_AI_RECORD_MAX_BYTES")
    size = os.path.getsize(path) if os.path.exists(path) else 0
    if size + len(data) > cap:
        if path not in _FULL:
            _FULL.add(path)
            logger.log_warn(
                f"evennia_ai: tick recording {path} reached EVENNIA_AI_RECORD_MAX_BYTES "
                f"({cap} bytes); no more ticks are recorded to it (move it away to go on)"
            )
        return
    _FULL.discard(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as handle:
        handle.write(data)


# -- replay ----------------------------------------------------------------------------------------
class RecordingError(ValueError):
    """A recording line that cannot be replayed (the message says why)."""


class _RecordedResult(ToolResult):
    """A recorded tool result: the model reads the recorded text."""

    def __init__(self, recorded: dict | None):
        recorded = recorded or {"success": True, "text": "(no result was recorded)"}
        super().__init__(success=bool(recorded.get("success", True)))
        self.recorded_text = str(recorded.get("text") or "")

    def to_text(self) -> str:
        return self.recorded_text


class _RecordedTool:
    """A tool of a recording: this build's schema (the recorded one for a tool this build does
    not have), and the results the recording saw.

    ``results``: recorded results by tool name, handed out in the order they were recorded.
    """

    def __init__(self, record: dict, results: dict[str, list]):
        self.name = str(record["name"])
        self.category = str(record.get("category") or "")
        self.bookkeeping = bool(record.get("bookkeeping"))
        self.needs_sub_agents = bool(record.get("needs_sub_agents"))
        current = TOOL_REGISTRY.get(self.name)
        self.schema = current.to_schema() if current else record.get("schema") or {}
        self.parameters = (self.schema.get("function") or {}).get("parameters") or {}
        self._results = results

    def to_schema(self) -> dict:
        return copy.deepcopy(self.schema)

    def validate_arguments(self, arguments: dict) -> list[str]:
        return []  # the recorded call was checked when it ran

    def safe_run(self, ctx, arguments: dict, checked: bool = False) -> ToolResult:
        queue = self._results.get(self.name) or []
        return _RecordedResult(queue.pop(0) if queue else None)


class _ReplayBuilder(ContextBuilder):
    """The pure build step over a snapshot: no NPC, no database."""

    def __init__(self, snapshot: dict, tools: list):
        registry = snapshot.get("registry") or {}
        npc = SimpleNamespace(
            key="replay",
            ndb=SimpleNamespace(ai_last_request=None),
            ai=SimpleNamespace(model=snapshot.get("model")),
        )
        config = context_config_of(snapshot["context_type"], registry)
        super().__init__(npc, config, tools=tools, model=snapshot.get("model"), metrics={})
        self._task = snapshot.get("task")
        self._components = components_of(registry)

    def components(self) -> list:
        return list(self._components)


def build_request(snapshot: dict, tools: list | None = None):
    """The BuiltContext the current build makes of a recorded ``snapshot`` (and its builder)."""
    if tools is None:
        tools = [_RecordedTool(t, {}) for t in snapshot.get("tools") or () if t.get("offered")]
    builder = _ReplayBuilder(snapshot, tools)
    return builder.finish(dict(snapshot.get("sources") or {})), builder


class _ReplayClient:
    """Answers the loop with the recorded replies, in order; keeps what it was asked."""

    def __init__(self, recorded: list[dict]):
        self.recorded = recorded
        self.asked: list[dict] = []

    def complete(self, messages, tools=None, **options):
        index = len(self.asked)
        self.asked.append({"messages": copy.deepcopy(messages), "tools": tools or None})
        if index < len(self.recorded):
            return defer.succeed(_result(self.recorded[index].get("reply") or {}))
        return defer.succeed(
            LLMResult(error="the recording has no reply for this call", error_kind="unknown")
        )


@dataclass
class TickReplay:
    """What replaying one recorded tick found.

    Attributes:
        tick_id: The recorded tick's number.
        context_type: Its context type.
        sections: ``(recorded tokens, rebuilt tokens)`` per section of the first request
            (0: the section is not in that request).
        calls: Per model call of the loop: ``step`` (the recorded one, else the rebuilt one),
            ``recorded`` and ``rebuilt`` tokens (None where that side has no such call) and
            ``same`` (the requests are identical).
        diverged: Why the rebuilt tick asks for a call the recording has no reply for, or "".
        unreplayed: Recorded calls the replay does not rebuild (other kinds: assessment,
            helpers, summaries), by kind.
    """

    tick_id: Any
    context_type: str
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)
    calls: list[dict] = field(default_factory=list)
    diverged: str = ""
    unreplayed: list[str] = field(default_factory=list)

    @property
    def section_changes(self) -> list[str]:
        """The sections added, dropped, grown or shrunk, in words."""
        changes = []
        for key, (old, new) in self.sections.items():
            if old == new:
                continue
            if not old:
                changes.append(f"section added: {key} ({new} tokens)")
            elif not new:
                changes.append(f"section dropped: {key} (was {old} tokens)")
            else:
                how = "grown" if new > old else "shrunk"
                changes.append(f"section {how}: {key} {old} -> {new} tokens ({new - old:+d})")
        return changes

    @property
    def changed(self) -> bool:
        """Whether any request differs from the recording."""
        return bool(self.section_changes) or not all(c["same"] for c in self.calls)

    def to_dict(self) -> dict:
        return {
            "tick_id": self.tick_id,
            "context_type": self.context_type,
            "changed": self.changed,
            "diverged": self.diverged,
            "section_changes": self.section_changes,
            "sections": {k: {"recorded": o, "rebuilt": n} for k, (o, n) in self.sections.items()},
            "calls": self.calls,
            "unreplayed": self.unreplayed,
        }


def _loop_tools(snapshot: dict, loop_calls: list[dict]) -> list[_RecordedTool]:
    """The recorded tools, each handing out the results the recording saw, in order."""
    results: dict[str, list] = {}
    for call in loop_calls:
        recorded = call.get("tool_results") or {}
        for tool_call in (call.get("reply") or {}).get("tool_calls") or ():
            results.setdefault(tool_call.get("name"), []).append(recorded.get(tool_call.get("id")))
    return [_RecordedTool(record, results) for record in snapshot.get("tools") or ()]


def replay_tick(line: dict) -> TickReplay:
    """Rebuild a recorded tick with the current build and feed it the recorded replies.

    The first request is rebuilt from the snapshot by the pure build step; the execution
    pattern is chosen again from the recorded settings and assessment; the ReAct loop runs with
    the recorded replies and tool results. Each request the loop asks for is compared with
    the recorded one.

    Raises:
        RecordingError: The line is not a tick recording this build can read.
    """
    snapshot, context_type, calls = _recorded_tick(line)
    load_builtin_tools()  # a replay outside the game has not imported them yet
    loop_calls = [c for c in calls if c.get("step")]
    tools = _loop_tools(snapshot, loop_calls)
    records = snapshot.get("tools") or []
    offered = [t for t, r in zip(tools, records) if r.get("offered")]
    built, builder = build_request(snapshot, offered)
    assessment = copy.deepcopy(snapshot.get("assessment") or {})
    assessment.setdefault("context_signals", {})["token_pressure"] = built.token_pressure
    pattern = select_execution_pattern(
        snapshot.get("execution_config") or {}, builder.config, assessment
    )
    callable_tools = [
        t
        for t, r in zip(tools, records)
        if (r.get("allowed") or r.get("offered")) and pattern.allows(t)
    ]
    trace = TickTrace(tick_id=line.get("tick_id") or 0, context_type=context_type)
    client = _ReplayClient(loop_calls)
    services = TickServices(
        client=client,
        model=snapshot.get("model"),
        pattern=pattern,
        tools=callable_tools,  # type: ignore[arg-type]  # recorded stand-ins
        rules=parse_rules(snapshot.get("tool_rules"))[0],
    )
    loop = ReactLoop(
        _replay_context(line, built, trace, services), built, trace=trace
    )  # the built schemas of the tools it may call
    loop.run()  # synchronous: no reactor runs, every reply is at hand
    return _compare(line, built, loop_calls, client.asked, trace, calls)


def _recorded_tick(line: dict) -> tuple[dict, str, list[dict]]:
    """The snapshot, the context type and the model calls of a recording line.

    Raises:
        RecordingError: The line is not a tick recording, or one of another format.
    """
    try:
        snapshot, calls = line["snapshot"], list(line.get("calls") or [])
        context_type = snapshot["context_type"]
    except (KeyError, TypeError) as err:
        raise RecordingError(f"not a tick recording (no {err})") from None
    if line.get("format") != FORMAT:
        raise RecordingError(f"recording format {line.get('format')!r}; this build reads {FORMAT}")
    return snapshot, context_type, calls


def _replay_context(line: dict, built, trace: TickTrace, services: TickServices) -> ToolContext:
    """The ToolContext of a replayed tick: a stand-in NPC, the tick's number and context type,
    the window and the first request's tokens as the rebuilt request has them, ``services``."""
    npc = SimpleNamespace(key=line.get("npc") or "replay", dbref=f"#{line.get('npc_id')}")
    return ToolContext(
        npc=npc,
        tick_id=trace.tick_id,
        context_type=trace.context_type,
        state=LoopState(window=built.window, request_tokens=built.total_tokens, metrics={}),
        services=services,
    )


def _compare(line, built, loop_calls, asked, trace, calls) -> TickReplay:
    """What differs between the recorded tick and its replay."""
    snapshot = line["snapshot"]
    count = request_counter(snapshot.get("model"))
    baseline = line.get("baseline") or {}
    keys = list(dict.fromkeys(list(baseline) + list(built.sections)))
    replay = TickReplay(
        tick_id=line.get("tick_id"),
        context_type=snapshot["context_type"],
        sections={k: (int(baseline.get(k, 0)), int(built.sections.get(k, 0))) for k in keys},
        unreplayed=[str(c.get("kind")) for c in calls if not c.get("step")],
    )
    steps = [it.kind for it in trace.iterations]
    for index in range(max(len(loop_calls), len(asked))):
        recorded = loop_calls[index] if index < len(loop_calls) else None
        rebuilt = asked[index] if index < len(asked) else None
        step = recorded["step"] if recorded else steps[index] if index < len(steps) else "act"
        replay.calls.append(
            {
                "step": step,
                "recorded": _tokens(count, recorded),
                "rebuilt": _tokens(count, rebuilt),
                "same": recorded is not None
                and rebuilt is not None
                and recorded.get("messages") == rebuilt["messages"]
                and (recorded.get("tools") or None) == rebuilt["tools"],
            }
        )
        if rebuilt is None or replay.diverged:
            continue
        new_step = steps[index] if index < len(steps) else "act"
        if recorded is None:
            replay.diverged = f"call {index + 1} ({new_step}) has no recorded reply"
        elif new_step != recorded["step"]:
            replay.diverged = (
                f"call {index + 1} is a '{new_step}' call where the recording has "
                f"an '{recorded['step']}' one"
                if recorded["step"][:1] in "aeiou"
                else f"call {index + 1} is a '{new_step}' call where the recording has "
                f"a '{recorded['step']}' one"
            )
    return replay


def _tokens(count, request: dict | None) -> int | None:
    if request is None:
        return None
    return int(count(request.get("messages") or [], request.get("tools") or []))


def _too_deep(number: int) -> RecordingError:
    return RecordingError(
        f"line {number}: nested too deeply (more than {MAX_NESTING} levels of lists and "
        "objects); it is not a tick recording this build wrote"
    )


def nesting(value: Any) -> int:
    """How deeply lists and dicts nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def read_recording(path: str):
    """The lines of a recording file: ``(line number, dict or RecordingError)`` each.

    Raises:
        RecordingError: The file cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise RecordingError(f"cannot read {path}: {err}") from None
    lines = text.split("\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except RecursionError:
            yield number, _too_deep(number)
            continue
        except ValueError as err:
            last = number == len(lines) and not text.endswith("\n")
            why = "it is cut short (the file was truncated)" if last else f"not JSON ({err})"
            yield number, RecordingError(f"line {number}: {why}")
            continue
        if nesting(value) > MAX_NESTING:
            yield number, _too_deep(number)
            continue
        if not isinstance(value, dict):
            yield number, RecordingError(f"line {number}: not a tick recording")
            continue
        yield number, value
