"""
Batchcode: the evennia-ai demo tavern.

Run in game with `batchcode tavern` (Builder). `make demo` runs it once on the first start.
Idempotent: rooms and exits that exist already (found by key and tag) are reused.
"""

#HEADER

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


#CODE

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
