"""Typeclasses: make any character an AI assistant.

Put the mixin first::

    from evennia import DefaultCharacter
    from evennia_ai.typeclasses import AIAssistantMixin

    class Innkeeper(AIAssistantMixin, DefaultCharacter):
        pass

or use :class:`AIAssistantCharacter`. The assistant perceives what a player standing in its room
would (speech, poses, whispers to it, arrivals and departures, things given to it), queues each
as an event, and its :class:`~evennia_ai.scripts.AssistantScript` thinks and acts on them. It
needs no account: it acts through the same hooks and commands a player's character does.
"""

from __future__ import annotations

from evennia.objects.objects import DefaultCharacter
from evennia.utils import lazy_property, logger

from evennia_ai.npc import perception
from evennia_ai.npc.handler import AIHandler
from evennia_ai.npc.lookup import tag_assistant
from evennia_ai.utils import log_prefix


class AIAssistantMixin:
    """Mixin giving a character an ``.ai`` handler, perception and an AssistantScript."""

    # Read by evennia_ai.utils.is_assistant, so lower layers can ask without importing this.
    is_ai_assistant = True

    @lazy_property
    def ai(self) -> AIHandler:
        return AIHandler(self)

    # -- life cycle ----------------------------------------------------------------------------
    def at_object_creation(self):
        super().at_object_creation()
        tag_assistant(self)
        self.ai.set_enabled(True)
        self.ai.ensure_script()

    def at_object_delete(self):
        script = self.ai.script
        if script is not None:
            script.stop()
        return super().at_object_delete()

    def at_init(self):
        super().at_init()
        perception.reset_presence(self)

    # -- perception ----------------------------------------------------------------------------
    def at_msg_receive(self, text=None, from_obj=None, **kwargs):
        """Every message this NPC receives passes here: turn what it perceives into events."""
        try:
            perception.perceive_message(self, text, from_obj, kwargs)
        except Exception:
            logger.log_trace(f"{log_prefix(self)}: perception failed")
        return super().at_msg_receive(text=text, from_obj=from_obj, **kwargs)

    def at_object_receive(self, moved_obj, source_location, move_type="move", **kwargs):
        """Things given to the NPC become events."""
        super().at_object_receive(moved_obj, source_location, move_type=move_type, **kwargs)
        try:
            perception.perceive_received(self, moved_obj, source_location, move_type)
        except Exception:
            logger.log_trace(f"{log_prefix(self)}: perception failed")

    def at_post_move(self, source_location, move_type="move", **kwargs):
        """A moved NPC refreshes whom it sees present, and takes along the lines it heard in
        the room it left (:mod:`evennia_ai.npc.heard`)."""
        super().at_post_move(source_location, move_type=move_type, **kwargs)
        perception.reset_presence(self)
        if source_location is not None and source_location != self.location:
            try:
                self.ai.take_heard(source_location)
            except Exception:
                logger.log_trace(f"{log_prefix(self)}: taking the lines heard before moving failed")


class AIAssistantCharacter(AIAssistantMixin, DefaultCharacter):
    """A ready-made AI assistant character."""
