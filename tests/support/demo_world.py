"""The demo's world in a test database: ``world_example/world/tavern.py`` run as Evennia's
``batchcode`` runs it (its ``#HEADER`` and ``#CODE`` blocks, in order), so tests meet the demo's
NPCs exactly as ``make demo`` builds them."""

from pathlib import Path

from django.test import override_settings
from evennia import search_tag
from evennia.objects.objects import DefaultRoom
from evennia.utils.batchprocessors import BATCHCODE
from evennia.utils.utils import inherits_from

WORLD = Path(__file__).resolve().parents[2] / "world_example" / "world"


def build_demo_world(caller=None) -> dict:
    """Run the demo's batchcode; returns its objects: the NPCs ``innkeeper``, ``bram`` and
    ``hilda``; the rooms ``common``, ``cellar``, ``market``, ``smithy``, ``bakery``, ``loft``;
    and ``rooms``, every room of the demo by key.

    Raises:
        AssertionError: a block of the batchcode failed (its error is the message).
    """
    with override_settings(BASE_BATCHPROCESS_PATHS=[str(WORLD)]):
        blocks = BATCHCODE.parse_file("tavern")
    for block in blocks:
        error = BATCHCODE.code_exec(block, extra_environ={"caller": caller}, debug=False)
        assert error is None, error
    tagged = search_tag("demo_tavern", category="evennia_ai")
    rooms = {obj.key: obj for obj in tagged if inherits_from(obj, DefaultRoom)}
    return {
        "innkeeper": search_tag("demo_innkeeper", category="evennia_ai")[0],
        "bram": search_tag("demo_smith", category="evennia_ai")[0],
        "hilda": search_tag("demo_baker", category="evennia_ai")[0],
        "common": rooms["The Gilded Tankard"],
        "cellar": rooms["Tankard Cellar"],
        "market": rooms["Market Square"],
        "smithy": rooms["The Smithy"],
        "bakery": rooms["Bakery"],
        "loft": rooms["Bakery Loft"],
        "rooms": rooms,
    }
