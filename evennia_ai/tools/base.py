"""The Tool base class, its results, the context handed to it, and argument validation.

A tool is a small class: a name, a description, a JSON-schema for its arguments, a category and
an optional Evennia lock string, and a ``run(ctx, **arguments)`` that returns a
:class:`ToolResult`. Errors are results, never exceptions: :meth:`Tool.safe_run` validates the
arguments, serves cached results, calls ``run`` and turns anything raised into a failed result
with a short message (the trace goes to the server log).

Categories:

- ``SAFE_CHAIN``: may be chained freely inside a ReAct loop (look, memory edits, goals).
- ``ASYNC_REQUIRED``: slow work; ``run`` may return a Twisted Deferred, which the loop gives
  ``timeout`` seconds (default ``EVENNIA_AI_TOOL_TIMEOUT`` = 30 s).
- ``TERMINAL``: ends the loop when the execution pattern says so (speech: the NPC waits for
  an answer).
- ``DANGEROUS``: at most one per tick, and only with a Builder's confirmation when the pattern
  requires it (execute_command, set_attribute).

Argument validation implements the subset of JSON Schema tool schemas use: ``type`` (string,
integer, number, boolean, object, array, null, or a list of them), ``required``,
``properties``, ``additionalProperties: false``, ``enum``, ``minimum``/``maximum``,
``minLength``/``maxLength``, ``items``, ``minItems``/``maxItems``. Nothing is coerced, except
that a float with no fraction (``3.0``) counts as an integer, as JSON does not distinguish them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class ToolResult:
    """What a tool hands back; ``to_text()`` is what the model reads.

    Attributes:
        success: Whether the tool did what was asked.
        content: The result (text or JSON-able data).
        error: What went wrong, for the model to read.
        terminal: The tool ended the NPC's turn (besides its category).
        pending: The action awaits an operator's confirmation.
        data: Extra structured data for the engine (not shown to the model).
    """

    success: bool
    content: Any = None
    error: str | None = None
    terminal: bool = False
    pending: bool = False
    data: dict = field(default_factory=dict)

    @classmethod
    def ok(cls, content: Any = None, **kwargs) -> "ToolResult":
        return cls(success=True, content=content, **kwargs)

    @classmethod
    def fail(cls, error: str, **extra) -> "ToolResult":
        return cls(success=False, error=str(error), data=dict(extra))

    def to_text(self) -> str:
        """The text fed back to the model."""
        if not self.success:
            payload = {"success": False, "error": self.error}
            payload.update({k: v for k, v in self.data.items() if k in ("suggestion", "available")})
            return json.dumps(payload, default=str, ensure_ascii=False)
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return json.dumps({"success": True})
        return json.dumps(self.content, default=str, ensure_ascii=False)


@dataclass
class ToolContext:
    """Everything a tool may need about the tick it runs in.

    Attributes:
        npc: The acting character.
        script: Its AssistantScript (None outside ticks).
        tick_id: The tick counter.
        context_type: Context type of the tick.
        event: The event the tick answers, as a dict, if any.
        cache: Per-tick cache of cacheable tool results.
        state: Loop state (iteration, max_iterations, tools_this_cycle, pending_tools, depth,
            confirmed, ...).
        services: Shared services (the LLM client, the model, the offered tools).
    """

    npc: Any = None
    script: Any = None
    tick_id: int = 0
    context_type: str = "tick_event"
    event: dict | None = None
    cache: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)
    services: dict = field(default_factory=dict)


class Tool:
    """Base class of every tool. Subclass, set the class attributes, implement ``run``."""

    name: str = ""
    description: str = ""
    parameters: dict = {"type": "object", "properties": {}}
    category: str = ToolCategory.SAFE_CHAIN
    lock: str = ""
    cacheable: bool = False
    bookkeeping: bool = False  # only notes things down; may precede the action of a single-action tick
    timeout: float | None = None
    contexts: frozenset[str] | None = None

    def run(self, ctx: ToolContext, **kwargs) -> ToolResult | Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_schema(self) -> dict:
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
        if self.timeout:
            return float(self.timeout)
        from evennia_ai import conf

        return float(conf.get("EVENNIA_AI_TOOL_TIMEOUT"))

    def validate_arguments(self, arguments: Any) -> list[str]:
        """Problems with ``arguments`` against the schema (empty when valid)."""
        return validate_value(arguments, self.parameters or {"type": "object"}, "arguments")

    def safe_run(self, ctx: ToolContext, arguments: dict | None):
        """Validate, serve from cache, run; never raises.

        Returns:
            A ToolResult, or a Deferred (ASYNC_REQUIRED tools) firing with one.
        """
        arguments = arguments if arguments is not None else {}
        problems = self.validate_arguments(arguments)
        if problems:
            return ToolResult.fail(f"Invalid arguments for '{self.name}': " + "; ".join(problems))
        cache_key = None
        if self.cacheable:
            cache_key = (self.name, json.dumps(arguments, sort_keys=True, default=str))
            if cache_key in ctx.cache:
                return ctx.cache[cache_key]
        try:
            outcome = self.run(ctx, **arguments)
        except Exception as err:
            _log_trace(f"evennia_ai: tool '{self.name}' raised")
            return ToolResult.fail(f"'{self.name}' failed: {err}")
        if _is_deferred(outcome):
            return outcome.addCallback(_normalise).addErrback(
                lambda failure: ToolResult.fail(f"'{self.name}' failed: {failure.getErrorMessage()}")
            )
        result = _normalise(outcome)
        if cache_key is not None and result.success:
            ctx.cache[cache_key] = result
        return result


def _is_deferred(value) -> bool:
    return type(value).__name__ == "Deferred" and hasattr(value, "addCallback")


def _normalise(outcome) -> ToolResult:
    if isinstance(outcome, ToolResult):
        return outcome
    if isinstance(outcome, dict) and "success" in outcome:
        success = bool(outcome.get("success"))
        if success:
            return ToolResult.ok(outcome)
        extra = {k: v for k, v in outcome.items() if k not in ("success", "error")}
        return ToolResult.fail(outcome.get("error") or "failed", **extra)
    return ToolResult.ok(outcome)


def _log_trace(message: str) -> None:
    try:
        from evennia.utils import logger

        logger.log_trace(message)
    except Exception:  # pragma: no cover - Evennia missing
        import logging

        logging.getLogger("evennia_ai").exception(message)


# -- JSON schema subset --------------------------------------------------------------------------
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def validate_value(value: Any, schema: dict, path: str = "value") -> list[str]:
    """Problems of ``value`` against ``schema`` (the subset described in the module docstring)."""
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        checks = [_TYPES.get(t) for t in types if t in _TYPES]
        if checks and not any(check(value) for check in checks):
            return [f"{path} must be {' or '.join(map(str, types))}, not {_type_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} must be one of {schema['enum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path} must be at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path} must be at most {schema['maxLength']} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path} must be <= {schema['maximum']}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path} needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path} takes at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                problems += validate_value(item, items, f"{path}[{index}]")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                problems.append(f"missing required argument '{name}'")
        for name, item in value.items():
            if name in props:
                problems += validate_value(item, props[name], name)
            elif schema.get("additionalProperties") is False:
                problems.append(f"unexpected argument '{name}'")
    return problems


def _type_name(value: Any) -> str:
    for name, check in _TYPES.items():
        if name != "number" and check(value):
            return name
    return type(value).__name__
