"""Lines heard in a room, kept once for every NPC that heard them.

A line the room's floor gave to another NPC (:mod:`evennia_ai.engine.floor`) is only heard by
the rest: they keep it in their context buffer and, at their next conversation tick, in their
history (:mod:`evennia_ai.memory.context_buffer`). Written to each listener's buffer as it is
spoken, a line heard by ten NPCs cost ten Attribute writes on the reactor. Here it is written
once, to the **room's log** (an Attribute of the room, ``heard_lines`` in the plugin's category),
with the ids of the NPCs that heard it and have not taken it yet::

    [{"text": "Alice says, \\"Tom, a pint!\\"", "source": "#12", "ts": "...", "heard": True,
      "to": [31, 32, 33]}, ...]

An NPC **takes** its lines (:func:`take`: into its own buffer, one write, folding into its
history what the buffer pushes out) whenever its buffer is read: its next tick's snapshot, an
admin view, a move out of the room (what it heard stays with it). A taken line loses the NPC's
id; a line nobody still has to take leaves the log. The log keeps at most :data:`LOG_BUFFERS`
times ``EVENNIA_AI_CONTEXT_BUFFER_SIZE`` lines: when it is full, every NPC named in it takes
its lines first (:func:`settle`), so a line is never dropped before its listeners have it; that
is one buffer write per listener per that many lines, instead of one per line.

The log is written with the turn's other writes (:mod:`evennia_ai.attribute_writes`): one
row per line however many NPCs hear it, and it survives a reload like any Attribute. A stored
log that cannot be read is started afresh (logged): its lines are lost, nothing else is.
"""

from __future__ import annotations

from typing import Any, Callable

from evennia.objects.models import ObjectDB
from evennia.utils import logger

from evennia_ai import attribute_writes, conf
from evennia_ai.engine.bookkeeping import heard_messages, history_overflow
from evennia_ai.memory import context_buffer
from evennia_ai.npc.state import CATEGORY, AttributeState, write_attribute
from evennia_ai.npc_state import CONTEXT_BUFFER, HISTORY

#: The room Attribute holding its log (in the plugin's state category).
ROOM_LOG = "heard_lines"
TO = "to"  # an entry's key: ids of the NPCs that heard it and have not taken it yet
# room id -> (the line's identity, its text, its entry, the log's Attribute, the log, the
# room): the listeners of one line shown alike share one entry, and the next line finds the log
# without a look-up
_LAST: dict[int, tuple[Any, str, dict, Any, list, Any]] = {}
# room id -> its log list, once checked whole in this process
_CHECKED: dict[int, list] = {}
# NPC id -> ids of the rooms it heard lines in since it last took them, in order (process
# memory: a move without Evennia's hooks, or ``location`` set directly, still finds its lines
# there; after a reload they reach it when that room's log settles)
_WHERE: dict[int, dict[int, None]] = {}


#: A room's log keeps this many buffers' worth of lines (``EVENNIA_AI_CONTEXT_BUFFER_SIZE``):
#: each settling costs every listener a buffer write and a history write whatever the number
#: of lines, while each line's row grows with the log. 4 measured a little better than 2 and
#: no worse than 3 or 6 (``bench cost``, within its noise: docs/scaling.md).
LOG_BUFFERS = 4


def capacity() -> int:
    """Most lines a room's log keeps: :data:`LOG_BUFFERS` times
    ``EVENNIA_AI_CONTEXT_BUFFER_SIZE`` (at least 2)."""
    return max(2, LOG_BUFFERS * conf.get_int("EVENNIA_AI_CONTEXT_BUFFER_SIZE"))


def keep(room, npc_id: int, text: str, source: str | None = None, line: Any = None) -> None:
    """Note that NPC ``npc_id`` heard ``text`` in ``room``.

    Args:
        room: Where it was said.
        npc_id: The listener's id.
        text: The line as the room showed it to this listener (rpsystem and a game's own
            ``get_display_name`` may show it differently to each).
        source: Dbref of the speaker, if known.
        line: What identifies the line among its listeners (the floor's decision): the first
            listener adds the entry, the others shown the same text only their ids to it.
            None: an entry of its own.
    """
    rooms = _WHERE.get(npc_id)
    if rooms is None:
        rooms = _WHERE[npc_id] = {}
    rooms[room.id] = None
    last = _LAST.get(room.id)
    if last is not None and line is not None and last[0] is line and last[1] == text:
        _line, _text, shared, attr, log, _room = last
        if attr.id and attr.db_value is log and log and log[-1] is shared:  # the log's newest
            if npc_id not in shared[TO]:
                shared[TO].append(npc_id)
                attribute_writes.save_value(attr)
            return
    entry = context_buffer.entry(text, source=source, heard=True)
    if entry is None:
        return
    if last is not None and last[5] is room and last[3].id and last[3].db_value is last[4]:
        attr, log = last[3], last[4]  # the room's log as its last line left it
    else:
        attr, log = _log(room)
    if len(log) >= capacity():
        settle(room)
        attr, log = _log(room)
    shared = {**entry, TO: [npc_id]}
    if attr is None:  # the room's first: the Attribute is made with it
        attr = write_attribute(room, ROOM_LOG, [shared], CATEGORY)
        log = attr.db_value
        shared = log[-1]
    else:
        log.append(shared)
        attribute_writes.save_value(attr)
    if line is not None:
        _LAST[room.id] = (line, text, shared, attr, log, room)


def heard_in(npc) -> list:
    """The rooms other than its own where ``npc`` heard lines since it last took them (it moved
    without Evennia's move hooks), oldest first; forgotten once asked."""
    rooms = _WHERE.pop(npc.id, None) or {}
    here = getattr(npc, "location", None)
    others = [room_id for room_id in rooms if here is None or room_id != here.id]
    if not others:
        return []
    found = {obj.id: obj for obj in ObjectDB.objects.filter(id__in=others)}
    return [found[room_id] for room_id in others if room_id in found]


def take(npc, room, keep: Callable[[list[dict]], None]) -> int:
    """Hand the lines ``npc`` heard in ``room`` and has not taken yet to ``keep`` (buffer
    entries marked heard, oldest first; not called when there are none); once it returned,
    the NPC's id leaves them, and lines nobody still has to take leave the log (should
    ``keep`` raise, the log is as it was).

    Returns:
        How many lines were handed over.
    """
    if room is None:
        return 0
    attr, log = _log(room)
    me = npc.id
    mine = [e for e in log if me in e[TO]]
    if not mine:
        return 0
    keep([_as_buffer_entry(e) for e in mine])
    for item in mine:
        item[TO].remove(me)
    log[:] = [e for e in log if e[TO]]
    attribute_writes.save_value(attr)
    return len(mine)


def _as_buffer_entry(item: dict) -> dict:
    """A log entry as the context buffer keeps it (without its listeners)."""
    return {k: v for k, v in item.items() if k != TO}


def settle(room) -> None:
    """Every NPC named in ``room``'s log takes its lines (the log is full); ids of objects that
    are gone, or no longer assistants, are dropped with their lines, and so are the lines of
    an NPC that could not take them (logged): one NPC's failing state never stops the room's
    log, nor the line being said."""
    attr, log = _log(room)
    ids = {npc_id for e in log for npc_id in e[TO]}
    for npc in _objects(room, ids):
        handler = getattr(npc, "ai", None)
        take_heard = getattr(handler, "take_heard", None)
        if not callable(take_heard):
            continue
        try:
            take_heard(room)
        except Exception:
            logger.log_trace(f"evennia_ai: {npc.key} could not take the lines it heard; dropped")
    attr, log = _log(room)
    if attr is not None and log:  # whoever did not take theirs is gone
        log.clear()
        attribute_writes.save_value(attr)


def add_to_buffer(state: AttributeState, entries: list[dict], owned: bool = False) -> None:
    """Append ``entries`` to the NPC's context buffer (``state``: its state; one write); a heard
    line they push out that is not in the history yet is written there first, with every other
    one not written yet (one user message, or more when they are long: none is cut out), and
    those lines are marked written in the buffer stored. One history write per buffer's worth
    of lines heard while the NPC did not tick, and still one write of the buffer.

    ``owned``: the entries were made for this call (:meth:`AttributeState.extend`)."""
    if not entries:
        return

    def fold(kept: list[dict], dropped: list[dict]) -> list[dict]:
        lines = context_buffer.unfolded(dropped)
        if not lines:
            return kept
        lines += context_buffer.unfolded(kept)
        for message in heard_messages(lines):
            state.append(HISTORY, message, overflow=history_overflow)
        return context_buffer.all_folded(kept)  # its unwritten lines all were, just now

    size = conf.get_int("EVENNIA_AI_CONTEXT_BUFFER_SIZE")
    state.extend(CONTEXT_BUFFER, entries, size, settle=fold, owned=owned)


def pending(room) -> int:
    """Lines in ``room``'s log (for tests and status)."""
    return 0 if room is None else len(_log(room)[1])


def _objects(room, ids: set[int]) -> list:
    """The objects of ``ids``: those in ``room`` first, the others found by id."""
    found = [obj for obj in room.contents if obj.id in ids]
    missing = ids - {obj.id for obj in found}
    if missing:
        found += list(ObjectDB.objects.filter(id__in=missing))
    return found


def _log(room) -> tuple[Any, list]:
    """``room``'s log Attribute and its list (changed in place, then saved): (None, []) when
    it has none yet. A stored log is checked whole once, when first read in this process (what
    :func:`keep` adds is well-formed); one that is not a list is started afresh and entries
    that are not entries are dropped (logged)."""
    attr = room.attributes.get(ROOM_LOG, default=None, category=CATEGORY, return_obj=True)
    if attr is None or isinstance(attr, list):
        return None, []
    log = attr.db_value
    checked = _CHECKED.get(room.id)
    if checked is not None and checked is log:
        return attr, checked
    if isinstance(log, list):
        good = [e for e in log if _is_entry(e)]
        if len(good) != len(log):
            logger.log_warn(
                f"evennia_ai: {len(log) - len(good)} entries of the heard-lines log of "
                f"{room.key} ({room.dbref}) could not be read; dropped"
            )
            log[:] = good
            attribute_writes.save_value(attr)
    else:
        logger.log_warn(
            f"evennia_ai: the heard-lines log of {room.key} ({room.dbref}) could not be read; "
            "started afresh"
        )
        attr = write_attribute(room, ROOM_LOG, [], CATEGORY)
        log = attr.db_value
    _CHECKED[room.id] = log
    return attr, log


def _is_entry(item: Any) -> bool:
    """Whether ``item`` is a log entry as :func:`keep` writes it (a stored log is checked with
    this once per process: its entries then go into buffers uncopied)."""
    if not isinstance(item, dict) or item.get(context_buffer.HEARD) is not True:
        return False
    to = item.get(TO)
    return (
        isinstance(item.get("text"), str)
        and isinstance(to, list)
        and all(type(i) is int for i in to)
        and len(set(to)) == len(to)
        and all(type(item.get(k)) in (str, type(None)) for k in ("source", "ts"))
        and all(type(v) in _SCALARS for k, v in item.items() if k != TO)
    )


_SCALARS = (str, int, float, bool, type(None))
