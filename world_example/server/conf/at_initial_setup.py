"""
Runs once, at the end of the very first server start: builds the demo tavern and its town.

The world is built with Evennia's batchcode processor from `world/tavern.py`, exactly as a
builder would run `batchcode tavern` in game.
"""

from django.conf import settings
from evennia.utils import logger


def at_initial_setup():
    from evennia.utils.batchprocessors import BATCHCODE
    from evennia.utils.search import search_object

    admin = search_object("#1")
    caller = admin[0] if admin else None
    for code in BATCHCODE.parse_file("tavern"):
        err = BATCHCODE.code_exec(code, extra_environ={"caller": caller}, debug=False)
        if err:
            logger.log_err(f"Demo world: batchcode block failed:\n{err}")
    start = search_object(settings.START_LOCATION)
    if not start or start[0].key != "The Gilded Tankard":
        logger.log_warn(
            f"Demo world: START_LOCATION {settings.START_LOCATION} is not the tavern's common room."
        )
    elif caller:
        caller.move_to(start[0], quiet=True, move_type="teleport")
        caller.home = start[0]
