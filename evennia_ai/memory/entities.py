"""Entity profiles: what an assistant knows about each character or object it has met (pure).

Stored on the character as ``entities``, keyed by dbref::

    {"#12": {"dbref": "#12", "name": "Alice", "kind": "character",
             "observations": [{"text": "orders the stew", "time": iso, "trust": 0.9}],
             "relationship": "regular, friendly", "last_seen": iso, "created": iso}}

Updated by the ``update_entity_observation`` tool (used in the ``pre_compaction`` context and
during sleep) and by perception (``touch`` sets ``last_seen``). Only entities present in the
room or mentioned in the tick's text are rendered into the entity context component.
"""

from __future__ import annotations

import re
from datetime import datetime

from evennia_ai.utils import iso_utc
from evennia_ai.wording import ENTITIES_HEADING
from evennia_ai.workspace.results import OpResult, normalise

MAX_OBSERVATIONS = 20
MAX_ENTITIES = 200
MAX_TEXT = 300


def touch(
    entities: dict | None,
    dbref: str,
    name: str,
    *,
    kind: str = "character",
    now: datetime | None = None,
) -> dict:
    """Record that the entity was seen now (creates its profile)."""
    out = dict(entities or {})
    profile = dict(
        out.get(dbref)
        or {"dbref": dbref, "observations": [], "relationship": "", "created": iso_utc(now)}
    )
    profile.update(name=name, kind=kind, last_seen=iso_utc(now))
    out[dbref] = profile
    return _prune(out)


def update_observation(
    entities: dict | None,
    dbref: str,
    name: str,
    observation: str = "",
    *,
    relationship: str | None = None,
    trust: float = 0.7,
    kind: str = "character",
    now: datetime | None = None,
) -> tuple[dict, OpResult]:
    """Add an observation and/or set the relationship. Duplicates (normalised) are not repeated."""
    observation = (observation or "").strip()[:MAX_TEXT]
    if not observation and relationship is None:
        return dict(entities or {}), OpResult.fail("Give an observation or a relationship.")
    out = touch(entities, dbref, name, kind=kind, now=now)
    profile = dict(out[dbref])
    observations = list(profile.get("observations", []))
    if observation and normalise(observation) not in {normalise(o["text"]) for o in observations}:
        observations.append({"text": observation, "time": iso_utc(now), "trust": trust})
    profile["observations"] = observations[-MAX_OBSERVATIONS:]
    if relationship is not None:
        profile["relationship"] = relationship.strip()[:MAX_TEXT]
    out[dbref] = profile
    return out, OpResult.ok(f"Noted about {name}.", entity=dbref)


def forget(entities: dict | None, dbref: str) -> tuple[dict, OpResult]:
    """Drop the profile of ``dbref`` (an operator's decision; the model has no such tool)."""
    out = dict(entities or {})
    profile = out.pop(dbref, None)
    if profile is None:
        return out, OpResult.fail(f"No profile of {dbref}.")
    return out, OpResult.ok(f"Forgot {profile.get('name') or dbref}.", entity=dbref)


def _prune(entities: dict) -> dict:
    if len(entities) <= MAX_ENTITIES:
        return entities
    ordered = sorted(entities.values(), key=lambda p: p.get("last_seen") or "")
    keep = {p["dbref"] for p in ordered[-MAX_ENTITIES:]}
    return {k: v for k, v in entities.items() if k in keep}


def relevant(entities: dict | None, present: set[str], text: str) -> list[dict]:
    """Profiles of entities present (by dbref) or named in ``text``."""
    out = []
    lowered = (text or "").lower()
    for dbref, profile in (entities or {}).items():
        name = (profile.get("name") or "").lower()
        named = bool(name) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered)
        if dbref in present or named:
            out.append(profile)
    return sorted(out, key=lambda p: p.get("name") or "")


def render_entities(profiles: list[dict], max_observations: int = 5) -> str:
    """The entity context text ("" when there is nobody to describe)."""
    if not profiles:
        return ""
    lines = [ENTITIES_HEADING]
    for profile in profiles:
        head = f"- {profile.get('name')} ({profile.get('dbref')})"
        if profile.get("relationship"):
            head += f": {profile['relationship']}"
        lines.append(head)
        for obs in profile.get("observations", [])[-max_observations:]:
            lines.append(f"    - {obs['text']}")
    return "\n".join(lines)
