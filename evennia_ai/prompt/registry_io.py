"""The prompt registry's pure half: validation of every value and JSON import/export records.

:mod:`evennia_ai.prompt.registry` (the ``PromptRegistry`` Script, its storage and CRUD) calls
these; nothing here touches the database, Django or Evennia, so the rules can be read, tested and
reused (a dry-run import, the replay's view of a recorded registry) without a game. Every check
raises :class:`PromptRegistryError` (a ``ValueError``) whose message names the problem.

What the registry stores and the rules its operations follow: :mod:`evennia_ai.prompt.registry`
and ``docs/prompts.md``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeGuard

from evennia_ai.prompt import contexts as prompt_contexts
from evennia_ai.prompt.components import (
    STATIC_COMPONENT_IDS,
    STATIC_COMPONENT_KEYS,
    VALID_ROLES,
    PromptComponent,
    allocate_pluggable_id,
    get_static_component,
    get_static_components,
    is_static_id,
    pluggable_range,
    with_overrides,
)
from evennia_ai.prompt.templates import PromptTemplate, extract_placeholders

MAX_FEWSHOT_EXAMPLES = 15
EXPORT_FORMAT = "evennia_ai.prompt_registry"
EXPORT_VERSION = 1
MAX_ERROR_CHARS = 1000

TEMPLATE_FIELDS = (
    "key",
    "name",
    "description",
    "content",
    "placeholders",
    "category",
    "is_builtin",
    "created",
    "updated",
)
COMPONENT_FIELDS = (
    "id",
    "key",
    "name",
    "description",
    "content",
    "role",
    "after_static",
    "is_static",
    "enabled",
    "created",
    "updated",
)
REGISTRY_SECTIONS = (
    "format",
    "version",
    "templates",
    "components",
    "static_overrides",
    "context_configs",
    "fewshot_examples",
)
# What update_template / update_component accept; everything else is named in the error.
TEMPLATE_EDITABLE = ("name", "description", "content", "placeholders", "category")
COMPONENT_EDITABLE = ("key", "name", "description", "content", "role", "enabled")
STATIC_EDITABLE = ("enabled", "content")

#: One stored registry record (a template, a component, a static override, an import's whole
#: data): JSON values, plus the ``created``/``updated`` datetimes of stored records.
Record = dict[str, Any]

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class PromptRegistryError(ValueError):
    """Invalid registry input. The message says what is wrong; nothing was changed.

    A message quoting a huge value (a pasted file) is cut to :data:`MAX_ERROR_CHARS`.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        message = str(message)
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 1] + "\u2026"
        super().__init__(message, *args)


# -- small helpers ------------------------------------------------------------------------
def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def coerce_id(value: object) -> int | None:
    """A component ID given as an int or a string of digits (from a command line)."""
    if is_int(value):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def parse_time(value: object, field: str, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise PromptRegistryError(f"{what}: '{field}' must be an ISO date-time string, not {value!r}.")


def check_key(key: object, what: str) -> str:
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise PromptRegistryError(
            f"{what} key {key!r} is invalid: use 1-64 letters, digits, '_' or '-', "
            "starting with a letter or '_'."
        )
    return key


def check_text(value: object, field: str, what: str, *, required: bool = False) -> str:
    if not isinstance(value, str):
        raise PromptRegistryError(f"{what}: '{field}' must be text, not {type(value).__name__}.")
    if required and not value.strip():
        raise PromptRegistryError(f"{what}: '{field}' must not be empty.")
    return value


def check_bool(value: object, field: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise PromptRegistryError(f"{what}: '{field}' must be true or false, not {value!r}.")
    return value


def check_role(role: object, what: str) -> str:
    if not isinstance(role, str) or role not in VALID_ROLES:
        raise PromptRegistryError(
            f"{what}: unknown role {role!r}; use one of {', '.join(VALID_ROLES)}."
        )
    return role


def check_after_static(after_static: object, what: str) -> int:
    if not is_int(after_static) or not is_static_id(after_static):
        raise PromptRegistryError(
            f"{what}: after_static must be a static component ID "
            f"({', '.join(map(str, STATIC_COMPONENT_IDS))}), not {after_static!r}."
        )
    return after_static


def check_placeholders(content: str, placeholders: object, what: str) -> list[str]:
    """The declared placeholders, or those of ``content`` when None; all used ones declared."""
    used = extract_placeholders(content)
    if placeholders is None:
        return used
    if not isinstance(placeholders, (list, tuple)) or not all(
        isinstance(p, str) and _IDENT_RE.match(p) for p in placeholders
    ):
        raise PromptRegistryError(
            f"{what}: placeholders must be a list of names (letters, digits, '_'), "
            f"not {placeholders!r}."
        )
    declared = list(dict.fromkeys(placeholders))
    undeclared = [name for name in used if name not in declared]
    if undeclared:
        raise PromptRegistryError(
            f"{what}: the content uses placeholder(s) missing from the placeholder list: "
            f"{', '.join(undeclared)}. Declare them, or pass placeholders=None to derive them."
        )
    return declared


def check_fields(given: Iterable[str], allowed: Collection[str], what: str, hint: str = "") -> None:
    unknown = [name for name in given if name not in allowed]
    if unknown:
        raise PromptRegistryError(
            f"{what}: cannot set {', '.join(map(repr, unknown))}; "
            f"editable fields: {', '.join(allowed)}.{hint}"
        )


def load_json(data: object, what: str) -> Record:
    """``data`` (JSON text or a dict) as a detached dict."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", errors="replace")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as err:
            raise PromptRegistryError(f"Malformed JSON for {what}: {err}") from None
        except RecursionError:
            raise PromptRegistryError(f"{what} JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise PromptRegistryError(f"{what} JSON must be an object, not {type(data).__name__}.")
    try:
        return copy.deepcopy(data)
    except RecursionError:
        raise PromptRegistryError(f"{what} JSON is nested too deeply.") from None


def check_shape(
    data: Mapping[str, object], allowed: Collection[str], required: Iterable[str], what: str
) -> None:
    unknown = sorted(str(k)[:64] for k in data if k not in allowed)
    if unknown:
        raise PromptRegistryError(
            f"{what}: unknown field(s) {', '.join(unknown)}; " f"known: {', '.join(allowed)}."
        )
    missing = [k for k in required if k not in data]
    if missing:
        raise PromptRegistryError(f"{what}: missing required field(s) {', '.join(missing)}.")


def load_registry_json(data: object) -> Record:
    """A whole-registry import (JSON text or a dict) as a detached dict, its outer shape checked:
    known sections only, this export format and version, lists and mappings where they belong.
    The entries of each section are checked by the registry as it applies them."""
    data = load_json(data, "Registry")
    check_shape(data, REGISTRY_SECTIONS, (), "Registry")
    if "format" in data and data["format"] != EXPORT_FORMAT:
        raise PromptRegistryError(
            f"Registry: 'format' must be {EXPORT_FORMAT!r}, not {data['format']!r}."
        )
    if "version" in data and data["version"] != EXPORT_VERSION:
        raise PromptRegistryError(
            f"Registry: unsupported version {data['version']!r} (this is {EXPORT_VERSION})."
        )
    for name in ("templates", "components", "fewshot_examples"):
        if not isinstance(data.get(name, []), list):
            raise PromptRegistryError(f"Registry: '{name}' must be a list.")
    for name in ("static_overrides", "context_configs"):
        if not isinstance(data.get(name, {}), dict):
            raise PromptRegistryError(f"Registry: '{name}' must be a mapping.")
    return data


def template_to_dataclass(record: Record) -> PromptTemplate:
    return PromptTemplate(
        key=record["key"],
        name=record["name"],
        description=record.get("description", ""),
        content=record["content"],
        placeholders=list(record.get("placeholders") or []),
        is_builtin=False,
        category=record.get("category", "system_prompt"),
    )


def component_to_dataclass(record: Record) -> PromptComponent:
    return PromptComponent(
        id=record["id"],
        key=record["key"],
        name=record["name"],
        description=record.get("description", ""),
        content=record["content"],
        is_static=False,
        enabled=record.get("enabled", True),
        role=record.get("role", "system"),
        after_static=record["after_static"],
    )


def same_template(a: Record, b: Record) -> bool:
    keys = ("name", "description", "content", "placeholders", "category")
    return all(a.get(k) == b.get(k) for k in keys)


def same_component(a: Record, b: Record) -> bool:
    keys = ("name", "description", "content", "role", "after_static", "enabled")
    return all(a.get(k) == b.get(k) for k in keys)


def template_json(template: PromptTemplate, record: Record | None) -> Record:
    data = template.to_dict()
    data["created"] = iso(record.get("created")) if record else None
    data["updated"] = iso(record.get("updated")) if record else None
    return data


def component_json(component: PromptComponent, record: Record | None) -> Record:
    data = {name: getattr(component, name) for name in COMPONENT_FIELDS if hasattr(component, name)}
    data["created"] = iso(record.get("created")) if record else None
    data["updated"] = iso(record.get("updated")) if record else None
    return data


def validate_template_import(data: Record, what: str) -> Record:
    """A template record from import data (shape and values checked; timestamps parsed)."""
    check_shape(data, TEMPLATE_FIELDS, ("key", "name", "content"), what)
    key = check_key(data["key"], "Template")
    what = f"{what} '{key}'"
    record: Record = {
        "key": key,
        "name": check_text(data["name"], "name", what, required=True),
        "description": check_text(data.get("description", ""), "description", what),
        "content": check_text(data["content"], "content", what),
        "category": check_text(
            data.get("category", "system_prompt"), "category", what, required=True
        ),
        "is_builtin": False,
    }
    check_bool(data.get("is_builtin", False), "is_builtin", what)
    record["placeholders"] = check_placeholders(record["content"], data.get("placeholders"), what)
    record["created"] = parse_time(data.get("created"), "created", what)
    record["updated"] = parse_time(data.get("updated"), "updated", what)
    return record


def validate_component_import(data: Record, what: str) -> Record:
    """A component record (or, for ``is_static``, a static override) from import data."""
    check_shape(data, COMPONENT_FIELDS, ("key", "content"), what)
    if check_bool(data.get("is_static", False), "is_static", what):
        static = get_static_component(data["key"]) if isinstance(data["key"], str) else None
        if static is None:
            raise PromptRegistryError(f"{what}: {data['key']!r} is not a static component key.")
        for field in ("id", "name", "description", "role"):
            if field in data and data[field] != getattr(static, field):
                raise PromptRegistryError(
                    f"{what}: static component '{static.key}' has a fixed {field} "
                    f"({getattr(static, field)!r}); only enabled and content can change."
                )
        if data.get("after_static") is not None:
            raise PromptRegistryError(f"{what}: a static component has no after_static.")
        return {
            "is_static": True,
            "id": static.id,
            "key": static.key,
            "enabled": check_bool(data.get("enabled", True), "enabled", what),
            "content": check_text(data["content"], "content", what),
        }
    check_shape(data, COMPONENT_FIELDS, ("key", "name", "content", "after_static"), what)
    key = check_key(data["key"], "Component")
    what = f"{what} '{key}'"
    if key in STATIC_COMPONENT_KEYS:
        raise PromptRegistryError(f"{what}: the key is taken by a static component.")
    record = {
        "id": data.get("id"),
        "key": key,
        "name": check_text(data["name"], "name", what, required=True),
        "description": check_text(data.get("description", ""), "description", what),
        "content": check_text(data["content"], "content", what),
        "role": check_role(data.get("role", "system"), what),
        "after_static": check_after_static(data["after_static"], what),
        "is_static": False,
        "enabled": check_bool(data.get("enabled", True), "enabled", what),
        "created": parse_time(data.get("created"), "created", what),
        "updated": parse_time(data.get("updated"), "updated", what),
    }
    if record["id"] is not None and not is_int(record["id"]):
        raise PromptRegistryError(f"{what}: 'id' must be a whole number, not {record['id']!r}.")
    return record


def place_component(components: dict[int, Record], record: Record, what: str) -> int:
    """Put ``record`` into ``components``: its own ID when free and in range, else a new one."""
    wanted = record.get("id")
    if (
        is_int(wanted)
        and wanted in pluggable_range(record["after_static"])
        and wanted not in components
    ):
        new_id = wanted
    else:
        try:
            new_id = allocate_pluggable_id(components.keys(), record["after_static"])
        except ValueError as err:
            raise PromptRegistryError(f"{what}: {err}") from None
    record["id"] = new_id
    components[new_id] = record
    return new_id


def contract_problems_of_state(
    components: dict[int, Record] | None,
    static_overrides: Mapping[object, Record] | None,
    context_configs: Mapping[str, Record] | None,
) -> list[str]:
    """Every way a registry state (its stored ``components``, ``static_overrides`` and
    ``context_configs``) would keep a context type's requests from carrying what their contract
    needs (:func:`~evennia_ai.prompt.contexts.contract_problems_of`), one sentence each."""
    comps = components_of(
        {"components": list((components or {}).values()), "static_overrides": static_overrides}
    )
    problems: list[str] = []
    for context_type in prompt_contexts.CONTEXT_TYPES:
        inputs = {"context_customization": (context_configs or {}).get(context_type) or {}}
        try:
            config = context_config_of(context_type, inputs)
        except ValueError:
            continue  # an invalid stored customisation is reported where it is read
        problems.extend(prompt_contexts.contract_problems_of(config, comps))
    return problems


def components_of(inputs: Mapping[str, Any]) -> list[PromptComponent]:
    """Every component for assembly from :meth:`PromptRegistry.request_inputs` data: the static
    ones (this build's, with the stored overrides) and the stored pluggable ones, by ID."""
    overrides = {coerce_id(k): v for k, v in (inputs.get("static_overrides") or {}).items()}
    result = [component_to_dataclass(r) for r in inputs.get("components") or ()]
    result.extend(with_overrides(c, overrides.get(c.id)) for c in get_static_components())
    return sorted(result, key=lambda c: c.id)


def context_config_of(
    context_type: str, inputs: Mapping[str, Any]
) -> prompt_contexts.ContextConfig:
    """The effective ContextConfig of ``context_type`` from :meth:`PromptRegistry.request_inputs`
    data: this build's default with the stored customisation applied, as a tick reads it."""
    customization = inputs.get("context_customization") or {}
    base = prompt_contexts.get_context_config(context_type)
    if not customization:
        return base
    known = set(STATIC_COMPONENT_KEYS) | set(customization.get("component_overrides") or {})
    return prompt_contexts.apply_context_customization(base, customization, None, known)
