"""The prompt commands that configure how a context type or an NPC is prompted: ``aicontext``
(context configs), ``aiexec`` (an NPC's execution config) and ``aifewshot`` (the operator's
few-shot examples). Re-exported by :mod:`evennia_ai.commands.prompts`.
"""

from __future__ import annotations

import json
from dataclasses import fields as dataclass_fields

from evennia_ai.commands.base import (
    BUILDER_LOCK,
    DEVELOPER_LOCK,
    AICommand,
    CommandError,
    SwitchedCommand,
    partition_bar,
)
from evennia_ai.commands.prompt_common import (
    context_type_of,
    esc,
    is_context_type,
    json_object,
    pluralise,
    preview,
    registry,
    registry_errors,
    yes_no,
)
from evennia_ai.prompt.contexts import CONTEXT_TYPES, CUSTOMIZABLE_FIELDS
from evennia_ai.prompt.execution_pattern import (
    ALL_TOOL_CATEGORIES,
    DEFAULT_EXECUTION_CONFIG,
    select_execution_pattern,
)
from evennia_ai.prompt.registry import effective_context_config
from evennia_ai.prompt.registry_io import MAX_FEWSHOT_EXAMPLES

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
          stream_replies           on/off: show its replies sentence by sentence
                                   (with EVENNIA_AI_STREAM_REPLIES on)
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
            "Max steps",  # short words, so the table wraps between them at 80 columns
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
