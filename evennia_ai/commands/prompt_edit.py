"""The prompt commands that edit the registry's components and templates: ``aiprompt`` (with
``aiprompt/show``, the request of a context type or of one NPC's tick, built without calling the
model) and ``aitemplate``. Re-exported by :mod:`evennia_ai.commands.prompts`.
"""

from __future__ import annotations

import json

from evennia_ai.commands.base import (
    DEVELOPER_LOCK,
    CommandError,
    SwitchedCommand,
    partition_bar,
)
from evennia_ai.commands.prompt_common import (
    component_id_of,
    context_type_of,
    esc,
    indent,
    is_context_type,
    json_object,
    key_from_name,
    pluralise,
    preview,
    registry,
    registry_errors,
    static_id_of,
    yes_no,
)
from evennia_ai.engine.tick import TickState, prepare
from evennia_ai.memory import events as ev
from evennia_ai.prompt.assembly import is_component_enabled, select_components


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
                assembles. With "= <npc>", the request that NPC's next tick of
                that type would send (built like a tick, sources included; no
                model call).
      add     - add a pluggable component after a static one (0, 1000, 1500,
                2000, ... 7000, or its key); it takes the next free ID. The key is
                made from the name; JSON gives every field: key, name, content,
                description, role (system, user, assistant, tool, mixed),
                enabled.
      edit    - replace a component's content (static ones too: 0 is the system
                prompt; keep its {placeholder} to keep what the game fills in).
      move    - move a pluggable component after another static component.
      enable  - include a component in assembly again.
      disable - leave a component out of every context (static ones too).
                Refused for a component a kind of call needs (6000 carries
                tick_event's event, 4000 tick_autonomous's goals, 7000
                reflection_cont's results), as is an edit that drops its
                {placeholder}.
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
      aiprompt/add character_context = {"name": "Lore", "content": "An old town."}
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
        reply, name = self.msg, npc.key

        def done(built):
            reply(render_built(name, context_type, built, len(batch)))

        def failed(failure):
            reply(
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
