"""Tool arguments checked against the tool's JSON Schema, in words the model can act on.

Pure module: no Django, Evennia or Twisted at import time.

The checking is `jsonschema`'s: every keyword of the draft a schema declares with ``$schema``
(Draft 2020-12 when it declares none) is enforced: ``type``, ``enum``, ``const``, the number
bounds and ``multipleOf``, ``minLength``/``maxLength``/``pattern``/``format``, the array and
object keywords, ``anyOf``/``oneOf``/``allOf``/``not``/``if``, ``$ref`` into the schema's own
``$defs``. Formats whose checker needs a package jsonschema cannot import pass unchecked (as the
draft allows); remote ``$ref`` targets are never fetched: the plugin stays offline, and
:func:`schema_problems` refuses a schema that needs one.

On top of the draft:

- NaN and infinities are never numbers, wherever they appear (Python's JSON parser accepts
  ``NaN`` and ``Infinity``; JSON does not).
- Arguments nested deeper than :data:`MAX_DEPTH` levels are refused before the schema is read.
- A float with no fraction (``3.0``) is an integer, as the draft says; :func:`coerce_integers`
  turns it into the int ``3`` where the schema wants an integer, so tools can count with it.
- jsonschema's messages (``"'x' is a required property"``) become short sentences that name
  the argument: ``missing required argument 'x'``, ``times must be <= 3 (got 4)``,
  ``unexpected argument 'loud' (accepted: text, times)``.

Example:
    >>> validate_value({"times": 4}, {"type": "object", "properties": {
    ...     "times": {"type": "integer", "maximum": 3}}}, "arguments")
    ['times must be <= 3 (got 4)']
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.exceptions import ValidationError, best_match
from jsonschema_specifications import REGISTRY as META_SCHEMAS

from evennia_ai.utils import one_line

MAX_DEPTH = 32
"""Deepest nesting of arguments checked; deeper arguments are refused."""

DEFAULT_DRAFT = jsonschema.Draft202012Validator
"""The draft of a schema that declares no ``$schema`` (the one OpenAI's tool schemas follow)."""

KNOWN_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")

_DRAFTS = {
    (cls.META_SCHEMA.get("$id") or cls.META_SCHEMA.get("id", "")).rstrip("#"): cls
    for cls in (
        jsonschema.Draft3Validator,
        jsonschema.Draft4Validator,
        jsonschema.Draft6Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    )
}

# No retrieval function: a reference outside the schema (and the bundled meta-schemas) is
# unresolvable instead of fetched over the network.
_OFFLINE = referencing.Registry()

_ARTICLES = {"integer": "an integer", "object": "an object", "array": "an array", "null": "null"}


# -- JSON types ----------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number: an int or a finite float, never a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_integer(value: Any) -> bool:
    """Whether ``value`` is a JSON integer: an int, or a finite float with no fraction."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def type_name(value: Any) -> str:
    """The JSON type of ``value`` as messages name it (``3.0`` is "number")."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if value is None:
        return "null"
    return type(value).__name__


def _type_phrase(name: Any) -> str:
    return _ARTICLES.get(name, f"a {name}")


def _types_phrase(expected: Any) -> str:
    names = expected if isinstance(expected, (list, tuple)) else [expected]
    return " or ".join(_type_phrase(name) for name in names)


_TYPE_CHECKS = {
    "number": lambda _checker, value: is_number(value),
    "integer": lambda _checker, value: is_integer(value),
    "object": lambda _checker, value: isinstance(value, Mapping),
    "array": lambda _checker, value: isinstance(value, (list, tuple)),
}
_EXTENDED: dict[type, type] = {}


def _checking_class(draft: type) -> type:
    """``draft`` with this module's number, integer, object and array types."""
    cls = _EXTENDED.get(draft)
    if cls is None:
        checker = draft.TYPE_CHECKER.redefine_many(_TYPE_CHECKS)
        cls = _EXTENDED[draft] = jsonschema.validators.extend(draft, type_checker=checker)
    return cls


def draft_of(schema: Any) -> type | None:
    """The validator class of the draft ``schema`` declares (the default when it declares none).

    Returns:
        The jsonschema validator class, or None when ``$schema`` names no known draft.
    """
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared is None:
        return DEFAULT_DRAFT
    if not isinstance(declared, str):
        return None
    return _DRAFTS.get(declared.rstrip("#"))


# -- validators, built once per schema -----------------------------------------------------------
_VALIDATORS: dict[int, tuple[Any, Any]] = {}
_MAX_VALIDATORS = 512


class _InvalidSchema(Exception):
    """The tool's own schema is not a valid JSON Schema: nothing it says can be trusted."""


def _validator(schema: Any):
    """A ready validator for ``schema``, cached while the schema object lives.

    Raises:
        _InvalidSchema: ``schema`` breaks its draft's meta-schema, or needs a remote reference.
    """
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        validator = hit[1]
    else:
        problems = schema_problems(schema, "schema", require_object=False)
        if problems:
            validator = _InvalidSchema("the tool's schema is invalid: " + problems[0])
        else:
            draft = draft_of(schema) or DEFAULT_DRAFT
            validator = _checking_class(draft)(
                schema, registry=_OFFLINE, format_checker=draft.FORMAT_CHECKER
            )
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        _VALIDATORS[id(schema)] = (schema, validator)  # the reference keeps the id unique
    if isinstance(validator, _InvalidSchema):
        raise validator
    return validator


# -- validation ----------------------------------------------------------------------------------
def validate_value(value: Any, schema: Any, path: str = "value") -> list[str]:
    """Problems of ``value`` against the JSON Schema ``schema``, in short sentences.

    Never raises. A schema that is not a valid JSON Schema fails closed: the one problem says
    the tool's schema is invalid (tools are checked when registered, so a model never meets
    one). Anything that is not a dict or a bool is no schema and constrains nothing.

    Args:
        value: The value (tool arguments: a dict parsed from JSON).
        schema: A JSON Schema.
        path: Name of ``value`` in messages; ``"arguments"`` names properties bare.

    Returns:
        Readable problems, empty when ``value`` is valid.
    """
    if not isinstance(schema, (Mapping, bool)):
        return []
    try:
        non_finite = _non_finite_places(value)
    except RecursionError:
        non_finite = None
    if non_finite is None:
        return [f"{path} is nested too deeply (at most {MAX_DEPTH} levels)"]
    problems = [
        f"{_place(path, where)} must be a finite number (got {shown})"
        for where, shown in non_finite
    ]
    try:
        errors = list(_validator(schema).iter_errors(value))
    except _InvalidSchema as err:
        return problems + [str(err)]
    except Exception as err:  # a reference that does not resolve, a format checker's bug
        return problems + [f"could not check {path}: {one_line(err)}"]
    reported = {where for where, _ in non_finite}
    wrong_type = {tuple(error.absolute_path) for error in errors if error.validator == "type"}
    for error in errors:
        where = tuple(error.absolute_path)
        if where in reported or (where in wrong_type and error.validator != "type"):
            continue  # one problem per place: a wrong type makes its other checks moot
        problems.extend(describe(error, path))
    return _unique(problems)


def _non_finite_places(value: Any) -> list[tuple[tuple, str]] | None:
    """Places of NaN and infinities in ``value``; None when it nests deeper than MAX_DEPTH."""
    found: list[tuple[tuple, str]] = []
    stack = [(value, (), 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return None
        if isinstance(item, float) and not math.isfinite(item):
            found.append(
                (where, "NaN" if math.isnan(item) else f"{'-' if item < 0 else ''}Infinity")
            )
        elif isinstance(item, Mapping):
            stack.extend((sub, where + (key,), depth + 1) for key, sub in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, where + (index,), depth + 1) for index, sub in enumerate(item))
    found.sort(key=lambda pair: [str(part) for part in pair[0]])
    return found


def _place(root: str, where: Iterable) -> str:
    """``root`` followed by a path: ``arguments`` + (``a``, 0) reads ``a[0]``."""
    name = root
    for part in where:
        if isinstance(part, int):
            name = f"{name}[{part}]"
        else:
            name = str(part) if name == "arguments" else f"{name}.{part}"
    return name


def _short(value: Any, limit: int = 40) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}
_SIZES = {
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "needs at least {} items",
    "maxItems": "takes at most {} items",
    "minProperties": "needs at least {} fields",
    "maxProperties": "takes at most {} fields",
    "minContains": "needs at least {} items that match its item schema",
    "maxContains": "takes at most {} items that match its item schema",
}


def describe(error: ValidationError, root: str = "arguments") -> list[str]:
    """jsonschema's ``error`` as the short sentences the model reads.

    Args:
        error: One error from ``iter_errors``.
        root: Name of the validated value (``"arguments"`` names properties bare).
    """
    where = tuple(error.absolute_path)
    name = _place(root, where)
    at_root = not where and root == "arguments"
    keyword, expected, got = error.validator, error.validator_value, error.instance

    if "propertyNames" in error.relative_schema_path:
        return [f"{name} has a field name that is not allowed: {_short(got)}"]
    if keyword == "type":
        return [f"{name} must be {_types_phrase(expected)}, not {type_name(got)}"]
    if keyword == "enum":
        options = ", ".join(_short(option) for option in expected)
        return [f"{name} must be one of: {options} (got {_short(got)})"]
    if keyword == "const":
        return [f"{name} must be {_short(expected)} (got {_short(got)})"]
    if keyword == "required":
        missing = [n for n in expected if isinstance(n, str) and n not in got]
        if at_root:
            return [f"missing required argument '{n}'" for n in missing]
        return [f"{name} is missing required field '{n}'" for n in missing]
    if keyword in ("dependentRequired", "dependencies") and isinstance(expected, Mapping):
        needs = [
            (key, dep)
            for key, deps in expected.items()
            if key in got and isinstance(deps, (list, tuple))
            for dep in deps
            if dep not in got
        ]
        if needs:
            if at_root:
                return [f"argument '{dep}' is required when '{key}' is given" for key, dep in needs]
            return [f"{name} needs field '{dep}' when '{key}' is given" for key, dep in needs]
    if keyword == "additionalProperties" and expected is False and isinstance(got, Mapping):
        declared = error.schema.get("properties") or {}
        patterns = error.schema.get("patternProperties") or {}
        extras = [
            key
            for key in got
            if key not in declared and not any(re.search(p, str(key)) for p in patterns)
        ]
        accepted = ", ".join(map(str, declared)) or "none"
        what = "argument" if at_root else f"field in {name}"
        return [f"unexpected {what} '{key}' (accepted: {accepted})" for key in extras]
    if keyword in ("items", "additionalItems") and expected is False:  # after a fixed prefix
        prefix = error.schema.get("prefixItems" if keyword == "items" else "items")
        count = len(prefix) if isinstance(prefix, (list, tuple)) else 0
        return [f"{name} {_SIZES['maxItems'].format(count)}"]
    if keyword in _BOUNDS:
        sign = _BOUNDS[keyword]
        if (
            keyword in ("minimum", "maximum")
            and error.schema.get("exclusive" + keyword[0].upper() + keyword[1:]) is True
        ):  # draft 4: a boolean exclusiveMinimum beside minimum
            sign = sign[0]
        return [f"{name} must be {sign} {_short(expected)} (got {_short(got)})"]
    if keyword == "multipleOf":
        return [f"{name} must be a multiple of {_short(expected)} (got {_short(got)})"]
    if keyword in _SIZES:
        return [f"{name} {_SIZES[keyword].format(_short(expected))}"]
    if keyword == "pattern":
        return [f"{name} must match the pattern {_short(expected)} (got {_short(got)})"]
    if keyword == "format":
        return [f"{name} must be a valid {expected} (got {_short(got)})"]
    if keyword == "uniqueItems":
        return [f"{name} must not repeat an item"]
    if keyword == "contains":
        return [f"{name} must contain an item that matches its item schema"]
    if keyword in ("anyOf", "oneOf"):
        if not error.context:
            return [f"{name} matches more than one of the allowed forms"]
        closest = describe(best_match(error.context), root)
        hint = f"; closest: {closest[0]}" if closest else ""
        return [f"{name} matches none of the allowed forms{hint}"]
    if keyword == "not":
        return [f"{name} is not allowed in this form (got {_short(got)})"]
    if keyword is None and error.validator_value is None and where:  # a `false` schema
        return [f"{name} is not allowed"]
    return [f"{name}: {one_line(error.message)}"]


# -- integer coercion ----------------------------------------------------------------------------
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
    if isinstance(value, float) and is_integer(value) and _integer_only(schema):
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


# -- the tool author's schema --------------------------------------------------------------------
_NAMED_SUBSCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_LISTED_SUBSCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


def schema_problems(
    schema: Any, path: str = "parameters", require_object: bool = True
) -> list[str]:
    """Mistakes in a tool's own argument schema (checked when a tool is registered).

    The schema is checked against its draft's meta-schema (unknown types, misshapen
    ``required``, ``enum`` or ``properties``, bounds that are not numbers, bad regular
    expressions in ``pattern``), its ``$schema`` must name a known draft, and every ``$ref``
    must resolve inside the schema.

    Args:
        schema: The schema.
        path: Its name in messages.
        require_object: Tool parameters must be an ``object`` schema.

    Returns:
        Readable problems, empty when the schema is sound.
    """
    if not isinstance(schema, Mapping):
        if not require_object and isinstance(schema, bool):
            return []
        return [f"{path} must be a JSON schema dict, not {type(schema).__name__}"]
    problems: list[str] = []
    if require_object and schema.get("type") != "object":
        problems.append(f'{path} must have "type": "object"')
    draft = draft_of(schema)
    if draft is None:
        known = ", ".join(sorted(_DRAFTS))
        problems.append(f"{path}: unknown $schema {_short(schema.get('$schema'))} (known: {known})")
        draft = DEFAULT_DRAFT
    try:
        meta = draft(draft.META_SCHEMA, registry=_OFFLINE, format_checker=draft.FORMAT_CHECKER)
        problems.extend(_meta_problem(error, path) for error in meta.iter_errors(schema))
        problems.extend(_reference_problems(schema, draft, path))
    except RecursionError:
        problems.append(f"{path} is nested too deeply (is it its own sub-schema?)")
    except Exception as err:  # a shape no rule foresaw: report, never raise
        problems.append(f"could not check {path}: {one_line(err)}")
    return _unique(problems)


def _schema_place(root: str, parts: list) -> tuple[str, Any]:
    """Where in the schema a meta-schema error is, and the keyword it is about (or None)."""
    name, index = root, 0
    while index < len(parts):
        part = parts[index]
        following = parts[index + 1] if index + 1 < len(parts) else None
        if part in _NAMED_SUBSCHEMAS and following is not None:
            name += f".{following}" if part == "properties" else f".{part}.{following}"
            index += 2
        elif part in _LISTED_SUBSCHEMAS and isinstance(following, int):
            name += f".{part}[{following}]"
            index += 2
        elif part in _SUBSCHEMAS and following is not None:
            name += f".{part}"
            index += 1
        else:
            return name, part
    return name, None


def _meta_problem(error: ValidationError, root: str) -> str:
    name, keyword = _schema_place(root, list(error.absolute_path))
    if keyword == "type":
        declared = error.instance if isinstance(error.instance, (list, tuple)) else [error.instance]
        if isinstance(error.schema.get("type"), str) or error.validator in ("anyOf", "enum"):
            unknown = [t for t in declared if t not in KNOWN_TYPES]
            if unknown:
                known = ", ".join(KNOWN_TYPES)
                return f"{name}: unknown type {unknown[0]!r} (known: {known})"
    if error.validator == "format" and keyword is not None:
        return f"{name}: '{keyword}' must be a valid {error.validator_value}"
    if error.validator == "type":
        wanted = _types_phrase(error.validator_value)
        if keyword is None:
            return f"{name} must be a schema ({wanted}), not {type_name(error.instance)}"
        return f"{name}: '{keyword}' must be {wanted}, not {type_name(error.instance)}"
    if keyword is None:
        return f"{name}: {one_line(error.message)}"
    return f"{name}: '{keyword}' {one_line(error.message)}"


def _reference_problems(schema: Mapping, draft: type, root: str) -> list[str]:
    """References in ``schema`` that do not resolve inside it (remote ones are never fetched)."""
    dialect = (draft.META_SCHEMA.get("$id") or draft.META_SCHEMA.get("id", "")).rstrip("#")
    specification = referencing.jsonschema.specification_with(
        dialect, default=referencing.jsonschema.DRAFT202012
    )
    resolver = META_SCHEMAS.resolver_with_root(specification.create_resource(schema))
    problems = []
    for where, ref in _references(schema, ()):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            name, _ = _schema_place(root, list(where))
            hint = "" if ref.startswith("#") else "; remote schemas are never fetched"
            problems.append(f"{name}: $ref {_short(ref)} does not resolve inside the schema{hint}")
    return problems


def _references(node: Any, where: tuple, depth: int = 0) -> Iterable[tuple[tuple, str]]:
    if depth > MAX_DEPTH * 4:
        raise RecursionError("schema nests too deeply")
    if isinstance(node, Mapping):
        for key, sub in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(sub, str):
                yield where, sub
            elif key not in ("enum", "const", "default", "examples"):
                yield from _references(sub, where + (key,), depth + 1)
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _references(sub, where + (index,), depth + 1)
