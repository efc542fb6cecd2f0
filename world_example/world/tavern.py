"""
Batchcode: the evennia-ai demo tavern and the town around it (Bram the smith, Hilda the baker).

Run in game with `batchcode tavern` (Builder). `make demo` runs it once on the first start.
Idempotent: rooms, exits, NPCs and wares that exist already (found by key and tag) are reused,
and a build that stopped half-way is finished by the next one: an NPC found gets what it lacks
(goods when it has none, a routine when it has none, a purse when it has no `coins`, the wares
of its stock that were never made), and nothing it has already is changed.
"""

# HEADER

from evennia import create_object, search_tag
from evennia.objects.objects import DefaultExit, DefaultObject, DefaultRoom
from evennia.prototypes import prototypes as protlib
from evennia.prototypes import spawner

from evennia_ai.npc import controls, world_controls
from evennia_ai.typeclasses import AIAssistantCharacter

TAG = ("demo_tavern", "evennia_ai")


def room(key, desc):
    found = [obj for obj in search_tag(TAG[0], category=TAG[1]) if obj.key == key]
    if found:
        return found[0]
    obj = create_object(DefaultRoom, key=key, tags=[TAG])
    obj.db.desc = desc
    return obj


def tagged(key):
    """The demo's objects named ``key`` (made by this build: they carry its tag), anywhere."""
    return [obj for obj in search_tag(TAG[0], category=TAG[1]) if obj.key == key]


def demo_npc(tag, key, location, home, aliases, desc):
    """The demo's AI NPC tagged ``tag``: found, or created with its description."""
    found = search_tag(tag, category="evennia_ai")
    if found:
        return found[0]
    npc = create_object(
        AIAssistantCharacter,
        key=key,
        location=location,
        home=home,
        aliases=aliases,
        tags=[(tag, "evennia_ai"), TAG],
    )
    npc.db.desc = desc
    return npc


def make_wares(npc, wares):
    """Give ``npc`` the wares (key, aliases, description) this build never made: a ware is
    made as often as it is listed, less the demo's objects of its key that exist (a ware
    sold since is not made again)."""
    for key in dict.fromkeys(key for key, _aliases, _desc in wares):
        listed = [ware for ware in wares if ware[0] == key]
        for _key, aliases, desc in listed[len(tagged(key)) :]:
            obj = create_object(DefaultObject, key=key, location=npc, aliases=aliases, tags=[TAG])
            obj.db.desc = desc


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

# CODE

# The town around the tavern (issue 36): Market Square, The Smithy, the Bakery and its loft,
# joined by exits to the tavern and to each other. Appended after the tavern's blocks, so the
# tavern keeps its dbrefs (START_LOCATION is #3).

common = room("The Gilded Tankard", "")
market = room(
    "Market Square",
    "Cobbles worn smooth by carts ring a stone well. Under a striped awning stands the bread "
    "stall; the tavern's door is in the west side of the square, the ring of a hammer comes "
    "from the smithy to the east, and the smell of baking from the bakery to the north.",
)
smithy = room(
    "The Smithy",
    "Heat rolls off a glowing forge. Tongs, files and half-finished horseshoes hang from the "
    "beams, and an anvil stands dark with soot in the middle of the floor.",
)
bakery = room(
    "Bakery",
    "Flour dusts every surface. A brick oven breathes warmth, racks of cooling loaves line the "
    "walls, and a ladder climbs to the loft above.",
)
loft = room(
    "Bakery Loft",
    "A low loft under the rafters, warm from the oven below: a straw bed, a blanket chest and "
    "a small round window over the square.",
)
exit_between("out", ["o", "market", "square"], common, market)
exit_between("in", ["tavern", "tankard"], market, common)
exit_between("east", ["e", "smithy"], market, smithy)
exit_between("west", ["w", "out", "market"], smithy, market)
exit_between("north", ["n", "bakery"], market, bakery)
exit_between("south", ["s", "out", "market"], bakery, market)
exit_between("up", ["u", "loft", "ladder"], bakery, loft)
exit_between("down", ["d", "ladder"], loft, bakery)


def thing(key, location, desc, aliases=(), locks=""):
    """One object of the demo (a ware, the stall): created with the demo's tag."""
    obj = create_object(
        DefaultObject, key=key, location=location, aliases=list(aliases), tags=[TAG]
    )
    obj.db.desc = desc
    if locks:
        obj.locks.add(locks)
    return obj


if not [obj for obj in market.contents if obj.key == "bread stall"]:
    thing(
        "bread stall",
        market,
        "A trestle table under a striped awning, where the baker sells her bread at midday.",
        aliases=["stall"],
        locks="get:false()",
    )
if not tagged("scrap iron"):  # once: a player may carry it off, or sell it to Bram
    thing(
        "scrap iron",
        market,
        "A rusty lump of iron, good for nothing but the smith's forge.",
        aliases=["scrap"],
    )

# The Innkeeper stays who she is, and is the host of her common room: the lines there that
# name no AI NPC go to her first, also when Hilda drops in for her evening drink.
keeper = search_tag("demo_innkeeper", category="evennia_ai")[0]
if not keeper.ai.host:
    controls.set_host(keeper, "yes")

# CODE

# Bram the smith: an AI NPC with goods. What he holds is his stock; his trade rules price it
# (with a floor and a ceiling), keep his hammer out of any trade, buy scrap iron, restock his
# nails from a prototype, and ask a Builder before any trade worth more than 20 coins. His
# purse is the `coins` Attribute (EVENNIA_AI_MONEY = "attribute").

# The nails he restocks: a prototype stored in the database, so `spawn iron_nails` works for
# builders and his `restock proto:iron_nails` rule spawns them.
IRON_NAILS = {
    "prototype_key": "iron_nails",
    "prototype_desc": "A handful of the smith's iron nails (restocked by Bram).",
    "typeclass": "evennia.objects.objects.DefaultObject",
    "key": "iron nails",
    "aliases": ["nails"],
    "desc": "A handful of square-headed iron nails, still dark from the forge.",
}
if not protlib.search_prototype(key="iron_nails"):
    protlib.save_prototype(dict(IRON_NAILS))

smithy = room("The Smithy", "")
bram = demo_npc(
    "demo_smith",
    "Bram",
    smithy,
    smithy,
    ["smith", "blacksmith"],
    "A big, soot-streaked man in a leather apron, forearms scarred by sparks. He looks at "
    "every blade as if it owed him money.",
)
if not bram.ai.persona:
    bram.ai.set_persona(
        "Bram Ironside, the town's smith. Gruff and short of words, honest to a fault, proud "
        "of his work and stubborn about his prices. He sells what he has at the forge and "
        "buys scrap iron; his grandfather's hammer is not for sale at any price."
    )
    bram.ai.set_user_system_prompt(
        "Stay in the world of the game; do not discuss being an AI unless asked directly."
    )
make_wares(
    bram,
    (
        ("iron lantern", ["lantern"], "A sturdy lantern of black iron with a horn window."),
        ("iron lantern", ["lantern"], "A sturdy lantern of black iron with a horn window."),
        ("hunting knife", ["knife"], "A broad knife with an antler handle and a keen edge."),
        ("horseshoe", ["shoe"], "A new horseshoe, nail holes punched clean."),
        ("horseshoe", ["shoe"], "A new horseshoe, nail holes punched clean."),
        ("horseshoe", ["shoe"], "A new horseshoe, nail holes punched clean."),
        ("smith's hammer", ["hammer"], "A heavy hammer, its handle worn dark by three lives."),
    ),
)
# His first nails carry the demo's tag (those he restocks later do not; a build before they
# did left them untagged: the nails he holds count too).
made = {*tagged("iron nails"), *[obj for obj in bram.contents if obj.key == "iron nails"]}
missing = 6 - len(made)
for nails in spawner.spawn(*["iron_nails"] * missing) if missing > 0 else []:
    nails.tags.add(*TAG)
    nails.move_to(bram, quiet=True, move_type="restock")
if not world_controls.is_shop(bram):  # rules that cannot be read are left for a Builder
    world_controls.set_goods(
        bram,
        "sell iron lantern 12 floor 10 ceiling 16\n"
        "sell hunting knife 25 floor 20 ceiling 30\n"
        "sell horseshoe 3\n"
        "sell proto:iron_nails 1\n"
        "buy scrap iron 2 ceiling 3 per day 10\n"
        "never smith's hammer\n"
        "restock proto:iron_nails keep 6 every 6h\n"
        "approve above 20",
    )
if not bram.attributes.has("coins"):
    bram.attributes.add("coins", 60)

# CODE

# Hilda the baker: an AI NPC with a day in game time. She bakes at dawn and sells at the market
# stall at midday (open for trade in both), has a drink in the tavern in the evening, and
# sleeps in the loft. The demo's clock runs at 60 times real time from 06:00
# (server/conf/settings.py): she walks to the market about two real minutes after the first
# start, through the exits, like a player.

common = room("The Gilded Tankard", "")
market = room("Market Square", "")
bakery = room("Bakery", "")
loft = room("Bakery Loft", "")
hilda = demo_npc(
    "demo_baker",
    "Hilda",
    bakery,
    loft,
    ["baker"],
    "A small, quick woman with flour to the elbows and a pencil behind one ear. She smells "
    "of warm bread and always seems to be in a hurry.",
)
if not hilda.ai.persona:
    hilda.ai.set_persona(
        "Hilda Crumb, the town's baker. Up before dawn, cheerful, talkative, fond of gossip and "
        "of her honey cakes. She sells bread at her bakery in the morning and at the market "
        "stall at midday, and likes a cider at the Gilded Tankard in the evening."
    )
    hilda.ai.set_user_system_prompt(
        "Stay in the world of the game; do not discuss being an AI unless asked directly."
    )
make_wares(
    hilda,
    (
        ("loaf of bread", ["bread", "loaf"], "A round loaf with a crackling crust."),
        ("loaf of bread", ["bread", "loaf"], "A round loaf with a crackling crust."),
        ("loaf of bread", ["bread", "loaf"], "A round loaf with a crackling crust."),
        ("loaf of bread", ["bread", "loaf"], "A round loaf with a crackling crust."),
        ("honey cake", ["cake"], "A sticky little cake glazed with honey."),
        ("honey cake", ["cake"], "A sticky little cake glazed with honey."),
    ),
)
if not world_controls.is_shop(hilda):
    world_controls.set_goods(
        hilda, "sell loaf of bread 2 floor 2 ceiling 3\nsell honey cake 4 floor 3 ceiling 5"
    )
if not hilda.attributes.has("coins"):
    hilda.attributes.add("coins", 10)
routine = hilda.ai.routine
if not routine or (isinstance(routine, dict) and not routine.get("slots")):
    # No slots (never set, or cleared). A routine that cannot be read is left for a Builder.
    # Rooms by dbref: a builder's own room of the same name cannot take their place.
    world_controls.set_routine(
        hilda,
        f"05:00-08:00 {bakery.dbref}: baking the day's bread [trade]\n"
        f"08:00-15:00 {market.dbref}: selling bread at the stall [trade]\n"
        f"15:00-21:00 {common.dbref}: having a cider with the regulars\n"
        f"21:00-05:00 {loft.dbref}: sleeping [sleep]",
        by="world/tavern.py",
    )
