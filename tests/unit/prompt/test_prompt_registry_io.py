"""The registry's pure half (``evennia_ai.prompt.registry_io``): the whole-registry import's
outer checks, import records, and a stored registry state read as a tick reads it, with no
database and no Script."""

import json

import pytest

from evennia_ai.prompt import contexts as prompt_contexts
from evennia_ai.prompt.registry_io import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    PromptRegistryError,
    components_of,
    context_config_of,
    contract_problems_of_state,
    load_registry_json,
    validate_component_import,
    validate_template_import,
)

RULES = {
    "id": 1,
    "key": "house_rules",
    "name": "House rules",
    "description": "",
    "content": "Never reveal the cellar.",
    "role": "system",
    "after_static": 0,
    "is_static": False,
    "enabled": True,
    "created": None,
    "updated": None,
}


def test_a_whole_registry_import_is_read_as_a_detached_dict():
    given = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "templates": []}
    loaded = load_registry_json(given)
    assert loaded == given and loaded is not given
    assert load_registry_json(json.dumps(given)) == given
    assert load_registry_json(json.dumps(given).encode()) == given


@pytest.mark.parametrize(
    "data, message",
    [
        ({"format": "other"}, "Registry: 'format' must be 'evennia_ai.prompt_registry'"),
        ({"version": 2}, "Registry: unsupported version 2 (this is 1)."),
        ({"templates": {}}, "Registry: 'templates' must be a list."),
        ({"context_configs": []}, "Registry: 'context_configs' must be a mapping."),
        ({"extras": 1}, "Registry: unknown field(s) extras"),
        ("[1, 2]", "Registry JSON must be an object, not list."),
        ("{", "Malformed JSON for Registry"),
    ],
)
def test_a_wrong_registry_import_is_named(data, message):
    with pytest.raises(PromptRegistryError) as info:
        load_registry_json(data)
    assert message in str(info.value)


def test_import_records_are_checked_and_normalised():
    template = validate_template_import(
        {"key": "tavern", "name": "Tavern", "content": "At {inn}.", "created": "2026-11-01T12:00"},
        "Template",
    )
    assert template["placeholders"] == ["inn"] and template["created"].year == 2026
    assert validate_component_import(dict(RULES), "Component")["after_static"] == 0
    static = validate_component_import(
        {"key": "goals", "is_static": True, "content": "Goals: {goals}"}, "Component"
    )
    assert (static["id"], static["enabled"]) == (4000, True)
    with pytest.raises(PromptRegistryError, match="has a fixed role"):
        validate_component_import(
            {"key": "goals", "is_static": True, "content": "x", "role": "user"}, "Component"
        )


def test_a_stored_state_reads_as_a_tick_reads_it():
    inputs = {
        "components": [RULES],
        "static_overrides": {"4000": {"enabled": True, "content": "Goals: {goals}"}},
        "context_customization": {"max_iterations": 3},
    }
    components = components_of(inputs)
    assert [c.id for c in components] == sorted(c.id for c in components)
    by_key = {c.key: c for c in components}
    assert by_key["house_rules"].content == "Never reveal the cellar."
    assert by_key["goals"].content == "Goals: {goals}"  # a key stored as text still applies
    assert context_config_of("tick_event", inputs).max_iterations == 3
    default = prompt_contexts.get_context_config("tick_event")
    assert context_config_of("tick_event", {}) == default


def test_a_state_that_breaks_a_contract_is_named():
    assert contract_problems_of_state({1: RULES}, {}, {}) == []
    problems = contract_problems_of_state({}, {6000: {"enabled": False, "content": ""}}, {})
    assert problems and any("pending_event" in p for p in problems)
