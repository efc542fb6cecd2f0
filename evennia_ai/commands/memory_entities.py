"""``aientity``: an AI NPC's entity profiles (what it knows about people and things), through
:mod:`evennia_ai.memory.entities`. Re-exported by :mod:`evennia_ai.commands.memory`.
"""

from __future__ import annotations

from typing import Any

from evennia.objects.objects import DefaultCharacter
from evennia.utils.search import search_object

from evennia_ai.commands.base import CommandError, SwitchedCommand
from evennia_ai.commands.memory_common import short
from evennia_ai.commands.workspace import apply_character
from evennia_ai.formatting import date, timestamp
from evennia_ai.memory import entities as entities_mod
from evennia_ai.memory.entities import forget
from evennia_ai.workspace.journal import TRUST

ENTITY_OBSERVATIONS_SHOWN = 20
# How far an observation the operator notes is trusted (the operator tells the NPC directly).
OPERATOR_TRUST_SOURCE = "told_directly"


# -- entity profiles -------------------------------------------------------------------------------
def find_profile(entities: dict, name: str) -> tuple[str, dict] | None:
    """``(dbref, profile)`` of the profile called ``name`` (its name, any case, or its dbref)."""
    wanted = name.strip()
    lowered = wanted.lower()
    for dbref, profile in (entities or {}).items():
        if dbref == wanted or (profile.get("name") or "").lower() == lowered:
            return dbref, profile
    return None


class CmdAIEntity(SwitchedCommand):
    """
    Show and edit what an AI NPC knows about the people and things it met.

    Usage:
      aientity <npc>
      aientity/show <npc> = <entity>
      aientity/note <npc> = <entity>: <observation>
      aientity/relationship <npc> = <entity>: <relationship>
      aientity/delete <npc> = <entity>

    Switches:
      show         - the whole profile: relationship, observations, last seen.
      note         - add an observation (trusted as told directly).
      relationship - set how the NPC relates to the entity.
      delete       - forget the profile.

    An entity is named as in its profile (or by #dbref); /note and /relationship
    can also start a profile for any character or object in the game.

    Examples:
      aientity Innkeeper
      aientity/show Innkeeper = Alice
      aientity/note Innkeeper = Alice: orders the stew every evening
      aientity/relationship Innkeeper = Alice: a regular, friendly
      aientity/delete Innkeeper = #42
    """

    key = "aientity"
    aliases = ["aientities"]
    switch_options = ("show", "note", "relationship", "delete")

    def do_default(self):
        npc = self.find_npc(self.args)
        profiles = sorted(
            (npc.ai.entities or {}).values(),
            key=lambda p: p.get("last_seen") or "",
            reverse=True,
        )
        if not profiles:
            self.msg(f"{npc.key} has no entity profiles.")
            return
        lines = [f"|wEntities known to {npc.key}|n (most recently seen first)"]
        for profile in profiles:
            seen = timestamp(profile.get("last_seen") or "never")
            lines.append(
                f"{profile.get('name')} ({profile.get('dbref')}, {profile.get('kind', '?')}): "
                f"{short(profile.get('relationship') or '-', 40)}; last seen {seen}; "
                f"{len(profile.get('observations') or [])} observation(s)"
            )
        self.msg("\n".join(lines))

    def profile(self, npc, name: str) -> tuple[str, dict]:
        found = find_profile(npc.ai.entities, name)
        if found is None:
            raise CommandError(
                f"{npc.key} has no profile of '{name}'. |waientity {npc.key}|n lists them."
            )
        return found

    def do_show(self):
        npc, name = self.npc_and_rhs("<entity>")
        dbref, profile = self.profile(npc, name)
        lines = [
            f"|w{profile.get('name')}|n ({dbref}, {profile.get('kind', '?')}) as {npc.key} knows them",
            f"Relationship: {profile.get('relationship') or '(none)'}",
            f"First met: {timestamp(profile.get('created'))}  "
            f"Last seen: {timestamp(profile.get('last_seen') or 'never')}",
        ]
        observations = profile.get("observations") or []
        lines.append("Observations:" if observations else "Observations: (none)")
        for obs in observations[-ENTITY_OBSERVATIONS_SHOWN:]:
            lines.append(f"- {obs.get('text')} (trust {obs.get('trust')}, {date(obs.get('time'))})")
        self.msg("\n".join(lines))

    def resolve(self, npc, name: str) -> tuple[str, str, str]:
        """``(dbref, name, kind)`` of a known profile, else of a game object called ``name``."""
        found = find_profile(npc.ai.entities, name)
        if found is not None:
            dbref, profile = found
            return dbref, profile.get("name") or name, profile.get("kind", "character")

        matches = [obj for obj in search_object(name) if obj != npc]
        if not matches:
            raise CommandError(
                f"{npc.key} has no profile of '{name}', and nothing in the game " "is called that."
            )
        if len(matches) > 1:
            names = ", ".join(f"{obj.key}({obj.dbref})" for obj in matches[:10])
            raise CommandError(f"'{name}' matches several objects: {names}. Use the #dbref.")
        obj = matches[0]
        character = obj.is_typeclass(DefaultCharacter, exact=False) or bool(obj.has_account)
        return obj.dbref, obj.key, "character" if character else "object"

    def entity_and_text(self, what: str) -> tuple[Any, str, str]:
        npc, text = self.npc_and_rhs(f"<entity>: {what}")
        name, sep, rest = text.partition(":")
        if not sep or not name.strip():
            raise CommandError(f"Give the entity, a colon, then the {what.strip('<>')}.")
        return npc, name.strip(), self.require(rest, what)

    def update(self, npc, name: str, observation: str = "", relationship: str | None = None):
        dbref, key, kind = self.resolve(npc, name)
        return apply_character(
            npc,
            "entities",
            lambda current: entities_mod.update_observation(
                current,
                dbref,
                key,
                observation,
                relationship=relationship,
                trust=TRUST[OPERATOR_TRUST_SOURCE],
                kind=kind,
            ),
        )

    def do_note(self):
        npc, name, text = self.entity_and_text("<observation>")
        op = self.update(npc, name, observation=text)
        self.msg(f"{npc.key}: {op.message}")

    def do_relationship(self):
        npc, name, text = self.entity_and_text("<relationship>")
        op = self.update(npc, name, relationship=text)
        self.msg(f"{npc.key}: {op.message} Relationship: {short(text, 200)}")

    def do_delete(self):
        npc, name = self.npc_and_rhs("<entity>")
        dbref, profile = self.profile(npc, name)

        npc.ai.update("entities", lambda current: forget(current, dbref)[0])
        self.msg(f"{npc.key} forgot its profile of {profile.get('name')} ({dbref}).")
