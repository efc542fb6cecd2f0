"""``update_entity_observation``: note something about a person or thing the NPC knows."""

from __future__ import annotations

from evennia_ai.memory import entities as entities_mod
from evennia_ai.npc_state import ENTITIES, find_npc_state, npc_state
from evennia_ai.tools.base import Tool, ToolResult
from evennia_ai.tools.registry import register_tool
from evennia_ai.tools.workspace import event_source
from evennia_ai.workspace.journal import TRUST


def resolve_entity(npc, name: str):
    """(dbref, key, kind) of ``name``: someone/something in the room, or a known profile."""
    found = npc.search(name, quiet=True)
    if found:
        obj = found[0]
        kind = (
            "character"
            if obj.has_account
            or find_npc_state(obj) is not None
            or obj.is_typeclass("evennia.objects.objects.DefaultCharacter", exact=False)
            else "object"
        )
        return obj.dbref, obj.key, kind
    lowered = name.strip().lower()
    for dbref, profile in (npc_state(npc).entities or {}).items():
        if str(profile.get("name") or "").lower() == lowered or dbref == name.strip():
            return dbref, profile.get("name"), profile.get("kind", "character")
    return None


@register_tool
class UpdateEntityObservation(Tool):
    bookkeeping = True
    name = "update_entity_observation"
    group = "memory"
    description = (
        "Note an observation about a person or thing you know (someone present, or someone "
        "you have a profile for), and optionally your relationship with them."
    )
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "observation": {"type": "string", "maxLength": 300},
            "relationship": {"type": "string", "maxLength": 300},
        },
        "required": ["name"],
        "additionalProperties": False,
    }

    def run(self, ctx, name, observation="", relationship=None):
        found = resolve_entity(ctx.npc, name)
        if found is None:
            return ToolResult.fail(f"You know no one and nothing called '{name}' here.")
        dbref, key, kind = found

        trust = TRUST.get(event_source(ctx), 0.5)
        state = npc_state(ctx.npc)
        new, op = entities_mod.update_observation(
            state.entities,
            dbref,
            key,
            observation,
            relationship=relationship,
            trust=trust,
            kind=kind,
        )
        if not op.success:
            return ToolResult.fail(op.message)
        state.set(ENTITIES, new)
        return ToolResult.ok(op.to_dict())
