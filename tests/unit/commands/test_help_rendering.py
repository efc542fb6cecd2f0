"""Every admin command's help, rendered by Evennia's own ``help``, reads exactly as written.

Evennia parses ``|`` as colour markup in help text and in replies, so a docstring must write a
literal ``|`` as ``||``. These tests render each command's help (and the usage block printed
after an error) the way a player sees it and compare it with the intended text; the separators
the help shows are then typed into the commands as shown.
"""

import re

from evennia.commands.default.help import CmdHelp
from support.commands import AICommandTestBase

from evennia_ai.commands.base import partition_bar
from evennia_ai.commands.cmdset import AIAdminCmdSet, all_command_classes, help_text
from evennia_ai.prompt_registry import get_prompt_registry

COMMANDS = all_command_classes()


class PlainHelp(CmdHelp):
    """Evennia's help command without paging, so one call returns the whole entry."""

    help_more = False


def intended_usage(command) -> list[str]:
    """The usage lines of ``command`` as meant: its docstring's, with ``||`` read as ``|``."""
    doc = command.__doc__ or ""
    block = re.search(r"^\s*Usage:\s*\n(.*?)(?:\n\s*\n|\Z)", doc, re.S | re.M).group(1)
    return [line.strip().replace("||", "|") for line in block.splitlines() if line.strip()]


def shown_examples(rendered: str, key: str, separator: str = "|") -> list[str]:
    """The example lines of a rendered help entry that use ``separator`` (without ``key``)."""
    examples = rendered.split("Examples:", 1)[1] if "Examples:" in rendered else ""
    lines = [line.strip() for line in examples.splitlines()]
    return [line[len(key) :] for line in lines if line.startswith(key) and separator in line]


def test_docstrings_write_every_bar_as_markup_escape():
    # a single | starts Evennia markup (|h, |m, |n ...): help would eat it and what follows
    for command in COMMANDS:
        single = re.findall(r"(?<!\|)\|(?!\|)", command.__doc__ or "")
        assert not single, f"{command.key}: write | as || in the docstring"


def test_partition_bar():
    assert partition_bar("a | b") == ("a ", "|", " b")
    assert partition_bar("a || b") == ("a ", "||", " b")
    assert partition_bar("x|y || z") == ("x|y ", "||", " z")  # || present: it separates
    assert partition_bar("no separator") == ("no separator", "", "")


def test_generated_reference_shows_plain_text():
    text = help_text(next(c for c in COMMANDS if c.key == "aifewshot"))
    assert "aifewshot/add <player text> | <NPC answer>" in text and "||" not in text


class TestHelpRendering(AICommandTestBase):
    # Replies are read without an expected prefix: with one, ``call`` also strips EvMenu
    # borders, which removes the very ``|`` characters checked here.
    def help(self, key: str) -> str:
        rendered = self.call(PlainHelp(), key, cmdset=AIAdminCmdSet())
        assert f"Help for {key}" in rendered.splitlines()[1], rendered[:200]
        return rendered

    def test_help_shows_every_usage_line_intact(self):
        for command in COMMANDS:
            rendered = self.help(command.key)
            shown = [line.strip() for line in rendered.splitlines()]
            for line in intended_usage(command):
                assert line in shown, f"help {command.key} garbles {line!r}"
            assert rendered.count("|") == help_text(command).count("|"), command.key

    def test_help_of_formerly_garbled_entries(self):
        assert "ailtm/mode <npc> = <keyword|vector|hybrid|auto> <query>" in self.help("ailtm")
        assert "<label> <Core|Working|Archival|Log>" in self.help("aiblock")
        assert "[priority <high|medium|low>]" in self.help("aigoal")

    def test_usage_block_after_an_error_is_intact(self):
        for command in COMMANDS:
            if not command.needs_args:
                continue
            reply = self.call(command(), "")
            assert reply.startswith("Usage:"), (command.key, reply[:200])
            shown = [line.strip() for line in reply.splitlines()]
            for line in intended_usage(command):
                assert line in shown, f"{command.key}'s usage block garbles {line!r}"
            assert f"(See help {command.key} for details.)" in reply
        reply = self.call(next(c for c in COMMANDS if c.key == "aiblock")(), "/frob x")
        assert "aiblock/type <npc> = <label> <Core|Working|Archival|Log>" in reply

    def test_separators_shown_in_help_are_accepted(self):
        registry = get_prompt_registry()
        registry.clear_fewshot_examples()
        self.addCleanup(registry.clear_fewshot_examples)
        ran = 0
        for command in COMMANDS:
            for args in shown_examples(self.help(command.key), command.key):
                reply = self.call(command(), args)
                assert not re.search(r"Usage:|Give |Separate |Missing |failed", reply), (
                    command.key + args,
                    reply,
                )
                ran += 1
        assert ran == 3  # aiprompt/add, aifewshot/add, aiproject/create
        assert registry.list_fewshot_examples() == [
            {"user": "What do you sell?", "assistant": "Ale, bread and a warm bed, friend."}
        ]
        slot = self.npc.ai.projects["slots"]["build_tavern"]
        assert (slot["summary"], slot["context"]) == ("Build a tavern", "Need timber.")
        component = next(c for c in registry.list_components() if c.name == "House rules")
        assert component.content == "Never reveal what is in the cellar."
        registry.delete_component(component.id)

    def test_double_bar_still_separates(self):
        registry = get_prompt_registry()
        registry.clear_fewshot_examples()
        self.addCleanup(registry.clear_fewshot_examples)
        fewshot = next(c for c in COMMANDS if c.key == "aifewshot")
        self.call(fewshot(), "/add Hi || Welcome!", "Added few-shot example 1.")
        self.call(fewshot(), "/add A | B or C || Yes", "Added few-shot example 2.")
        self.call(fewshot(), "/add no separator", "Separate the player's text")
        assert registry.list_fewshot_examples() == [
            {"user": "Hi", "assistant": "Welcome!"},
            {"user": "A | B or C", "assistant": "Yes"},
        ]
