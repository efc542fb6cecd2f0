"""Who is listening: players within earshot, and who waits for an NPC's answer.

An assistant's work that nobody asked for (autonomous ticks, reflection) is only worth its
tokens when a player may see its effects. This module keeps when a player was last within
earshot of the NPC (in its room, connected) in process memory, on the NPC's object (it is
about the last minutes, so a reload may forget it): :func:`has_audience` is true while a player
is there, and for ``EVENNIA_AI_AUDIENCE_WINDOW`` seconds after one was last seen or heard. (Who answers a line
in a room, and how long AI NPCs talk to each other, is the room's floor:
:mod:`evennia_ai.engine.floor`.)

It also tells the players waiting for an answer what is happening
(:func:`waiting_speakers`, :func:`tell_speakers`): the NPC is thinking, cannot answer, or
waits for staff to approve what it wanted to do. No model writes those lines: each is staff's
text for the NPC (:data:`LINE_KINDS`, kept in its ``lines`` state and set with ``ailines`` or on
the dashboard) or, when none is set, the setting's (:data:`LINE_SETTINGS`), with ``{name}``
replaced by the NPC's name as the listener sees it.

Example::

    if is_player(speaker):
        note_audience(npc)               # a player is within earshot
    if has_audience(npc):                # worth an autonomous tick
        ...
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from evennia.utils.search import search_object

from evennia_ai import conf
from evennia_ai.engine.addressing import is_question
from evennia_ai.npc_state import find_npc_state
from evennia_ai.tools.world import escape_inline_functions
from evennia_ai.utils import clean_text, is_assistant

#: The lines staff may set for one NPC, by kind, and the setting each falls back to.
LINE_SETTINGS = {
    "unavailable": "EVENNIA_AI_UNAVAILABLE_MESSAGE",
    "thinking": "EVENNIA_AI_THINKING_MESSAGE",
    "approval": "EVENNIA_AI_APPROVAL_MESSAGE",
}
#: The kinds of line, in the order they are listed.
LINE_KINDS = tuple(LINE_SETTINGS)
#: When players hear each kind, for staff.
LINE_USES = {
    "unavailable": "its model fails, or it is past its budget or held",
    "thinking": "its model is slow to answer",
    "approval": "an action it wanted waits for staff's approval",
}
#: The longest line staff may set for an NPC.
MAX_LINE_CHARS = 300
#: The one placeholder of a line: the NPC's name.
NAME_FIELD = "{name}"
_FIELD = re.compile(r"\{[^{}\s]*\}")
_KIND_OF_SETTING = {setting: kind for kind, setting in LINE_SETTINGS.items()}


def is_player(obj) -> bool:
    """Whether ``obj`` is a character a connected player is puppeting (not an AI NPC)."""
    if obj is None or is_assistant(obj):
        return False
    try:
        return bool(obj.has_account)
    except Exception:  # a half-deleted object
        return False


def players_in_earshot(npc) -> list:
    """The players in ``npc``'s room now."""
    location = getattr(npc, "location", None)
    if location is None:
        return []
    return [obj for obj in location.contents if obj is not npc and is_player(obj)]


#: Where :func:`note_audience` keeps the time, on the NPC's object, without ``ndb``'s look-up
#: for each NPC that hears a player's line. Evennia's object cache never drops an object that
#: holds ``ndb`` data, and an AI NPC always does (``ndb.ai_present``, set when it is loaded and
#: when it moves: :mod:`evennia_ai.typeclasses`), so the object, and this, live as its ``ndb``.
AUDIENCE_AT = "_evennia_ai_audience_at"


def note_audience(npc) -> None:
    """A player is within earshot of ``npc`` now."""
    setattr(npc, AUDIENCE_AT, time.time())


def forget_audience(npc) -> None:
    """Forget when a player was last within earshot of ``npc`` (tests, a reset)."""
    setattr(npc, AUDIENCE_AT, None)


def last_audience(npc) -> float | None:
    """When a player was last within earshot (epoch seconds; now when one is there)."""
    if players_in_earshot(npc):
        note_audience(npc)
    return getattr(npc, AUDIENCE_AT, None)


def has_audience(npc, window: float | None = None) -> bool:
    """Whether a player is within earshot of ``npc``, or was in the last ``window`` seconds.

    Args:
        npc: The assistant.
        window: Seconds an audience counts after it left; None reads
            ``EVENNIA_AI_AUDIENCE_WINDOW``.
    """
    seen = last_audience(npc)
    if seen is None:
        return False
    if window is None:
        window = conf.get_float("EVENNIA_AI_AUDIENCE_WINDOW")
    return time.time() - seen <= window


def objects_here(npc) -> dict:
    """What is in ``npc``'s room, by dbref (empty when it is nowhere)."""
    location = getattr(npc, "location", None)
    return {obj.dbref: obj for obj in (location.contents if location else [])}


def find_by_dbref(here: dict, dbref: str, anywhere: bool = True):
    """The object of ``dbref``: in ``here`` (:func:`objects_here`), else (``anywhere``) in the
    whole game; None if it is gone."""
    found = here.get(dbref)
    if found is None and anywhere:
        matches = search_object(dbref)
        found = matches[0] if matches else None
    return found


def waiting_speakers(npc, events) -> list:
    """The characters waiting for ``npc``'s answer to ``events``: those who spoke to it.

    Speech, whispers and pages addressed to it by anyone but another AI NPC, and questions
    the room's floor gave it to answer (``data["floor"]``, :mod:`evennia_ai.engine.floor`);
    each speaker once, in the order they spoke, found in the NPC's room or (a page) anywhere.
    """
    here = objects_here(npc)
    found, seen = [], set()
    for event in events:
        data = event.data or {}
        asked = bool(data.get("floor")) and is_question(event.text, event.kind)
        if (
            event.event_class != "communication"
            or not (event.addressed or asked)
            or data.get("from_assistant")
            or not event.source
            or event.source in seen
        ):
            continue
        seen.add(event.source)
        speaker = find_by_dbref(here, event.source)
        if speaker is not None and not is_assistant(speaker):
            found.append(speaker)
    return found


@dataclass(frozen=True)
class Line:
    """One kind of line of one NPC as it stands.

    Attributes:
        kind: One of :data:`LINE_KINDS`.
        text: The template in force (``{name}`` not filled in); "" says nothing.
        own: Whether it is staff's text for this NPC (else the setting's).
        setting: The setting it falls back to.
    """

    kind: str
    text: str
    own: bool
    setting: str


def check_line(text) -> str:
    """A line staff typed for an NPC, tidied: clean, on one line.

    Raises:
        ValueError: it is empty, longer than :data:`MAX_LINE_CHARS`, or has a placeholder
            other than ``{name}`` (a typo would show as typed), saying which.
    """
    line = " ".join(clean_text(text).split())
    if not line:
        raise ValueError("A line needs some text (reset it to use the setting's).")
    if len(line) > MAX_LINE_CHARS:
        raise ValueError(f"A line is at most {MAX_LINE_CHARS} characters, not {len(line)}.")
    unknown = sorted({field for field in _FIELD.findall(line) if field != NAME_FIELD})
    if unknown:
        raise ValueError(
            f"Only {NAME_FIELD} is filled in (with the NPC's name), not {', '.join(unknown)}."
        )
    return line


def line_of(npc, kind: str) -> Line:
    """The line of ``kind`` in force for ``npc``: its own, else the setting's.

    An NPC's lines that cannot be read were set aside when read: the settings' are used.
    """
    setting = LINE_SETTINGS[kind]
    state = find_npc_state(npc)
    own = (state.lines if state is not None else {}).get(kind)
    if isinstance(own, str) and own.strip():
        return Line(kind, own, True, setting)
    return Line(kind, conf.get_str(setting), False, setting)


def render_line(npc, line: Line, looker) -> str:
    """``line`` as ``looker`` reads it: ``{name}`` filled with ``npc``'s name as shown to them.

    Staff's own text is shown as written: its ``|`` markup is escaped and, when the game parses
    outgoing text for inline functions, so is its ``$``. A setting's text is the game's own and
    keeps its markup, as before.
    """
    if not line.text:
        return ""
    text = line.text
    if line.own:
        text = escape_inline_functions(text.replace("|", "||"))
    return text.replace(NAME_FIELD, npc.get_display_name(looker))


def tell_speakers(npc, speakers, setting: str) -> int:
    """Tell each of ``speakers`` the line of ``setting`` (a name of :data:`LINE_SETTINGS`).

    The NPC's own line of that kind when staff set one, else the setting's text; ``{name}``
    is the NPC's name as each speaker sees it. Returns how many were told (0 when the line is
    empty).
    """
    if not speakers:
        return 0
    kind = _KIND_OF_SETTING.get(setting)
    if kind is not None:
        line = line_of(npc, kind)
    else:  # a setting that is not a line kind: its text, as the game wrote it
        line = Line("", conf.get_str(setting), False, setting)
    told = 0
    for speaker in speakers:
        text = render_line(npc, line, speaker)
        if text:
            speaker.msg(text)
            told += 1
    return told
