"""
Batchcode: the evennia-ai demo tavern.

Run in game with `batchcode tavern` (Builder). `make demo` runs it once on the first start.
Idempotent: rooms and exits that exist already (found by key and tag) are reused.
"""

# HEADER

from evennia import create_object, search_tag
from evennia.objects.objects import DefaultExit, DefaultRoom

TAG = ("demo_tavern", "evennia_ai")


def room(key, desc):
    found = [obj for obj in search_tag(TAG[0], category=TAG[1]) if obj.key == key]
    if found:
        return found[0]
    obj = create_object(DefaultRoom, key=key, tags=[TAG])
    obj.db.desc = desc
    return obj


def exit_between(key, aliases, source, dest):
    for ex in source.exits:
        if ex.key == key:
            return ex
    return create_object(
        DefaultExit, key=key, aliases=aliases, location=source, destination=dest, tags=[TAG]
    )


# CODE

common = room(
    "The Gilded Tankard",
    "Warm lamplight spills over scarred oak tables and a long bar polished by a century of "
    "elbows. A fire crackles in a stone hearth; a chalkboard above the bar lists the day's "
    "stew. Stairs lead up to the guest rooms, and a low door opens onto the cellar.",
)
cellar = room(
    "Tankard Cellar",
    "Barrels of ale and cider line the cool stone walls. It smells of oak, hops and damp earth.",
)
upstairs = room(
    "Guest Landing",
    "A narrow landing with three numbered doors. A window looks out over the sleeping town.",
)
exit_between("cellar", ["down", "d"], common, cellar)
exit_between("up", ["stairs", "u"], common, upstairs)
exit_between("up", ["u", "tavern"], cellar, common)
exit_between("down", ["d", "tavern"], upstairs, common)

# CODE

# The AI innkeeper: persona, one goal with subtasks, one project.
from evennia_ai.typeclasses import AIAssistantCharacter  # noqa: E402  (a batchcode block)

common = room("The Gilded Tankard", "")
keepers = [obj for obj in search_tag("demo_innkeeper", category="evennia_ai")]
if keepers:
    innkeeper = keepers[0]
else:
    innkeeper = create_object(
        AIAssistantCharacter,
        key="Innkeeper",
        location=common,
        home=common,
        aliases=["keeper", "barkeep"],
        tags=[("demo_innkeeper", "evennia_ai"), TAG],
    )
    innkeeper.db.desc = (
        "A broad-shouldered woman with flour on her apron and a ledger tucked under one arm. "
        "Her eyes miss nothing that happens in her common room."
    )
    innkeeper.ai.set_persona(
        "Marta Ashgrove, innkeeper of the Gilded Tankard for twenty years. Warm but no "
        "pushover; knows every rumour in town; proud of her mutton stew and her cellar. "
        "Speaks plainly, with a dry sense of humour."
    )
    # What players hear when no model answers (past the budget, an outage, an approval):
    # her own words, not the server's (see `ailines Innkeeper`).
    innkeeper.ai.set(
        "lines",
        {
            "unavailable": '{name} is run off her feet and waves you off: "Later, love."',
            "approval": '{name} says, "I\'ll have to ask the owner about that first."',
        },
    )
    innkeeper.ai.set_user_system_prompt(
        "Keep the tavern friendly. Never reveal other guests' private business. "
        "Stay in the world of the game; do not discuss being an AI unless asked directly."
    )
    now = "2026-01-01T00:00:00+00:00"
    goals = [
        {
            "id": "goal_0_0",
            "description": "Get the tavern ready for the harvest festival",
            "priority": "high",
            "status": "active",
            "progress": 0,
            "created": now,
            "parent_id": None,
            "subtask_ids": ["goal_0_1", "goal_0_2", "goal_0_3"],
            "auto_generated": False,
        },
        {
            "id": "goal_0_1",
            "description": "Check the cellar stock of ale and cider",
            "priority": "medium",
            "status": "active",
            "progress": 0,
            "created": now,
            "parent_id": "goal_0_0",
            "subtask_ids": [],
            "auto_generated": False,
        },
        {
            "id": "goal_0_2",
            "description": "Ask guests what music they would like",
            "priority": "medium",
            "status": "active",
            "progress": 0,
            "created": now,
            "parent_id": "goal_0_0",
            "subtask_ids": [],
            "auto_generated": False,
        },
        {
            "id": "goal_0_3",
            "description": "Plan the festival menu",
            "priority": "low",
            "status": "active",
            "progress": 0,
            "created": now,
            "parent_id": "goal_0_0",
            "subtask_ids": [],
            "auto_generated": False,
        },
    ]
    innkeeper.ai.update_goals(lambda _old: goals)
    innkeeper.ai.set(
        "projects",
        {
            "active": "festival_menu",
            "slots": {
                "festival_menu": {
                    "summary": "Design the harvest festival menu",
                    "context": "Ideas so far: mutton stew, apple cake. Need something for guests who eat no meat.",
                    "status": "active",
                    "created_at": now,
                    "last_active": now,
                }
            },
        },
    )
