"""Entity profiles, procedural hints and composed sources (pure parts)."""

from datetime import datetime, timezone

from evennia_ai.memory import entities, procedures
from evennia_ai.prompt.builder import compose

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_entity_observations_dedupe_and_bound():
    profiles, op = entities.update_observation({}, "#5", "Alice", "likes stew", now=NOW)
    assert op.success
    profiles, _ = entities.update_observation(profiles, "#5", "Alice", "Likes stew!", now=NOW)
    assert len(profiles["#5"]["observations"]) == 1
    for i in range(40):
        profiles, _ = entities.update_observation(profiles, "#5", "Alice", f"fact {i}", now=NOW)
    assert len(profiles["#5"]["observations"]) == entities.MAX_OBSERVATIONS
    profiles, op = entities.update_observation(profiles, "#5", "Alice", "", relationship="friend")
    assert profiles["#5"]["relationship"] == "friend"
    _, op = entities.update_observation(profiles, "#5", "Alice")
    assert not op.success


def test_only_present_or_mentioned_entities_render():
    profiles, _ = entities.update_observation({}, "#5", "Alice", "likes stew", now=NOW)
    profiles, _ = entities.update_observation(profiles, "#6", "Bob", "owes money", now=NOW)
    profiles, _ = entities.update_observation(profiles, "#7", "Carol", "bard", now=NOW)
    shown = entities.relevant(profiles, {"#5"}, "Alice says: have you seen Bob?")
    assert [p["name"] for p in shown] == ["Alice", "Bob"]
    text = entities.render_entities(shown)
    assert "likes stew" in text and "Carol" not in text
    assert entities.render_entities([]) == ""


def test_entity_cap():
    profiles = {}
    for i in range(entities.MAX_ENTITIES + 10):
        profiles = entities.touch(profiles, f"#{i}", f"n{i}")
    assert len(profiles) == entities.MAX_ENTITIES


def test_procedural_hints_same_class_most_words():
    procs = []
    procs = procedures.record(
        procs, "communication", "Alice asks about the stew price", ["look", "say"], "t1"
    )
    procs = procedures.record(
        procs,
        "communication",
        "Bob wants a room for the night",
        ["list_projects", "say", "say"],
        "t2",
    )
    procs = procedures.record(procs, "movement", "Alice asks about stew", ["emote"], "t3")
    best = procedures.best_procedures(procs, "communication", "How much is the stew?", limit=3)
    assert [b["tools"] for b in best] == [["look", "say"]]
    assert procs[1]["tools"] == ["list_projects", "say"]
    assert "look -> say" in procedures.render_procedures(best)
    assert procedures.render_procedures([]) == ""


def test_compose_folds_extras_into_hosts():
    values = {
        "character_context": "Persona",
        "self_model": "[SELF-MODEL]\nStrengths: say(100%)",
        "procedural_hints": "",
        "entity_context": "",
        "memory_blocks": "<block:x>",
    }
    out = compose(values)
    assert out["character_context"].startswith("Persona\n\n[SELF-MODEL]")
    assert out["entity_context"] == "<block:x>"
    assert "self_model" not in out and "memory_blocks" not in out
