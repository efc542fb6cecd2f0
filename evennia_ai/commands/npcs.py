"""Admin commands managing AI NPCs: ``ainpc`` (create, control, configure) and ``aistatus``."""

from __future__ import annotations

import unicodedata

from evennia.utils.ansi import raw, strip_ansi

from evennia_ai import access, conf
from evennia_ai.commands.base import AICommand, CommandError, plain_value
from evennia_ai.engine.trace import TickTrace
from evennia_ai.formatting import count
from evennia_ai.formatting import money as format_money
from evennia_ai.formatting import timestamp
from evennia_ai.llm import tokens
from evennia_ai.npc import controls, spending, world_controls
from evennia_ai.npc.handler import describe_last_error
from evennia_ai.npc.lookup import all_ai_npcs
from evennia_ai.npc.setting_sources import (
    budget_origins,
    limit_text,
    model_origin,
    origin_text,
    origin_value,
    setting_sources,
)
from evennia_ai.npc.spending import FROM_NPC
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.utils import one_line

# Locks of a created NPC: nobody but Developers puppets it; its creator may edit and delete it.
NPC_LOCKS = "puppet:perm(Developer);delete:{pid}perm(Admin);edit:{pid}perm(Admin)"


# -- shared helpers (also used by the runtime commands and tests) ---------------------------------
def _tokens_today(status: dict) -> int:
    return int((status.get("budget") or {}).get("npc_tokens", 0))


def _where(npc) -> str:
    location = npc.location
    return f"{location.key}({location.dbref})" if location else "(nowhere)"


def name_problem(name: str) -> str:
    """Why ``name`` cannot name an NPC (or alias), or "" when it can.

    Refused: names with control characters, longer than 80 characters, with nothing left once
    Evennia's colour codes are removed, or starting with ``#``: ``#5`` reads as a dbref, which
    every search takes for object #5 rather than the NPC.
    """
    if any(unicodedata.category(char)[0] == "C" for char in name):
        return f"A name cannot hold control or unassigned characters: {name!r}."
    if len(name) > 80:
        return "A name can be at most 80 characters long."
    if not strip_ansi(name).strip():
        return f"A name needs letters or digits, not only colour codes: {raw(name)!r}."
    if name.startswith("#"):
        return (
            f"A name cannot start with #: '{raw(name)}' reads as a dbref (an object's #number), "
            "so searches would not find the NPC by it."
        )
    return ""


# -- ainpc --------------------------------------------------------------------------------------
class CmdAINpc(AICommand):
    """
    Manage AI NPCs: list, create, delete, start, stop and configure them.

    Usage:
      ainpc/list
      ainpc/create <name>[;alias;alias...] [= <model>]
      ainpc/delete <npc>
      ainpc/start <npc>
      ainpc/stop <npc>
      ainpc/pause <npc>
      ainpc/resume <npc>
      ainpc/model <npc> = <model>
      ainpc/persona <npc> = <text>
      ainpc/host <npc> [= on||off]
      ainpc/prompt <npc> = <operator prompt text>
      ainpc/budget <npc>
      ainpc/budget <npc> = [tokens=<count>] [cost=<dollars>]
      ainpc/budget <npc> = none

    Switches:
      list    - every AI NPC (a room's host marked "(host)", an NPC with goods
                "(shop)") with its location, model, state (running, paused,
                stopped or asleep; while it cannot answer, why: model
                unreachable since 10:42 UTC, held, over budget; what its
                routine is doing), queued events, tokens used today and budget.
      create  - create an AI assistant in your location; the model is optional
                (empty: the server default, EVENNIA_AI_MODEL; Builders may name
                only a model of EVENNIA_AI_BUILDER_MODELS).
      delete  - delete an AI NPC and stop its script (AI NPCs only, no undo;
                needs the NPC's delete lock: its creator or an Admin).
      start   - enable the NPC and start its script.
      stop    - disable the NPC and stop its script (its state is kept).
      pause   - stop ticking; events it perceives stay queued.
      resume  - tick again and answer what was queued meanwhile.
      model   - set the NPC's model ("default" or empty: the server default).
                The model sets what the NPC spends: Builders choose only among
                EVENNIA_AI_BUILDER_MODELS ("default" if listed), any other
                choice is Developer only.
      persona - set the NPC's persona (who it is, how it speaks).
      host    - whether the NPC is the host of the room it is in (on/off,
                yes/no, true/false; without '=', show it). In a room with several
                AI NPCs, a line that names none of them goes to the one the
                speaker talked with last, else to the host, else to one picked
                for that speaker (EVENNIA_AI_ROOM_ANSWERERS says how many).
      prompt  - set the operator's system prompt, which takes precedence over the
                NPC's own guidelines and no tool can change (Developer only).
      budget  - the NPC's own daily limits (tokens, cost in dollars), today's use
                and every limit in force; with '=', set them (Developer only).
                Tokens: 20000 or 20k; cost: 0.50 or $2; none removes a limit,
                "= none" both. They only tighten the server's per-NPC limits
                (EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC and
                EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC): a looser one is kept, but
                the server's applies.

    Examples:
      ainpc/list
      ainpc/create Marta;keeper;barkeep = openai/gpt-4o-mini
      ainpc/pause Marta
      ainpc/model Marta = anthropic/claude-3-5-haiku-latest
      ainpc/persona Marta = A warm innkeeper who knows every rumour in town.
      ainpc/host Marta = on
      ainpc/prompt Marta = Never reveal other guests' private business.
      ainpc/budget Marta = tokens=50k cost=0.25
      ainpc/budget Marta = cost=none
      ainpc/delete #42
    """

    key = "ainpc"
    aliases = ["ainpcs"]
    switch_options = (
        "list",
        "create",
        "delete",
        "start",
        "stop",
        "pause",
        "resume",
        "model",
        "persona",
        "host",
        "prompt",
        "budget",
    )

    def run(self):
        switch = self.switch()
        if switch is None:
            raise CommandError("Give a switch, e.g. |wainpc/list|n.\n" + self.usage())
        getattr(self, f"do_{switch}")()

    # -- listing -------------------------------------------------------------------------------
    def do_list(self):
        npcs = all_ai_npcs()
        if not npcs:
            self.msg("No AI NPCs yet. |wainpc/create <name>|n makes one.")
            return
        table = self.table("NPC", "Location", "Model", "State", "Queued", "Today", keep=(0,))
        warnings: list[str] = []
        failing: list[str] = []
        silent: list[str] = []
        for npc in npcs:
            status = npc.ai.status()
            routine = world_controls.routine_state(npc, brief=True)
            table.add_row(
                f"{npc.key}({npc.dbref})"
                + (" (host)" if npc.ai.host else "")
                + (" (shop)" if world_controls.is_shop(npc) else ""),
                _where(npc),
                status["model"],
                status["state_label"] + (f"; routine: {routine}" if routine else ""),
                status["queued_events"],
                f"{count(_tokens_today(status))} tokens, {status['budget_state']}",
            )
            warnings += [f"{npc.key}: {w}" for w in status["warnings"]]
            silent += [f"{npc.key}: {reason['detail']}" for reason in status["not_answering"]]
            if status["last_error_current"]:
                failing.append(f"{npc.key}: {describe_last_error(status)}")
        text = f"AI NPCs ({len(npcs)}):\n{table}"
        if warnings:
            text += "\n" + "\n".join(f"|ywarning|n: {raw(w)}" for w in warnings)
        if silent:
            text += "\n" + "\n".join(f"|rnot answering|n: {raw(line)}" for line in silent)
        if failing:
            text += "\n" + "\n".join(f"|rfailing|n: {raw(line)}" for line in failing)
        self.msg(text)

    # -- creation and deletion -----------------------------------------------------------------
    def do_create(self):
        caller = self.caller
        names = [part.strip() for part in self.require(self.lhs, "NPC name").split(";")]
        key, aliases = names[0], [alias for alias in names[1:] if alias]
        if not key:
            raise CommandError("The NPC needs a name before any ';aliases'.")
        for name in names:
            problem = name_problem(name)
            if problem:
                raise CommandError(problem)
        self.require_perm(access.OPERATE, "create AI NPCs")
        location = caller.location
        if location is None:
            raise CommandError("You are nowhere; stand in a room to create an NPC there.")
        if any(npc.key.lower() == key.lower() for npc in all_ai_npcs()):
            raise CommandError(f"An AI NPC called '{key}' already exists; choose another name.")
        model = (self.rhs or "").strip()
        if model and " " in model:
            raise CommandError(f"A model name has no spaces: {model!r}.")
        if access.model_choice(model) == access.SERVER_DEFAULT:
            model = ""  # "default": the server's model, as ainpc/model reads it
        if model:
            self.require_model(model)
        account = getattr(caller, "account", None)
        pid = f"pid({account.id}) or " if account else ""
        npc, errors = AIAssistantCharacter.create(
            key,
            account=None,
            caller=caller,
            location=location,
            home=location,
            aliases=aliases,
            locks=NPC_LOCKS.format(pid=pid),
        )
        if errors or npc is None:
            raise CommandError("Could not create the NPC: " + "; ".join(map(str, errors)))
        if model:
            npc.ai.set_model(model)
        alias_text = f" (aliases: {', '.join(aliases)})" if aliases else ""
        self.msg(
            f"Created AI NPC {npc.key}({npc.dbref}){alias_text} in {location.key}, model "
            f"{npc.ai.status()['model']}. Give it a persona with "
            f"|wainpc/persona {npc.key} = <text>|n."
        )

    def do_delete(self):
        npc = self.find_npc(self.args)
        if not npc.access(self.caller, "delete"):
            raise CommandError(f"You may not delete {npc.key}({npc.dbref}).")
        name = f"{npc.key}({npc.dbref})"
        script = npc.ai.script
        if script is not None:
            script.stop()
            script.delete()
        npc.delete()
        self.msg(f"Deleted AI NPC {name} and stopped its script.")

    # -- control -------------------------------------------------------------------------------
    def do_start(self):
        npc = self.find_npc(self.args)
        npc.ai.start()
        extra = " It is still paused: |wainpc/resume|n it." if npc.ai.paused else ""
        self.msg(f"{npc.key} is enabled and its script runs.{extra}")

    def do_stop(self):
        npc = self.find_npc(self.args)
        npc.ai.stop()
        self.msg(f"{npc.key} is stopped (state kept). |wainpc/start {npc.key}|n restarts it.")

    def do_pause(self):
        self.msg(raw(controls.pause(self.find_npc(self.args))))

    def do_resume(self):
        self.msg(raw(controls.resume(self.find_npc(self.args))))

    # -- configuration -------------------------------------------------------------------------
    def _npc_and_value(self, what: str, allow_empty: bool = False):
        if not self.rhs and "=" not in self.args:
            raise CommandError(f"Give the {what} after '='.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        value = (self.rhs or "").strip()
        if not value and not allow_empty:
            raise CommandError(f"Missing {what} after '='.")
        return npc, value

    def do_model(self):
        npc, model = self._npc_and_value("model", allow_empty=True)
        self.require_model(model)
        self.msg(raw(controls.set_model(npc, model)))

    def require_model(self, model: str) -> None:
        """Refuse a model the caller may not choose (see :func:`access.model_refusal`)."""
        problem = access.model_refusal(self.caller, model)
        if problem:
            raise CommandError(raw(problem))

    def do_persona(self):
        npc, text = self._npc_and_value("persona text")
        self.msg(raw(controls.set_persona(npc, text)))

    def do_host(self):
        if self.rhs is None and "=" not in self.args:
            self.msg(raw(controls.host_text(self.find_npc(self.args))))
            return
        npc, value = self._npc_and_value("on or off")
        self.msg(raw(controls.set_host(npc, value)))

    def do_prompt(self):
        self.require_perm(access.EDIT, "set an NPC's operator prompt")
        npc, text = self._npc_and_value("operator prompt", allow_empty=True)
        self.msg(raw(controls.set_operator_prompt(npc, text)))

    def do_budget(self):
        if self.rhs is None and "=" not in self.args:
            self.msg(budget_report(self.find_npc(self.args)))
            return
        self.require_perm(access.EDIT, "set an NPC's budget")
        npc, text = self._npc_and_value("limits (tokens=<count> cost=<dollars>, or none)")
        controls.set_budget(npc, text)
        self.msg(budget_report(npc, changed=True))


# -- budgets -----------------------------------------------------------------------------------
def budget_report(npc, changed: bool = False) -> str:
    """An NPC's own daily limits, today's use and every limit in force, with its source."""
    own = npc.ai.budget or {}
    status = npc.ai.spending_status()
    head = (
        f"{npc.key}'s own daily limits are now"
        if changed
        else f"|w{npc.key}({npc.dbref})|n own daily limits:"
    )
    lines = [
        f"{head} tokens {limit_text(own.get('tokens'))}, cost {limit_text(own.get('cost'), True)}.",
        f"  today: {count(status.npc_tokens)} tokens, {format_money(status.npc_cost)}; "
        f"{status.describe()}",
        "  in force (value - where it comes from):",
    ]
    origins = budget_origins(npc)  # this NPC's tokens and cost first, then the server's
    lines += [f"    {o.label}: {raw(origin_value(o))} - {origin_text(o)}" for o in origins]
    looser = [
        key
        for key, origin in zip(("tokens", "cost"), origins[:2])
        if own.get(key) is not None and origin.source != FROM_NPC
    ]
    if looser:
        lines.append(
            f"  |ynote|n: the server's per-NPC {' and '.join(looser)} limit is tighter and "
            "applies (an NPC's own budget only tightens the server's)."
        )
    return "\n".join(lines)


# -- aistatus -----------------------------------------------------------------------------------
class CmdAIStatus(AICommand):
    """
    Show the status of one AI NPC, or a summary of them all.

    Usage:
      aistatus
      aistatus <npc>
      aistatus/restore <npc> = <key>
      aistatus/discard <npc> = <key>

    Without an argument: one line per AI NPC, the server's default model and the
    token and cost totals. An NPC that cannot answer says why instead of
    "running": its model unreachable since a time (its endpoint failed
    EVENNIA_AI_OUTAGE_AFTER_FAILURES calls in a row; what players said meanwhile
    is answered when it is back), held, or over budget. With an NPC: whether it
    is enabled or paused, whether it hosts its room (ainpc/host), why it is not
    answering, what its routine is doing (airoutine) and whether its shop is
    open (aigoods), its model, tokens and cost (today and in total), budget
    state and limits, its last ticks, recent errors, sleep state and event
    queue, and where each setting it uses comes from: the NPC's own value, the
    environment, the settings file or the default. A changed environment
    variable applies after evennia reboot (a reload keeps the environment the
    server started with).

    A stored value that does not have the shape its key needs (an old layout,
    a hand edit) is kept aside. Meanwhile a key that restricts the NPC reads
    as its strictest safe value (a tool list: the conversation tools only; a
    budget: zero; the operator prompt: no model calls at all), any other key
    as its default; the report lists such values, and budget or security
    settings that cannot be read. The values of Developer-only keys (operator
    prompt, tool lists and rules, budget, execution config) are shown to
    Developers only. /restore puts one back once it fits (it says why not
    otherwise), /discard forgets it (the key then reads as its default).
    Keys held on the NPC's Script are named script.<key>.

    Examples:
      aistatus
      aistatus Marta
      aistatus/restore Marta = metrics
      aistatus/discard #42 = script.current_goals
    """

    key = "aistatus"
    switch_options = ("restore", "discard")
    needs_args = False

    def run(self):
        if self.switches:
            self.kept_aside(self.switch())
        elif self.args.strip():
            self.msg(self.npc_report(self.find_npc(self.args)))
        else:
            self.msg(self.server_report())

    def kept_aside(self, action: str) -> None:
        if self.rhs is None:
            raise CommandError("Missing '= <key>'.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        key = self.require(self.rhs, "key")
        if npc.ai.developer_only(key):  # the operator's word, tools, spending limits
            self.require_perm(access.EDIT, f"change an NPC's {key}")
        kept = npc.ai.quarantined()
        if key not in kept:
            listed = ", ".join(kept) or "none"
            raise CommandError(
                f"Nothing of '{raw(key)}' is kept aside for {npc.key} (kept: {listed})."
            )
        if action == "discard":
            npc.ai.discard(key)
            self.msg(f"{npc.key}: the value of '{key}' kept aside is forgotten.")
            return
        try:
            npc.ai.restore(key)
        except ValueError as err:
            raise CommandError(
                f"{npc.key}'s '{key}' still does not fit: {err}. Fix it in place (py) or "
                f"aistatus/discard {npc.key} = {key}."
            ) from None
        self.msg(f"{npc.key}: '{key}' is restored.")

    def server_report(self) -> str:
        npcs = all_ai_npcs()
        lines = [f"|wAI NPCs ({len(npcs)})|n"]
        for npc in npcs:
            status = npc.ai.status()
            lines.append(
                f"  {npc.key}({npc.dbref}) {status['state_label']} - {status['model']}, "
                f"{status['queued_events']} queued, {count(_tokens_today(status))} tokens today, "
                f"{status['ticks']} ticks, {status['errors']} errors, {status['budget_state']}"
            )
            for warning in status["warnings"]:
                lines.append(f"    |ywarning|n: {raw(warning)}")
        if not npcs:
            lines.append("  (none)")
        model = model_origin(None)
        lines.append(f"|wDefault model|n: {raw(origin_value(model))} - {origin_text(model)}")
        for name, problem in conf.unreadable_settings().items():
            lines.append(f"|yunreadable setting|n {name}: {raw(problem)}")
        totals = spending.server_totals()
        today = totals["today"]
        lines.append(
            f"|wServer|n: {totals['ticks']} ticks, "
            f"{count(totals['prompt_tokens'] + totals['completion_tokens'])} tokens "
            f"(prompt {count(totals['prompt_tokens'])}, "
            f"completion {count(totals['completion_tokens'])}), "
            f"cost {format_money(totals['cost'])} in total; today {count(today['tokens'])} tokens, "
            f"{format_money(today['cost'])}."
        )
        return "\n".join(lines)

    def npc_report(self, npc) -> str:
        status = npc.ai.status()
        b = status["budget"]
        sleep = status["sleep"]
        lines = [
            f"|w{npc.key}({npc.dbref})|n at {_where(npc)}: {status['state_label']}",
            f"  enabled: {status['enabled']}  paused: {status['paused']}  "
            f"script running: {status['running']}  host: {'yes' if npc.ai.host else 'no'}",
            f"  model: {status['model']}, window {count(status['window'])} tokens "
            f"({tokens.WINDOW_SOURCES.get(status['window_source'], status['window_source'])})",
            f"  tokens: today {count(b['npc_tokens'])} (cost {format_money(b['npc_cost'])}); "
            f"total prompt {count(status['prompt_tokens'])}, "
            f"completion {count(status['completion_tokens'])}, "
            f"cost {format_money(status['cost'])}",
            f"  budget: {status['budget_state']}; daily limits per NPC: tokens "
            f"{limit_text(b['npc_token_limit'])}, cost {limit_text(b['npc_cost_limit'], True)}; "
            f"server today {count(b['server_tokens'])} tokens (limit "
            f"{limit_text(b['server_token_limit'])}), {format_money(b['server_cost'])} (limit "
            f"{limit_text(b['server_cost_limit'], True)}); when over: "
            f"{spending.ACTION_MODES.get(b['action'], b['action'])}",
            f"  sleep: {'asleep' if status['asleep'] else 'awake'}"
            + (
                f" since {timestamp(sleep.get('since'))} ({sleep.get('reason')}, phase {sleep.get('phase')})"
                if status["asleep"]
                else ""
            ),
            f"  queue: {status['queued_events']} pending, {status['in_flight_events']} in flight, "
            f"{status['dropped_events']} dropped, {status['failed_events']} failed",
            f"  ticks: {status['ticks']}, errors: {status['errors']}, active goals: "
            f"{status['goals_active']}",
        ]
        lines += world_lines(npc)
        for warning in status["warnings"]:
            lines.append(f"  |ywarning|n: {raw(warning)}")
        if status["context_overflows"]:
            lines.append(
                f"  |ycontext overflow|n: {status['context_overflows']} tick(s) stopped unsent: "
                "the request did not fit the model's window (shorten the operator prompt or "
                "the override file, or give the NPC a model with a larger window)"
            )
        for reason in status["not_answering"]:
            lines.append(f"  |rnot answering|n: {raw(reason['detail'])}")
        developer = access.passes(self.caller, access.EDIT)
        for key, kept in npc.ai.quarantined(reveal=developer).items():
            value = (
                "shown to Developers only"
                if kept.get("redacted")
                else f"value {raw(plain_value(kept.get('value'), 120))}"
            )
            lines.append(
                f"  |ykept aside|n {key} ({timestamp(kept.get('time'))}): "
                f"{raw(str(kept.get('problem'))[:200])}; meanwhile {kept.get('in_force')}; "
                f"{value} (aistatus/restore or /discard {npc.key} = {key})"
            )
        for name, problem in status["unreadable_settings"].items():
            lines.append(f"  |yunreadable setting|n {name}: {raw(problem)}")
        lines.append("  settings in use (value - where it comes from):")
        for origin in setting_sources(npc):
            lines.append(f"    {origin.label}: {raw(origin_value(origin))} - {origin_text(origin)}")
        traces = [TickTrace.from_dict(t) for t in npc.ai.traces(last=5)]
        if traces:
            lines.append("  last ticks:")
            for trace in reversed(traces):
                lines.append(
                    f"    #{trace.tick_id} {timestamp(trace.started)} {trace.context_type or '-'} "
                    f"{trace.stop_reason or '-'} "
                    f"{count(trace.prompt_tokens + trace.completion_tokens)} tokens"
                )
        last_error = describe_last_error(status)
        if last_error:
            colour = "|r" if status["last_error_current"] else ""
            lines.append(f"  last error: {colour}{raw(last_error)}|n")
        # the last error is shown once: its tick is not listed again among the recent ones
        errors = [t for t in traces if t.error and not _is_last_error(t, status)]
        if errors:
            lines.append("  errors in the last ticks:")
            for trace in errors[-3:]:
                lines.append(
                    f"    #{trace.tick_id} {timestamp(trace.started)}: {raw(one_line(trace.error))}"
                )
        return "\n".join(lines)


def world_lines(npc) -> list[str]:
    """``aistatus``'s lines on ``npc``'s routine and shop (none for an NPC with neither)."""
    lines = []
    routine = world_controls.routine_state(npc)
    if routine:
        lines.append(f"  routine: {raw(routine)} (airoutine {npc.key})")
    if world_controls.is_shop(npc):
        closed = world_controls.goods_of(npc).closed
        is_open, why = world_controls.shop_hours(npc)
        state = (
            "closed: its rules cannot be read"
            if closed
            else "open" if is_open else f"not trading now: {why}"
        )
        lines.append(f"  shop: {raw(state)} (aigoods {npc.key})")
    return lines


def _is_last_error(trace: TickTrace, status: dict) -> bool:
    """Whether ``trace`` is the tick whose error ``status`` reports as the NPC's last error
    (by its tick, or by its text when the tick was not recorded)."""
    tick = status.get("last_error_tick")
    if tick is not None:
        return trace.tick_id == tick
    return str(trace.error) == str(status.get("last_error") or "")


COMMANDS = [CmdAINpc, CmdAIStatus]
