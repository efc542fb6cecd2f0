"""Every line the AI commands, their help and the staff notices show fits 80 columns.

A telnet player at 80 columns sees a line longer than that wrapped by the terminal wherever it
happens to break, which garbles tables and indented lists. These tests run every command of
:class:`~evennia_ai.commands.cmdset.AIAdminCmdSet` (found from the cmdset, so a new command is
covered without touching this file) in a standard scenario: an NPC that has ticked (a trace
with thoughts, tool calls, a skipped call and a failed tick), goals, session memory, memory
blocks, a journal, rules, a pending confirmation, and errors with long texts. Each command is
called bare, with an NPC, with each of its switches, and with every example of its help; what
the caller receives, colour codes removed, must fit 80 columns, line by line. The same holds
for every help entry as ``help <command>`` renders it, and for the ``[AI]`` staff notices.
"""

from __future__ import annotations

import json
import re
from unittest import mock

from evennia.commands.default.help import CmdHelp
from evennia.server.sessionhandler import SESSION_HANDLER
from evennia.utils.ansi import strip_ansi
from support.commands import AICommandTestBase, words

from evennia_ai.commands.base import AICommand
from evennia_ai.commands.cmdset import AIAdminCmdSet, help_text
from evennia_ai.commands.npcs import CmdAIStatus
from evennia_ai.commands.prompts import CmdAIPrompt, CmdAIRegistry
from evennia_ai.commands.runtime import CmdAITrace
from evennia_ai.engine import notices
from evennia_ai.engine.accounting import count_error
from evennia_ai.engine.trace import IterationTrace, TickTrace, ToolCallTrace
from evennia_ai.prompt import registry as prompt_registry_module
from evennia_ai.prompt_registry import get_prompt_registry
from evennia_ai.tools.approvals import get_confirmation_queue

COLUMNS = 80
MARKDOWN = re.compile(r"`[^`\s][^`]*`|\*\*[^*]+\*\*|^#{1,6} ")
# What is shown as it is, to copy: the registry as JSON (a line break would break a string).
VERBATIM = {"airegistry/export"}
# Commands that show prompt text exactly as the model reads it (Markdown included).
SHOWS_PROMPTS = {"aiprompt", "aitemplate", "aicontext"}
# What a plain-http endpoint's connection failure looked like in aistatus (issue 35).
LONG_ERROR = (
    "model call failed: openai/test-model: could not connect: Cannot connect to host "
    "127.0.0.1:5100 ssl:default [Connect call failed ('127.0.0.1', 5100)] while the kitchen "
    "was busy and the cellar was locked for the night"
)
LONG_QUESTION = (
    "Marta, is the kitchen still open tonight, and could you tell me what is on the menu, "
    "whether the stew has mutton in it, and who the stranger by the fire is?"
)


def commands() -> list:
    """Every command the plugin's cmdset adds, in its order."""
    cmdset = AIAdminCmdSet()
    cmdset.at_cmdset_creation()
    return list(cmdset.commands)


def help_examples(command) -> list[str]:
    """The arguments of each example line in ``command``'s help."""
    text = help_text(type(command))
    examples = text.split("Examples:", 1)[1] if "Examples:" in text else ""
    lines = [line.strip() for line in examples.splitlines()]
    return [line[len(command.key) :] for line in lines if line.startswith(command.key)]


def invocations(command) -> list[str]:
    """What the test types after the command's key: bare, with an NPC, each switch, examples."""
    calls = ["", " Marta", " Innkeeper", " Marta 50", " Marta = hello there"]
    for switch in getattr(command, "switch_options", None) or ():
        calls += [f"/{switch}", f"/{switch} Marta", f"/{switch} Marta = 1"]
    return calls + help_examples(command)


def markdown_lines(text: str) -> list[str]:
    """The lines of ``text`` with Markdown marks a telnet client shows as they are."""
    plain = strip_ansi(text).split("\n")
    return [line for line in plain if MARKDOWN.search(line)]


def wide_lines(text: str) -> list[str]:
    """The lines of ``text`` (colour codes removed) wider than :data:`COLUMNS`."""
    return [line for line in strip_ansi(text).split("\n") if len(line) > COLUMNS]


def trace_of(tick_id: int) -> TickTrace:
    """A tick that thought at length, called tools with long arguments and skipped one."""
    trace = TickTrace(
        tick_id=tick_id,
        context_type="tick_event",
        event_text=f'Char says: "{LONG_QUESTION}"',
        stop_reason="terminal_tool",
        duration=4.4,
        pattern={"mode": "react_loop", "max_iterations": 5},
    )
    trace.add_iteration(
        IterationTrace(
            index=0,
            sections={"system_prompt": 900, "history": 300, "tools": 600, "memory_blocks": 1200},
            usage={"prompt_tokens": 18000, "completion_tokens": 400},
            cost=0.0123,
            model="openai/a-model-with-a-rather-long-name-from-a-hosted-provider",
            text="The guest asks about the kitchen. " * 6,
            tool_calls=[
                ToolCallTrace(
                    id="1",
                    name="look",
                    arguments={"target": "the stranger by the fire " * 4},
                    category="SAFE_CHAIN",
                    success=True,
                    result="A tall stranger in a grey cloak, hood up, nursing a cup. " * 3,
                ),
                ToolCallTrace(
                    id="2",
                    name="noop",
                    arguments={},
                    category="TERMINAL",
                    success=False,
                    status="skipped",
                    result="",
                ),
                ToolCallTrace(
                    id="3",
                    name="say",
                    arguments={"message": LONG_QUESTION},
                    category="TERMINAL",
                    success=True,
                    result=f"You say, {LONG_QUESTION}",
                ),
            ],
        )
    )
    return trace


class TestEightyColumns(AICommandTestBase):
    """The standard scenario: Marta and the Innkeeper, Marta with state of every kind."""

    def setUp(self):
        super().setUp()
        # the commands' examples change the prompt registry; the next test reads it afresh
        # from the database (rolled back), not from the instance this test changed
        self.addCleanup(setattr, prompt_registry_module, "_REGISTRY", None)
        self.smith = self.make_npc("Blacksmith")
        self.build_scenario()

    def build_scenario(self):
        """Marta with state of every kind, and an action of hers waiting for approval."""
        self.marta = self.make_npc("Marta", aliases=["keeper"])
        self.marta.ai.set_persona("A warm innkeeper who knows every rumour in town. " * 3)
        for tick_id in range(1, 6):
            self.marta.ai.record_trace(trace_of(tick_id).to_dict())
        self.marta.ai.record_trace(
            {
                "tick_id": 6,
                "context_type": "tick_event",
                "stop_reason": "error",
                "error": LONG_ERROR,
                "started": "2026-01-01T10:00:00+00:00",
            }
        )
        self.marta.ai.update("metrics", lambda m: (count_error(m, LONG_ERROR, 6), m)[1])
        self.build_state()
        get_confirmation_queue().add_entry(
            self.marta,
            "execute_command",
            {"arguments": {"command": "open the cellar door and fetch a barrel of " * 3}},
            reason="the guest wants the good ale from the cellar, " * 3,
        )

    def restore_scenario(self):
        """Marta again as the scenario has her, after a command deleted, stopped or paused her
        (``ainpc/delete Marta``), so every command is seen with her state."""
        if not self.marta.pk:
            self.build_scenario()
            return
        self.marta.ai.start()
        self.marta.ai.resume()

    def build_state(self):
        """Goals, memory and rules, made with the commands as an operator would."""
        by_key = {command.key: command for command in commands()}
        for key, args in (
            ("aigoal", "/add Marta = " + "Find out who the stranger by the fire is. " * 2),
            ("aigoal", "/add Marta = Keep the kitchen running priority high"),
            ("aisession", "/set Marta = fact=" + "Alice prefers formal address. " * 4),
            ("aisession", "/set Marta = task=Served the harvest feast"),
            ("aijournal", "/add Marta = 8: " + "The well was poisoned by the miller. " * 4),
            ("airule", "/add Marta = " + "Greet regulars by name, ask after their kin. " * 2),
            ("aiblock", "/create Marta = notes"),
            ("aiblock", "/set Marta = notes " + "The well is dry and the miller is lying. " * 3),
            ("aientity", "/note Marta = Alice: " + "orders the stew every evening, " * 3),
            ("aitools", "/addrule Marta = max_calls look 2"),
            ("ailines", "/set Marta = unavailable " + "{name} is run off her feet tonight. " * 7),
            ("interact", f"Marta = {LONG_QUESTION}"),
        ):
            self.call(type(by_key[key])(), args)

    def test_every_command_fits_80_columns(self):
        found, markdown = [], []
        covered = set()
        for command in commands():
            covered.add(command.key)
            self.restore_scenario()
            # Evennia's own commands the cmdset extends (page) run on the account
            caller = self.char1 if isinstance(command, AICommand) else self.account
            for args in invocations(command):
                out = self.call(type(command)(), args, caller=caller)
                if f"{command.key}{args}" not in VERBATIM:
                    found += [
                        f"{command.key}{args}: ({len(line)}) {line}" for line in wide_lines(out)
                    ]
                if command.key not in SHOWS_PROMPTS:
                    markdown += [f"{command.key}{args}: {line}" for line in markdown_lines(out)]
        assert {
            "ainpc",
            "aistatus",
            "aitrace",
            "aiprompt",
            "aisession",
            "ailines",
            "page",
        } <= covered
        assert not found, "lines over 80 columns:\n" + "\n".join(sorted(set(found)))
        assert not markdown, "Markdown in game text:\n" + "\n".join(sorted(set(markdown)))

    def test_every_help_entry_fits_80_columns(self):
        found = []
        cmdset = AIAdminCmdSet()
        for command in commands():
            rendered = self.call(PlainHelp(), command.key, cmdset=cmdset)
            assert f"Help for {command.key}" in rendered, rendered[:200]
            found += [f"help {command.key}: ({len(line)}) {line}" for line in wide_lines(rendered)]
        assert not found, "help lines over 80 columns:\n" + "\n".join(found)

    def test_staff_notices_fit_80_columns(self):
        entry = get_confirmation_queue().list_entries()[0]
        staff = mock.Mock()
        session = SESSION_HANDLER.session_from_sessid(1)
        with mock.patch.object(notices, "approvers", return_value=[(staff, session)]):
            notices.announce_waiting(entry)
            notices.announce_set_aside(self.marta, "script.current_goals", LONG_ERROR, LONG_ERROR)
            get_confirmation_queue().reject(entry["id"], reason="Not during the festival. " * 4)
        sent = [call.args[0] for call in staff.msg.call_args_list]
        assert len(sent) == 3 and all(text.startswith(notices.PREFIX) for text in sent)
        found = [f"({len(line)}) {line}" for text in sent for line in wide_lines(text)]
        assert not found, "notice lines over 80 columns:\n" + "\n".join(found)
        waiting = strip_ansi(sent[0]).split("\n")
        assert len(waiting) > 1 and all(line.startswith("     ") for line in waiting[1:])

    def test_tool_calls_say_what_happened_in_words(self):
        out = self.call(CmdAITrace(), "/show Marta = 5")
        assert "tool noop() -> not run (the tick ended before it)" in out
        assert "(none)" not in out and "(failed)" not in out
        assert "tool look(target: the stranger by the fire" in out and "-> ran: A tall" in words(
            out
        )

    def test_a_clipped_event_ends_with_an_ellipsis(self):
        out = self.call(CmdAITrace(), "Marta")
        assert "more characters" not in out
        assert '[Char says: "Marta, is the kitchen still open to...]' in words(out)

    def test_the_last_error_is_shown_once(self):
        out = words(self.call(CmdAIStatus(), "Marta"))
        assert out.count("Cannot connect to host") == 1 and "last error: tick 6," in out

    def test_the_help_index_names_the_category_in_words(self):
        index = self.call(PlainHelp(), "", cmdset=AIAdminCmdSet())
        assert "-- Artificial Intelligence --" in index and "-- Ai " not in index
        assert all(len(line) <= COLUMNS for line in index.split("\n"))

    def test_exported_json_is_shown_unwrapped_to_copy(self):
        registry = get_prompt_registry()
        lore = "The town is old and the well is dry. " * 6
        self.call(CmdAIPrompt(), f"/add 1000 = Lore|{lore}")
        component = next(c for c in registry.list_components() if c.name == "Lore")
        self.addCleanup(registry.delete_component, component.id)
        out = self.call(CmdAIRegistry(), "/export")
        assert wide_lines(out)  # a string is one line, however long
        assert [c["content"] for c in json.loads(out)["components"]] == [lore.strip()]


class PlainHelp(CmdHelp):
    """Evennia's help command without paging, so one call returns the whole entry."""

    help_more = False


def test_help_texts_have_no_markdown():
    for command in commands():
        text = help_text(type(command))
        assert not re.search(r"`[^`]+`|\*\*[^*]+\*\*", text), command.key
