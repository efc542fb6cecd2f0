"""PromptRegistry: the game's persistent store of prompt templates, components and customisations.

This module is the storage half: the Script and its operations. What a value may be, and the
records JSON import/export reads and writes, are the pure half,
:mod:`evennia_ai.prompt.registry_io`. The documented import path
:mod:`evennia_ai.prompt_registry` re-exports both.

One Evennia Script, keyed ``evennia_ai_prompt_registry``, got or created by
:func:`get_prompt_registry` (deliberately not a ``GLOBAL_SCRIPTS`` entry: changing such an entry
recreates the script and wipes what operators stored). It holds plain data in Attributes, in
this shape::

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
from collections.abc import Mapping
from typing import Any, Literal, overload

from django.db import transaction
from evennia.scripts.models import ScriptDB
from evennia.scripts.scripts import DefaultScript
from evennia.utils import logger
from evennia.utils.create import create_script

from evennia_ai.prompt import contexts as prompt_contexts
from evennia_ai.prompt.components import (
    STATIC_COMPONENT_KEYS,
    PromptComponent,
    get_static_component,
    get_static_component_by_id,
    is_static_id,
    with_overrides,
)
from evennia_ai.prompt.registry_io import (
    COMPONENT_EDITABLE,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_FEWSHOT_EXAMPLES,
    STATIC_EDITABLE,
    TEMPLATE_EDITABLE,
    PromptRegistryError,
    Record,
    check_after_static,
    check_bool,
    check_fields,
    check_key,
    check_placeholders,
    check_role,
    check_shape,
    check_text,
    coerce_id,
    component_json,
    component_to_dataclass,
    components_of,
    contract_problems_of_state,
    is_int,
    load_json,
    load_registry_json,
    place_component,
    same_component,
    same_template,
    template_json,
    template_to_dataclass,
    validate_component_import,
    validate_template_import,
)
from evennia_ai.prompt.templates import PromptTemplate, builtin_template_keys
from evennia_ai.prompt.templates import get_template as get_builtin_template
from evennia_ai.prompt.templates import list_builtin_templates
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.utils import is_live_instance, log_prefix, plain, utcnow

REGISTRY_KEY = "evennia_ai_prompt_registry"
# Where the Script class lived before it moved into prompt/: registries created then store this
# path, and evennia_ai.prompt_registry re-exports the class so it still loads.
LEGACY_TYPECLASS_PATH = "evennia_ai.prompt_registry.PromptRegistry"
_ATTRS = ("templates", "components", "static_overrides", "context_configs", "fewshot_examples")
_EMPTY = {
    "templates": dict,
    "components": dict,
    "static_overrides": dict,
    "context_configs": dict,
    "fewshot_examples": list,
}


def _static_by_id(component_id: int) -> PromptComponent:
    """The static component at ``component_id`` (callers have checked that it is one)."""
    component = get_static_component_by_id(component_id)
    if component is None:
        raise PromptRegistryError(f"{component_id!r} is not a static component ID.")
    return component


def _known_tool_names() -> set[str] | None:
    """Names of the registered tools (None when none could be loaded: the check is skipped)."""

    try:
        load_builtin_tools()
    except Exception:  # a broken tool module must not lock operators out of prompt settings
        logger.log_trace("evennia_ai: could not load the built-in tools")
    return set(TOOL_REGISTRY.names()) or None


# -- the Script --------------------------------------------------------------------------------
class PromptRegistry(DefaultScript):
    """Persistent prompt templates, pluggable components, static overrides, context
    customisations and few-shot examples of the game. Get it with :func:`get_prompt_registry`.
    """

    def at_script_creation(self) -> None:
        self.key = REGISTRY_KEY
        self.desc = "evennia-ai: prompt templates, components and context customisations"
        self.persistent = True
        self.interval = 0
        # Created empty up front so every later operation is a single UPDATE of one row.
        for name in _ATTRS:
            if not self.attributes.has(name):
                self.attributes.add(name, _EMPTY[name]())

    # -- storage ---------------------------------------------------------------------------------
    @overload
    def _read(self, name: Literal["templates", "context_configs"]) -> dict[str, Record]: ...
    @overload
    def _read(self, name: Literal["components", "static_overrides"]) -> dict[int, Record]: ...
    @overload
    def _read(self, name: Literal["fewshot_examples"]) -> list[Record]: ...
    @overload
    def _read(self, name: str) -> Any: ...

    def _read(self, name: str) -> Any:
        """A plain copy of the stored ``name`` (an empty one when it was never written)."""
        value = self.attributes.get(name)
        return _EMPTY[name]() if value is None else plain(value)

    def _write(self, name: str, value: object) -> None:
        # AttributeHandler.add() on an existing Attribute saves its row twice (the value setter
        # saves, then the backend saves again); the model's value setter alone is one UPDATE,
        # and the handler's cache holds this same Attribute object, so it stays coherent.
        attr = self.attributes.get(name, return_obj=True)
        if attr is None:
            self.attributes.add(name, value)
        else:
            attr.value = value

    def _refuse_contract_breaks(self, **pending: Any) -> None:
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
            return template_to_dataclass(record)
        return get_builtin_template(key) if isinstance(key, str) else None

    def list_templates(self, include_builtin: bool = True) -> list[PromptTemplate]:
        """User templates (and the built-in ones), sorted by key."""
        templates = [template_to_dataclass(r) for r in self._read("templates").values()]
        if include_builtin:
            templates.extend(list_builtin_templates())
        return sorted(templates, key=lambda t: t.key)

    def _new_template_record(
        self,
        templates: dict[str, Record],
        key: object,
        name: object,
        content: object,
        description: object,
        placeholders: object,
        category: object,
    ) -> Record:
        check_key(key, "Template")
        what = f"Template '{key}'"
        if key in builtin_template_keys():
            raise PromptRegistryError(
                f"{what} already exists as a built-in template; choose another key."
            )
        if key in templates:
            raise PromptRegistryError(f"{what} already exists; choose another key.")
        now = utcnow()
        content = check_text(content, "content", what)
        return {
            "key": key,
            "name": check_text(name, "name", what, required=True),
            "description": check_text(description, "description", what),
            "content": content,
            "placeholders": check_placeholders(content, placeholders, what),
            "category": check_text(category, "category", what, required=True),
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
        return template_to_dataclass(record)

    def _user_template(self, templates: dict[str, Record], key: object, action: str) -> Record:
        if isinstance(key, str) and key in builtin_template_keys():
            raise PromptRegistryError(
                f"Template '{key}' is built in and cannot be {action}; "
                f"clone it (aitemplate/clone {key} = my_{key}) and edit the clone."
            )
        record = templates.get(key) if isinstance(key, str) else None
        if record is None:
            raise PromptRegistryError(f"No template with key {key!r}.")
        return record

    def update_template(self, key: str, /, **fields: object) -> PromptTemplate:
        """Change fields of a user template (name, description, content, placeholders, category).

        When ``content`` changes and ``placeholders`` is not given, the placeholders are derived
        from the new content.

        Raises:
            PromptRegistryError: Unknown or built-in template, unknown fields, bad values.
        """
        templates = self._read("templates")
        record = self._user_template(templates, key, "changed")
        what = f"Template '{key}'"
        check_fields(fields, TEMPLATE_EDITABLE, what)
        if not fields:
            raise PromptRegistryError(f"{what}: nothing to update.")
        for field in ("name", "category"):
            if field in fields:
                record[field] = check_text(fields[field], field, what, required=True)
        if "description" in fields:
            record["description"] = check_text(fields["description"], "description", what)
        if "content" in fields:
            record["content"] = check_text(fields["content"], "content", what)
        if "placeholders" in fields or "content" in fields:
            record["placeholders"] = check_placeholders(
                record["content"], fields.get("placeholders"), what
            )
        record["updated"] = utcnow()
        self._write("templates", templates)
        return template_to_dataclass(record)

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
        return template_to_dataclass(record)

    # -- components ------------------------------------------------------------------------------
    def _static(
        self, component_id: int, overrides: dict[int, Record] | None = None
    ) -> PromptComponent:
        if overrides is None:
            overrides = self._read("static_overrides")
        return with_overrides(_static_by_id(component_id), overrides.get(component_id))

    def get_component(self, component_id: object) -> PromptComponent | None:
        """The component at ``component_id`` (static ones with overrides applied), or None."""
        cid = coerce_id(component_id)
        if cid is None:
            return None
        if is_static_id(cid):
            return self._static(cid)
        record = self._read("components").get(cid)
        return component_to_dataclass(record) if record else None

    def get_component_by_key(self, key: str) -> PromptComponent | None:
        """The component with ``key`` (static or pluggable), or None."""
        static = get_static_component(key) if isinstance(key, str) else None
        if static is not None:
            return self._static(static.id)
        for record in self._read("components").values():
            if record["key"] == key:
                return component_to_dataclass(record)
        return None

    def _existing_component(
        self, component_id: object, components: dict[int, Record] | None = None
    ) -> int:
        """``component_id`` as an int that exists (static or pluggable)."""
        cid = coerce_id(component_id)
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
        check_key(key, "Component")
        what = f"Component '{key}'"
        if key in STATIC_COMPONENT_KEYS:
            raise PromptRegistryError(f"{what}: the key is taken by a static component.")
        if any(r["key"] == key for r in components.values()):
            raise PromptRegistryError(f"{what} already exists; choose another key.")
        now = utcnow()
        record: Record = {
            "id": None,
            "key": key,
            "name": check_text(name, "name", what, required=True),
            "description": check_text(description, "description", what),
            "content": check_text(content, "content", what),
            "role": check_role(role, what),
            "after_static": check_after_static(after_static, what),
            "is_static": False,
            "enabled": check_bool(enabled, "enabled", what),
            "created": now,
            "updated": now,
        }
        place_component(components, record, what)
        self._write("components", components)
        return component_to_dataclass(record)

    def update_component(self, component_id: object, /, **fields: object) -> PromptComponent:
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
        check_fields(
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
            key = check_key(fields["key"], "Component")
            if key in STATIC_COMPONENT_KEYS or any(
                r["key"] == key for i, r in components.items() if i != cid
            ):
                raise PromptRegistryError(f"{what}: the key '{key}' is already taken.")
            record["key"] = key
        if "name" in fields:
            record["name"] = check_text(fields["name"], "name", what, required=True)
        for field in ("description", "content"):
            if field in fields:
                record[field] = check_text(fields[field], field, what)
        if "role" in fields:
            record["role"] = check_role(fields["role"], what)
        if "enabled" in fields:
            record["enabled"] = check_bool(fields["enabled"], "enabled", what)
        record["updated"] = utcnow()
        self._write("components", components)
        return component_to_dataclass(record)

    def _update_static(self, cid: int, fields: Mapping[str, object]) -> PromptComponent:
        what = f"Static component {cid} ('{_static_by_id(cid).key}')"
        check_fields(
            fields,
            STATIC_EDITABLE,
            what,
            " Its id, key, name, description, role and is_static are fixed.",
        )
        if not fields:
            raise PromptRegistryError(f"{what}: nothing to update.")
        overrides = self._read("static_overrides")
        current = self._static(cid, overrides)
        entry: Record = {"enabled": current.enabled, "content": current.content}
        if "enabled" in fields:
            entry["enabled"] = check_bool(fields["enabled"], "enabled", what)
        if "content" in fields:
            entry["content"] = check_text(fields["content"], "content", what)
        overrides[cid] = entry
        self._refuse_contract_breaks(static_overrides=overrides)
        self._write("static_overrides", overrides)
        return self._static(cid, overrides)

    def reset_static_component(self, component_id: object) -> PromptComponent:
        """Drop the overrides of a static component (back to its default enabled/content).

        Raises:
            PromptRegistryError: If ``component_id`` is not a static component.
        """
        cid = coerce_id(component_id)
        if cid is None or not is_static_id(cid):
            raise PromptRegistryError(f"{component_id!r} is not a static component ID.")
        overrides = self._read("static_overrides")
        if cid in overrides:
            del overrides[cid]
            self._write("static_overrides", overrides)
        return self._static(cid, overrides)

    def delete_component(self, component_id: object) -> None:
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
            return sorted((component_to_dataclass(r) for r in records), key=lambda c: c.id)
        return components_of(self.request_inputs())

    def list_pluggable_components(self) -> list[PromptComponent]:
        """The pluggable components, sorted by ID."""
        return self.list_components(include_static=False)

    def list_components_after(self, static_id: int) -> list[PromptComponent]:
        """Pluggable components placed after the static component ``static_id``, by ID.

        Raises:
            PromptRegistryError: If ``static_id`` is not a static ID.
        """
        cid = coerce_id(static_id)
        if not is_static_id(cid):
            check_after_static(static_id, "list_components_after")
        return [c for c in self.list_pluggable_components() if c.after_static == cid]

    def move_component(self, component_id: object, new_after_static: object) -> PromptComponent:
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
        target = coerce_id(new_after_static)
        if not is_static_id(target):
            check_after_static(new_after_static, what)
        if record["after_static"] == target:
            return component_to_dataclass(record)
        del components[cid]
        record.update(id=None, after_static=target, updated=utcnow())
        place_component(components, record, what)
        self._write("components", components)
        return component_to_dataclass(record)

    def component_to_prompt_component(self, component_id: object) -> PromptComponent:
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
    def apply_template_to_component(
        self, template_key: str, component_id: object
    ) -> PromptComponent:
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
        component_id: object,
        template_key: str,
        name: str | None = None,
        description: str | None = None,
        category: str = "component",
    ) -> PromptTemplate:
        """Save a component's content as a new user template (placeholders derived).

        Raises:
            PromptRegistryError: Unknown component, invalid or duplicate template key.
        """
        component = self.component_to_prompt_component(self._existing_component(component_id))
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
        customization: Mapping[str, Any],
        *,
        strict: bool = True,
        components: dict[int, Record] | None = None,
    ) -> prompt_contexts.ContextConfig:
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

    def get_context_customization(self, context_type: str) -> Record:
        """The stored customisation of a context type (a copy; empty when none)."""
        return self._read("context_configs").get(context_type, {})

    def list_context_customizations(self) -> dict[str, Record]:
        """Every stored customisation: {context_type: {field: value}}."""
        return self._read("context_configs")

    def set_context_customization(
        self, context_type: str, /, **fields: Any
    ) -> prompt_contexts.ContextConfig:
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

    def get_effective_context_config(self, name: str) -> prompt_contexts.ContextConfig:
        """The default ContextConfig of ``name`` with the operator's customisation applied.

        Raises:
            PromptRegistryError: Unknown context type, or a stored customisation that is no
                longer valid (the message says which field).
        """
        return self._effective(name, self._read("context_configs").get(name, {}), strict=False)

    def request_inputs(self, context_type: str | None = None) -> Record:
        """What a request takes from the registry, as plain data (a tick recording keeps it).

        ``components`` (the pluggable ones' records), ``static_overrides`` and, for
        ``context_type``, its ``context_customization``; :func:`components_of` and
        :func:`context_config_of` turn them back into what the builder uses, with the current
        static components and context defaults.
        """
        inputs: Record = {
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
            "user": check_text(user, "user", what, required=True),
            "assistant": check_text(assistant, "assistant", what, required=True),
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

    def list_fewshot_examples(self) -> list[Record]:
        """The few-shot examples (copies), in order."""
        return self._read("fewshot_examples")

    def remove_fewshot_example(self, index: int) -> Record:
        """Remove and return the example at 0-based ``index``.

        Raises:
            PromptRegistryError: No example at ``index``.
        """
        examples = self._read("fewshot_examples")
        if not is_int(index) or not 0 <= index < len(examples):
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
        return json.dumps(template_json(template, record), indent=2, ensure_ascii=False)

    def export_component_json(self, component_id: object) -> str:
        """One component (static ones with overrides) as JSON text.

        Raises:
            PromptRegistryError: Unknown component.
        """
        component = self.component_to_prompt_component(component_id)
        record = None if component.is_static else self._read("components")[component.id]
        return json.dumps(component_json(component, record), indent=2, ensure_ascii=False)

    def import_template_json(self, data: object, overwrite: bool = False) -> PromptTemplate:
        """Import one template from JSON text or a dict.

        Args:
            data: As produced by :meth:`export_template_json`.
            overwrite: Replace a user template of the same key (built-ins are never replaced).

        Raises:
            PromptRegistryError: Malformed or wrong-shaped JSON, invalid values, a built-in key,
                or an existing key without ``overwrite``.
        """
        record = validate_template_import(load_json(data, "Template"), "Template")
        templates = self._read("templates")
        self._merge_template(templates, record, overwrite)
        self._write("templates", templates)
        return template_to_dataclass(templates[record["key"]])

    def import_component_json(self, data: object, overwrite: bool = False) -> PromptComponent:
        """Import one component from JSON text or a dict.

        A pluggable component keeps its exported ID when that slot is free, else it gets the
        next free one after its ``after_static``. A static component's export (``is_static``
        true) sets that component's enabled/content overrides; replacing overrides already
        stored needs ``overwrite``.

        Raises:
            PromptRegistryError: Malformed or wrong-shaped JSON, invalid values, an existing key
                without ``overwrite``, a full range.
        """
        record = validate_component_import(load_json(data, "Component"), "Component")
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
        return component_to_dataclass(components[new_id])

    # merge helpers work on plain copies; they raise before anything is written.
    def _merge_template(self, templates: dict[str, Record], record: Record, overwrite: bool) -> str:
        key = record["key"]
        if key in builtin_template_keys():
            raise PromptRegistryError(
                f"Template '{key}' is built in and cannot be imported over; rename it."
            )
        existing = templates.get(key)
        if existing is not None and same_template(existing, record):
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

    def _take_out_component(
        self, components: dict[int, Record], record: Record, overwrite: bool
    ) -> str:
        """Step 1 of importing a component: "unchanged", or free the slot of the one it
        replaces ("replaced"), or "created". Raises on a conflict without ``overwrite``."""
        key = record["key"]
        old_id = next((i for i, r in components.items() if r["key"] == key), None)
        if old_id is None:
            return "created"
        existing = components[old_id]
        if same_component(existing, record):
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

    def _put_component(self, components: dict[int, Record], record: Record, outcome: str) -> int:
        """Step 2 of importing a component: place it (its own ID when free, else a new one)."""
        if outcome == "unchanged":
            return int(record["id"])
        now = utcnow()
        record["created"] = record["created"] or now
        record["updated"] = now if outcome == "replaced" else (record["updated"] or now)
        return place_component(components, record, f"Component '{record['key']}'")

    def _merge_static_override(
        self, overrides: dict[int, Record], cid: int, entry: Record, overwrite: bool
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
                template_json(template_to_dataclass(templates[k]), templates[k])
                for k in sorted(templates)
            ],
            "components": [
                component_json(component_to_dataclass(components[i]), components[i])
                for i in sorted(components)
            ],
            "static_overrides": {
                _static_by_id(cid).key: dict(overrides[cid]) for cid in sorted(overrides)
            },
            "context_configs": self._read("context_configs"),
            "fewshot_examples": self._read("fewshot_examples"),
        }
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False, default=str)

    def import_json(
        self, data: object, overwrite: bool = False, dry_run: bool = False
    ) -> dict[str, Any]:
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
        data = load_registry_json(data)
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
    def _import_templates(
        self, after: dict[str, Any], items: list[object], overwrite: bool
    ) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {"created": [], "replaced": [], "unchanged": []}
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise PromptRegistryError(f"Registry: templates[{index}] must be an object.")
            record = validate_template_import(item, f"Registry templates[{index}]")
            if record["key"] in seen:
                raise PromptRegistryError(f"Registry: template '{record['key']}' appears twice.")
            seen.add(record["key"])
            outcome = self._merge_template(after["templates"], record, overwrite)
            result[outcome].append(record["key"])
        return result

    def _import_components(
        self, after: dict[str, Any], items: list[object], overwrite: bool
    ) -> dict[str, Any]:
        result: dict[str, Any] = {"created": [], "replaced": [], "unchanged": [], "ids": {}}
        records: list[Record] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise PromptRegistryError(f"Registry: components[{index}] must be an object.")
            record = validate_component_import(item, f"Registry components[{index}]")
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

    def _import_static_overrides(
        self, after: dict[str, Any], items: Mapping[object, object], overwrite: bool
    ) -> dict[str, list[object]]:
        result: dict[str, list[object]] = {"created": [], "replaced": [], "unchanged": []}
        for key, entry in items.items():
            static = get_static_component(key) if isinstance(key, str) else None
            what = f"Registry static_overrides[{key!r}]"
            if static is None:
                raise PromptRegistryError(f"{what}: not a static component key.")
            if not isinstance(entry, dict):
                raise PromptRegistryError(f"{what} must be an object.")
            check_shape(entry, STATIC_EDITABLE, (), what)
            if "enabled" in entry:
                check_bool(entry["enabled"], "enabled", what)
            if "content" in entry:
                check_text(entry["content"], "content", what)
            outcome = self._merge_static_override(
                after["static_overrides"], static.id, entry, overwrite
            )
            result[outcome].append(key)
        return result

    def _import_context_configs(
        self, after: dict[str, Any], items: Mapping[str, object], overwrite: bool
    ) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {"created": [], "replaced": [], "unchanged": []}
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

    def _import_fewshots(
        self, after: dict[str, Any], examples: list[Any] | None, overwrite: bool
    ) -> dict[str, int]:
        for index, example in enumerate(examples or []):
            what = f"Registry fewshot_examples[{index}]"
            if not isinstance(example, dict):
                raise PromptRegistryError(f"{what} must be an object.")
            check_shape(example, ("user", "assistant"), ("user", "assistant"), what)
            check_text(example["user"], "user", what, required=True)
            check_text(example["assistant"], "assistant", what, required=True)
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


def get_prompt_registry() -> PromptRegistry:
    """The game's PromptRegistry script, created on first use.

    Found by key (``evennia_ai_prompt_registry``); a script of that key with another typeclass
    is converted in place, keeping its Attributes. One stored under the path of the registry
    before it moved into ``prompt/`` (:data:`LEGACY_TYPECLASS_PATH`, still importable) is
    already this class: only its stored path is brought up to date, once.
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
    elif found.db_typeclass_path != PromptRegistry.path:
        _update_stored_path(found)
    registry: PromptRegistry = found  # a query's result: Evennia's models are untyped
    _REGISTRY = registry
    return registry


def _update_stored_path(registry: PromptRegistry) -> None:
    """Store the class's own typeclass path for ``registry`` (found under an older one).

    Evennia's typeclass queries (``PromptRegistry.objects``) match the stored path exactly, so
    the registry keeps one path. Only that column is written: Attributes, key and id stay.
    """
    old_path = registry.db_typeclass_path
    registry.db_typeclass_path = PromptRegistry.path
    registry.save(update_fields=["db_typeclass_path"])
    logger.log_info(
        f"{log_prefix()}: the prompt registry's stored typeclass path was updated from "
        f"{old_path} to {PromptRegistry.path}; its contents are unchanged."
    )


_REGISTRY: PromptRegistry | None = None


def effective_context_config(context_type: str) -> prompt_contexts.ContextConfig:
    """The operator-customised config of a context type (the default when the registry fails)."""
    try:
        return get_prompt_registry().get_effective_context_config(context_type)
    except Exception:
        logger.log_trace("evennia_ai: registry context config unavailable; using the default")
        return prompt_contexts.get_context_config(context_type)
