"""
Characters of the evennia-ai demo game (copied over the game template's by `make demo`).

The template's `Character`, with a purse: the `coins` Attribute that the demo's money
(`EVENNIA_AI_MONEY = "attribute"`) reads, as evadventure keeps its coins. Every new character,
`admin`'s included, starts with 50 coins to spend with Bram and Hilda (`wares`, `buy`, `sell`).
"""

from evennia.objects.objects import DefaultCharacter
from evennia.typeclasses.attributes import AttributeProperty

from .objects import ObjectParent

#: Coins a new character starts with.
STARTING_COINS = 50


class Character(ObjectParent, DefaultCharacter):
    """A player's character: the template's, with a purse of coins."""

    coins = AttributeProperty(default=STARTING_COINS, autocreate=True)
