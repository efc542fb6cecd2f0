"""Finding AI NPCs by name (``evennia_ai.npc.lookup``): the error says what went wrong."""

import pytest
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.npc import lookup
from evennia_ai.typeclasses import AIAssistantCharacter


def test_the_error_is_named_for_what_it_is_and_still_a_lookup_error():
    # It was ``LookupError_``, a name that read like the builtin with a typo.
    assert not hasattr(lookup, "LookupError_")
    assert issubclass(lookup.NPCMatchError, LookupError)
    with pytest.raises(lookup.NPCMatchError, match="Which AI NPC"):
        lookup.find_ai_npc("   ")


class TestFindAINpc(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.marta = create_object(AIAssistantCharacter, key="Marta", location=self.room1)
        self.martin = create_object(AIAssistantCharacter, key="Martin", location=self.room1)

    def test_one_match_is_found(self):
        assert lookup.find_ai_npc("Marta") == self.marta
        assert lookup.find_ai_npc(self.martin.dbref) == self.martin

    def test_none_or_several_raise_with_a_message_for_the_user(self):
        with pytest.raises(lookup.NPCMatchError, match="No AI NPC called 'Nobody'"):
            lookup.find_ai_npc("Nobody")
        with pytest.raises(lookup.NPCMatchError, match="matches several AI NPCs"):
            lookup.find_ai_npc("Mar")
        with pytest.raises(lookup.NPCMatchError):
            lookup.find_ai_npc(self.char1.dbref)  # a character, but no AI NPC
