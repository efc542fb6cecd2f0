"""Admin commands over the prompt system: components, templates, the registry's JSON, context
configs, an NPC's execution config and the operator's few-shot examples.

Every command is thin glue over :mod:`evennia_ai.prompt.registry` (the game's store of
templates, components, context customisations and few-shots) and the NPC handler: the registry
validates everything and writes once, and its :class:`PromptRegistryError` messages are shown
to the caller as they are. ``aiprompt/show <context> = <npc>`` builds the request the way a tick
does (the same context config, tools, sources and assembly), without calling the model.

Text that came from operators or players (component contents, rendered prompts, exported
JSON) is shown with Evennia's ``|`` markup escaped, so it reads exactly as stored.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from dataclasses import fields as dataclass_fields
from typing import Any

from django.conf import settings

from evennia_ai.commands.base import (
    BUILDER_LOCK,
    DEVELOPER_LOCK,
    AICommand,
    CommandError,
    SwitchedCommand,
    partition_bar,
)
from evennia_ai.engine.tick import TickState, prepare
from evennia_ai.memory import events as ev
from evennia_ai.prompt import block_sources  # noqa: F401  (registers the memory-block sources)
from evennia_ai.prompt import longterm_sources  # noqa: F401
from evennia_ai.prompt import sources  # noqa: F401  (registers the built-in sources)
from evennia_ai.prompt.assembly import is_component_enabled, select_components
from evennia_ai.prompt.components import STATIC_COMPONENT_IDS, get_static_component, is_static_id
from evennia_ai.prompt.contexts import CONTEXT_TYPES, CUSTOMIZABLE_FIELDS
from evennia_ai.prompt.execution_pattern import (
    ALL_TOOL_CATEGORIES,
    DEFAULT_EXECUTION_CONFIG,
    select_execution_pattern,
)
from evennia_ai.prompt.registry import effective_context_config, get_prompt_registry
from evennia_ai.prompt.registry_io import MAX_FEWSHOT_EXAMPLES

MAX_IMPORT_BYTES = 5_000_000
PREVIEW_CHARS = 70


# -- shared helpers ------------------------------------------------------------------------------
def esc(text: Any) -> str:
    """``text`` with Evennia's ``|`` markup escaped, so it is shown exactly as written."""
    return str(text if text is not None else "").replace("|", "||")


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first line-folded ``limit`` characters of ``text`` (escaped)."""
    flat = " ".join(str(text or "").split())
    if len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    return esc(flat)


def indent(text: str, prefix: str = "    ") -> str:
    """``text`` (escaped) with every line indented."""
    return "\n".join(prefix + line for line in esc(text).splitlines() or [""])


def registry():
    """The game's PromptRegistry."""

    return get_prompt_registry()


@contextmanager
def registry_errors():
    """Turn a :class:`PromptRegistryError` (or ValueError) into a :class:`CommandError`."""
    try:
        yield
    except ValueError as err:  # PromptRegistryError is a ValueError
        raise CommandError(str(err)) from None


def json_object(text: str, what: str) -> dict | None:
    """``text`` as a JSON object when it starts with ``{`` (None otherwise).

    Raises:
        CommandError: It starts with ``{`` but is not a valid JSON object.
    """
    text = (text or "").strip()
    if not text.startswith("{"):
        return None
    data = AICommand.parse_json(text, what)
    if not isinstance(data, dict):
        raise CommandError(f"{what} must be a JSON object.")
    return data


def context_type_of(name: str) -> str:
    """The context type called ``name`` (exact, or a unique prefix).

    Raises:
        CommandError: Unknown or ambiguous name; the message lists the context types.
    """

    name = (name or "").strip().lower()
    if name in CONTEXT_TYPES:
        return name
    matches = [c for c in CONTEXT_TYPES if name and c.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(CONTEXT_TYPES)
    if matches:
        raise CommandError(f"'{esc(name)}' matches several context types: {', '.join(matches)}.")
    raise CommandError(f"Unknown context type '{esc(name[:64])}'. Known: {known}.")


def is_context_type(name: str) -> bool:
    return (name or "").strip().lower() in CONTEXT_TYPES


def component_id_of(text: str) -> int:
    """The ID of the component named by ``text`` (its ID, or its key).

    Raises:
        CommandError: No such component.
    """
    text = (text or "").strip().lstrip("#")
    if not text:
        raise CommandError("Which component? Give its ID or key (|waiprompt/list|n shows them).")
    reg = registry()
    number = text.isascii() and text.isdigit()
    component = reg.get_component(int(text)) if number and len(text) < 8 else None
    if component is None and not number:
        component = reg.get_component_by_key(text)
    if component is None:
        raise CommandError(f"No component '{esc(text[:64])}'. |waiprompt/list|n shows them.")
    return component.id


def static_id_of(text: str) -> int:
    """The static component ID named by ``text`` (its ID or key)."""

    text = (text or "").strip().lstrip("#")
    static = get_static_component(text)
    if static is not None:
        return static.id
    if text.isascii() and text.isdigit() and len(text) < 8 and is_static_id(int(text)):
        return int(text)
    raise CommandError(
        f"'{esc(text[:64])}' is not a static component: use one of "
        f"{', '.join(map(str, STATIC_COMPONENT_IDS))} (or its key, e.g. character_context)."
    )


def key_from_name(name: str) -> str:
    """A component or template key made from a display name ("House rules" -> house_rules)."""
    key = re.sub(r"[^a-z0-9_]+", "_", (name or "").strip().lower()).strip("_")[:64]
    if key and key[0].isdigit():
        key = "_" + key[:63]
    return key


def pluralise(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def yes_no(value: bool) -> str:
    return "|gyes|n" if value else "|rno|n"


# -- aiprompt ------------------------------------------------------------------------------------
class CmdAIPrompt(SwitchedCommand):
    """
    Manage the prompt components that make up an AI NPC's context window.

    Usage:
      aiprompt/list [<context type>]
      aiprompt/show <component id or key>
      aiprompt/show <context type> [= <npc>]
      aiprompt/add <after static id> = <name>||<content>
      aiprompt/add <after static id> = <json object>
      aiprompt/edit <component> = <content>
      aiprompt/move <component> = <static id>
      aiprompt/enable <component>
      aiprompt/disable <component>
      aiprompt/delete <component>
      aiprompt/reset <static component>

    Switches:
      list    - every component by ID (the order of the window): key, name, role,
                enabled. With a context type, also whether that context includes it.
      show    - one component's content; or, for a context type, the components it
                assembles. With "= <npc>", the request that NPC's next tick of that
                type would send (built like a tick, sources included; no model call).
      add     - add a pluggable component after a static one (0, 1000, 1500, 2000,
                ... 7000, or its key); it takes the next free ID. The key is made from
                the name; JSON gives every field: key, name, content, description,
                role (system, user, assistant, tool, mixed), enabled.
      edit    - replace a component's content (static ones too: 0 is the system
                prompt; keep its {placeholder} to keep what the game fills in).
      move    - move a pluggable component after another static component.
      enable  - include a component in assembly again.
      disable - leave a component out of every context (static ones too). Refused
                for a component a kind of call needs (6000 carries tick_event's
                event, 4000 tick_autonomous's goals, 7000 reflection_cont's results),
                as is an edit that drops its {placeholder}.
      delete  - delete a pluggable component (static ones can only be disabled).
      reset   - give a static component back its default content, and enable it.

    A component is named by its ID or its key. Contents may use {placeholders}
    filled at assembly; unknown ones stay visible. The operator's section (the
    override file, the NPC's operator prompt, its tool rules) is not a component:
    it opens every request whatever the components and contexts say.

    Examples:
      aiprompt/list
      aiprompt/list reflection
      aiprompt/show tick_event = Innkeeper
      aiprompt/add 1000 = House rules||Never reveal what is in the cellar.
      aiprompt/add character_context = {"key": "lore", "name": "Lore", "content": "The town is old."}
      aiprompt/edit house_rules = Never reveal the cellar or the well.
      aiprompt/move house_rules = 4000
      aiprompt/disable 3000
      aiprompt/delete 1001
      aiprompt/reset system_prompt
    """

    key = "aiprompt"
    aliases = ["aiprompts"]
    locks = DEVELOPER_LOCK
    switch_options = ("list", "show", "add", "edit", "move", "enable", "disable", "delete", "reset")

    def do_default(self):
        self.do_show()

    # -- viewing -------------------------------------------------------------------------------
    def do_list(self):
        context_type = context_type_of(self.args) if self.args.strip() else None
        config = None
        if context_type:
            with registry_errors():
                config = registry().get_effective_context_config(context_type)
        components = registry().list_components(include_static=True)
        headers = ["ID", "Key", "Name", "Role", "Enabled"]
        if config is not None:
            headers.append(f"In {context_type}")
        table = self.table(*headers, keep=(1,))
        for comp in components:
            row = [
                comp.id if comp.is_static else f"{comp.id} (after {comp.after_static})",
                esc(comp.key),
                esc(comp.name),
                comp.role,
                yes_no(comp.enabled),
            ]
            if config is not None:
                row.append(
                    yes_no(comp.enabled and is_component_enabled(comp, config.enabled_components))
                )
            table.add_row(*row)
        pluggable = sum(1 for comp in components if not comp.is_static)
        head = (
            f"|wPrompt components|n ({len(components) - pluggable} static, {pluggable} pluggable)"
        )
        self.msg(f"{head}:\n{table}")

    def do_show(self):
        target = self.require(self.lhs, "component or context type")
        if self.rhs is not None or is_context_type(target):
            context_type = context_type_of(target)
            if self.rhs is not None:
                self.show_for_npc(context_type, self.find_npc(self.rhs))
            else:
                self.show_context(context_type)
            return
        with registry_errors():
            comp = registry().component_to_prompt_component(component_id_of(target))
        kind = "static" if comp.is_static else f"pluggable, after {comp.after_static}"
        lines = [
            f"|wComponent {comp.id}|n {esc(comp.key)} ({kind}): {esc(comp.name)}",
            f"Role: {comp.role}   Enabled: {yes_no(comp.enabled)}",
        ]
        if comp.description:
            lines.append(f"Description: {esc(comp.description)}")
        lines += ["Content:", indent(comp.content)]
        self.msg("\n".join(lines))

    def show_context(self, context_type: str) -> None:
        """The components a context type assembles, with the context's overrides applied."""

        reg = registry()
        with registry_errors():
            config = reg.get_effective_context_config(context_type)
        skipped: list[tuple[str, str]] = []
        chosen = select_components(reg.get_all_prompt_components(), config, skipped=skipped)
        tools = (
            "every tool"
            if config.tool_filter is None
            else ", ".join(config.tool_filter) or "no tools"
        )
        lines = [
            f"|wContext {context_type}|n ({esc(config.name)}): {pluralise(len(chosen), 'component')}, "
            f"{tools}; {config.execution_mode}, at most {config.max_iterations} iteration(s).",
        ]
        for comp in chosen:
            lines.append(f"|w{comp.id}|n {esc(comp.key)} [{comp.role}]")
            lines.append(indent(comp.content))
        if skipped:
            lines.append("Left out: " + ", ".join(f"{esc(key)} ({why})" for key, why in skipped))
        lines.append(
            "Before them, not a component: the operator's section (override file, operator "
            "prompt, tool rules). {placeholders} are filled per NPC at each tick; "
            f"|waiprompt/show {context_type} = <npc>|n shows the filled request."
        )
        self.msg("\n".join(lines))

    def show_for_npc(self, context_type: str, npc) -> None:
        """Build the request of ``npc``'s next ``context_type`` tick, as the tick does."""

        batch: list = []
        if context_type == "tick_event":  # the events the next tick would answer (not taken)
            _queue, batch = ev.take_batch(npc.ai.event_queue)
        script = npc.ai.script
        next_tick = (script.tick_count if script is not None else 0) + 1
        state = TickState.read(npc, context_type, batch, next_tick)
        caller, name = self.caller, npc.key

        def done(built):
            caller.msg(render_built(name, context_type, built, len(batch)))

        def failed(failure):
            caller.msg(
                f"|rCould not build {name}'s {context_type} prompt: "
                f"{esc(failure.getErrorMessage())}|n"
            )

        self.msg(f"Building {name}'s {context_type} request...")
        prepare(npc, state).addCallbacks(done, failed)

    # -- changing --------------------------------------------------------------------------------
    def do_add(self):
        if self.rhs is None:
            raise CommandError("Give the component after '='.\n" + self.usage())
        after = static_id_of(self.require(self.lhs, "static component ID"))
        text = self.require(self.rhs, "component")
        fields = json_object(text, "Component JSON")
        if fields is None:
            name, sep, content = partition_bar(text)
            if not sep or not name.strip() or not content.strip():
                raise CommandError("Give the component as <name>||<content> (or a JSON object).")
            fields = {"name": name.strip(), "content": content.strip()}
        fields = dict(fields)
        allowed = ("key", "name", "content", "description", "role", "enabled")
        unknown = [str(k)[:40] for k in fields if k not in allowed]
        if unknown:
            raise CommandError(
                f"Unknown component field(s) {', '.join(map(esc, unknown))}; "
                f"give {', '.join(allowed)}."
            )
        if "content" not in fields:
            raise CommandError("The component needs a content.")
        name = fields.get("name") or fields.get("key")
        if not isinstance(name, str) or not name.strip():
            raise CommandError("The component needs a name (or a key).")
        key = fields.get("key", key_from_name(name))
        with registry_errors():
            comp = registry().create_component(
                key,
                name.strip(),
                fields["content"],
                after,
                description=fields.get("description", ""),
                role=fields.get("role", "system"),
                enabled=fields.get("enabled", True),
            )
        self.msg(
            f"Added component {comp.id} ({esc(comp.key)}) after {after}. "
            f"|waiprompt/show {comp.id}|n shows it."
        )

    def do_edit(self):
        if self.rhs is None:
            raise CommandError("Give the new content after '='.\n" + self.usage())
        cid = component_id_of(self.lhs)
        content = self.require(self.rhs, "content")
        with registry_errors():
            comp = registry().update_component(cid, content=content)
        self.msg(
            f"Component {comp.id} ({esc(comp.key)}) now has {len(content)} characters of content."
        )

    def do_move(self):
        if self.rhs is None:
            raise CommandError(
                "Give the static component to move it after, after '='.\n" + self.usage()
            )
        cid = component_id_of(self.lhs)
        after = static_id_of(self.require(self.rhs, "static component ID"))
        with registry_errors():
            comp = registry().move_component(cid, after)
        self.msg(f"Component {esc(comp.key)} is now {comp.id}, after {after}.")

    def _set_enabled(self, enabled: bool) -> None:
        cid = component_id_of(self.args)
        with registry_errors():
            comp = registry().update_component(cid, enabled=enabled)
        state = "enabled" if enabled else "disabled: no context includes it"
        self.msg(f"Component {comp.id} ({esc(comp.key)}) is {state}.")

    def do_enable(self):
        self._set_enabled(True)

    def do_disable(self):
        self._set_enabled(False)

    def do_delete(self):
        cid = component_id_of(self.args)
        reg = registry()
        key = reg.get_component(cid).key
        with registry_errors():
            reg.delete_component(cid)
        self.msg(f"Deleted component {cid} ({esc(key)}).")

    def do_reset(self):
        cid = static_id_of(self.require(self.args, "static component"))
        with registry_errors():
            comp = registry().reset_static_component(cid)
        self.msg(f"Component {comp.id} ({comp.key}) has its default content again and is enabled.")


def render_built(name: str, context_type: str, built, events: int) -> str:
    """A built request (:class:`~evennia_ai.prompt.builder.BuiltContext`) for the caller."""
    lines = [
        f"|wRequest of {name} for {context_type}|n: {built.total_tokens:,} tokens "
        f"(limit {built.limit:,}, window {built.window:,}, pressure {built.token_pressure}); "
        f"{pluralise(events, 'queued event')} answered.",
    ]
    tool_names = [schema.get("function", {}).get("name", "?") for schema in built.tool_schemas]
    lines.append(f"Tools offered ({len(tool_names)}): " + (", ".join(tool_names) or "none"))
    if built.sections:
        lines.append(
            "Tokens per section: "
            + ", ".join(f"{esc(key)} {count:,}" for key, count in built.sections.items())
        )
    if built.shrunk:
        lines.append(
            "Shrunk to fit: "
            + ", ".join(f"{esc(key)} ({esc(how)})" for key, how in built.shrunk.items())
        )
    if built.blocked:
        lines.append(f"|rNot sent: {esc(built.blocked)}.|n")
    elif built.contract_problems:
        lines.append(
            "|rA tick would not send it (contract_violation): "
            + esc("; ".join(built.contract_problems))
            + ".|n"
        )
    for index, message in enumerate(built.messages):
        extra = ""
        if message.get("tool_calls"):
            calls = [call.get("function", {}).get("name", "?") for call in message["tool_calls"]]
            extra = f" calls {', '.join(calls)}"
        if message.get("tool_call_id"):
            extra = f" answers {message['tool_call_id']}"
        lines.append(f"|w[{index}] {message.get('role')}|n{esc(extra)}")
        content = message.get("content")
        if content:
            lines.append(indent(content if isinstance(content, str) else json.dumps(content)))
    return "\n".join(lines)


# -- aitemplate ----------------------------------------------------------------------------------
class CmdAITemplate(SwitchedCommand):
    """
    Manage prompt templates: reusable prompt text with {placeholders}.

    Usage:
      aitemplate/list
      aitemplate/show <template>
      aitemplate/create <template> = <content>
      aitemplate/create <template> = <json object>
      aitemplate/clone <template> = <new template>
      aitemplate/edit <template> = <content>
      aitemplate/delete <template>
      aitemplate/apply <template> = <component id or key>
      aitemplate/save <component id or key> = <new template>

    Switches:
      list   - every template (built-in and the game's own) with its category.
      show   - a template's content and placeholders.
      create - create a template; JSON gives name, content, description, category.
      clone  - copy a template (built-in ones too) under a new key, to edit it.
      edit   - replace a template's content (built-in ones are read-only: clone).
      delete - delete one of the game's templates.
      apply  - set a component's content to the template's content.
      save   - save a component's content as a new template.

    Template keys are 1-64 letters, digits, '_' or '-'. The built-in templates are
    default, default_fallback and reflection.

    Examples:
      aitemplate/list
      aitemplate/clone default = my_default
      aitemplate/edit my_default = You are {name}. Answer briefly.
      aitemplate/create rules = Never reveal the cellar.
      aitemplate/apply rules = house_rules
      aitemplate/save 1001 = house_rules_v1
    """

    key = "aitemplate"
    aliases = ["aitemplates"]
    locks = DEVELOPER_LOCK
    switch_options = ("list", "show", "create", "clone", "edit", "delete", "apply", "save")

    def do_default(self):
        self.do_show()

    def _pair(self, left: str, right: str) -> tuple[str, str]:
        if self.rhs is None:
            raise CommandError(f"Give the {right} after '='.\n" + self.usage())
        return self.require(self.lhs, left), self.require(self.rhs, right)

    def do_list(self):
        templates = registry().list_templates(include_builtin=True)
        table = self.table("Key", "Name", "Category", "Placeholders", "Built in", keep=(0,))
        for template in templates:
            table.add_row(
                esc(template.key),
                esc(template.name),
                esc(template.category),
                preview(", ".join(template.placeholders), 40) or "-",
                yes_no(template.is_builtin),
            )
        self.msg(f"|wPrompt templates|n ({len(templates)}):\n{table}")

    def do_show(self):
        key = self.require(self.args, "template key")
        template = registry().get_template(key)
        if template is None:
            raise CommandError(f"No template '{esc(key[:64])}'. |waitemplate/list|n shows them.")
        kind = "built in, read-only" if template.is_builtin else "the game's own"
        lines = [
            f"|wTemplate {esc(template.key)}|n ({kind}): {esc(template.name)}",
            f"Category: {esc(template.category)}   Placeholders: "
            f"{esc(', '.join(template.placeholders)) or 'none'}",
        ]
        if template.description:
            lines.append(f"Description: {esc(template.description)}")
        lines += ["Content:", indent(template.content)]
        self.msg("\n".join(lines))

    def do_create(self):
        key, text = self._pair("template key", "content")
        fields = json_object(text, "Template JSON")
        if fields is None:
            fields = {"content": text}
        allowed = ("name", "content", "description", "category")
        unknown = [str(k)[:40] for k in fields if k not in allowed]
        if unknown:
            raise CommandError(
                f"Unknown template field(s) {', '.join(map(esc, unknown))}; "
                f"give {', '.join(allowed)}."
            )
        if "content" not in fields:
            raise CommandError("The template needs a content.")
        with registry_errors():
            template = registry().create_template(
                key,
                fields.get("name", key),
                fields["content"],
                description=fields.get("description", ""),
                category=fields.get("category", "system_prompt"),
            )
        placeholders = ", ".join(template.placeholders) or "none"
        self.msg(f"Created template {esc(template.key)} (placeholders: {esc(placeholders)}).")

    def do_clone(self):
        source, new_key = self._pair("template key", "new template key")
        with registry_errors():
            template = registry().clone_template(source, new_key)
        self.msg(
            f"Cloned {esc(source)} as {esc(template.key)}; "
            f"|waitemplate/edit {esc(template.key)} = <content>|n changes it."
        )

    def do_edit(self):
        key, content = self._pair("template key", "content")
        with registry_errors():
            template = registry().update_template(key, content=content)
        placeholders = ", ".join(template.placeholders) or "none"
        self.msg(f"Template {esc(template.key)} updated (placeholders: {esc(placeholders)}).")

    def do_delete(self):
        key = self.require(self.args, "template key")
        with registry_errors():
            registry().delete_template(key)
        self.msg(f"Deleted template {esc(key)}.")

    def do_apply(self):
        key, target = self._pair("template key", "component ID or key")
        cid = component_id_of(target)
        with registry_errors():
            comp = registry().apply_template_to_component(key, cid)
        self.msg(f"Component {comp.id} ({esc(comp.key)}) now has template {esc(key)}'s content.")

    def do_save(self):
        source, new_key = self._pair("component ID or key", "new template key")
        cid = component_id_of(source)
        with registry_errors():
            template = registry().save_component_as_template(cid, new_key)
        self.msg(f"Saved component {cid}'s content as template {esc(template.key)}.")


# -- airegistry ----------------------------------------------------------------------------------
def game_file(name: str) -> str:
    """The absolute path of a ``.json`` file named relative to the game directory.

    Raises:
        CommandError: Not a ``.json`` name, or a path outside the game directory.
    """

    name = (name or "").strip().strip("\"'")
    if not name.lower().endswith(".json") or "\x00" in name:
        raise CommandError(
            f"'{esc(name[:100])}' is not a .json file name (or inline JSON " "starting with '{')."
        )
    root = os.path.realpath(str(getattr(settings, "GAME_DIR", "") or os.getcwd()))
    path = os.path.realpath(os.path.join(root, os.path.normpath(name)))
    if os.path.commonpath([root, path]) != root:
        raise CommandError(
            f"'{esc(name[:100])}' is outside the game directory; " "give a path inside it."
        )
    return path


def shown_path(path: str) -> str:
    """``path`` relative to the game directory, for messages."""

    root = os.path.realpath(str(getattr(settings, "GAME_DIR", "") or os.getcwd()))
    return esc(os.path.relpath(path, root))


def render_import_summary(summary: dict) -> str:
    """Lines describing :meth:`PromptRegistry.import_json`'s summary."""
    verb = "would be" if summary.get("dry_run") else "were"
    lines = []
    for section in ("templates", "components", "static_overrides", "context_configs"):
        result = summary.get(section) or {}
        parts = [
            f"{outcome} {', '.join(map(esc, result.get(outcome) or []))}"
            for outcome in ("created", "replaced")
            if result.get(outcome)
        ]
        unchanged = len(result.get("unchanged") or [])
        if unchanged:
            parts.append(f"{unchanged} unchanged")
        if parts:
            lines.append(f"  {section}: " + "; ".join(parts))
    fewshots = summary.get("fewshot_examples") or {}
    if fewshots.get("added") or fewshots.get("removed"):
        lines.append(
            f"  few-shot examples: {fewshots.get('added', 0)} added, "
            f"{fewshots.get('removed', 0)} removed"
        )
    if not summary.get("changed"):
        return (
            "Nothing "
            + ("would change" if summary.get("dry_run") else "changed")
            + (": everything is already as given.\n" + "\n".join(lines) if lines else ".")
        )
    return f"These {verb} changed:\n" + "\n".join(lines)


class CmdAIRegistry(AICommand):
    """
    Export and import the prompt registry as JSON.

    Usage:
      airegistry/export [<file.json>]
      airegistry/import[/overwrite] <file.json or inline JSON>
      airegistry/dryrun[/overwrite] <file.json or inline JSON>

    Switches:
      export    - the whole registry (the game's templates, pluggable components,
                  static component changes, context customisations, few-shot
                  examples) as JSON: shown to you, or written to a file.
      import    - import an export. All or nothing: anything invalid or in conflict
                  is refused with the reason and nothing changes.
      dryrun    - check an import and show what it would change; changes nothing.
      overwrite - with import/dryrun: replace entries that differ instead of
                  refusing; with export: replace an existing file. Few-shot
                  examples are appended, or replace the list with /overwrite.

    Files are relative to the game directory and must stay inside it and end in
    .json. Inline JSON starts with '{'.

    Examples:
      airegistry/export
      airegistry/export server/prompts.json
      airegistry/dryrun server/prompts.json
      airegistry/import/overwrite server/prompts.json
      airegistry/import {"fewshot_examples": [{"user": "Hi", "assistant": "Welcome!"}]}
    """

    key = "airegistry"
    locks = DEVELOPER_LOCK
    switch_options = ("export", "import", "dryrun", "overwrite")

    def run(self):
        actions = [s for s in self.switches if s != "overwrite"]
        if len(actions) != 1:
            raise CommandError("Give one of /export, /import or /dryrun.\n" + self.usage())
        overwrite = "overwrite" in self.switches
        if actions[0] == "export":
            self.export(overwrite)
        else:
            self.import_(overwrite, dry_run=actions[0] == "dryrun")

    def export(self, overwrite: bool) -> None:
        text = registry().export_json()
        name = self.args.strip()
        if not name:
            self.msg(esc(text))
            return
        path = game_file(name)
        if os.path.exists(path) and not overwrite:
            raise CommandError(
                f"{shown_path(path)} exists; use |wairegistry/export/overwrite|n " "to replace it."
            )
        if not os.path.isdir(os.path.dirname(path)):
            raise CommandError(f"The folder of {shown_path(path)} does not exist.")
        temporary = path + ".tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(temporary, path)
        except OSError as err:
            raise CommandError(
                f"Could not write {shown_path(path)}: {esc(err.strerror)}."
            ) from None
        self.msg(f"Exported the prompt registry to {shown_path(path)} ({len(text):,} characters).")

    def read_source(self) -> tuple[str, str]:
        """(JSON text, where it came from) for an import."""
        source = self.require(self.args, "file name or inline JSON")
        if source.startswith("{"):
            return source, "inline JSON"
        path = game_file(source)
        try:
            size = os.path.getsize(path)
            if size > MAX_IMPORT_BYTES:
                raise CommandError(
                    f"{shown_path(path)} is too big ({size:,} bytes; "
                    f"at most {MAX_IMPORT_BYTES:,})."
                )
            with open(path, encoding="utf-8") as handle:
                return handle.read(), shown_path(path)
        except FileNotFoundError:
            raise CommandError(f"No file {shown_path(path)} in the game directory.") from None
        except UnicodeDecodeError:
            raise CommandError(f"{shown_path(path)} is not UTF-8 text.") from None
        except OSError as err:
            raise CommandError(f"Could not read {shown_path(path)}: {esc(err.strerror)}.") from None

    def import_(self, overwrite: bool, dry_run: bool) -> None:
        text, origin = self.read_source()
        try:
            summary = registry().import_json(text, overwrite=overwrite, dry_run=dry_run)
        except ValueError as err:
            raise CommandError(f"Import of {origin} refused, nothing changed: {esc(err)}") from None
        head = f"Dry run of {origin} (nothing was changed). " if dry_run else f"Imported {origin}. "
        self.msg(head + render_import_summary(summary))


# -- aicontext -----------------------------------------------------------------------------------
ASSESSMENT_FIELDS = (
    "recommended_iterations",
    "recommended_mode",
    "recommend_confirm_dangerous",
    "context_signals",
)


def check_context_fields(fields: dict) -> None:
    """Refuse fields a context customisation cannot set, saying where they belong."""

    problems = []
    for name in fields:
        if name in CUSTOMIZABLE_FIELDS or name == "context_type":
            continue
        shown = esc(str(name)[:40])
        if name in DEFAULT_EXECUTION_CONFIG or name == "allowed_tool_categories":
            problems.append(
                f"'{shown}' is one of an NPC's own static limits: set it with "
                "|waiexec/set <npc> = {shown}=<value>|n."
            )
        elif name in ASSESSMENT_FIELDS:
            problems.append(f"'{shown}' is advice a model gives during a tick, not a setting.")
        else:
            problems.append(f"'{shown}' is not a context setting.")
    if problems:
        raise CommandError(
            " ".join(problems) + " Editable: " + ", ".join(CUSTOMIZABLE_FIELDS) + "."
        )


class CmdAIContext(SwitchedCommand):
    """
    Show and customise the seven context types an AI NPC's model is called in.

    Usage:
      aicontext/list
      aicontext/show <context type>
      aicontext/edit <context type> = <json object of fields>
      aicontext/reset <context type> [= <field>, <field>, ...]

    Switches:
      list  - every context type and the fields the game customised.
      show  - a context type's effective settings (* marks customised ones).
      edit  - change settings; the fields given are merged into the stored
              customisation. Fields: name, description, enabled_components (IDs),
              component_overrides ({"<component key>": {"content": text}} or
              null to drop one), tool_filter (names, [] none, null all),
              token_budget, execution_mode (single_action, react_loop,
              plan_execute), max_iterations (1-10), allowed_tool_categories,
              terminal_ends_loop, dangerous_requires_confirm, allows_multi_tool,
              allows_sub_agents.
      reset - drop the customisation (or only the fields named): back to defaults.

    Each NPC's own limits (aiexec) still apply on top: a context setting can
    never let an NPC do more than its execution config allows. A change that
    would leave out what the context's requests must carry (tick_event's
    pending_event 6000, tick_autonomous's goals 4000, reflection_cont's
    tool_result 7000, or their {placeholder}) is refused. The operator's section
    is not a component: no context leaves it out.

    Context types: tick_event, tick_autonomous, reflection, reflection_cont,
    sleep_consolidate, goal_decompose, pre_compaction.

    Examples:
      aicontext/show reflection
      aicontext/edit tick_event = {"max_iterations": 3, "allows_sub_agents": false}
      aicontext/edit reflection = {"tool_filter": ["noop", "add_journal_entry"]}
      aicontext/reset tick_event = max_iterations
    """

    key = "aicontext"
    aliases = ["aicontexts"]
    locks = DEVELOPER_LOCK
    switch_options = ("list", "show", "edit", "reset")

    def do_default(self):
        self.do_show()

    def do_list(self):
        customised = registry().list_context_customizations()
        table = self.table("Context type", "Mode", "Iterations", "Customised", keep=(0,))
        reg = registry()
        for context_type in CONTEXT_TYPES:
            try:
                config = reg.get_effective_context_config(context_type)
                mode, iterations = config.execution_mode, config.max_iterations
            except ValueError:
                mode, iterations = "|r(invalid)|n", "-"
            fields = ", ".join(sorted(customised.get(context_type) or {})) or "-"
            table.add_row(context_type, mode, iterations, esc(fields))
        self.msg(f"|wContext types|n:\n{table}")

    def do_show(self):
        context_type = context_type_of(self.require(self.args, "context type"))
        reg = registry()
        customisation = reg.get_context_customization(context_type)
        try:
            config = reg.get_effective_context_config(context_type)
        except ValueError as err:
            raise CommandError(
                f"{esc(err)}\nStored customisation: "
                f"{esc(json.dumps(customisation, default=str))}. "
                f"|waicontext/reset {context_type}|n clears it."
            ) from None
        lines = [f"|wContext {context_type}|n: {esc(config.name)} - {esc(config.description)}"]
        for field in dataclass_fields(config):
            if field.name in ("context_type", "name", "description"):
                continue
            mark = "*" if field.name in customisation else " "
            value = json.dumps(getattr(config, field.name), ensure_ascii=False, default=str)
            if len(value) > 300:
                value = value[:297] + "..."
            lines.append(f" {mark} {field.name}: {esc(value)}")
        if customisation:
            lines.append("(* customised; |waicontext/reset|n restores the default)")
        self.msg("\n".join(lines))

    def do_edit(self):
        if self.rhs is None:
            raise CommandError("Give the fields as a JSON object after '='.\n" + self.usage())
        context_type = context_type_of(self.require(self.lhs, "context type"))
        # The JSON itself may hold '=': take everything after the first one.
        text = self.args.split("=", 1)[1].strip()
        fields = json_object(self.require(text, "JSON object of fields"), "Context fields")
        if fields is None:
            raise CommandError('Give the fields as a JSON object, e.g. {"max_iterations": 3}.')
        if not fields:
            raise CommandError("The JSON object names no field to change.")
        check_context_fields(fields)
        with registry_errors():
            config = registry().set_context_customization(context_type, **fields)
        self.msg(
            f"Context {context_type} updated ({', '.join(map(esc, fields))}); "
            f"now {config.execution_mode}, at most {config.max_iterations} iteration(s)."
        )

    def do_reset(self):
        context_type = context_type_of(self.require(self.lhs, "context type"))
        names = [n.strip() for n in (self.rhs or "").replace(",", " ").split() if n.strip()]
        with registry_errors():
            removed = registry().clear_context_customization(context_type, *names)
        if not removed:
            what = ", ".join(map(esc, names)) if names else "anything"
            self.msg(f"Context {context_type} had no customisation of {what}.")
        else:
            what = ", ".join(map(esc, names)) if names else "every field"
            self.msg(f"Context {context_type}: {what} back to the default.")


# -- aiexec --------------------------------------------------------------------------------------
def parse_exec_values(text: str) -> dict[str, str]:
    """``"max_iterations_per_tick=3 sub_agents_enabled=on"`` -> a dict of the raw values.

    Raises:
        CommandError: A token without ``=``, an unknown key or a key given twice.
    """

    known = tuple(DEFAULT_EXECUTION_CONFIG) + ("allowed_tool_categories",)
    values: dict[str, str] = {}
    for token in (text or "").split():
        key, sep, value = token.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise CommandError(
                f"Give key=value pairs, not '{esc(token[:60])}'. " f"Keys: {', '.join(known)}."
            )
        if key not in known:
            raise CommandError(
                f"Unknown execution setting '{esc(key[:60])}'. " f"Keys: {', '.join(known)}."
            )
        if key in values:
            raise CommandError(f"{key} is given twice.")
        values[key] = value.strip()
    if not values:
        raise CommandError(f"Give key=value pairs. Keys: {', '.join(known)}.")
    return values


def parse_categories(text: str) -> list[str] | None:
    """``"all"`` -> None; ``"SAFE_CHAIN,TERMINAL"`` -> the categories (validated)."""

    if text.strip().lower() in ("all", "none", "default"):
        return None
    categories = [c.strip().upper() for c in text.split(",") if c.strip()]
    unknown = [c for c in categories if c not in ALL_TOOL_CATEGORIES]
    if unknown or not categories:
        raise CommandError(
            f"allowed_tool_categories takes 'all' or a comma-separated list of "
            f"{', '.join(ALL_TOOL_CATEGORIES)}; not {esc(text[:60])}."
        )
    return categories


class CmdAIExec(AICommand):
    """
    Show or set an AI NPC's execution config: its own static limits.

    Usage:
      aiexec <npc>
      aiexec/set <npc> = <key>=<value> [<key>=<value> ...]

    Switches:
      set - change settings (one write; nothing changes if any value is bad):
              multi_action_enabled     on/off: may it chain tool calls in a tick
              max_iterations_per_tick  1-10: most model calls per tick
              task_assessment_enabled  on/off: ask the model how complex a task is
              sub_agents_enabled       on/off: may it delegate to helpers
              sub_agent_budget         0-10: most helpers at once
              allowed_tool_categories  all, or a comma-separated list of SAFE_CHAIN,
                                       ASYNC_REQUIRED, TERMINAL, DANGEROUS

    Without a switch, shows the settings and, for each context type, the pattern
    they compose to with the context's own settings (aicontext): the NPC's limits
    always win, no context can widen them.

    Examples:
      aiexec Innkeeper
      aiexec/set Innkeeper = max_iterations_per_tick=3 sub_agents_enabled=off
      aiexec/set Innkeeper = allowed_tool_categories=SAFE_CHAIN,TERMINAL
    """

    key = "aiexec"
    locks = DEVELOPER_LOCK
    switch_options = ("set",)

    def run(self):
        if self.switch() == "set":
            self.do_set()
        else:
            self.show(self.find_npc(self.args))

    def show(self, npc) -> None:
        config = npc.ai.execution_config
        lines = [f"|wExecution config of {npc.key}|n (static limits):"]
        for key, value in config.items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            elif value is None:
                value = "all"
            elif isinstance(value, (list, tuple)):
                value = ", ".join(value) or "none"
            lines.append(f"  {key}: {value}")
        if "allowed_tool_categories" not in config:
            lines.append("  allowed_tool_categories: all")
        table = self.table(
            "Context type",
            "Mode",
            "Iterations",
            "Multi-tool",
            "Sub-agents",
            "Confirm DANGEROUS",
            keep=(0,),
        )
        for context_type in CONTEXT_TYPES:
            pattern = select_execution_pattern(config, effective_context_config(context_type))
            table.add_row(
                context_type,
                pattern.mode,
                pattern.max_iterations,
                yes_no(pattern.multi_tool_enabled),
                yes_no(pattern.sub_agents_enabled),
                yes_no(pattern.dangerous_requires_confirm),
            )
        lines.append(f"Composed with each context (before per-tick signals):\n{table}")
        self.msg("\n".join(lines))

    def do_set(self):
        if self.rhs is None:
            raise CommandError("Give key=value pairs after '='.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        values = parse_exec_values(self.rhs)
        categories = values.pop("allowed_tool_categories", None)
        parsed = parse_categories(categories) if categories is not None else None
        if values:
            try:
                npc.ai.set_execution_config(**values)
            except ValueError as err:
                raise CommandError(f"{esc(err)} Nothing was changed.") from None
        if categories is not None:
            npc.ai.set_allowed_tool_categories(parsed)
        changed = ", ".join(list(values) + (["allowed_tool_categories"] if categories else []))
        self.msg(f"{npc.key}'s execution config updated ({changed}).")
        self.show(npc)


# -- aifewshot -----------------------------------------------------------------------------------
class CmdAIFewshot(SwitchedCommand):
    """
    Manage the example exchanges every AI NPC is shown (few-shot examples).

    Usage:
      aifewshot/list [<context type>]
      aifewshot/add <player text> || <NPC answer>
      aifewshot/add {"user": "<player text>", "assistant": "<NPC answer>"}
      aifewshot/delete <number>
      aifewshot/clear

    Switches:
      list   - the examples, numbered. With a context type, also whether that
               context shows them (they go with the system prompt).
      add    - add an example pair: what a player says, and how an NPC answers.
      delete - delete the example with that number (from /list).
      clear  - delete every example.

    The examples are shared by every NPC and every context type whose system
    prompt is assembled, after the NPC's instructions. At most 15 are kept: each
    one costs tokens on every tick.

    Examples:
      aifewshot/list
      aifewshot/add What do you sell? || Ale, bread and a warm bed, friend.
      aifewshot/delete 2
    """

    key = "aifewshot"
    aliases = ["aifewshots"]
    locks = BUILDER_LOCK
    switch_options = ("list", "add", "delete", "clear")

    def do_default(self):
        raise CommandError("Give a switch, e.g. |waifewshot/list|n.\n" + self.usage())

    def do_list(self):
        note = ""
        if self.args.strip():
            context_type = context_type_of(self.args)
            with registry_errors():
                config = registry().get_effective_context_config(context_type)
            system = registry().get_component(0)
            shown = 0 in config.enabled_components and system.enabled
            note = (
                f"\nContext {context_type} "
                + ("shows" if shown else "does |rnot|n show")
                + " them (they go with the system prompt)."
            )
        examples = registry().list_fewshot_examples()
        if not examples:
            self.msg(
                "No few-shot examples. |waifewshot/add <player text> || <NPC answer>|n "
                "adds one." + note
            )
            return
        lines = [f"|wFew-shot examples|n ({len(examples)} of at most {MAX_FEWSHOT_EXAMPLES}):"]
        for number, example in enumerate(examples, start=1):
            lines.append(f"  {number}. Player: {esc(example.get('user'))}")
            lines.append(f"     NPC: {esc(example.get('assistant'))}")
        self.msg("\n".join(lines) + note)

    def do_add(self):
        text = self.require(self.args, "example pair")
        head = text.split("=", 1)[0].strip() if "=" in text else ""
        if head and is_context_type(head):
            raise CommandError(
                "Few-shot examples are shared by every context type that shows the system "
                f"prompt; drop '{head} =' and give <player text> || <NPC answer>."
            )
        data = json_object(text, "Few-shot JSON")
        if data is None:
            user, sep, assistant = partition_bar(text)
            if not sep:
                raise CommandError("Separate the player's text from the NPC's answer with '||'.")
            data = {"user": user.strip(), "assistant": assistant.strip()}
        unknown = [str(k)[:40] for k in data if k not in ("user", "assistant")]
        if unknown or "user" not in data or "assistant" not in data:
            raise CommandError('Give the example as {"user": "...", "assistant": "..."}.')
        with registry_errors():
            index = registry().add_fewshot_example(data["user"], data["assistant"])
        self.msg(f"Added few-shot example {index + 1}.")

    def do_delete(self):
        examples = registry().list_fewshot_examples()
        if not examples:
            raise CommandError("There are no few-shot examples.")
        number = self.parse_int(
            self.require(self.args, "example number"), "The example number", 1, len(examples)
        )
        with registry_errors():
            removed = registry().remove_fewshot_example(number - 1)
        self.msg(f"Deleted few-shot example {number} ({preview(removed.get('user', ''), 40)}).")

    def do_clear(self):
        count = registry().clear_fewshot_examples()
        self.msg(f"Deleted {pluralise(count, 'few-shot example')}.")


COMMANDS = [CmdAIPrompt, CmdAITemplate, CmdAIRegistry, CmdAIContext, CmdAIExec, CmdAIFewshot]
