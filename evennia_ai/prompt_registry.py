"""PromptRegistry: the game's persistent store of prompt templates, components and customisations.

One Evennia Script, keyed ``evennia_ai_prompt_registry``, got or created by
:func:`get_prompt_registry` (deliberately not a ``GLOBAL_SCRIPTS`` entry: changing such an entry
recreates the script and wipes what operators stored). It holds plain data in Attributes, in the
shape the design's "Data Storage" section gives::

    db.templates         {key: {"key", "name", "description", "content", "placeholders",
                                "category", "is_builtin": False, "created", "updated"}}
    db.components        {id: {"id", "key", "name", "description", "content", "role",
                               "after_static", "is_static": False, "enabled", "created",
                               "updated"}}
    db.static_overrides  {static_id: {"enabled": bool, "content": str}}
    db.context_configs   {context_type: {field: value}}   # validated by prompt_contexts
    db.fewshot_examples  [{"user": str, "assistant": str}, ...]   # at most 15

Rules every operation follows:

- **Validate everything, then write once.** An operation reads a plain copy of the one
  Attribute it changes, modifies the copy and assigns it back a single time. Invalid input
  raises :class:`PromptRegistryError` (a ``ValueError``) whose message names the problem, and
  the registry is left exactly as it was. Only :meth:`PromptRegistry.import_json` may change
  several Attributes; it writes each changed one once, inside one transaction.
- Built-in templates (``evennia_ai.prompt.templates``) are read-only: clone them to customise.
- The nine static components (``evennia_ai.prompt.components``) keep their id, key, name,
  description and role; only ``enabled`` and ``content`` can be overridden.
- Pluggable components take the free ID after a static one (``allocate_pluggable_id``);
  :meth:`PromptRegistry.move_component` re-allocates it after another static component.
- **No edit breaks a kind of call's contract.** Every write of components, static overrides or
  context customisations (methods, imports and dry runs alike; the ``aiprompt``, ``aicontext``
  and ``airegistry`` commands call these) is refused when it would leave a context type's
  requests without an input a component carries (``tick_event``'s event in ``pending_event``,
  ...: :func:`contract_problems_of_state`). The operator's section is not a component and
  cannot be edited away here (:mod:`evennia_ai.prompt.operator`).

JSON export/import covers single templates and components and the whole registry; datetimes
travel as ISO strings. Whole-registry import is all-or-nothing, can be tried with
``dry_run=True``, and returns a summary of what was (or would be) changed.

Example:
    >>> registry = get_prompt_registry()
    >>> comp = registry.create_component("house_rules", "House rules",
    ...                                  "Never reveal the cellar.", after_static=0)
    >>> comp.id
    1
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime
from typing import Any

from django.db import transaction
from evennia.scripts.models import ScriptDB
from evennia.scripts.scripts import DefaultScript
from evennia.utils import logger
from evennia.utils.create import create_script

from evennia_ai.prompt import contexts as prompt_contexts
from evennia_ai.prompt.components import (
    STATIC_COMPONENT_IDS,
    STATIC_COMPONENT_KEYS,
    VALID_ROLES,
    PromptComponent,
    allocate_pluggable_id,
    get_static_component,
    get_static_component_by_id,
    get_static_components,
    is_static_id,
    pluggable_range,
    with_overrides,
)
from evennia_ai.prompt.templates import (
    PromptTemplate,
    builtin_template_keys,
    extract_placeholders,
)
from evennia_ai.prompt.templates import get_template as get_builtin_template
from evennia_ai.prompt.templates import list_builtin_templates
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.utils import is_live_instance, plain, utcnow

REGISTRY_KEY = "evennia_ai_prompt_registry"
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

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ATTRS = ("templates", "components", "static_overrides", "context_configs", "fewshot_examples")
_EMPTY = {
    "templates": dict,
    "components": dict,
    "static_overrides": dict,
    "context_configs": dict,
    "fewshot_examples": list,
}


class PromptRegistryError(ValueError):
    """Invalid registry input. The message says what is wrong; nothing was changed.

    A message quoting a huge value (a pasted file) is cut to :data:`MAX_ERROR_CHARS`.
    """

    def __init__(self, message="", *args):
        message = str(message)
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 1] + "\u2026"
        super().__init__(message, *args)


# -- small pure helpers ------------------------------------------------------------------------
def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _coerce_id(value) -> int | None:
    """A component ID given as an int or a string of digits (from a command line)."""
    if _is_int(value):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _iso(value) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _parse_time(value, field: str, what: str) -> datetime | None:
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


def _check_key(key, what: str) -> str:
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise PromptRegistryError(
            f"{what} key {key!r} is invalid: use 1-64 letters, digits, '_' or '-', "
            "starting with a letter or '_'."
        )
    return key


def _check_text(value, field: str, what: str, *, required: bool = False) -> str:
    if not isinstance(value, str):
        raise PromptRegistryError(f"{what}: '{field}' must be text, not {type(value).__name__}.")
    if required and not value.strip():
        raise PromptRegistryError(f"{what}: '{field}' must not be empty.")
    return value


def _check_bool(value, field: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise PromptRegistryError(f"{what}: '{field}' must be true or false, not {value!r}.")
    return value


def _check_role(role, what: str) -> str:
    if role not in VALID_ROLES:
        raise PromptRegistryError(
            f"{what}: unknown role {role!r}; use one of {', '.join(VALID_ROLES)}."
        )
    return role


def _check_after_static(after_static, what: str) -> int:
    if not is_static_id(after_static):
        raise PromptRegistryError(
            f"{what}: after_static must be a static component ID "
            f"({', '.join(map(str, STATIC_COMPONENT_IDS))}), not {after_static!r}."
        )
    return after_static


def _check_placeholders(content: str, placeholders, what: str) -> list[str]:
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


def _check_fields(given, allowed, what: str, hint: str = "") -> None:
    unknown = [name for name in given if name not in allowed]
    if unknown:
        raise PromptRegistryError(
            f"{what}: cannot set {', '.join(map(repr, unknown))}; "
            f"editable fields: {', '.join(allowed)}.{hint}"
        )


def _load_json(data, what: str) -> dict:
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


def _check_shape(data: dict, allowed, required, what: str) -> None:
    unknown = sorted(str(k)[:64] for k in data if k not in allowed)
    if unknown:
        raise PromptRegistryError(
            f"{what}: unknown field(s) {', '.join(unknown)}; " f"known: {', '.join(allowed)}."
        )
    missing = [k for k in required if k not in data]
    if missing:
        raise PromptRegistryError(f"{what}: missing required field(s) {', '.join(missing)}.")


def _template_to_dataclass(record: dict) -> PromptTemplate:
    return PromptTemplate(
        key=record["key"],
        name=record["name"],
        description=record.get("description", ""),
        content=record["content"],
        placeholders=list(record.get("placeholders") or []),
        is_builtin=False,
        category=record.get("category", "system_prompt"),
    )


def _component_to_dataclass(record: dict) -> PromptComponent:
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


def _same_template(a: dict, b: dict) -> bool:
    keys = ("name", "description", "content", "placeholders", "category")
    return all(a.get(k) == b.get(k) for k in keys)


def _same_component(a: dict, b: dict) -> bool:
    keys = ("name", "description", "content", "role", "after_static", "enabled")
    return all(a.get(k) == b.get(k) for k in keys)


def _template_json(template: PromptTemplate, record: dict | None) -> dict:
    data = template.to_dict()
    data["created"] = _iso(record.get("created")) if record else None
    data["updated"] = _iso(record.get("updated")) if record else None
    return data


def _component_json(component: PromptComponent, record: dict | None) -> dict:
    data = {name: getattr(component, name) for name in COMPONENT_FIELDS if hasattr(component, name)}
    data["created"] = _iso(record.get("created")) if record else None
    data["updated"] = _iso(record.get("updated")) if record else None
    return data


def _validate_template_import(data: dict, what: str) -> dict:
    """A template record from import data (shape and values checked; timestamps parsed)."""
    _check_shape(data, TEMPLATE_FIELDS, ("key", "name", "content"), what)
    key = _check_key(data["key"], "Template")
    what = f"{what} '{key}'"
    record = {
        "key": key,
        "name": _check_text(data["name"], "name", what, required=True),
        "description": _check_text(data.get("description", ""), "description", what),
        "content": _check_text(data["content"], "content", what),
        "category": _check_text(
            data.get("category", "system_prompt"), "category", what, required=True
        ),
        "is_builtin": False,
    }
    _check_bool(data.get("is_builtin", False), "is_builtin", what)
    record["placeholders"] = _check_placeholders(record["content"], data.get("placeholders"), what)
    record["created"] = _parse_time(data.get("created"), "created", what)
    record["updated"] = _parse_time(data.get("updated"), "updated", what)
    return record


def _validate_component_import(data: dict, what: str) -> dict:
    """A component record (or, for ``is_static``, a static override) from import data."""
    _check_shape(data, COMPONENT_FIELDS, ("key", "content"), what)
    if _check_bool(data.get("is_static", False), "is_static", what):
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
            "enabled": _check_bool(data.get("enabled", True), "enabled", what),
            "content": _check_text(data["content"], "content", what),
        }
    _check_shape(data, COMPONENT_FIELDS, ("key", "name", "content", "after_static"), what)
    key = _check_key(data["key"], "Component")
    what = f"{what} '{key}'"
    if key in STATIC_COMPONENT_KEYS:
        raise PromptRegistryError(f"{what}: the key is taken by a static component.")
    record = {
        "id": data.get("id"),
        "key": key,
        "name": _check_text(data["name"], "name", what, required=True),
        "description": _check_text(data.get("description", ""), "description", what),
        "content": _check_text(data["content"], "content", what),
        "role": _check_role(data.get("role", "system"), what),
        "after_static": _check_after_static(data["after_static"], what),
        "is_static": False,
        "enabled": _check_bool(data.get("enabled", True), "enabled", what),
        "created": _parse_time(data.get("created"), "created", what),
        "updated": _parse_time(data.get("updated"), "updated", what),
    }
    if record["id"] is not None and not _is_int(record["id"]):
        raise PromptRegistryError(f"{what}: 'id' must be a whole number, not {record['id']!r}.")
    return record


def _known_tool_names() -> set[str] | None:
    """Names of the registered tools (None when none could be loaded: the check is skipped)."""

    try:
        load_builtin_tools()
    except Exception:  # a broken tool module must not lock operators out of prompt settings
        logger.log_trace("evennia_ai: could not load the built-in tools")
    return set(TOOL_REGISTRY.names()) or None


def _place_component(components: dict, record: dict, what: str) -> int:
    """Put ``record`` into ``components``: its own ID when free and in range, else a new one."""
    wanted = record.get("id")
    if wanted in pluggable_range(record["after_static"]) and wanted not in components:
        new_id = wanted
    else:
        try:
            new_id = allocate_pluggable_id(components.keys(), record["after_static"])
        except ValueError as err:
            raise PromptRegistryError(f"{what}: {err}") from None
    record["id"] = new_id
    components[new_id] = record
    return new_id


# -- the Script --------------------------------------------------------------------------------
class PromptRegistry(DefaultScript):
    """Persistent prompt templates, pluggable components, static overrides, context
    customisations and few-shot examples of the game. Get it with :func:`get_prompt_registry`.
    """

    def at_script_creation(self):
        self.key = REGISTRY_KEY
        self.desc = "evennia-ai: prompt templates, components and context customisations"
        self.persistent = True
        self.interval = 0
        # Created empty up front so every later operation is a single UPDATE of one row.
        for name in _ATTRS:
            if not self.attributes.has(name):
                self.attributes.add(name, _EMPTY[name]())

    # -- storage ---------------------------------------------------------------------------------
    def _read(self, name: str):
        value = self.attributes.get(name)
        return _EMPTY[name]() if value is None else plain(value)

    def _write(self, name: str, value) -> None:
        # AttributeHandler.add() on an existing Attribute saves its row twice (the value setter
        # saves, then the backend saves again); the model's value setter alone is one UPDATE,
        # and the handler's cache holds this same Attribute object, so it stays coherent.
        attr = self.attributes.get(name, return_obj=True)
        if attr is None:
            self.attributes.add(name, value)
        else:
            attr.value = value

    def _refuse_contract_breaks(self, **pending) -> None:
        """Refuse a write that would keep a context type's requests from carrying what their
        contract needs (a ``tick_event`` without its event, say).

        Args:
            pending: The new value of ``components``, ``static_overrides`` or
                ``context_configs`` about to be written (the others are read).

        Raises:
            PromptRegistryError: Naming each component, context and input the write would
                break. Problems the stored state already has are not the write's: a registry
                stored before this check can still be edited and repaired.
        """
        names = ("components", "static_overrides", "context_configs")
        current = {name: self._read(name) for name in names}
        after = {name: pending.get(name, current[name]) for name in names}
        before = set(contract_problems_of_state(**current))
        new = [p for p in contract_problems_of_state(**after) if p not in before]
        if new:
            raise PromptRegistryError(
                "Refused: " + " ".join(f"{problem[0].upper()}{problem[1:]}." for problem in new)
            )

    # -- templates -------------------------------------------------------------------------------
    def get_template(self, key: str) -> PromptTemplate | None:
        """The user template ``key``, else the built-in one, else None."""
        record = self._read("templates").get(key) if isinstance(key, str) else None
        if record:
            return _template_to_dataclass(record)
        return get_builtin_template(key) if isinstance(key, str) else None

    def list_templates(self, include_builtin: bool = True) -> list[PromptTemplate]:
        """User templates (and the built-in ones), sorted by key."""
        templates = [_template_to_dataclass(r) for r in self._read("templates").values()]
        if include_builtin:
            templates.extend(list_builtin_templates())
        return sorted(templates, key=lambda t: t.key)

    def _new_template_record(
        self, templates: dict, key, name, content, description, placeholders, category
    ) -> dict:
        _check_key(key, "Template")
        what = f"Template '{key}'"
        if key in builtin_template_keys():
            raise PromptRegistryError(
                f"{what} already exists as a built-in template; choose another key."
            )
        if key in templates:
            raise PromptRegistryError(f"{what} already exists; choose another key.")
        now = utcnow()
        content = _check_text(content, "content", what)
        return {
            "key": key,
            "name": _check_text(name, "name", what, required=True),
            "description": _check_text(description, "description", what),
            "content": content,
            "placeholders": _check_placeholders(content, placeholders, what),
            "category": _check_text(category, "category", what, required=True),
            "is_builtin": False,
            "created": now,
            "updated": now,
        }

    def create_template(
        self,
        key: str,
        name: str,
        content: str,
        description: str = "",
        placeholders: list[str] | None = None,
        category: str = "system_prompt",
    ) -> PromptTemplate:
        """Create a user template.

        Args:
            key: Unique key (not a built-in one).
            name: Display name.
            content: Text with ``{placeholders}``.
            description: What it is for.
            placeholders: Names the content uses; None derives them from the content.
            category: "system_prompt", "reflection", or any category of your own.

        Raises:
            PromptRegistryError: Invalid or duplicate key, bad fields, undeclared placeholders.
        """
        templates = self._read("templates")
        record = self._new_template_record(
            templates, key, name, content, description, placeholders, category
        )
        templates[key] = record
        self._write("templates", templates)
        return _template_to_dataclass(record)

    def _user_template(self, templates: dict, key, action: str) -> dict:
        if isinstance(key, str) and key in builtin_template_keys():
            raise PromptRegistryError(
                f"Template '{key}' is built in and cannot be {action}; "
                f"clone it (aitemplate/clone {key} = my_{key}) and edit the clone."
            )
        record = templates.get(key) if isinstance(key, str) else None
        if record is None:
            raise PromptRegistryError(f"No template with key {key!r}.")
        return record

    def update_template(self, key: str, /, **fields) -> PromptTemplate:
        """Change fields of a user template (name, description, content, placeholders, category).

        When ``content`` changes and ``placeholders`` is not given, the placeholders are derived
        from the new content.

        Raises:
            PromptRegistryError: Unknown or built-in template, unknown fields, bad values.
        """
        templates = self._read("templates")
        record = self._user_template(templates, key, "changed")
        what = f"Template '{key}'"
        _check_fields(fields, TEMPLATE_EDITABLE, what)
        if not fields:
            raise PromptRegistryError(f"{what}: nothing to update.")
        for field in ("name", "category"):
            if field in fields:
                record[field] = _check_text(fields[field], field, what, required=True)
        if "description" in fields:
            record["description"] = _check_text(fields["description"], "description", what)
        if "content" in fields:
            record["content"] = _check_text(fields["content"], "content", what)
        if "placeholders" in fields or "content" in fields:
            record["placeholders"] = _check_placeholders(
                record["content"], fields.get("placeholders"), what
            )
        record["updated"] = utcnow()
        self._write("templates", templates)
        return _template_to_dataclass(record)

    def delete_template(self, key: str) -> None:
        """Delete a user template.

        Raises:
            PromptRegistryError: Unknown or built-in template.
        """
        templates = self._read("templates")
        self._user_template(templates, key, "deleted")
        del templates[key]
        self._write("templates", templates)

    def clone_template(
        self, source_key: str, new_key: str, new_name: str | None = None
    ) -> PromptTemplate:
        """Copy a template (built-in or user) under a new key, as an editable user template.

        Raises:
            PromptRegistryError: Unknown source, invalid or duplicate new key.
        """
        source = self.get_template(source_key)
        if source is None:
            raise PromptRegistryError(f"No template with key {source_key!r} to clone.")
        templates = self._read("templates")
        record = self._new_template_record(
            templates,
            new_key,
            new_name or f"{source.name} (copy)",
            source.content,
            source.description,
            list(source.placeholders),
            source.category,
        )
        templates[new_key] = record
        self._write("templates", templates)
        return _template_to_dataclass(record)

    # -- components ------------------------------------------------------------------------------
    def _static(self, component_id: int, overrides: dict | None = None) -> PromptComponent:
        if overrides is None:
            overrides = self._read("static_overrides")
        return with_overrides(get_static_component_by_id(component_id), overrides.get(component_id))

    def get_component(self, component_id) -> PromptComponent | None:
        """The component at ``component_id`` (static ones with overrides applied), or None."""
        cid = _coerce_id(component_id)
        if cid is None:
            return None
        if is_static_id(cid):
            return self._static(cid)
        record = self._read("components").get(cid)
        return _component_to_dataclass(record) if record else None

    def get_component_by_key(self, key: str) -> PromptComponent | None:
        """The component with ``key`` (static or pluggable), or None."""
        static = get_static_component(key) if isinstance(key, str) else None
        if static is not None:
            return self._static(static.id)
        for record in self._read("components").values():
            if record["key"] == key:
                return _component_to_dataclass(record)
        return None

    def _existing_component(self, component_id, components: dict | None = None) -> int:
        """``component_id`` as an int that exists (static or pluggable)."""
        cid = _coerce_id(component_id)
        if cid is not None and is_static_id(cid):
            return cid
        if components is None:
            components = self._read("components")
        if cid is None or cid not in components:
            raise PromptRegistryError(f"No component with ID {component_id!r}.")
        return cid

    def create_component(
        self,
        key: str,
        name: str,
        content: str,
        after_static: int,
        description: str = "",
        role: str = "system",
        enabled: bool = True,
    ) -> PromptComponent:
        """Create a pluggable component in the first free ID after ``after_static``.

        Args:
            key: Unique key (not a static component's key).
            name: Display name.
            content: Text, may hold ``{placeholders}`` filled at assembly.
            after_static: The static component ID to follow (0, 1000, 1500, ... 7000).
            description: What it provides.
            role: system, user, assistant, tool or mixed.
            enabled: Whether assembly includes it.

        Returns:
            The new component, with its allocated ID (e.g. 1001 after 1000).

        Raises:
            PromptRegistryError: Invalid or duplicate key, bad fields, unknown role, invalid
                ``after_static``, or no free slot left after it.
        """
        components = self._read("components")
        _check_key(key, "Component")
        what = f"Component '{key}'"
        if key in STATIC_COMPONENT_KEYS:
            raise PromptRegistryError(f"{what}: the key is taken by a static component.")
        if any(r["key"] == key for r in components.values()):
            raise PromptRegistryError(f"{what} already exists; choose another key.")
        now = utcnow()
        record = {
            "id": None,
            "key": key,
            "name": _check_text(name, "name", what, required=True),
            "description": _check_text(description, "description", what),
            "content": _check_text(content, "content", what),
            "role": _check_role(role, what),
            "after_static": _check_after_static(after_static, what),
            "is_static": False,
            "enabled": _check_bool(enabled, "enabled", what),
            "created": now,
            "updated": now,
        }
        _place_component(components, record, what)
        self._write("components", components)
        return _component_to_dataclass(record)

    def update_component(self, component_id, /, **fields) -> PromptComponent:
        """Change a component.

        Pluggable components accept key, name, description, content, role and enabled (use
        :meth:`move_component` to change the position). Static components accept only
        ``enabled`` and ``content``, stored as overrides.

        Raises:
            PromptRegistryError: Unknown component, fixed or unknown fields, bad values.
        """
        components = self._read("components")
        cid = self._existing_component(component_id, components)
        if is_static_id(cid):
            return self._update_static(cid, fields)
        record = components[cid]
        what = f"Component {cid} ('{record['key']}')"
        _check_fields(
            fields,
            COMPONENT_EDITABLE,
            what,
            (
                f" Move it with aiprompt/move {cid} = <static id>."
                if {"id", "after_static"} & set(fields)
                else ""
            ),
        )
        if not fields:
            raise PromptRegistryError(f"{what}: nothing to update.")
        if "key" in fields and fields["key"] != record["key"]:
            key = _check_key(fields["key"], "Component")
            if key in STATIC_COMPONENT_KEYS or any(
                r["key"] == key for i, r in components.items() if i != cid
            ):
                raise PromptRegistryError(f"{what}: the key '{key}' is already taken.")
            record["key"] = key
        if "name" in fields:
            record["name"] = _check_text(fields["name"], "name", what, required=True)
        for field in ("description", "content"):
            if field in fields:
                record[field] = _check_text(fields[field], field, what)
        if "role" in fields:
            record["role"] = _check_role(fields["role"], what)
        if "enabled" in fields:
            record["enabled"] = _check_bool(fields["enabled"], "enabled", what)
        record["updated"] = utcnow()
        self._write("components", components)
        return _component_to_dataclass(record)

    def _update_static(self, cid: int, fields: dict) -> PromptComponent:
        what = f"Static component {cid} ('{get_static_component_by_id(cid).key}')"
        _check_fields(
            fields,
            STATIC_EDITABLE,
            what,
            " Its id, key, name, description, role and is_static are fixed.",
        )
        if not fields:
            raise PromptRegistryError(f"{what}: nothing to update.")
        overrides = self._read("static_overrides")
        current = self._static(cid, overrides)
        entry = {"enabled": current.enabled, "content": current.content}
        if "enabled" in fields:
            entry["enabled"] = _check_bool(fields["enabled"], "enabled", what)
        if "content" in fields:
            entry["content"] = _check_text(fields["content"], "content", what)
        overrides[cid] = entry
        self._refuse_contract_breaks(static_overrides=overrides)
        self._write("static_overrides", overrides)
        return self._static(cid, overrides)

    def reset_static_component(self, component_id) -> PromptComponent:
        """Drop the overrides of a static component (back to its default enabled/content).

        Raises:
            PromptRegistryError: If ``component_id`` is not a static component.
        """
        cid = _coerce_id(component_id)
        if cid is None or not is_static_id(cid):
            raise PromptRegistryError(f"{component_id!r} is not a static component ID.")
        overrides = self._read("static_overrides")
        if cid in overrides:
            del overrides[cid]
            self._write("static_overrides", overrides)
        return self._static(cid, overrides)

    def delete_component(self, component_id) -> None:
        """Delete a pluggable component.

        Raises:
            PromptRegistryError: Unknown or static component (disable a static one instead).
        """
        components = self._read("components")
        cid = self._existing_component(component_id, components)
        if is_static_id(cid):
            raise PromptRegistryError(
                f"Component {cid} is static and cannot be deleted; "
                f"disable it instead (aiprompt/disable {cid})."
            )
        del components[cid]
        self._write("components", components)

    def list_components(self, include_static: bool = True) -> list[PromptComponent]:
        """Components sorted by ID (static ones with their overrides applied)."""
        if not include_static:
            records = self._read("components").values()
            return sorted((_component_to_dataclass(r) for r in records), key=lambda c: c.id)
        return components_of(self.request_inputs())

    def list_pluggable_components(self) -> list[PromptComponent]:
        """The pluggable components, sorted by ID."""
        return self.list_components(include_static=False)

    def list_components_after(self, static_id: int) -> list[PromptComponent]:
        """Pluggable components placed after the static component ``static_id``, by ID.

        Raises:
            PromptRegistryError: If ``static_id`` is not a static ID.
        """
        cid = _coerce_id(static_id)
        if not is_static_id(cid):
            _check_after_static(static_id, "list_components_after")
        return [c for c in self.list_pluggable_components() if c.after_static == cid]

    def move_component(self, component_id, new_after_static: int) -> PromptComponent:
        """Move a pluggable component after another static component (its ID is re-allocated).

        Moving it after the static component it already follows changes nothing.

        Raises:
            PromptRegistryError: Unknown or static component, invalid ``new_after_static``,
                or no free slot there.
        """
        components = self._read("components")
        cid = self._existing_component(component_id, components)
        if is_static_id(cid):
            raise PromptRegistryError(f"Component {cid} is static; static components cannot move.")
        record = components[cid]
        what = f"Component {cid} ('{record['key']}')"
        target = _coerce_id(new_after_static)
        if not is_static_id(target):
            _check_after_static(new_after_static, what)
        if record["after_static"] == target:
            return _component_to_dataclass(record)
        del components[cid]
        record.update(id=None, after_static=target, updated=utcnow())
        _place_component(components, record, what)
        self._write("components", components)
        return _component_to_dataclass(record)

    def component_to_prompt_component(self, component_id) -> PromptComponent:
        """The component at ``component_id`` as a PromptComponent (static: overrides applied).

        Raises:
            PromptRegistryError: Unknown component.
        """
        component = self.get_component(component_id)
        if component is None:
            raise PromptRegistryError(f"No component with ID {component_id!r}.")
        return component

    def get_all_prompt_components(self) -> list[PromptComponent]:
        """Every component for runtime assembly: static (overrides applied) and pluggable,
        sorted by ID. Disabled ones are included; assembly filters them."""
        return self.list_components(include_static=True)

    # -- template <-> component bridge -----------------------------------------------------------
    def apply_template_to_component(self, template_key: str, component_id) -> PromptComponent:
        """Set a component's content to a template's content.

        Raises:
            PromptRegistryError: Unknown template or component.
        """
        template = self.get_template(template_key)
        if template is None:
            raise PromptRegistryError(f"No template with key {template_key!r}.")
        self._existing_component(component_id)
        return self.update_component(component_id, content=template.content)

    def save_component_as_template(
        self,
        component_id,
        template_key: str,
        name: str | None = None,
        description: str | None = None,
        category: str = "component",
    ) -> PromptTemplate:
        """Save a component's content as a new user template (placeholders derived).

        Raises:
            PromptRegistryError: Unknown component, invalid or duplicate template key.
        """
        cid = self._existing_component(component_id)
        component = self.get_component(cid)
        return self.create_template(
            template_key,
            name or component.name,
            component.content,
            description=component.description if description is None else description,
            placeholders=None,
            category=category,
        )

    # -- context customisations ------------------------------------------------------------------
    def _effective(
        self,
        context_type: str,
        customization: dict,
        *,
        strict: bool = True,
        components: dict | None = None,
    ):
        """The default config of ``context_type`` with ``customization`` applied.

        ``strict`` (when a customisation is written) also checks tool names and component keys
        (those of ``components``, default: the stored ones).
        Reading at tick time skips those two checks: a tool or component deleted since is
        harmless there, while failing would put the context back to its wider default.
        """

        try:
            base = prompt_contexts.get_context_config(context_type)
        except KeyError as err:
            raise PromptRegistryError(err.args[0] if err.args else str(err)) from None
        if not customization:
            return base
        if strict:
            known_tools = _known_tool_names()
            if components is None:
                components = self._read("components")
            known_components = set(STATIC_COMPONENT_KEYS) | {r["key"] for r in components.values()}
        else:
            known_tools = None
            known_components = set(STATIC_COMPONENT_KEYS) | set(
                customization.get("component_overrides") or {}
            )
        try:
            return prompt_contexts.apply_context_customization(
                base, customization, known_tools=known_tools, known_components=known_components
            )
        except ValueError as err:
            raise PromptRegistryError(
                f"Invalid customisation of context '{context_type}': {err}"
            ) from None

    def get_context_customization(self, context_type: str) -> dict:
        """The stored customisation of a context type (a copy; empty when none)."""
        return self._read("context_configs").get(context_type, {})

    def list_context_customizations(self) -> dict:
        """Every stored customisation: {context_type: {field: value}}."""
        return self._read("context_configs")

    def set_context_customization(self, context_type: str, /, **fields):
        """Customise a context type; ``fields`` are merged into its stored customisation
        (``component_overrides`` per component key; a key set to None removes the default's
        override, see ``prompt_contexts.apply_context_customization``).

        Returns:
            The effective ContextConfig after the change.

        Raises:
            PromptRegistryError: Unknown context type, no fields, or an invalid field or value
                (as judged by ``prompt_contexts.apply_context_customization``).
        """
        if not fields:
            raise PromptRegistryError(f"Context '{context_type}': nothing to set.")
        configs = self._read("context_configs")
        merged = {**configs.get(context_type, {}), **copy.deepcopy(fields)}
        old_overrides = configs.get(context_type, {}).get("component_overrides")
        if isinstance(old_overrides, dict) and isinstance(fields.get("component_overrides"), dict):
            # Overrides merge per component key, like every other field merges per field.
            merged["component_overrides"] = {**old_overrides, **merged["component_overrides"]}
        effective = self._effective(context_type, merged)
        configs[context_type] = merged
        self._refuse_contract_breaks(context_configs=configs)
        self._write("context_configs", configs)
        return effective

    def clear_context_customization(self, context_type: str, *fields: str) -> bool:
        """Remove a context type's customisation (only ``fields`` when given).

        Returns:
            Whether anything was removed.

        Raises:
            PromptRegistryError: Unknown context type.
        """
        self._effective(context_type, {})  # unknown context types are an error
        configs = self._read("context_configs")
        current = configs.get(context_type)
        if not current:
            return False
        if not fields:
            del configs[context_type]
        else:
            if not any(f in current for f in fields):
                return False
            remaining = {k: v for k, v in current.items() if k not in fields}
            if remaining:
                configs[context_type] = remaining
            else:
                del configs[context_type]
        self._refuse_contract_breaks(context_configs=configs)
        self._write("context_configs", configs)
        return True

    def get_effective_context_config(self, name: str):
        """The default ContextConfig of ``name`` with the operator's customisation applied.

        Raises:
            PromptRegistryError: Unknown context type, or a stored customisation that is no
                longer valid (the message says which field).
        """
        return self._effective(name, self._read("context_configs").get(name, {}), strict=False)

    def request_inputs(self, context_type: str | None = None) -> dict:
        """What a request takes from the registry, as plain data (a tick recording keeps it).

        ``components`` (the pluggable ones' records), ``static_overrides`` and, for
        ``context_type``, its ``context_customization``; :func:`components_of` and
        :func:`context_config_of` turn them back into what the builder uses, with the current
        static components and context defaults.
        """
        inputs = {
            "components": list(self._read("components").values()),
            "static_overrides": self._read("static_overrides"),
        }
        if context_type:
            inputs["context_customization"] = self._read("context_configs").get(context_type, {})
        return inputs

    # -- few-shot examples -----------------------------------------------------------------------
    def add_fewshot_example(self, user: str, assistant: str) -> int:
        """Append a few-shot exchange; returns its 0-based index.

        Raises:
            PromptRegistryError: Empty text, or already ``MAX_FEWSHOT_EXAMPLES`` examples.
        """
        what = "Few-shot example"
        example = {
            "user": _check_text(user, "user", what, required=True),
            "assistant": _check_text(assistant, "assistant", what, required=True),
        }
        examples = self._read("fewshot_examples")
        if len(examples) >= MAX_FEWSHOT_EXAMPLES:
            raise PromptRegistryError(
                f"There are already {MAX_FEWSHOT_EXAMPLES} few-shot examples (the most allowed); "
                "remove one first."
            )
        examples.append(example)
        self._write("fewshot_examples", examples)
        return len(examples) - 1

    def list_fewshot_examples(self) -> list[dict]:
        """The few-shot examples (copies), in order."""
        return self._read("fewshot_examples")

    def remove_fewshot_example(self, index: int) -> dict:
        """Remove and return the example at 0-based ``index``.

        Raises:
            PromptRegistryError: No example at ``index``.
        """
        examples = self._read("fewshot_examples")
        if not _is_int(index) or not 0 <= index < len(examples):
            raise PromptRegistryError(
                f"No few-shot example at index {index!r} (there are {len(examples)})."
            )
        removed = examples.pop(index)
        self._write("fewshot_examples", examples)
        return removed

    def clear_fewshot_examples(self) -> int:
        """Remove every few-shot example; returns how many there were."""
        count = len(self._read("fewshot_examples"))
        if count:
            self._write("fewshot_examples", [])
        return count

    # -- JSON: single template / component -------------------------------------------------------
    def export_template_json(self, key: str) -> str:
        """One template (user or built-in) as JSON text.

        Raises:
            PromptRegistryError: Unknown template.
        """
        template = self.get_template(key)
        if template is None:
            raise PromptRegistryError(f"No template with key {key!r}.")
        record = self._read("templates").get(key)
        return json.dumps(_template_json(template, record), indent=2, ensure_ascii=False)

    def export_component_json(self, component_id) -> str:
        """One component (static ones with overrides) as JSON text.

        Raises:
            PromptRegistryError: Unknown component.
        """
        component = self.component_to_prompt_component(component_id)
        record = None if component.is_static else self._read("components")[component.id]
        return json.dumps(_component_json(component, record), indent=2, ensure_ascii=False)

    def import_template_json(self, data, overwrite: bool = False) -> PromptTemplate:
        """Import one template from JSON text or a dict.

        Args:
            data: As produced by :meth:`export_template_json`.
            overwrite: Replace a user template of the same key (built-ins are never replaced).

        Raises:
            PromptRegistryError: Malformed or wrong-shaped JSON, invalid values, a built-in key,
                or an existing key without ``overwrite``.
        """
        record = _validate_template_import(_load_json(data, "Template"), "Template")
        templates = self._read("templates")
        self._merge_template(templates, record, overwrite)
        self._write("templates", templates)
        return _template_to_dataclass(templates[record["key"]])

    def import_component_json(self, data, overwrite: bool = False) -> PromptComponent:
        """Import one component from JSON text or a dict.

        A pluggable component keeps its exported ID when that slot is free, else it gets the
        next free one after its ``after_static``. A static component's export (``is_static``
        true) sets that component's enabled/content overrides; replacing overrides already
        stored needs ``overwrite``.

        Raises:
            PromptRegistryError: Malformed or wrong-shaped JSON, invalid values, an existing key
                without ``overwrite``, a full range.
        """
        record = _validate_component_import(_load_json(data, "Component"), "Component")
        if record["is_static"]:
            overrides = self._read("static_overrides")
            self._merge_static_override(overrides, record["id"], record, overwrite)
            self._refuse_contract_breaks(static_overrides=overrides)
            self._write("static_overrides", overrides)
            return self._static(record["id"], overrides)
        components = self._read("components")
        outcome = self._take_out_component(components, record, overwrite)
        new_id = self._put_component(components, record, outcome)
        if outcome != "unchanged":
            self._write("components", components)
        return _component_to_dataclass(components[new_id])

    # merge helpers work on plain copies; they raise before anything is written.
    def _merge_template(self, templates: dict, record: dict, overwrite: bool) -> str:
        key = record["key"]
        if key in builtin_template_keys():
            raise PromptRegistryError(
                f"Template '{key}' is built in and cannot be imported over; rename it."
            )
        existing = templates.get(key)
        if existing is not None and _same_template(existing, record):
            return "unchanged"
        if existing is not None and not overwrite:
            raise PromptRegistryError(
                f"Template '{key}' already exists; import with overwrite=True to replace it."
            )
        now = utcnow()
        record = dict(record)
        record["created"] = record["created"] or (existing or {}).get("created") or now
        record["updated"] = now if existing is not None else (record["updated"] or now)
        templates[key] = record
        return "replaced" if existing is not None else "created"

    def _take_out_component(self, components: dict, record: dict, overwrite: bool) -> str:
        """Step 1 of importing a component: "unchanged", or free the slot of the one it
        replaces ("replaced"), or "created". Raises on a conflict without ``overwrite``."""
        key = record["key"]
        old_id = next((i for i, r in components.items() if r["key"] == key), None)
        if old_id is None:
            return "created"
        existing = components[old_id]
        if _same_component(existing, record):
            record["id"] = old_id
            return "unchanged"
        if not overwrite:
            raise PromptRegistryError(
                f"Component '{key}' already exists (ID {old_id}); import with overwrite=True "
                "to replace it."
            )
        del components[old_id]
        if record["id"] is None and existing["after_static"] == record["after_static"]:
            record["id"] = old_id
        record["created"] = record["created"] or existing.get("created")
        return "replaced"

    def _put_component(self, components: dict, record: dict, outcome: str) -> int:
        """Step 2 of importing a component: place it (its own ID when free, else a new one)."""
        if outcome == "unchanged":
            return record["id"]
        now = utcnow()
        record["created"] = record["created"] or now
        record["updated"] = now if outcome == "replaced" else (record["updated"] or now)
        return _place_component(components, record, f"Component '{record['key']}'")

    def _merge_static_override(
        self, overrides: dict, cid: int, entry: dict, overwrite: bool
    ) -> str:
        current = self._static(cid, overrides)
        wanted = {
            "enabled": entry.get("enabled", current.enabled),
            "content": entry.get("content", current.content),
        }
        if wanted == {"enabled": current.enabled, "content": current.content}:
            return "unchanged"
        if cid in overrides and not overwrite:
            raise PromptRegistryError(
                f"Static component '{current.key}' is already customised; import with "
                "overwrite=True to replace its enabled/content."
            )
        outcome = "replaced" if cid in overrides else "created"
        overrides[cid] = wanted
        return outcome

    # -- JSON: the whole registry ----------------------------------------------------------------
    def export_json(self) -> str:
        """The whole registry (user templates, pluggable components, static overrides, context
        customisations, few-shot examples) as JSON text for :meth:`import_json`."""
        templates = self._read("templates")
        components = self._read("components")
        overrides = self._read("static_overrides")
        data = {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "templates": [
                _template_json(_template_to_dataclass(templates[k]), templates[k])
                for k in sorted(templates)
            ],
            "components": [
                _component_json(_component_to_dataclass(components[i]), components[i])
                for i in sorted(components)
            ],
            "static_overrides": {
                get_static_component_by_id(cid).key: dict(overrides[cid])
                for cid in sorted(overrides)
            },
            "context_configs": self._read("context_configs"),
            "fewshot_examples": self._read("fewshot_examples"),
        }
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False, default=str)

    def import_json(self, data, overwrite: bool = False, dry_run: bool = False) -> dict:
        """Import a whole-registry export; all-or-nothing.

        Sections are optional. Templates, components, static overrides and context
        customisations identical to stored ones are left alone; replacing different stored ones
        needs ``overwrite``. Few-shot examples are appended (skipping
        exact duplicates), or replace the list with ``overwrite``.

        Args:
            data: JSON text or a dict, as produced by :meth:`export_json`.
            overwrite: Replace what differs instead of refusing.
            dry_run: Validate and report, write nothing.

        Returns:
            A summary: ``{"dry_run": bool, "changed": bool, "templates": {"created": [...],
            "replaced": [...], "unchanged": [...]}, "components": {... , "ids": {key: id}},
            "static_overrides": {...}, "context_configs": {...},
            "fewshot_examples": {"added": n, "removed": n}}``.

        Raises:
            PromptRegistryError: Malformed or wrong-shaped JSON, any invalid entry, conflicts
                without ``overwrite``; the registry is left unchanged.
        """
        data = _load_json(data, "Registry")
        _check_shape(data, REGISTRY_SECTIONS, (), "Registry")
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

        before = {name: self._read(name) for name in _ATTRS}
        after = copy.deepcopy(before)
        summary: dict[str, Any] = {
            "dry_run": bool(dry_run),
            "templates": self._import_templates(after, data.get("templates", []), overwrite),
            "components": self._import_components(after, data.get("components", []), overwrite),
            "static_overrides": self._import_static_overrides(
                after, data.get("static_overrides", {}), overwrite
            ),
            "context_configs": self._import_context_configs(
                after, data.get("context_configs", {}), overwrite
            ),
            "fewshot_examples": self._import_fewshots(
                after, data.get("fewshot_examples"), overwrite
            ),
        }
        changed = [name for name in _ATTRS if after[name] != before[name]]
        self._refuse_contract_breaks(
            components=after["components"],
            static_overrides=after["static_overrides"],
            context_configs=after["context_configs"],
        )
        summary["changed"] = bool(changed)
        if changed and not dry_run:
            with transaction.atomic():
                for name in changed:
                    self._write(name, after[name])
        return summary

    # Each _import_* helper validates one section of a registry import and applies it to the
    # plain copies in ``after``; it raises before import_json writes anything.
    def _import_templates(self, after: dict, items: list, overwrite: bool) -> dict:
        result = {"created": [], "replaced": [], "unchanged": []}
        seen: set = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise PromptRegistryError(f"Registry: templates[{index}] must be an object.")
            record = _validate_template_import(item, f"Registry templates[{index}]")
            if record["key"] in seen:
                raise PromptRegistryError(f"Registry: template '{record['key']}' appears twice.")
            seen.add(record["key"])
            outcome = self._merge_template(after["templates"], record, overwrite)
            result[outcome].append(record["key"])
        return result

    def _import_components(self, after: dict, items: list, overwrite: bool) -> dict:
        result = {"created": [], "replaced": [], "unchanged": [], "ids": {}}
        records, seen = [], set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise PromptRegistryError(f"Registry: components[{index}] must be an object.")
            record = _validate_component_import(item, f"Registry components[{index}]")
            if record["is_static"]:
                raise PromptRegistryError(
                    f"Registry: components[{index}] is static; put static changes in "
                    "'static_overrides'."
                )
            if record["key"] in seen:
                raise PromptRegistryError(f"Registry: component '{record['key']}' appears twice.")
            seen.add(record["key"])
            records.append(record)
        # Free the slots of every replaced component first, then place the ones with an
        # exported ID before the others, so each keeps its ID where that slot is free.
        outcomes = [self._take_out_component(after["components"], r, overwrite) for r in records]
        for record, outcome in sorted(zip(records, outcomes), key=lambda p: p[0]["id"] is None):
            result[outcome].append(record["key"])
            result["ids"][record["key"]] = self._put_component(after["components"], record, outcome)
        return result

    def _import_static_overrides(self, after: dict, items: dict, overwrite: bool) -> dict:
        result = {"created": [], "replaced": [], "unchanged": []}
        for key, entry in items.items():
            static = get_static_component(key) if isinstance(key, str) else None
            what = f"Registry static_overrides[{key!r}]"
            if static is None:
                raise PromptRegistryError(f"{what}: not a static component key.")
            if not isinstance(entry, dict):
                raise PromptRegistryError(f"{what} must be an object.")
            _check_shape(entry, STATIC_EDITABLE, (), what)
            if "enabled" in entry:
                _check_bool(entry["enabled"], "enabled", what)
            if "content" in entry:
                _check_text(entry["content"], "content", what)
            outcome = self._merge_static_override(
                after["static_overrides"], static.id, entry, overwrite
            )
            result[outcome].append(key)
        return result

    def _import_context_configs(self, after: dict, items: dict, overwrite: bool) -> dict:
        result = {"created": [], "replaced": [], "unchanged": []}
        for context_type, customization in items.items():
            if not isinstance(customization, dict):
                raise PromptRegistryError(
                    f"Registry context_configs[{context_type!r}] must be an object."
                )
            self._effective(context_type, customization, components=after["components"])
            existing = after["context_configs"].get(context_type)
            if existing == customization:
                result["unchanged"].append(context_type)
                continue
            if existing and not overwrite:
                raise PromptRegistryError(
                    f"Context '{context_type}' is already customised; import with "
                    "overwrite=True to replace it."
                )
            after["context_configs"][context_type] = copy.deepcopy(customization)
            result["replaced" if existing else "created"].append(context_type)
        return result

    def _import_fewshots(self, after: dict, examples: list | None, overwrite: bool) -> dict:
        for index, example in enumerate(examples or []):
            what = f"Registry fewshot_examples[{index}]"
            if not isinstance(example, dict):
                raise PromptRegistryError(f"{what} must be an object.")
            _check_shape(example, ("user", "assistant"), ("user", "assistant"), what)
            _check_text(example["user"], "user", what, required=True)
            _check_text(example["assistant"], "assistant", what, required=True)
        old = after["fewshot_examples"]
        if examples is not None and overwrite:
            new = [dict(e) for e in examples]
        else:
            new = list(old)
            for example in examples or []:
                if example not in new:  # exact duplicates are skipped
                    new.append(dict(example))
        if len(new) > MAX_FEWSHOT_EXAMPLES:
            raise PromptRegistryError(
                f"Registry: the import would leave {len(new)} few-shot examples; "
                f"at most {MAX_FEWSHOT_EXAMPLES} are allowed."
            )
        after["fewshot_examples"] = new
        return {
            "added": len([e for e in new if e not in old]),
            "removed": len([e for e in old if e not in new]),
        }


def contract_problems_of_state(
    components: dict, static_overrides: dict, context_configs: dict
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


def components_of(inputs: dict) -> list[PromptComponent]:
    """Every component for assembly from :meth:`PromptRegistry.request_inputs` data: the static
    ones (this build's, with the stored overrides) and the stored pluggable ones, by ID."""
    overrides = {_coerce_id(k): v for k, v in (inputs.get("static_overrides") or {}).items()}
    result = [_component_to_dataclass(r) for r in inputs.get("components") or ()]
    result.extend(with_overrides(c, overrides.get(c.id)) for c in get_static_components())
    return sorted(result, key=lambda c: c.id)


def context_config_of(context_type: str, inputs: dict):
    """The effective ContextConfig of ``context_type`` from :meth:`PromptRegistry.request_inputs`
    data: this build's default with the stored customisation applied, as a tick reads it."""
    customization = inputs.get("context_customization") or {}
    base = prompt_contexts.get_context_config(context_type)
    if not customization:
        return base
    known = set(STATIC_COMPONENT_KEYS) | set(customization.get("component_overrides") or {})
    return prompt_contexts.apply_context_customization(base, customization, None, known)


def get_prompt_registry() -> PromptRegistry:
    """The game's PromptRegistry script, created on first use.

    Found by key (``evennia_ai_prompt_registry``); a script of that key with another typeclass
    is converted in place, keeping its Attributes.
    """
    global _REGISTRY
    cached = _REGISTRY
    if is_live_instance(cached) and isinstance(cached, PromptRegistry):
        return cached  # read on every tick: no query each time while it is the cached one

    found = ScriptDB.objects.filter(db_key=REGISTRY_KEY).order_by("id").first()
    if found is None:
        found = create_script(PromptRegistry, key=REGISTRY_KEY, persistent=True, autostart=True)
    elif not isinstance(found, PromptRegistry):
        found.swap_typeclass(PromptRegistry, clean_attributes=False)
    _REGISTRY = found
    return found


_REGISTRY: PromptRegistry | None = None


def effective_context_config(context_type: str):
    """The operator-customised config of a context type (the default when the registry fails)."""
    try:
        return get_prompt_registry().get_effective_context_config(context_type)
    except Exception:
        logger.log_trace("evennia_ai: registry context config unavailable; using the default")
        return prompt_contexts.get_context_config(context_type)
