"""An in-process scripted model for tests of the loop's logic (no HTTP, no litellm).

It answers ``complete(messages, tools, model=...)`` as :class:`~evennia_ai.llm.client.
UnifiedLLMClient` does (a Deferred firing with an :class:`~evennia_ai.llm.types.LLMResult`),
from the same reply specs as the loopback :class:`~evennia_ai.testing.model_server.ModelServer`
(``{"text": ..., "tool_calls": [{"name", "arguments"}], "usage": {...}}``), and records what it
was sent. Use it where a test is about what the loop, the tick or a tool does with answers;
keep the model server for the client's own tests and end-to-end ones (retries, faults,
fallbacks, the JSON protocol), which need the real HTTP path.

Example:
    model = ScriptedModel()
    model.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Hi"}}]})
    services = TickServices(client=model, pattern=pattern, tools=tools)
    loop = ReactLoop(ToolContext(services=services), LoopRequest(messages), trace=trace)
    model.requests[0]["messages"]  # what the loop sent
"""

from __future__ import annotations

import itertools
import json
from collections import deque

from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.llm.json_protocol import decode_arguments
from evennia_ai.llm.request_gate import check_contract, check_window
from evennia_ai.llm.types import LLMResult, LLMUsage, ToolCall
from evennia_ai.testing.model_server import (
    ReplySpec,
    completion_chars,
    estimate_usage,
    resolve_tool_calls,
)

# Faults a scripted model can stand for: the error the client would return for them.
_FAULTS = {
    "500": ("server", "the model server failed (500)"),
    "429": ("rate_limit", "rate limited (429)"),
    "hang": ("timeout", "the model did not answer in time"),
    "malformed": ("malformed", "the model's answer could not be read"),
    "empty_choices": ("empty", "the model returned no answer"),
    "truncated": ("malformed", "the model's answer was cut off"),
    "disconnect": ("connection", "the connection to the model was lost"),
}


class ScriptedModel:
    """Answers model calls from a queue of reply specs, in process.

    Args:
        default_reply: The answer when the queue is empty (a spec dict or text).
        model: The model name results carry.
    """

    def __init__(
        self,
        default_reply: dict | str = "ok",
        model: str = "scripted/test-model",
        responder=None,
    ):
        self.model = model
        self.default_reply = default_reply
        self.responder = responder
        self.requests: list[dict] = []
        self._queue: deque[ReplySpec] = deque()
        self._ids = itertools.count(1)

    @property
    def default_reply(self) -> ReplySpec:
        return self._default

    @default_reply.setter
    def default_reply(self, spec) -> None:
        self._default = ReplySpec.from_dict(spec)

    def enqueue(self, *specs) -> None:
        """Queue answers, in order (validated now, so a typo fails the test at once)."""
        self._queue.extend(ReplySpec.from_dict(spec) for spec in specs)

    def resolve_model(self, model: str | None = None) -> str:
        """The model a call would use, as the client's (the tick asks it before a summary)."""
        return model or self.model

    def complete(self, messages, tools=None, *, model=None, **options) -> defer.Deferred:
        """The next scripted answer, as the client gives it (a Deferred of an LLMResult)."""
        return defer.succeed(self.complete_sync(messages, tools, model=model, **options))

    def complete_sync(self, messages, tools=None, *, model=None, **options) -> LLMResult:
        """The next answer: the queue's, else the responder's, else the default.

        The request passes the client's request gate first (its kind's contract, the model's
        window).
        """
        check_contract(options.get("kind"), messages)
        self.requests.append(
            {
                "messages": json.loads(json.dumps(messages, default=str)),
                "tools": tools,
                "model": model or self.model,
                "options": options,
            }
        )
        name = model or self.model
        # the window of the model the client would call: the call's, else the configured one
        window = check_window(
            model or conf.get("EVENNIA_AI_MODEL") or self.model,
            messages,
            tools,
            max_tokens=options.get("max_tokens"),
            prompt_tokens=options.get("prompt_tokens"),
        )
        if not window.fits:
            return LLMResult(
                model=name, attempts=0, error=window.describe(), error_kind="context_overflow"
            )
        spec = self._queue.popleft() if self._queue else None
        if spec is None and self.responder is not None:
            answer = self.responder({"messages": messages, "tools": tools or [], "model": name})
            spec = ReplySpec.from_dict(answer) if answer is not None else None
        spec = spec or self._default
        if spec.fault in _FAULTS:
            kind, error = _FAULTS[spec.fault]
            return LLMResult(model=name, attempts=1, error=spec.message or error, error_kind=kind)
        # The loopback server's own rules: fault calls, ids, and the token estimate.
        body = {"messages": messages, "tools": tools or []}
        wire_calls = resolve_tool_calls(spec, body, lambda: next(self._ids))
        counts = estimate_usage(spec, body, completion_chars(spec.text, wire_calls))
        calls = []
        for wire in wire_calls:
            arguments, raw, error = decode_arguments(wire["function"]["arguments"])
            calls.append(
                ToolCall(
                    id=wire["id"],
                    name=wire["function"]["name"],
                    arguments=arguments,
                    raw_arguments=raw,
                    error=error,
                )
            )
        return LLMResult(
            text=spec.text,
            tool_calls=calls,
            usage=LLMUsage(**counts),
            cost=0.0,
            model=name,
            attempts=1,
            finish_reason=spec.finish_reason or ("tool_calls" if calls else "stop"),
        )
