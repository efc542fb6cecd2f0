"""Plain-data state of an assistant, stored in Attributes with one write per change.

Every piece of an assistant's persistent state is a plain dict or list in an Attribute of
category ``ai`` (on the character, or on its AssistantScript for goals and execution config),
declared once in :mod:`evennia_ai.npc.state_keys`. :class:`AttributeState` reads a detached
plain copy, lets pure code change it, and writes the result back once, so a nested edit never
re-saves the root once per mutation and a crash mid-change leaves the previous value intact.

A value is checked against its declared shape when it is written (a wrong one is refused with
a ValueError naming the key and the problem, and nothing is stored) and when it is read from the
database (a value stored by an older layout, a hand edit or a bug). One that fails on reading is
set aside (category ``ai_quarantine``, with the problem and the time), logged once, and online
staff are told once. Meanwhile the key reads as its **strictest safe value** if it restricts the
NPC (``StateKey.strict``: a set-aside tool list leaves the conversation tools only, a set-aside
budget is zero, a set-aside operator prompt stops the NPC's model calls), else as its default.
An operator sees the value with ``aistatus`` (Developers only, for Developer-only keys) and puts
it back (``aistatus/restore``) or drops it (``aistatus/discard``); storing a new value ends the
fallback too.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, Callable, Mapping

from evennia.utils import logger
from evennia.utils.dbserialize import to_pickle

from evennia_ai import attribute_writes
from evennia_ai.engine import notices
from evennia_ai.npc.state_keys import StateKey, shape_problem
from evennia_ai.npc_state import QUARANTINE_CATEGORY, STATE_CATEGORY
from evennia_ai.utils import iso_utc, log_prefix, one_line, plain

CATEGORY = STATE_CATEGORY
#: What a value set aside shows in place of a Developer-only value, below Developer.
REDACTED = "[redacted: Developers only]"
_CACHE = "_evennia_ai_plain"  # where a stored value's plain copy is kept, on its Attribute


class _NotPlain(Exception):
    """Raised by :class:`_PlainPickler` at the first object that is not plain data."""


class _PlainPickler(pickle.Pickler):
    """A pickler that refuses anything but plain data, in the same pass as it pickles.

    The C pickler consults ``reducer_override`` for every object except None, booleans and
    exact ints, floats, strings, bytes, dicts, lists, tuples, sets and frozensets: anything
    else (a database object, a subclass such as Evennia's ``_SaverDict``) stops it, and the
    caller lets Evennia pack the value instead.
    """

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain(type(obj).__name__)


def _pickled(value: Any) -> bytes | None:
    """The pickle of ``value`` if it holds only plain data (dicts, lists, tuples, sets and
    scalars: no database objects, no subclasses, which Evennia's ``to_pickle`` may store
    differently), else None: Evennia must pack it. One pass, in C."""
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, attribute_writes.PICKLE_PROTOCOL).dump(value)
    except (_NotPlain, RecursionError):
        return None
    return buffer.getvalue()


_SCALARS = frozenset({str, int, float, bool, type(None)})
_ANY_OBJECT = {"type": "object"}  # an item schema any dict fits


def _plain_copy(item: Any) -> Any:
    """A copy of plain ``item`` that shares nothing changeable with it, or None if it is not
    plain data. A flat dict of scalars (a buffer's line) is copied as a dict, anything else
    by a pickle round trip."""
    if type(item) is dict and all(type(v) in _SCALARS for v in item.values()):
        if all(type(k) is str for k in item):
            return dict(item)
    data = _pickled(item)
    return None if data is None else pickle.loads(data)


def _as_list(value: Any) -> list:
    """``value`` if it is a list, else a new empty one (a fallback that is not a list)."""
    return value if isinstance(value, list) else []


def _remember(attr, data: bytes) -> None:
    """Keep ``data``, the pickle of ``attr``'s plain value, valid while the stored value is.

    Reading a large Attribute (history, traces) otherwise converts it twice per read (Evennia's
    unpacking, then the detached copy); a pickle round trip is several times cheaper. The copy
    is tied to the identity of the Attribute's stored value, which every write replaces.
    """
    setattr(attr, _CACHE, (attr.db_value, data))


def write_attribute(obj, key: str, value: Any, category: str, *, lazy: bool = False):
    """Store ``value`` in ``obj``'s Attribute ``key``/``category`` with one database write.

    Evennia's ``attributes.add`` saves an existing Attribute twice (its value setter saves
    ``db_value``, then ``update_attribute`` saves ``db_value`` and ``db_strvalue`` again): two
    serialisations and two UPDATEs per change. This writes the value as the setter does, once,
    and a plain value (dicts, lists, scalars) is copied by one pickle rather than by Evennia's
    ``to_pickle`` walk; the pickle is kept for reads and for the write itself. Evennia's
    monitors still run. On the reactor thread of a running server the row is sent with the
    turn's other writes when the turn ends (:mod:`evennia_ai.attribute_writes`); the new
    value is in the Attribute at once. A new Attribute is created by Evennia, empty, then
    written the same way.

    ``lazy``: the row may wait for the next batch of writes (see
    :func:`evennia_ai.attribute_writes.save_value`).

    Returns:
        The Attribute.
    """
    attr = obj.attributes.get(key, default=None, category=category, return_obj=True)
    data = _pickled(value)
    if attr is None or isinstance(attr, list):
        if data is None:
            obj.attributes.add(key, value, category=category)
            return obj.attributes.get(key, default=None, category=category, return_obj=True)
        # Created empty (Evennia would copy and walk the value twice), then written as below.
        obj.attributes.add(key, None, category=category)
        attr = obj.attributes.get(key, default=None, category=category, return_obj=True)
    _store(attr, to_pickle(value) if data is None else pickle.loads(data), data, lazy)
    return attr


def _store(attr, value: Any, data: bytes | None, lazy: bool = False) -> None:
    """Put ``value`` (detached from the caller's objects) in ``attr`` and save it: at once, or
    with the turn's other writes. ``data``: its pickle, when it is plain data."""
    attr.db_value = value
    if data is not None:
        _remember(attr, data)
    if attr.db_strvalue is not None:  # was a string Attribute: clear it as Evennia would
        attr.db_strvalue = None
        attr.save(update_fields=["db_value", "db_strvalue"])
    else:
        attribute_writes.save_value(attr, data, lazy=lazy)  # at once, or batched


class AttributeState:
    """Read, change and write the declared plain values in an object's Attributes.

    Args:
        obj: Any typeclassed entity with an ``attributes`` handler (the NPC or its Script).
        keys: The declared keys of ``obj`` (:data:`~evennia_ai.npc.state_keys.CHARACTER_STATE`
            or :data:`~evennia_ai.npc.state_keys.SCRIPT_STATE`).
        npc: The NPC the state belongs to (``obj`` itself unless it is the NPC's Script).
        prefix: How keys are named to people (``"script."`` for the Script's).
    """

    def __init__(self, obj, keys: Mapping[str, StateKey], npc=None, prefix: str = ""):
        self.obj = obj
        self.keys = keys
        self.npc = npc if npc is not None else obj
        self.prefix = prefix

    def declared(self, key: str) -> StateKey:
        """The declaration of ``key``.

        Raises:
            KeyError: ``key`` is not declared (a typo, or state that belongs elsewhere).
        """
        try:
            return self.keys[key]
        except KeyError:
            raise KeyError(
                f"'{key}' is not declared state of {self.obj.key}; declared: "
                + ", ".join(self.keys)
            ) from None

    def _attribute(self, key: str):
        """``key``'s Attribute, or None: what ``attributes.get(..., return_obj=True)`` returns.

        An Attribute in the handler's cache is taken from it directly, as Evennia's look-up
        would take it (its cache is kept by every add, remove and clear), without that
        look-up's argument handling: the state of every NPC that hears a line is read several
        times per line. Anything else (nothing cached, a key the cache spells otherwise, an
        Attribute deleted from elsewhere) goes through Evennia's look-up.
        """
        handler = self.obj.attributes
        cache = getattr(getattr(handler, "backend", None), "_cache", None)
        if type(cache) is dict:
            attr = cache.get(f"{key}-{CATEGORY}")
            if attr is not None and attr.id is not None and attr.db_key == key:
                return attr
        return handler.get(key, default=None, category=CATEGORY, return_obj=True)

    def get(self, key: str) -> Any:
        """Return a plain copy of ``key`` (safe to change; nothing is written).

        A stored value of the wrong shape is set aside; while one is, the key reads as its
        strictest safe value (``StateKey.fallback``).
        """
        declared = self.declared(key)
        attr = self._attribute(key)
        if attr is None:
            return self._unstored(declared)
        cached = getattr(attr, _CACHE, None)
        if cached is not None and cached[0] is attr.db_value:
            if type(cached[0]) in _SCALARS:  # nothing to change in it: no copy needed
                return cached[0]
            return pickle.loads(cached[1])
        value = attr.value
        if value is None:
            return declared.default()
        value = plain(value)
        problem = shape_problem(value, declared.schema, key)
        if problem:
            self._keep_aside(declared, value, problem)
            return declared.fallback(value)
        data = _pickled(value)
        if data is not None:
            _remember(attr, data)
        return value

    def _unstored(self, declared: StateKey) -> Any:
        """The value of a key with nothing stored: its fallback while a value is set aside."""
        if declared.strict is None:
            return declared.default()
        kept = self.kept(declared.name)
        return declared.default() if kept is None else declared.fallback(kept.get("value"))

    def set(self, key: str, value: Any, *, lazy: bool = False) -> None:
        """Write ``value`` to ``key`` (one database write; ``lazy``: the row may wait for the
        next batch of writes, for a value the server's start puts right after a crash).

        Raises:
            ValueError: ``value`` does not fit the key's declared shape; nothing is written.
        """
        declared = self.declared(key)
        problem = shape_problem(value, declared.schema, key)
        if problem:
            raise ValueError(f"'{self.prefix}{key}' of {self.npc.key} was not stored: {problem}.")
        write_attribute(self.obj, key, value, CATEGORY, lazy=lazy)

    def append(
        self,
        key: str,
        item: Any,
        max_items: int | None = None,
        *,
        overflow: Callable[[list], int] | None = None,
        settle: Callable[[list, list], list] | None = None,
    ) -> list:
        """Add ``item`` at the end of the list stored in ``key``: :meth:`extend` with one item."""
        return self.extend(key, [item], max_items, overflow=overflow, settle=settle)

    def extend(
        self,
        key: str,
        items: list,
        max_items: int | None = None,
        *,
        overflow: Callable[[list], int] | None = None,
        settle: Callable[[list, list], list] | None = None,
        owned: bool = False,
    ) -> list:
        """Add ``items`` at the end of the list stored in ``key``, keeping its newest
        ``max_items`` entries (one write, with the turn's other writes when batching).

        Only ``items`` are checked against the key's declared shape (its ``items``): the stored
        entries passed their check when they were written or read. This makes a line heard by
        many NPCs cheap for each (:meth:`evennia_ai.npc.handler.AIHandler.hear`); :meth:`set`
        checks the whole list every time. A value not read since it was loaded, a value of the
        wrong shape, or one set aside (the key reads as its fallback) takes the checked path
        (:meth:`update`), so an unreadable value is still set aside and never appended to.

        Args:
            key: A declared key holding a list.
            items: The new entries (plain data), oldest first.
            max_items: Most entries kept, oldest out first (at least 1); None keeps all.
            overflow: Instead of ``max_items``: given the list with ``items`` added (not to be
                changed), how many of its oldest entries to drop (a history drops whole
                batches).
            settle: Given the entries kept (``items`` last) and those that fell out (neither to
                be changed), the list to store instead, before anything is written (a context
                buffer marks lines written elsewhere). A list other than the one given is
                checked whole.
            owned: ``items`` are new flat dicts of plain values that nothing else holds (made
                for this call): stored as they are, not copied.

        Returns:
            The entries that fell out, oldest first.

        Raises:
            ValueError: an item does not fit the key's shape, or ``max_items`` is below 1
                (nothing is written).
            TypeError: ``key`` does not hold a list.
        """
        declared = self.declared(key)
        if declared.schema.get("type") != "array":
            raise TypeError(f"'{self.prefix}{key}' does not hold a list: nothing can be appended.")
        if max_items is not None and max_items < 1:
            raise ValueError(f"'{self.prefix}{key}' must keep at least 1 entry, not {max_items}.")

        def cut(entries: list) -> tuple[list, list]:  # (kept, dropped)
            count = overflow(entries) if overflow else len(entries) - (max_items or len(entries))
            kept, dropped = (entries[count:], entries[:count]) if count > 0 else (entries, [])
            return (settle(kept, dropped) if settle else kept), dropped

        attr = self._attribute(key)
        cached = getattr(attr, _CACHE, None) if attr is not None else None
        stored = attr.db_value if cached is not None else None
        copies = list(items) if owned else [_plain_copy(item) for item in items]
        if (
            cached is None
            or cached[0] is not stored
            or type(stored) is not list
            or any(copy is None for copy in copies)
        ):
            # not read since it was loaded, set aside, not a list, or not plain data: checked
            return self.update(key, lambda entries: cut([*_as_list(entries), *items]))
        # ``stored`` is the plain value this module wrote or read (checked then): no caller
        # holds it, and only the new entries need a check.
        schema = declared.schema.get("items") or {}
        any_object = schema == _ANY_OBJECT  # a flat dict (copied above) fits it: no check
        for number, item in enumerate(items, len(stored)):
            if any_object and type(item) is dict:
                continue
            problem = shape_problem(item, schema, f"{key}[{number}]")
            if problem:
                raise ValueError(
                    f"'{self.prefix}{key}' of {self.npc.key} was not stored: {problem}."
                )
        added = [*stored, *copies]  # a new list: the stored one keys the cache
        count = overflow(added) if overflow else len(added) - (max_items or len(added))
        kept, dropped = (added[count:], added[:count]) if count > 0 else (added, [])
        entries = settle(kept, dropped) if settle else kept
        if entries is not kept:  # settled anew: checked whole, and shared with nobody
            whole = any_object and all(type(e) is dict for e in entries)
            problem = None if whole else shape_problem(entries, declared.schema, key)
            if problem:
                raise ValueError(
                    f"'{self.prefix}{key}' of {self.npc.key} was not stored: {problem}."
                )
            data = _pickled(entries)
            if data is None:
                raise ValueError(
                    f"'{self.prefix}{key}' of {self.npc.key} was not stored: "
                    "it is not plain data."
                )
            _store(attr, pickle.loads(data), data)
            return dropped
        _store(attr, entries, _pickled(entries))
        return dropped

    def has(self, key: str) -> bool:
        """Whether ``key`` is stored."""
        return self.obj.attributes.has(self.declared(key).name, category=CATEGORY)

    def update(self, key: str, change: Callable[[Any], Any]) -> Any:
        """Apply ``change`` to a plain copy of ``key`` and write the result once.

        Args:
            key: A declared key.
            change: Called with the plain copy. It returns either the new value, or a tuple
                ``(new_value, result)``; in the second form ``result`` is returned.

        Returns:
            The ``result`` part, or the new value.

        Raises:
            ValueError: the new value does not fit the key's declared shape (nothing written).
        """
        out = change(self.get(key))
        if isinstance(out, tuple) and len(out) == 2:
            new_value, result = out
        else:
            new_value, result = out, out
        self.set(key, new_value)
        return result

    # -- values kept aside -----------------------------------------------------------------------
    def kept(self, key: str) -> dict | None:
        """What is set aside for ``key`` (``{"value", "problem", "time"}``), or None."""
        kept = self.obj.attributes.get(key, default=None, category=QUARANTINE_CATEGORY)
        return plain(kept) if isinstance(kept, Mapping) else None

    def in_fallback(self, key: str) -> bool:
        """Whether ``key`` reads as its fallback: a value is set aside and none stored since."""
        return self.kept(key) is not None and not self.has(key)

    def _keep_aside(self, declared: StateKey, value: Any, problem: str) -> None:
        """Set an invalid stored value aside (one log line, one notice to online staff)."""
        key = declared.name
        self.obj.attributes.add(
            key,
            {"value": value, "problem": problem, "time": iso_utc()},
            category=QUARANTINE_CATEGORY,
        )
        self.obj.attributes.remove(key, category=CATEGORY)
        meanwhile = fallback_text(declared)
        logger.log_warn(
            f"{log_prefix(self.npc)}: stored '{self.prefix}{key}' set aside: "
            f"{one_line(problem, 200)}; {meanwhile} (see it with aistatus; put it back with "
            "aistatus/restore or drop it with aistatus/discard)"
        )
        notices.announce_set_aside(self.npc, self.prefix + key, problem, meanwhile)

    def quarantined(self, check: bool = True, reveal: bool = False) -> dict[str, dict]:
        """Values set aside, by key: ``{"value", "problem", "time", "in_force"}``.

        Args:
            check: Read every stored key first, so a bad value not read yet is found too
                (``aistatus <npc>``); False lists what is already kept aside (status
                summaries of many NPCs, where reading every key of each would cost).
            reveal: Include the values of Developer-only keys. Without it their ``value`` is
                :data:`REDACTED` and ``redacted`` is True: only show them to Developers.

        ``in_force`` says what the key reads as meanwhile (its fallback), or that a value was
        stored since.
        """
        for key in self.keys if check else ():
            if self.obj.attributes.has(key, category=CATEGORY):
                self.get(key)
        stored = self.obj.attributes.get(
            category=QUARANTINE_CATEGORY, return_list=True, return_obj=True
        )
        found = {}
        for attr in stored or []:
            if attr is None or not isinstance(attr.value, Mapping):
                continue
            entry = plain(attr.value)
            declared = self.keys.get(attr.key)
            if declared is not None and declared.developer_only:
                entry["developer_only"] = True
                if not reveal:
                    entry["value"], entry["redacted"] = REDACTED, True
            entry["in_force"] = (
                "a value stored since"
                if self.obj.attributes.has(attr.key, category=CATEGORY)
                else fallback_text(declared)
            )
            found[attr.key] = entry
        return found

    def restore(self, key: str, value: Any = None) -> Any:
        """Put the value kept aside for ``key`` back (or ``value`` instead), if it is valid now.

        Returns:
            The restored value.

        Raises:
            KeyError: nothing is kept aside for ``key`` and no ``value`` is given.
            ValueError: the value still does not fit; the message says why.
        """
        declared = self.declared(key)
        kept = self.kept(key)
        if value is None:
            if kept is None:
                raise KeyError(f"Nothing of '{key}' is kept aside.")
            value = kept.get("value")
        problem = shape_problem(value, declared.schema, key)
        if problem:
            raise ValueError(problem)
        self.set(key, value)
        self.obj.attributes.remove(key, category=QUARANTINE_CATEGORY)
        return value

    def discard(self, key: str) -> bool:
        """Forget the value kept aside for ``key``; whether there was one."""
        self.declared(key)
        if not self.obj.attributes.has(key, category=QUARANTINE_CATEGORY):
            return False
        self.obj.attributes.remove(key, category=QUARANTINE_CATEGORY)
        return True


def fallback_text(declared: StateKey | None) -> str:
    """What a key reads as while a value of it is set aside, in words."""
    if declared is None:
        return "no longer declared"
    if declared.holds:
        return "the NPC calls no model until staff restore, discard or replace it"
    if declared.denies is not None:
        return "no rules, and the tools they covered are denied"
    if declared.strict is not None:
        return "its strictest safe value is used"
    return "its default is used"
