"""The words the model reads live in one module, :mod:`evennia_ai.wording`.

Pure tests (no database): the package's source is read with :mod:`ast`.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from evennia_ai import wording
from evennia_ai.llm import contracts
from evennia_ai.memory import compression
from evennia_ai.prompt import assembly, sources
from evennia_ai.workspace import behaviour_rules, session_memory

PACKAGE = Path(wording.__file__).resolve().parent
WORDING = Path(wording.__file__).resolve()

#: Every text of the module: its upper-case string constants.
TEXTS = {
    name: value
    for name, value in vars(wording).items()
    if name.isupper() and isinstance(value, str)
}

#: Shortest fixed piece of a text that is checked (shorter ones, "\n" or "You: ", are common
#: words, not a copy of the text).
MIN_PIECE = 8

#: A piece of a text that another module may still spell out, and why.
ALLOWED_ELSEWHERE = {
    # The filler turn the contract check recognises (llm/contracts.FILLER_TURNS); that module
    # is not moved to the words module in this change: the two must agree
    # (test_the_filler_turn_is_the_one_assembly_adds).
    ("Continue.", "evennia_ai/llm/contracts.py"),
    # The goals input of the autonomous task is headed like the goals section.
    ("## Goals", "evennia_ai/llm/contracts.py"),
    # A tool result without its call, as the loop's JSON protocol and the loop's own
    # continuation write it: those modules belong to other parts of this change (the ReAct
    # loop, the model client) and are to import the label from evennia_ai.wording next.
    ("[Tool result: ", "evennia_ai/engine/react.py"),
    ("[Tool result: ", "evennia_ai/llm/json_protocol.py"),
}


def fixed_pieces(text: str) -> list[str]:
    """The literal text of ``text`` between its ``{fields}``."""
    return [literal for literal, *_ in string.Formatter().parse(text) if literal]


def code_strings(path: Path) -> list[str]:
    """The string literals of a module's code (f-string pieces included, docstrings and other
    statement-strings left out: prose about a text is not a copy of it)."""
    tree = ast.parse(path.read_text())
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def test_the_module_holds_the_texts_and_imports_nothing():
    assert len(TEXTS) >= 25
    tree = ast.parse(WORDING.read_text())
    imports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.module != "__future__"
    ]
    assert not imports, "evennia_ai.wording is importable from every layer: it imports nothing"


def test_no_other_module_spells_out_a_text():
    """Each text is written once, in evennia_ai/wording.py; its users import it."""
    pieces = {
        piece: name
        for name, text in TEXTS.items()
        for piece in fixed_pieces(text)
        if len(piece.strip()) >= MIN_PIECE
    }
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == WORDING:
            continue
        where = str(path.relative_to(PACKAGE.parent))
        for literal in code_strings(path):
            for piece, name in pieces.items():
                if piece in literal and (piece, where) not in ALLOWED_ELSEWHERE:
                    copies.append(f"{where}: {name} ({piece!r})")
    assert not copies, "texts of evennia_ai.wording spelled out elsewhere:\n" + "\n".join(
        sorted(set(copies))
    )


@pytest.mark.parametrize(
    "module, name",
    [
        (sources, "IDENTITY"),
        (sources, "SYSTEMS"),
        (sources, "TRUST_NOTE"),
        (assembly, "DEFAULT_SYSTEM_FALLBACK"),
        (assembly, "DEFAULT_USER_TURN"),
        (assembly, "EMPTY_TOOL_OUTPUT"),
        (compression, "SUMMARY_PREFIX"),
        (session_memory, "PERSONA_ERROR"),
        (session_memory, "PERSONA_SUGGESTION"),
    ],
)
def test_the_old_names_still_import(module, name):
    assert getattr(module, name) is getattr(wording, name)


def test_renamed_header_is_the_same_text():
    assert behaviour_rules.HEADER is wording.LEARNED_RULES_HEADING


def test_texts_with_fields_fill_to_the_text_requests_carried():
    """The fields are filled with str.format, to the same text the f-strings made."""
    assert wording.SELF_MODEL_FAILURE.format(name="look", rate=0.25) == "look (25% success)"
    assert (
        wording.CALL_WITHOUT_RESULT.format(name="look", arguments="{}")
        == "[called look({}) - no result kept]"
    )
    assert wording.TOOL_RESULT_LABEL.format(name="say") == "[Tool result: say]"
    assert (
        wording.LEFT_OUT_NOTE.format(count=3, what="journal entries")
        == "[3 earlier journal entries left out: they do not fit the window]"
    )
    assert wording.EXAMPLE_PAIR.format(user="Hi", assistant="Hello") == "Player: Hi\nYou: Hello"
    assert wording.RECENT_ERRORS.format(count=2, error="boom") == "2 (last: boom)"


def test_the_filler_turn_is_the_one_assembly_adds():
    assert wording.DEFAULT_USER_TURN in contracts.FILLER_TURNS
