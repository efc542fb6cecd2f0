"""Finding AI NPCs: by their Tag, by name, alias or #dbref (commands, budgets, the web).

Every assistant carries the Tag ``ai_assistant`` (category ``evennia_ai``), set when it is
created; NPCs made before the Tag existed get it once, at server start
(:func:`tag_untagged_assistants`). Listing every NPC is then one Tag query instead of a scan of
every object in the game.
"""

from __future__ import annotations

from evennia.objects.models import ObjectDB
from evennia.utils.search import search_object

from evennia_ai.utils import is_assistant

ASSISTANT_TAG = "ai_assistant"
ASSISTANT_TAG_CATEGORY = "evennia_ai"


class NPCMatchError(LookupError):
    """No AI NPC, or more than one, matches a name; the message says which, for the user.

    A :class:`LookupError`, so code catching that still catches it.
    """


def tag_assistant(obj) -> None:
    """Give ``obj`` the assistants' Tag (idempotent)."""
    obj.tags.add(ASSISTANT_TAG, category=ASSISTANT_TAG_CATEGORY)


def all_ai_npcs() -> list:
    """Every AI NPC in the game, ordered by id (one Tag query)."""
    tagged = ObjectDB.objects.get_by_tag(key=ASSISTANT_TAG, category=ASSISTANT_TAG_CATEGORY)
    # A tagged object whose typeclass was since swapped to a non-AI one is not an assistant.
    return sorted((obj for obj in tagged if is_assistant(obj)), key=lambda obj: obj.id)


def tag_untagged_assistants() -> int:
    """Tag every assistant that lacks the Tag (a full scan: the one-time upgrade step).

    Returns:
        How many objects were tagged.
    """
    tagged = 0
    for obj in ObjectDB.objects.all().order_by("id"):
        if is_assistant(obj) and not obj.tags.has(ASSISTANT_TAG, category=ASSISTANT_TAG_CATEGORY):
            tag_assistant(obj)
            tagged += 1
    return tagged


def find_ai_npc(name: str, caller=None):
    """The one AI NPC matching ``name`` (key, alias or #dbref), searched globally.

    Raises:
        NPCMatchError: nothing or several match; the message is for the user.
    """
    name = (name or "").strip()
    if not name:
        raise NPCMatchError("Which AI NPC? Give its name or #dbref.")
    found = [obj for obj in search_object(name) if is_assistant(obj)]
    if not found and not name.startswith("#"):
        lowered = name.lower()
        found = [obj for obj in all_ai_npcs() if obj.key.lower().startswith(lowered)]
    if not found:
        raise NPCMatchError(f"No AI NPC called '{name}'. |wainpc/list|n shows them.")
    if len(found) > 1:
        names = ", ".join(f"{obj.key}({obj.dbref})" for obj in found[:10])
        raise NPCMatchError(f"'{name}' matches several AI NPCs: {names}. Use the #dbref.")
    return found[0]
