"""Every admin command: in the AI help category, locked, with a usage section; docs in step."""

from pathlib import Path

import pytest

from evennia_ai.commands.base import HELP_CATEGORY, AICommand
from evennia_ai.commands.cmdset import AIAdminCmdSet, all_command_classes, render_commands_markdown

COMMANDS = all_command_classes()


def test_commands_are_registered_once():
    keys = [command.key for command in COMMANDS]
    assert keys and len(keys) == len(set(keys))
    cmdset = AIAdminCmdSet()
    cmdset.at_cmdset_creation()
    assert {command.key for command in cmdset.commands} == set(keys) | {"page"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command.key)
def test_command_is_locked_and_documented(command):
    assert issubclass(command, AICommand) and command.help_category == HELP_CATEGORY.lower()
    assert command.locks in ("cmd:perm(Builder)", "cmd:perm(Developer)"), command.locks
    doc = command.__doc__ or ""
    assert "Usage:" in doc and command.key in doc
    usage = command().usage()
    assert usage.startswith("Usage:") and command.key in usage


def test_commands_doc_is_current():
    doc = Path(__file__).resolve().parents[3] / "docs" / "commands.md"
    assert (
        doc.exists() and doc.read_text() == render_commands_markdown()
    ), "docs/commands.md is stale: run scripts/gen_command_docs.py"
