"""Finding AI NPCs by name, alias or #dbref (shared by commands, the web views and the API)."""

from __future__ import annotations

from evennia import search_object
from evennia.objects.models import ObjectDB


class LookupError_(LookupError):
    """No AI NPC, or more than one, matches; the message says which."""


def is_ai_npc(obj) -> bool:
    """Whether ``obj`` is an assistant (its typeclass has the ``.ai`` handler)."""
    from evennia_ai.typeclasses import AIAssistantMixin

    return isinstance(obj, AIAssistantMixin)


def all_ai_npcs() -> list:
    """Every AI NPC in the game, ordered by id."""
    return [obj for obj in ObjectDB.objects.all().order_by("id") if is_ai_npc(obj)]


def find_ai_npc(name: str, caller=None):
    """The one AI NPC matching ``name`` (key, alias or #dbref), searched globally.

    Raises:
        LookupError_: nothing or several match; the message is for the user.
    """
    name = (name or "").strip()
    if not name:
        raise LookupError_("Which AI NPC? Give its name or #dbref.")
    found = [obj for obj in search_object(name) if is_ai_npc(obj)]
    if not found and not name.startswith("#"):
        lowered = name.lower()
        found = [obj for obj in all_ai_npcs() if obj.key.lower().startswith(lowered)]
    if not found:
        raise LookupError_(f"No AI NPC called '{name}'. |wainpc/list|n shows them.")
    if len(found) > 1:
        names = ", ".join(f"{obj.key}({obj.dbref})" for obj in found[:10])
        raise LookupError_(f"'{name}' matches several AI NPCs: {names}. Use the #dbref.")
    return found[0]
