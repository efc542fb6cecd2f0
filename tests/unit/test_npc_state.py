"""The declared boundary of NPC state (evennia_ai/npc_state.py).

Key names are constants of the lowest layer and agree with the declarations of
``npc/state_keys.py``; the handler's attributes are generated from those declarations; the
``NPCState`` protocol, typed without ``Any``, is what ``AIHandler`` offers the layers below
``npc``; ``npc_state(obj)`` is their one way to it.
"""

from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
import sys
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai import npc_state as boundary
from evennia_ai.npc import handler as handler_module
from evennia_ai.npc.handler import AIHandler
from evennia_ai.npc.state_keys import CHARACTER_STATE, SCRIPT_STATE, StateKey
from evennia_ai.npc_state import (
    CHARACTER_KEYS,
    METRICS,
    SCRIPT_KEYS,
    NPCState,
    find_npc_state,
    npc_state,
)
from evennia_ai.typeclasses import AIAssistantCharacter

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "evennia_ai" / "npc_state.py"
_VENV_MYPY = Path(sys.executable).parent / "mypy"
MYPY = str(_VENV_MYPY) if _VENV_MYPY.exists() else shutil.which("mypy")


def protocol_members(protocol: type) -> set[str]:
    """The members a protocol declares (its own methods and properties, not typing's)."""
    return {
        name
        for name in vars(protocol)
        if not name.startswith("_") and name not in {"__protocol_attrs__"}
    }


# -- the key constants -------------------------------------------------------------------------
def test_the_constants_name_exactly_the_declared_keys_in_their_order():
    assert tuple(CHARACTER_STATE) == CHARACTER_KEYS
    assert tuple(SCRIPT_STATE) == SCRIPT_KEYS
    assert not set(CHARACTER_KEYS) & set(SCRIPT_KEYS)


def test_each_key_constant_is_its_value_in_capitals():
    """``METRICS == "metrics"``: a constant per key, named for it, none left over."""
    constants = {
        name: value
        for name, value in vars(boundary).items()
        if name.isupper() and isinstance(value, str)
    }
    keys = {value: name for name, value in constants.items() if value in CHARACTER_KEYS}
    keys.update({value: name for name, value in constants.items() if value in SCRIPT_KEYS})
    assert set(keys) == set(CHARACTER_KEYS) | set(SCRIPT_KEYS)
    assert all(name == value.upper() for value, name in keys.items())


def test_every_declared_key_is_named_with_its_constant_in_state_keys():
    """state_keys.py declares the keys with the constants, not with strings of its own."""
    tree = ast.parse((ROOT / "evennia_ai" / "npc" / "state_keys.py").read_text())
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "StateKey":
            named.append(node.args[0])
    assert len(named) == len(CHARACTER_KEYS) + len(SCRIPT_KEYS)
    strings = [ast.unparse(arg) for arg in named if not isinstance(arg, ast.Name)]
    assert not strings, f"keys declared by a string, not a constant of npc_state: {strings}"
    assert {arg.id for arg in named} == {key.upper() for key in CHARACTER_KEYS + SCRIPT_KEYS}


# -- the handler's attributes, generated from the declarations -----------------------------------
def test_every_character_key_reads_as_a_handler_attribute():
    for key in CHARACTER_KEYS:
        found = inspect.getattr_static(AIHandler, key)
        assert isinstance(found, (handler_module._Declared, property)), key
        if isinstance(found, handler_module._Declared):
            assert found.name == key
            assert found.__doc__ == CHARACTER_STATE[key].doc


def test_a_newly_declared_key_needs_no_edit_of_the_handler(monkeypatch):
    """Declaring a key in state_keys is enough for ``npc.ai.<key>`` to read it."""
    declared = dict(CHARACTER_STATE)
    declared["mood"] = StateKey("mood", str, {"type": "string"}, "How the NPC feels.")
    monkeypatch.setattr(handler_module, "CHARACTER_STATE", declared)

    class Probe:
        persona = property(lambda self: "own property, kept")

    handler_module._declare_character_state(Probe)
    assert isinstance(vars(Probe)["mood"], handler_module._Declared)
    assert vars(Probe)["mood"].__doc__ == "How the NPC feels."
    assert isinstance(vars(Probe)["persona"], property)  # a key with its own property keeps it
    reads = []
    probe = Probe()
    probe.state = SimpleNamespace(get=lambda key: reads.append(key) or "calm")
    assert probe.mood == "calm" and reads == ["mood"]


def test_the_handler_has_no_hand_written_list_of_keys():
    """No ``name = _Declared()`` lines: the descriptors come from the declarations alone."""
    tree = ast.parse(Path(handler_module.__file__).read_text())
    handler = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "AIHandler"
    )
    hand_listed = [
        target.id
        for node in handler.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "_Declared"
        for target in node.targets
    ]
    assert hand_listed == []


# -- the protocol --------------------------------------------------------------------------------
def test_the_protocol_declares_every_character_key():
    """The lower layers can read every character-held key typed, as an attribute."""
    members = protocol_members(NPCState)
    assert set(CHARACTER_KEYS) <= members
    for key in CHARACTER_KEYS:
        assert isinstance(vars(NPCState)[key], property), key


def test_the_handler_offers_every_member_of_the_protocol_in_kind():
    """Every member is on ``AIHandler`` as the protocol has it: a method with the same
    parameters, or something read as an attribute."""
    for name in protocol_members(NPCState):
        declared = inspect.getattr_static(NPCState, name)
        offered = inspect.getattr_static(AIHandler, name)
        if isinstance(declared, property):
            assert isinstance(offered, (property, handler_module._Declared)), name
            continue
        assert callable(offered), name
        wanted = list(inspect.signature(getattr(NPCState, name)).parameters)
        have = list(inspect.signature(getattr(AIHandler, name)).parameters)
        assert have == wanted, f"{name}: AIHandler takes {have}, NPCState declares {wanted}"


def test_the_module_is_typed_without_any():
    tree = ast.parse(MODULE.read_text())
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    # annotations are parsed too (postponed, they are still expressions in the tree)
    assert "Any" not in names | attributes | imported


def test_the_json_value_type_holds_what_an_attribute_stores():
    assert inspect.signature(NPCState.set).parameters["value"].annotation == "JSONValue"
    assert set(typing.get_args(boundary.JSONValue)) >= {str, int, float, bool, type(None)}


@pytest.mark.skipif(MYPY is None, reason="mypy is not installed")
def test_mypy_accepts_the_module_strictly_and_without_explicit_any(tmp_path):
    """mypy --strict, with explicit ``Any`` refused, and a caller typed against the protocol."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from evennia_ai.npc_state import METRICS, EVENT_QUEUE, JSONObject, NPCState\n"
        "def recover(queue: JSONObject) -> JSONObject:\n"
        "    return queue\n"
        "def count(state: NPCState) -> bool:\n"
        "    state.update(EVENT_QUEUE, recover)\n"
        "    done: bool = state.update(METRICS, lambda m: (m, True))\n"
        "    spending = state.spending_status(state.metrics)\n"
        "    return done and not spending.exceeded and state.tool_allow is None\n"
    )
    done = subprocess.run(
        [
            MYPY,
            "--strict",
            "--disallow-any-explicit",
            "--follow-imports=silent",
            "--no-incremental",
            str(MODULE),
            str(probe),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- the accessor --------------------------------------------------------------------------------
def test_the_accessor_returns_the_handler_and_refuses_a_non_assistant_in_words():
    handler = SimpleNamespace(model="m")
    assert npc_state(SimpleNamespace(ai=handler)) is handler
    assert find_npc_state(SimpleNamespace(ai=handler)) is handler
    assert find_npc_state(SimpleNamespace(key="Chair")) is None
    assert find_npc_state(None) is None
    with pytest.raises(TypeError) as raised:
        npc_state(SimpleNamespace(key="Chair"))
    assert str(raised.value) == "Chair is not an AI assistant (it has no .ai state)"


class TestTheHandlerIsTheState(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        super().tearDown()

    def test_the_handler_satisfies_the_protocol(self):
        state = npc_state(self.npc)
        assert state is self.npc.ai
        assert isinstance(state, NPCState)

    def test_a_declared_key_reads_but_cannot_be_assigned(self):
        with pytest.raises(AttributeError) as raised:
            self.npc.ai.metrics = {}
        assert "npc.ai.set or npc.ai.update" in str(raised.value)

    def test_state_stored_before_the_constants_reads_and_is_written_alike(self):
        """An Attribute stored by name (as by earlier versions) is the one the constant names,
        and a write through the protocol stores the same Attribute, the same bytes."""
        stored = {"ticks": 4, "errors": 0, "cost": 0.5}
        self.npc.attributes.add("metrics", stored, category="ai")
        state = npc_state(self.npc)
        assert state.metrics == stored and state.get(METRICS) == stored
        before = self.npc.attributes.get("metrics", category="ai", return_obj=True).db_value
        state.update(METRICS, lambda metrics: metrics)
        after = self.npc.attributes.get("metrics", category="ai", return_obj=True)
        assert after.db_value == before
        stored_as = [(a.key, a.category) for a in self.npc.attributes.all() if a.key == "metrics"]
        assert stored_as == [("metrics", "ai")]
