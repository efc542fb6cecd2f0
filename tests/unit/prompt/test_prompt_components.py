"""Prompt components: static definitions, the 1000-point ID scheme, pluggable allocation (pure)."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.prompt import components as pc
from evennia_ai.prompt.components import (
    STATIC_COMPONENT_IDS,
    VALID_ROLES,
    PromptComponent,
    allocate_pluggable_id,
    get_ordered_component_ids,
    get_static_component,
    get_static_components,
    is_static_id,
    next_static_id,
)
from evennia_ai.prompt.templates import extract_placeholders, render_template

EXPECTED = [
    (0, "system_prompt", "system"),
    (1000, "character_context", "system"),
    (1500, "entity_context", "system"),
    (2000, "semantic_memories", "system"),
    (3000, "context_buffer", "system"),
    (4000, "goals", "system"),
    (5000, "conversation_history", "mixed"),
    (6000, "pending_event", "user"),
    (7000, "tool_result", "tool"),
]


def test_importable_without_django_or_evennia():
    code = (
        "import sys; import evennia_ai.prompt.components, evennia_ai.prompt.templates; "
        "bad = [m for m in ('django', 'evennia', 'twisted') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_constants():
    assert (
        pc.COMPONENT_SYSTEM_PROMPT,
        pc.COMPONENT_CHARACTER_CONTEXT,
        pc.COMPONENT_ENTITY_CONTEXT,
        pc.COMPONENT_SEMANTIC_MEMORIES,
        pc.COMPONENT_CONTEXT_BUFFER,
        pc.COMPONENT_GOALS,
        pc.COMPONENT_CONVERSATION_HISTORY,
        pc.COMPONENT_PENDING_EVENT,
        pc.COMPONENT_TOOL_RESULT,
    ) == tuple(row[0] for row in EXPECTED)
    assert tuple(STATIC_COMPONENT_IDS) == tuple(row[0] for row in EXPECTED)
    assert set(VALID_ROLES) == {"system", "user", "assistant", "tool", "mixed"}


def test_static_components_in_id_order_with_roles_and_placeholder_content():
    comps = get_static_components()
    assert [(c.id, c.key, c.role) for c in comps] == EXPECTED
    for comp in comps:
        assert comp.is_static and comp.enabled and comp.after_static is None
        assert comp.name and comp.description
        # The content is a template filled from a dict of source values named after the key.
        assert extract_placeholders(comp.content) == [comp.key]
        assert render_template(comp.content, **{comp.key: "VALUE"}) == "VALUE"


def test_static_components_are_fresh_copies():
    first = get_static_components()
    first[0].content = "changed"
    first[0].enabled = False
    assert get_static_components()[0].content == "{system_prompt}"
    single = get_static_component("goals")
    single.content = "x"
    assert get_static_component("goals").content == "{goals}"


def test_get_static_component():
    comp = get_static_component("pending_event")
    assert isinstance(comp, PromptComponent)
    assert (comp.id, comp.role) == (6000, "user")
    assert get_static_component("nope") is None
    assert get_static_component("") is None
    assert pc.get_static_component_by_id(1500).key == "entity_context"
    assert pc.get_static_component_by_id(1) is None


def test_prompt_component_defaults_and_to_dict():
    comp = PromptComponent(id=1, key="k", name="K", description="", content="c", is_static=False)
    assert comp.enabled is True and comp.after_static is None
    assert comp.to_dict()["key"] == "k"


def test_ordered_ids_and_is_static_id():
    assert get_ordered_component_ids() == [0, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000]
    ids = get_ordered_component_ids()
    ids.append(9)
    assert 9 not in get_ordered_component_ids()
    for cid in STATIC_COMPONENT_IDS:
        assert is_static_id(cid)
    for cid in (1, 999, 1001, 2500, 8000, -1000, True, False, "0", 1000.0, None):
        assert not is_static_id(cid)


def test_next_static_id():
    assert next_static_id(0) == 1000
    assert next_static_id(1000) == 1500
    assert next_static_id(1500) == 2000
    assert next_static_id(6000) == 7000
    assert next_static_id(7000) is None


def test_allocate_first_and_next_slot():
    assert allocate_pluggable_id([], 1000) == 1001
    assert allocate_pluggable_id([1001, 1002], 1000) == 1003
    assert allocate_pluggable_id([1001, 1003], 1000) == 1002  # gaps are reused
    assert allocate_pluggable_id([], 0) == 1
    assert allocate_pluggable_id([], 7000) == 7001
    assert allocate_pluggable_id(None, 2000) == 2001
    assert allocate_pluggable_id({1, 2, 3}, 0) == 4  # any iterable


def test_allocate_ranges_and_full():
    # 0 -> 1000: 999 slots.
    assert allocate_pluggable_id(range(1, 999), 0) == 999
    with pytest.raises(ValueError, match="full"):
        allocate_pluggable_id(range(1, 1000), 0)
    # 1000 -> 1500: only 499 slots.
    assert allocate_pluggable_id(range(1001, 1499), 1000) == 1499
    with pytest.raises(ValueError, match="full"):
        allocate_pluggable_id(range(1001, 1500), 1000)
    # After the last static component: 7001-7999.
    assert allocate_pluggable_id(range(7001, 7999), 7000) == 7999
    with pytest.raises(ValueError, match="full"):
        allocate_pluggable_id(range(7001, 8000), 7000)


@pytest.mark.parametrize("bad", [1, 999, 1001, 8000, -1, "1000", None, True])
def test_allocate_rejects_non_static_after(bad):
    with pytest.raises(ValueError, match="static component ID"):
        allocate_pluggable_id([], bad)


def test_pluggable_range_and_anchor():
    assert pc.pluggable_range(1000) == range(1001, 1500)
    assert pc.pluggable_range(2000) == range(2001, 3000)
    assert pc.pluggable_range(7000) == range(7001, 8000)
    assert pc.anchor_of(1001) == 1000
    assert pc.anchor_of(1499) == 1000
    assert pc.anchor_of(1500) == 1500
    assert pc.anchor_of(7999) == 7000


def test_with_overrides():
    base = get_static_component("goals")
    changed = pc.with_overrides(base, {"enabled": False, "content": "Goals: {goals}", "key": "x"})
    assert (changed.enabled, changed.content, changed.key) == (False, "Goals: {goals}", "goals")
    assert base.enabled is True  # a copy
    assert pc.with_overrides(base, None) == base


@settings(max_examples=150, deadline=None)
@given(
    after=st.sampled_from(STATIC_COMPONENT_IDS),
    taken=st.sets(st.integers(min_value=0, max_value=8500), max_size=60),
)
def test_allocation_property(after, taken):
    """The ID is free, in range, below the next static ID, and the lowest such one."""
    upper = next_static_id(after)
    limit = min(upper, after + 1000) if upper is not None else after + 1000
    free = [i for i in range(after + 1, limit) if i not in taken]
    if not free:
        with pytest.raises(ValueError):
            allocate_pluggable_id(taken, after)
        return
    cid = allocate_pluggable_id(taken, after)
    assert cid == free[0]
    assert after < cid < limit and cid not in taken and not is_static_id(cid)
