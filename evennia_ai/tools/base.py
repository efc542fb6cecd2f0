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

Argument validation (:func:`validate_value`) implements the part of JSON Schema tool schemas
use: ``type`` (string, integer, number, boolean, object, array, null, or a list of them),
``required``, ``properties``, ``additionalProperties`` (false, or a schema for the extra
properties), ``enum``, ``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum``,
``minLength``/``maxLength``, ``items`` (one schema for every item) and
``minItems``/``maxItems``. Other keywords are ignored. Booleans are never numbers, NaN and
infinities are never numbers, and ``enum`` compares like JSON (``1`` equals ``1.0``, never
``true``). Nothing is coerced, with one exception: a float with no fraction (``3.0``) is an
integer, because JSON does not tell them apart; :meth:`Tool.safe_run` hands it to ``run`` as
the int ``3`` (:func:`coerce_integers`), so tools can index and count with it.

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
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from evennia_ai import conf

# The plugin's Python logger; evennia_ai.startstop forwards it to Evennia's server log.
_log = logging.getLogger("evennia_ai")

MAX_ERROR_LENGTH = 300
"""Longest exception message handed back to the model (the full trace is logged)."""

MAX_DEPTH = 32
"""Deepest nesting of arguments the validator follows."""


TEXT = {"type": "string", "minLength": 1}  # a required, non-empty string argument


def object_schema(properties: dict, required=()) -> dict:
    """A closed JSON-schema object for tool arguments (unknown arguments are refused).

    Example:
        parameters = object_schema({"item": TEXT}, required=["item"])
    """
    schema = {"type": "object", "properties": dict(properties), "additionalProperties": False}
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
    data: dict = field(default_factory=dict)

    @classmethod
    def ok(cls, content: Any = None, **kwargs) -> "ToolResult":
        """A success carrying ``content`` (keywords set the other fields)."""
        return cls(success=True, content=content, **kwargs)

    @classmethod
    def fail(cls, error: str, **extra) -> "ToolResult":
        """A failure; ``extra`` goes to :attr:`data` (``suggestion=...`` reaches the model)."""
        return cls(success=False, error=str(error), data=dict(extra))

    def to_text(self) -> str:
        """The text fed back to the model: strings as they are, anything else as JSON."""
        if not self.success:
            payload: dict = {"success": False, "error": self.error or "failed"}
            payload.update({k: self.data[k] for k in MODEL_VISIBLE_FAILURE_KEYS if k in self.data})
            return _dumps(payload)
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return _dumps({"success": True})
        return _dumps(self.content)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # circular structures, odd keys
        return str(value)


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
        state: Loop state (iteration, max_iterations, tools_this_cycle, pending_tools, depth,
            ...), read by ``get_system_status``.
        services: Shared services (the LLM client, the model name, memory, ...).
    """

    npc: Any = None
    script: Any = None
    tick_id: int = 0
    context_type: str = "tick_event"
    event: dict | None = None
    cache: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)
    services: dict = field(default_factory=dict)

    def invalidate(self, *tool_names: str) -> None:
        """Drop cached results of ``tool_names`` (all cached results when none are given)."""
        names = set(tool_names)
        for key in list(self.cache):
            if not names or (isinstance(key, tuple) and key and key[0] in names):
                self.cache.pop(key, None)


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
    """

    name: str = ""
    description: str = ""
    parameters: dict = {"type": "object", "properties": {}}
    category: str = ToolCategory.SAFE_CHAIN
    lock: str = ""
    cacheable: bool = False
    timeout: float | None = None
    contexts: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.category})>"

    def run(self, ctx: ToolContext, **kwargs) -> ToolResult | Any:  # pragma: no cover - abstract
        """Do the work. Return a ToolResult, a dict, a string, or (ASYNC_REQUIRED) a Deferred."""
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
        if _is_number(self.timeout) and self.timeout > 0:
            return float(self.timeout)

        setting = conf.get("EVENNIA_AI_TOOL_TIMEOUT")
        if _is_number(setting) and setting > 0:
            return float(setting)
        return float(conf.SETTINGS["EVENNIA_AI_TOOL_TIMEOUT"].default)

    def validate_arguments(self, arguments: Any) -> list[str]:
        """Problems with ``arguments`` against :attr:`parameters` (empty when valid)."""
        return validate_value(arguments, self.parameters or {"type": "object"}, "arguments")

    def safe_run(self, ctx: ToolContext, arguments: Mapping | None = None):
        """Validate, serve from the tick's cache, run; never raises.

        Args:
            ctx: The tick's context.
            arguments: The arguments the model gave (None means none).

        Returns:
            A :class:`ToolResult`; or, when ``run`` returned a Deferred, that Deferred, firing
            with a ToolResult (failures included). The caller adds the timeout.
        """
        if arguments is None:
            arguments = {}
        problems = self.validate_arguments(arguments)
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
            return ToolResult.fail(f"'{self.name}' failed: {_short_error(err)}")

    def cache_key(self, arguments: Mapping) -> tuple[str, str]:
        """The key of a cacheable call in :attr:`ToolContext.cache`."""
        return (self.name, json.dumps(arguments, sort_keys=True, default=str))

    def _finish(self, outcome: Any, ctx: ToolContext, cache_key) -> ToolResult:
        result = normalise_result(outcome)
        if cache_key is not None and result.success:
            ctx.cache[cache_key] = result
        return result

    def _deferred_failure(self, failure) -> ToolResult:
        error = failure.value if hasattr(failure, "value") else failure
        _log.error("evennia_ai: tool %r failed:\n%s", self.name, failure.getTraceback())
        return ToolResult.fail(f"'{self.name}' failed: {_short_error(error)}")


def normalise_result(outcome: Any) -> ToolResult:
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


def _is_deferred(value: Any) -> bool:
    # Only a loaded Twisted can have made a Deferred: no import needed to check.
    defer_module = sys.modules.get("twisted.internet.defer")
    return defer_module is not None and isinstance(value, defer_module.Deferred)


def _short_error(err: Any) -> str:
    text = str(err).strip() or type(err).__name__
    text = " ".join(text.split())
    if len(text) > MAX_ERROR_LENGTH:
        text = text[: MAX_ERROR_LENGTH - 3] + "..."
    return text


def _signature_problems(run, arguments: Mapping) -> list[str]:
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


# -- JSON schema subset --------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, (list, tuple)),
    "null": lambda v: v is None,
}
_ARTICLES = {"integer": "an integer", "object": "an object", "array": "an array", "null": "null"}


def _type_phrase(name: str) -> str:
    return _ARTICLES.get(name, f"a {name}")


def type_name(value: Any) -> str:
    """The JSON type of ``value`` as it is named in messages (``3.0`` is "number")."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    for name in ("string", "object", "array", "null"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _short_repr(value: Any, limit: int = 40) -> str:
    text = _dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _child(path: str, name: str) -> str:
    return name if path == "arguments" else f"{path}.{name}"


def validate_value(value: Any, schema: Any, path: str = "value") -> list[str]:
    """Problems of ``value`` against ``schema`` (the subset in the module docstring).

    Never raises: a malformed schema constrains nothing where it is malformed.

    Args:
        value: The value (tool arguments: a dict parsed from JSON).
        schema: A JSON schema dict.
        path: Name of ``value`` in messages; ``"arguments"`` names properties bare.

    Returns:
        Readable problems, empty when ``value`` is valid.
    """
    problems: list[str] = []
    try:
        _validate(value, schema, path, problems, 0)
    except Exception as err:  # a schema shape no rule foresaw: report, never raise
        problems.append(f"could not check {path}: {_short_error(err)}")
    return problems


def _validate(value: Any, schema: Any, path: str, problems: list[str], depth: int) -> None:
    if not isinstance(schema, Mapping):
        return
    if depth > MAX_DEPTH:
        problems.append(f"{path} is nested too deeply")
        return
    expected = schema.get("type")
    if expected is not None:
        types = [
            t
            for t in (expected if isinstance(expected, (list, tuple)) else [expected])
            if isinstance(t, str) and t in _TYPES
        ]
        if types and not any(_TYPES[t](value) for t in types):
            wanted = " or ".join(_type_phrase(t) for t in types)
            problems.append(f"{path} must be {wanted}, not {type_name(value)}")
            return
    enum = schema.get("enum")
    if isinstance(enum, (list, tuple)) and not any(json_equal(value, option) for option in enum):
        options = ", ".join(_short_repr(option) for option in enum)
        problems.append(f"{path} must be one of: {options} (got {_short_repr(value)})")
    if isinstance(value, str):
        _check_bounds(
            len(value),
            schema,
            "minLength",
            "maxLength",
            path,
            "must be at least {} characters long",
            "must be at most {} characters long",
            problems,
        )
    elif _is_number(value):
        for key, fails, words in (
            ("minimum", lambda v, b: v < b, "must be >= {}"),
            ("maximum", lambda v, b: v > b, "must be <= {}"),
            ("exclusiveMinimum", lambda v, b: v <= b, "must be > {}"),
            ("exclusiveMaximum", lambda v, b: v >= b, "must be < {}"),
        ):
            bound = schema.get(key)
            if _is_number(bound) and fails(value, bound):
                problems.append(f"{path} {words.format(bound)} (got {_short_repr(value)})")
    elif isinstance(value, (list, tuple)):
        _check_bounds(
            len(value),
            schema,
            "minItems",
            "maxItems",
            path,
            "needs at least {} items",
            "takes at most {} items",
            problems,
        )
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _validate(item, items, f"{path}[{index}]", problems, depth + 1)
    elif isinstance(value, Mapping):
        _validate_object(value, schema, path, problems, depth)


def _check_bounds(
    size: int,
    schema: Mapping,
    low_key: str,
    high_key: str,
    path: str,
    low_words: str,
    high_words: str,
    problems: list[str],
) -> None:
    low, high = schema.get(low_key), schema.get(high_key)
    if _is_number(low) and size < low:
        problems.append(f"{path} {low_words.format(_plain_number(low))}")
    if _is_number(high) and size > high:
        problems.append(f"{path} {high_words.format(_plain_number(high))}")


def _plain_number(number: float) -> str:
    return str(int(number)) if _is_integer(number) else str(number)


def _validate_object(
    value: Mapping, schema: Mapping, path: str, problems: list[str], depth: int
) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    for name in required if isinstance(required, (list, tuple)) else ():
        if isinstance(name, str) and name not in value:
            if path == "arguments":
                problems.append(f"missing required argument '{name}'")
            else:
                problems.append(f"{path} is missing required field '{name}'")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props:
            _validate(item, props[name], _child(path, str(name)), problems, depth + 1)
        elif extra is False:
            accepted = ", ".join(map(str, props)) or "none"
            what = "argument" if path == "arguments" else f"field in {path}"
            problems.append(f"unexpected {what} '{name}' (accepted: {accepted})")
        elif isinstance(extra, Mapping):
            _validate(item, extra, _child(path, str(name)), problems, depth + 1)


def _integer_only(schema: Mapping) -> bool:
    expected = schema.get("type")
    types = expected if isinstance(expected, (list, tuple)) else [expected]
    return "integer" in types and "number" not in types


def coerce_integers(value: Any, schema: Any, depth: int = 0) -> Any:
    """``value`` with integral floats made ints where ``schema`` wants an integer.

    Only floats with no fraction at positions typed ``integer`` (and not ``number``) change;
    containers are copied, everything else is returned as it is.
    """
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return value
    if isinstance(value, float) and _is_integer(value) and _integer_only(schema):
        return int(value)
    if isinstance(value, Mapping):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        out = {}
        for name, item in value.items():
            sub = props.get(name, extra if isinstance(extra, Mapping) else None)
            out[name] = coerce_integers(item, sub, depth + 1)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [coerce_integers(item, items, depth + 1) for item in value]
    return value


def schema_problems(schema: Any, path: str = "parameters") -> list[str]:
    """Mistakes in a tool's own argument schema (checked when a tool is registered).

    Checks that it is an ``object`` schema, that every ``type`` is known, that ``required``,
    ``properties`` and ``enum`` have the right shapes and that bounds are numbers.
    """
    problems: list[str] = []
    if not isinstance(schema, Mapping):
        return [f"{path} must be a JSON schema dict, not {type(schema).__name__}"]
    if path == "parameters" and schema.get("type") != "object":
        problems.append('parameters must have "type": "object"')
    try:
        _schema_problems(schema, path, problems, 0)
    except Exception as err:  # a shape no rule foresaw: report, never raise
        problems.append(f"could not check {path}: {_short_error(err)}")
    return problems


def _schema_problems(schema: Mapping, path: str, problems: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        problems.append(f"{path} is nested too deeply")
        return
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, (list, tuple)) else [expected]
        for t in types:
            if not (isinstance(t, str) and t in _TYPES):
                problems.append(f"{path}: unknown type {t!r} (known: {', '.join(_TYPES)})")
    if "required" in schema and not (
        isinstance(schema["required"], (list, tuple))
        and all(isinstance(n, str) for n in schema["required"])
    ):
        problems.append(f"{path}: 'required' must be a list of property names")
    if "enum" in schema and not isinstance(schema["enum"], (list, tuple)):
        problems.append(f"{path}: 'enum' must be a list")
    for key in (
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    ):
        if key in schema and not _is_number(schema[key]):
            problems.append(f"{path}: '{key}' must be a number")
    props = schema.get("properties")
    if props is not None:
        if not isinstance(props, Mapping):
            problems.append(f"{path}: 'properties' must be a dict")
        else:
            for name, sub in props.items():
                if not isinstance(sub, Mapping):
                    problems.append(f"{path}.{name} must be a schema dict")
                else:
                    _schema_problems(sub, f"{path}.{name}", problems, depth + 1)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            _schema_problems(sub, f"{path}.{key}", problems, depth + 1)
