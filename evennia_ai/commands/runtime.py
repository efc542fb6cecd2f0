"""Admin commands for what AI NPCs do at runtime: tools, sleep, traces, confirmations, interact."""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta

from evennia.utils import logger
from evennia.utils.ansi import raw
from evennia.utils.utils import delay

from evennia_ai import access, conf, screen
from evennia_ai.commands.base import AICommand, CommandError, parse_switch
from evennia_ai.commands.tables import literal_cell
from evennia_ai.engine.redaction import traces_shown_to
from evennia_ai.engine.trace import TickTrace, ToolCallTrace
from evennia_ai.formatting import (
    action_arguments,
    ago,
    arguments_text,
    count,
    decision_text,
    duration,
    money,
    step_label,
    timestamp,
    tool_outcome,
)
from evennia_ai.memory.events import Event
from evennia_ai.npc import controls
from evennia_ai.npc_state import REFLECTION, SLEEP
from evennia_ai.tools.approvals import ConfirmationError, get_confirmation_queue
from evennia_ai.utils import iso_utc, one_line, utcnow
from evennia_ai.workspace.sleep import SLEEP_PHASES, go_to_sleep, in_sleep_window, wake_up

BAR_WIDTH = 24
EVENT_CHARS = 50  # of the event, in a tick's one-line summary
INTERACT_POLL_SECONDS = 2.0
INTERACT_WAIT_SECONDS = 120.0


# -- trace rendering (shared by aitrace and interact) ----------------------------------------------
def trace_line(trace: TickTrace) -> str:
    """One line for a tick: id, time, event, stop reason, steps, tokens, cost, duration."""
    event = one_line(trace.event_text or trace.context_type or "-", EVENT_CHARS)
    return (
        f"#{trace.tick_id} {timestamp(trace.started)} {trace.context_type or '-'} "
        f"[{raw(event)}] {trace.stop_reason or '-'}, {len(trace.iterations)} step(s), "
        f"{count(trace.prompt_tokens + trace.completion_tokens)} tokens, {money(trace.cost)}, "
        f"{duration(trace.duration)}"
    )


def tool_call_line(call: ToolCallTrace, result_limit: int = 200) -> str:
    """A tool call and what came of it, in words: ``tool look(target: Bob) -> ran: ...``."""
    arguments = arguments_text(call.arguments, 120) if call.arguments else ""
    outcome = one_line(call.error or call.result or "", result_limit)
    what = tool_outcome(call.status, call.success)
    return f"tool {raw(call.name)}({raw(arguments)}) -> {what}" + (
        f": {raw(outcome)}" if outcome else ""
    )


def trace_steps(trace: TickTrace, result_limit: int = 200) -> list[str]:
    """The steps of a tick: each model call's thought, its tool calls and their results."""
    lines = []
    for it in trace.iterations:
        usage = it.usage or {}
        lines.append(
            f"|w{step_label(it.index, it.kind)}|n ({it.kind}, {it.model or '?'}, "
            f"{count(usage.get('prompt_tokens'))}+{count(usage.get('completion_tokens'))}"
            f" tokens, {duration(it.latency)})"
        )
        if it.text:
            lines.append(f"  thought: {raw(one_line(it.text, 400))}")
        for call in it.tool_calls:
            lines.append("  " + tool_call_line(call, result_limit))
        if it.error:
            lines.append(f"  |rerror: {raw(one_line(it.error, 300))}|n")
    return lines


def section_table(sections: dict) -> list[str]:
    """Tokens per context section as rows with bars, largest first."""
    if not sections:
        return ["  (no section counts recorded)"]
    total = sum(int(v or 0) for v in sections.values()) or 1
    widest = max(int(v or 0) for v in sections.values()) or 1
    name_width = max(len(str(name)) for name in sections)
    rows = []
    for name, tokens in sorted(sections.items(), key=lambda kv: -int(kv[1] or 0)):
        tokens = int(tokens or 0)
        bar = "#" * max(1 if tokens else 0, round(BAR_WIDTH * tokens / widest))
        rows.append(f"  {str(name):<{name_width}} {tokens:>7,} {100 * tokens / total:5.1f}% {bar}")
    rows.append(f"  {'total':<{name_width}} {total:>7,}")
    return rows


def trace_detail(trace: TickTrace) -> str:
    """A tick in full: event, notes, pattern, steps, tokens per section, budget and errors."""
    pattern = trace.pattern or {}
    lines = [
        f"|wTick #{trace.tick_id}|n ({trace.context_type or '-'}) started "
        f"{timestamp(trace.started)}, ended {timestamp(trace.ended)}, {duration(trace.duration)}",
        f"stop reason: {trace.stop_reason or '-'}; tokens {count(trace.prompt_tokens)} prompt + "
        f"{count(trace.completion_tokens)} completion; cost {money(trace.cost)}",
    ]
    if pattern:
        lines.append(
            f"pattern: {pattern.get('mode', '?')}, max {pattern.get('max_iterations', '?')} "
            f"iterations, categories {pattern.get('allowed_categories') or 'all'}"
        )
    if trace.event_text:
        lines.append(f"event: {raw(one_line(trace.event_text, 500))}")
    if trace.notes:  # why it woke, what it heard unwoken, floods dropped, lines given up
        lines.append("|wNotes|n")
        lines.extend(f"  {raw(one_line(note, 300))}" for note in trace.notes)
    lines.append("|wSteps|n")
    lines.extend(trace_steps(trace) or ["  (no model calls)"])
    first = next((it for it in trace.iterations if it.sections), None)
    lines.append("|wTokens per context section|n")
    lines.extend(section_table(first.sections if first else {}))
    if trace.prefix_cache_share is not None:
        lines.append(f"prefix shared with the previous request: {trace.prefix_cache_share:.0%}")
    if trace.tool_groups:
        lines.append(f"tool groups sent: {', '.join(trace.tool_groups)}")
    if trace.shrunk:
        shrunk = "; ".join(f"{key}: {how}" for key, how in trace.shrunk.items())
        lines.append(f"left out to fit the window: {raw(shrunk)}")
    lines.append(f"budget: {trace.budget or 'within budget'}")
    if trace.error:
        lines.append(f"|rerror: {raw(one_line(trace.error, 500))}|n")
    return "\n".join(lines)


def _traces(npc, viewer) -> list[TickTrace]:
    """``npc``'s kept traces as ``viewer`` may see them (secrets withheld below Developer)."""
    return [TickTrace.from_dict(t) for t in traces_shown_to(viewer, npc, npc.ai.traces())]


# -- aitools ------------------------------------------------------------------------------------
#: The keys whose set-aside values change what ``aitools`` lists (their strictest values).
SET_ASIDE_TOOL_KEYS = ("tool_allow", "tool_deny", "tool_rules", "script.execution_config")


class CmdAITools(AICommand):
    """
    Show and restrict the tools an AI NPC may use, and the rules of how it calls
    them.

    Usage:
      aitools <npc>
      aitools/allow <npc> = <tool>[, <tool>...]
      aitools/deny <npc> = <tool>[, <tool>...]
      aitools/only <npc> = <tool>[, <tool>...]
      aitools/category <npc> = <category> [<category>...]
      aitools/category <npc> = all
      aitools/reset <npc>
      aitools/rules <npc>
      aitools/addrule <npc> = <rule type> <tool> [<value>]
      aitools/delrule <npc> = <rule number>||all

    Switches:
      allow    - take tools off the NPC's deny list (and onto its allow list, if it
                 has one).
      deny     - never offer these tools to the NPC.
      only     - offer the NPC these tools and no others (an allow list).
      category - tool categories the NPC may use: SAFE_CHAIN, ASYNC_REQUIRED,
                 TERMINAL, DANGEROUS ("all" removes the restriction).
      reset    - remove the NPC's allow list, deny list and category restriction
                 (its tool rules stay).
                 (allow, deny, only, category and reset: Developer only.)
      rules    - the NPC's tool rules, numbered, and the rules section of its
                 system prompt exactly as the model reads it.
      addrule  - add a tool rule (Developer only). Rule types:
                   start_constraint <tool>  - the first call of a tick must be it
                   exit_loop <tool>         - the turn ends after it runs
                   continue_loop <tool>     - the model is called again after it
                                              (within the tick's iteration limit)
                   max_calls <tool> <count> - at most <count> calls per tick
                   requires_prior <tool> <other tool>
                                            - only after <other tool> succeeded
      delrule  - remove a tool rule by its number in /rules, or all of them
                 (Developer only).

    These settings only ever restrict: a tool also needs its context, its
    category and its lock to allow it, and nothing here widens those. Tool rules
    refuse calls or end a turn; none offers a tool or skips a confirmation.

    Examples:
      aitools Marta
      aitools/deny Marta = execute_command
      aitools/category Marta = SAFE_CHAIN TERMINAL
      aitools/reset Marta
      aitools/rules Marta
      aitools/addrule Marta = requires_prior give look
      aitools/addrule Marta = max_calls look 2
      aitools/delrule Marta = 1
    """

    key = "aitools"
    switch_options = (
        "allow",
        "deny",
        "only",
        "category",
        "reset",
        "rules",
        "addrule",
        "delrule",
    )

    # Switches that change what the NPC may do: Developer (:data:`evennia_ai.access.EDIT`).
    EDITS = {
        "allow": "change an NPC's tool lists",
        "deny": "change an NPC's tool lists",
        "only": "change an NPC's tool lists",
        "category": "change an NPC's tool categories",
        "reset": "change an NPC's tool lists",
        "addrule": "change an NPC's tool rules",
        "delrule": "change an NPC's tool rules",
    }

    def run(self):
        switch = self.switch()
        if switch in self.EDITS:
            self.require_perm(access.EDIT, self.EDITS[switch])
        if switch == "rules":
            self.msg(self.rule_list(self.find_npc(self.args)))
        elif switch in ("allow", "deny", "only"):
            npc = self.find_npc(self.lhs)
            names = controls.split_names(self.require(self.rhs, "tool name(s) after '='"))
            action = {
                "allow": controls.allow_tools,
                "deny": controls.deny_tools,
                "only": controls.only_tools,
            }
            self.msg(raw(action[switch](npc, names)))
        elif switch == "category":
            npc = self.find_npc(self.lhs)
            self.msg(
                raw(controls.set_categories(npc, self.require(self.rhs, "categories after '='")))
            )
        elif switch == "reset":
            self.msg(raw(controls.reset_tools(self.find_npc(self.args))))
        elif switch == "addrule":
            npc = self.find_npc(self.lhs)
            added = controls.add_rule(npc, self.require(self.rhs, "rule after '='"))
            self.msg(raw(screen.plain_words(added)))  # the rule's line is written for the model
        elif switch == "delrule":
            npc = self.find_npc(self.lhs)
            if not npc.ai.tool_rules:
                raise CommandError(f"{npc.key} has no tool rules.")
            which = self.require(self.rhs, "rule number (or all) after '='")
            self.msg(raw(controls.remove_rule(npc, which)))
        else:
            self.msg(self.tool_list(self.find_npc(self.args)))

    def rule_list(self, npc) -> str:
        rows = controls.rule_rows(npc)
        if not rows:
            return (
                f"{npc.key} has no tool rules. |waitools/addrule {npc.key} = <rule>|n adds one "
                "(|whelp aitools|n lists the rule types)."
            )
        table = self.table("#", "Rule", "Note", keep=(0,))
        for row in rows:
            note = f"|rignored|n: {raw(row.error)}" if row.error else raw(row.note)
            table.add_row(row.number, raw(row.text), note)
        rendered = raw(screen.plain_words(controls.rendered_rules(npc)))
        return (
            f"Tool rules of {npc.key}({npc.dbref}) ({len(rows)}):\n{table}\n"
            f"|wAs the model reads them|n (in its system prompt, without its Markdown marks):\n"
            f"{rendered or '(no rule the model can read)'}"
        )

    def tool_list(self, npc) -> str:
        rows = controls.tool_rows(npc)
        allowed = npc.ai.tool_allow
        denied = set(npc.ai.tool_deny or [])
        categories = npc.ai.execution_config.get("allowed_tool_categories")
        table = self.table("Tool", "Category", "For this NPC", keep=(0,))
        for row in rows:
            colour = "|g" if row.allowed else "|r"
            table.add_row(row.name, row.category, f"{colour}{row.verdict}|n")
        head = [
            f"Tools of {npc.key}({npc.dbref}): {sum(r.allowed for r in rows)} of {len(rows)} "
            "usable (each context may offer fewer).",
            f"categories: {', '.join(categories) if categories is not None else 'all'}; "
            f"allow list: {', '.join(sorted(allowed)) if allowed is not None else 'none'}; "
            f"deny list: {', '.join(sorted(denied)) or 'none'}; tool rules: "
            f"{len(npc.ai.tool_rules or [])} (|waitools/rules {npc.key}|n)",
        ]
        kept = [k for k in npc.ai.quarantined(check=False) if k in SET_ASIDE_TOOL_KEYS]
        if kept:
            head.append(
                f"|yset aside|n (cannot be read): {', '.join(kept)}; the lists above are their "
                f"strictest values until staff decide (|waistatus {npc.key}|n)"
            )
        return "\n".join(head) + f"\n{table}"


# -- aisleep ------------------------------------------------------------------------------------
SLEEP_FIELDS = ("until", "phase", "reason", "woken_in_window")


def parse_until(text: str) -> str | None:
    """An ISO UTC time from ``none``, ``+30m``/``+2h``/``+45`` (minutes) or an ISO time.

    Raises:
        ValueError: the text is none of these.
    """
    text = (text or "").strip()
    if text.lower() in ("", "none", "never"):
        return None
    if text.startswith("+"):
        amount, unit = text[1:], "m"
        if amount and amount[-1].lower() in "mh":
            amount, unit = amount[:-1], amount[-1].lower()
        try:
            value = float(amount)
        except ValueError:
            raise ValueError(f"'{text}' is not a duration like +30m or +2h.") from None
        if value <= 0:
            raise ValueError("A duration must be positive.")
        delta = timedelta(hours=value) if unit == "h" else timedelta(minutes=value)
        return iso_utc(utcnow() + delta)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"'{text}' is not an ISO time (2026-01-01T08:00) or +minutes.") from None
    return iso_utc(moment)


class CmdAISleep(AICommand):
    """
    Show and steer an AI NPC's sleep and reflection.

    Usage:
      aisleep <npc>
      aisleep/now <npc> [= <until>]
      aisleep/wake <npc>
      aisleep/schedule <npc> = <field>=<value> [<field>=<value>...]
      aisleep/reflect <npc>

    Switches:
      now      - put the NPC to sleep now: it consolidates its journal into
                 long-term memory, compacts its history, then rests until woken,
                 until <until>, or (if enabled) until someone addresses it.
      wake     - wake the NPC now.
      schedule - edit its sleep state. Fields: until (ISO UTC time, +30m, +2h or
                 none), phase (sleep_consolidate, pre_compaction or rest),
                 reason (text), woken_in_window (on/off: stay awake for the rest
                 of the server's sleep window).
      reflect  - make the NPC reflect on its next tick.

    The daily sleep window is server-wide: EVENNIA_AI_SLEEP_SCHEDULE.

    Examples:
      aisleep Marta
      aisleep/now Marta = +2h
      aisleep/schedule Marta = until=2026-01-02T06:00 reason="festival over"
      aisleep/wake Marta
      aisleep/reflect Marta
    """

    key = "aisleep"
    switch_options = ("now", "wake", "schedule", "reflect")

    def run(self):
        switch = self.switch()
        if switch in ("now", "schedule"):
            npc = self.find_npc(self.lhs)
        else:
            npc = self.find_npc(self.args)
        if switch is None:
            self.msg(self.report(npc))
        else:
            getattr(self, f"do_{switch}")(npc)

    def do_now(self, npc):
        try:
            until = parse_until(self.rhs or "")
        except ValueError as err:
            raise CommandError(str(err)) from None
        go_to_sleep(npc, "operator", until)
        self.msg(f"{npc.key} falls asleep" + (f" until {timestamp(until)}." if until else "."))

    def do_wake(self, npc):
        if not npc.ai.sleep.get("asleep"):
            raise CommandError(f"{npc.key} is awake already.")
        wake_up(npc, "woken by an operator")
        self.msg(f"{npc.key} wakes up.")

    def do_schedule(self, npc):
        text = self.require(self.rhs, "<field>=<value> pairs after '='")
        try:
            pairs = shlex.split(text)
        except ValueError as err:
            raise CommandError(f"Could not read {text!r}: {err}.") from None
        changes = {}
        for pair in pairs:
            field, sep, value = pair.partition("=")
            field = field.strip().lower()
            if not sep or field not in SLEEP_FIELDS:
                raise CommandError(
                    f"'{pair}' is not <field>=<value>; fields: " + ", ".join(SLEEP_FIELDS) + "."
                )
            if field == "until":
                try:
                    changes[field] = parse_until(value)
                except ValueError as err:
                    raise CommandError(str(err)) from None
            elif field == "phase":
                phases = SLEEP_PHASES + ("rest",)
                if value not in phases:
                    raise CommandError(f"phase must be one of {', '.join(phases)}.")
                changes[field] = value
            elif field == "woken_in_window":
                changes[field] = parse_switch(value, "woken_in_window")
            else:
                changes[field] = value.strip()[:200]
        npc.ai.update(SLEEP, lambda sleep: {**sleep, **changes})
        self.msg(f"{npc.key}'s sleep state: " + ", ".join(f"{k}={v}" for k, v in changes.items()))

    def do_reflect(self, npc):
        npc.ai.update(REFLECTION, lambda state: {**state, "requested": True})
        note = " (it is asleep: it reflects once awake)" if npc.ai.sleep.get("asleep") else ""
        script = npc.ai.script
        if script is not None and npc.ai.enabled and not npc.ai.paused:
            script.trigger_tick()
        elif script is None or not npc.ai.enabled:
            note += " (it is stopped: ainpc/start it)"
        self.msg(f"{npc.key} will reflect on its next tick{note}.")

    def report(self, npc) -> str:
        sleep = npc.ai.sleep
        reflection = npc.ai.reflection
        schedule = conf.get_optional_pair("EVENNIA_AI_SLEEP_SCHEDULE")
        interval = conf.get_int("EVENNIA_AI_REFLECTION_INTERVAL")
        threshold = conf.get_int("EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD")
        script = npc.ai.script
        ticks = script.tick_count if script else 0
        lines = [f"|wSleep of {npc.key}({npc.dbref})|n"]
        if sleep.get("asleep"):
            lines.append(
                f"  asleep since {timestamp(sleep.get('since'))} ({sleep.get('reason')}), "
                f"phase {sleep.get('phase')}, until {timestamp(sleep.get('until') or 'woken')}"
            )
        else:
            lines.append(
                "  awake"
                + (f" ({sleep.get('reason')})" if sleep.get("reason") else "")
                + (", woken in this sleep window" if sleep.get("woken_in_window") else "")
            )
        lines.append(f"  last consolidated: {timestamp(sleep.get('last_consolidated') or 'never')}")
        window = (
            f"{schedule[0]}-{schedule[1]} server time"
            f"{' (now inside)' if in_sleep_window(schedule) else ''}"
            if schedule
            else "none"
        )
        lines.append(
            f"  server sleep window: {window}; wakes when addressed: "
            f"{conf.get_bool('EVENNIA_AI_WAKE_WHEN_ADDRESSED')}"
        )
        lines.append(
            f"|wReflection|n: {reflection.get('count', 0)} so far, last at tick "
            f"{reflection.get('last_tick', 0)} ({reflection.get('last_time') or 'never'})"
        )
        due = (
            f"tick {int(reflection.get('last_tick') or 0) + interval} (now at {ticks})"
            if interval
            else "never by interval"
        )
        lines.append(f"  next by interval: {due}; early at journal importance {threshold or 'off'}")
        return "\n".join(lines)


# -- aitrace ------------------------------------------------------------------------------------
class CmdAITrace(AICommand):
    """
    Show an AI NPC's recent ticks and what it thought and did in them.

    Usage:
      aitrace <npc> [<count>]
      aitrace/show <npc> = <tick id>

    Switches:
      show - one tick in detail: its notes (why its events woke the NPC, as
             "woken: named (Alice)"; the lines it heard since its last tick
             without being woken, and why, as "heard 3 line(s); not addressed
             (Alice 2, Tom 1)"; floods dropped), each step's thought, tool
             calls and results, the tokens per context section, budget and
             errors.

    Without a switch: the last <count> ticks (default 10), one line each with
    tick id, time, event, stop reason, steps, tokens, cost and duration.

    Examples:
      aitrace Marta
      aitrace Marta 25
      aitrace/show Marta = 42
    """

    key = "aitrace"
    switch_options = ("show",)

    def run(self):
        if self.switch() == "show":
            npc = self.find_npc(self.lhs)
            tick_id = self.parse_int(self.require(self.rhs, "tick id after '='"), "The tick id")
            found = npc.ai.trace(tick_id)
            if found is None:
                raise CommandError(
                    f"{npc.key} has no trace of tick #{tick_id} (only the last "
                    f"{conf.get_int('EVENNIA_AI_TRACE_RING_SIZE')} are kept)."
                )
            shown = traces_shown_to(self.caller, npc, [found])[0]
            self.msg(trace_detail(TickTrace.from_dict(shown)))
            return
        name, count = self.args.strip(), 10
        head, _, tail = name.rpartition(" ")
        if head and tail.lstrip("-").isdigit():
            name, count = head, self.parse_int(tail, "The count", minimum=1, maximum=1000)
        npc = self.find_npc(name)
        traces = _traces(npc, self.caller)[-count:]
        if not traces:
            self.msg(f"{npc.key} has not ticked yet.")
            return
        lines = [
            f"|wLast {len(traces)} tick(s) of {npc.key}|n (|waitrace/show {npc.key} = "
            "<id>|n for one):"
        ]
        lines.extend("  " + trace_line(t) for t in reversed(traces))
        self.msg("\n".join(lines))


# -- aiconfirm ----------------------------------------------------------------------------------
class CmdAIConfirm(AICommand):
    """
    Approve or reject actions AI NPCs are waiting to take.

    Usage:
      aiconfirm
      aiconfirm/approve <id>
      aiconfirm/reject <id> [= <reason>]

    Switches:
      approve - carry out the action as the NPC (with the NPC's own permissions,
                never yours) and tell the NPC.
      reject  - refuse the action; the NPC is told, with your reason.

    Without a switch: every pending confirmation (DANGEROUS tool calls and
    memory-block writes that need a human), oldest first.

    Examples:
      aiconfirm
      aiconfirm/approve c_1a2b3c4d
      aiconfirm/reject c_1a2b3c4d = Not during the festival.
    """

    key = "aiconfirm"
    switch_options = ("approve", "reject")
    needs_args = False

    def run(self):
        queue = get_confirmation_queue()
        switch = self.switch()
        if switch is None:
            if self.args.strip():
                raise CommandError("Give /approve or /reject with an id.\n" + self.usage())
            self.msg(self.listing(queue.list_entries()))
            return
        if switch == "approve":
            entry_id = self.require(self.args, "confirmation id")
        else:
            entry_id = self.require(self.lhs, "confirmation id")
        try:
            if switch == "approve":
                entry = queue.approve(entry_id, approver=self.caller)
            else:
                entry = queue.reject(
                    entry_id, rejecter=self.caller, reason=(self.rhs or "").strip()
                )
        except ConfirmationError as err:
            raise CommandError(str(err)) from None
        self.msg(raw(decision_text(entry)))

    def listing(self, entries: list[dict]) -> str:
        if not entries:
            return "No actions await confirmation."
        table = self.table("Id", "NPC and action", "Details and reason", "Since", keep=(0,))
        for entry in entries:
            kind = entry.get("kind")
            details = literal_cell(one_line(arguments_text(action_arguments(entry)), 120))
            if entry.get("reason"):
                details += f"\nreason: {literal_cell(one_line(entry['reason'], 120))}"
            table.add_row(
                entry["id"],
                f"{literal_cell(entry.get('npc_key'))}(#{entry.get('npc_id')}): "
                f"{entry.get('action')}" + ("" if kind == "tool" else f" ({kind})"),
                details,
                ago(entry.get("created")),
            )
        return f"Pending confirmations ({len(entries)}):\n{table}"


# -- interact -----------------------------------------------------------------------------------
def interaction_report(npc, trace: TickTrace) -> str:
    """What the caller of ``interact`` sees when the NPC's tick is done."""
    lines = [
        f"|w{npc.key} thought it over|n (tick #{trace.tick_id}, {trace.stop_reason or '-'}, "
        f"{count(trace.prompt_tokens + trace.completion_tokens)} tokens, "
        f"{duration(trace.duration)}):"
    ]
    lines.extend("  " + line for line in trace_steps(trace) or ["(no model calls)"])
    if trace.error:
        lines.append(f"  |rerror: {raw(one_line(trace.error, 300))}|n")
    lines.append(f"(|waitrace/show {npc.key} = {trace.tick_id}|n for the full trace.)")
    return "\n".join(lines)


class CmdInteract(AICommand):
    """
    Talk to an AI NPC and see how it reasons about what you said.

    Usage:
      interact <npc> = <message>

    The NPC perceives your message as speech addressed to it, from you, and
    thinks about it at once. When its tick finishes you see its thoughts and
    tool calls (aitrace/show has the full trace). It answers as usual, in its
    room, so stand with it to hear the answer.

    Examples:
      interact Marta = What's the stew today?
    """

    key = "interact"
    switch_options = ()

    def run(self):
        if "=" not in self.args:
            raise CommandError("Give your message after '='.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        message = self.require(self.rhs, "message after '='")
        script = npc.ai.script
        if not npc.ai.enabled or script is None or not script.is_active:
            raise CommandError(f"{npc.key} is stopped; |wainpc/start {npc.key}|n first.")
        if npc.ai.paused:
            raise CommandError(f"{npc.key} is paused; |wainpc/resume {npc.key}|n first.")
        caller = self.caller
        event = Event.create(
            kind="say",
            text=message,
            source=getattr(caller, "dbref", None),
            source_name=caller.key,
            addressed=True,
            location=npc.location.dbref if npc.location else None,
            data={"raw": f'{caller.key} says, "{message}"', "via": "interact"},
        )
        npc.ai.perceive(event, immediate=False)
        self.msg(f'You say to {npc.key}: "{message}" ({npc.key} is thinking...)')
        waiter = _TraceWaiter(caller, npc, event.id, self.msg)
        deferred = script.run_tick()
        if deferred is None:  # a tick is running: ours follows it
            waiter.poll()
        else:
            deferred.addBoth(waiter.tick_done)


class _TraceWaiter:
    """Tell ``caller`` (through ``reply``, the command's ``msg``) about the tick that answered
    event ``event_id`` once there is one."""

    def __init__(self, caller, npc, event_id: str, reply):
        self.caller = caller
        self.reply = reply
        self.npc = npc
        self.event_id = event_id
        self.waited = 0.0

    def find(self) -> TickTrace | None:
        if not self.npc.pk:
            return None
        for trace in reversed(_traces(self.npc, self.caller)):
            if self.event_id in (trace.event_ids or []):
                return trace
        return None

    def tick_done(self, result):
        try:
            if not self.report():
                self.poll()
        except Exception:
            logger.log_trace("evennia_ai: interact could not report a tick")
        return result

    def report(self) -> bool:
        """Send the trace if it exists (or say the NPC is gone); True when done waiting."""
        if not self.npc.pk:
            self.reply("The NPC was deleted before it answered.")
            return True
        trace = self.find()
        if trace is None:
            return False
        self.reply(interaction_report(self.npc, trace))
        return True

    def poll(self) -> None:
        if self.waited >= INTERACT_WAIT_SECONDS:
            self.reply(
                f"{self.npc.key} has not answered yet; see |waitrace " f"{self.npc.key}|n later."
            )
            return
        self.waited += INTERACT_POLL_SECONDS
        delay(INTERACT_POLL_SECONDS, self._poll_again)

    def _poll_again(self):
        try:
            if not self.report():
                self.poll()
        except Exception:
            logger.log_trace("evennia_ai: interact could not report a tick")


COMMANDS = [CmdAITools, CmdAISleep, CmdAITrace, CmdAIConfirm, CmdInteract]
