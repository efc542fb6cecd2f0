"""The words the model reads live in one module, :mod:`evennia_ai.wording`.

Pure tests (no database): the package's source is read with :mod:`ast`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from evennia_ai import wording
from evennia_ai.engine import delegate, react, upkeep
from evennia_ai.llm import contracts, json_protocol
from evennia_ai.memory import compression
from evennia_ai.prompt import assembly, block_sources, longterm_sources, operator, sources
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

#: A ``{field}`` of a text (JSON in a text, ``{"tool": ...}``, is not a field).
FIELD = re.compile(r"\{[a-z_]+(?::[^{}]*)?\}")


def fixed_pieces(text: str) -> list[str]:
    """The literal text of ``text`` between its ``{fields}``."""
    return [literal for literal in FIELD.split(text) if literal]


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
                if piece in literal:
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
        (contracts, "TASK_HEADING"),
        (contracts, "NOTHING"),
        (contracts, "AUTONOMOUS_INSTRUCTION"),
        (contracts, "REFLECTION_CONT_INSTRUCTION"),
        (contracts, "SLEEP_INSTRUCTION"),
        (contracts, "PRE_COMPACTION_INSTRUCTION"),
        (contracts, "DECOMPOSE_INSTRUCTION"),
        (contracts, "DELEGATE_INSTRUCTION"),
        (contracts, "ASSESSMENT_INSTRUCTION"),
        (contracts, "SUMMARY_INSTRUCTION"),
        (json_protocol, "NATIVE_TOOLS_PROMPT"),
        (json_protocol, "JSON_TOOLS_PROMPT"),
        (react, "PLAN_INSTRUCTION"),
        (delegate, "CHILD_PROMPT"),
        (upkeep, "SUMMARY_SYSTEM"),
        (operator, "OPERATOR_HEADER"),
    ],
)
def test_the_old_names_still_import(module, name):
    assert getattr(module, name) is getattr(wording, name)


def test_renamed_header_is_the_same_text():
    assert behaviour_rules.HEADER is wording.LEARNED_RULES_HEADING
    assert block_sources.HEADER is wording.MEMORY_BLOCKS_HEADER
    assert longterm_sources.HEADER is wording.LONGTERM_HEADING


def test_the_contracts_input_headings_are_the_words():
    """Each input a task renders is headed by a heading of the words module."""
    headings = {text for name, text in TEXTS.items() if name.endswith("_HEADING")}
    ours = {
        item.heading
        for contract in contracts.CALL_CONTRACTS.values()
        for item in contract.inputs
        if item.heading and item.in_task
    }
    # the reflection template's metrics line is the operator-editable template's words
    assert ours - headings == {contracts.METRICS.heading}


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
    assert wording.PLAN_INSTRUCTION.format(steps=4).startswith(
        "Before acting, write a short numbered plan (at most 4 steps)"
    )
    assert wording.DECOMPOSE_INSTRUCTION.format(min_subtasks=3, max_subtasks=7).endswith(
        'Answer with JSON only: {"subtasks": [{"description": "...", "priority": '
        '"high|medium|low"}, ...]}'
    )


def test_a_json_text_keeps_its_braces_as_words():
    """JSON in a text is words, not a field: it is checked like the rest of the text."""
    assert '{"tool": "say", "arguments": {"message": "Welcome, traveller!"}}' in "".join(
        fixed_pieces(wording.JSON_TOOLS_PROMPT)
    )
    assert fixed_pieces("a {name} b {rate:.0%} c") == ["a ", " b ", " c"]


def test_the_filler_turn_is_the_one_assembly_adds():
    assert wording.DEFAULT_USER_TURN in contracts.FILLER_TURNS
