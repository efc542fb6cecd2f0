"""Attribute writes of one reactor turn, sent to the database together when the turn ends.

An assistant's state changes in many small writes: a player's line heard by ten NPCs is ten
event queues and ten ambient buffers; a tick's bookkeeping is a queue, a history, a trace and
the metrics. Saved one by one through Django, each is a transaction of its own (``BEGIN``,
``UPDATE``, ``COMMIT``: three round trips to the database, with the reactor waiting on each)
plus the ORM's work of building the statement. On PostgreSQL that was most of the reactor's
time in ``bench scale``.

:func:`save_value` therefore changes the Attribute in memory at once (every reader in the
process sees the new value: Evennia's Attributes are shared instances) and queues the row; at
the end of the reactor turn :func:`flush` writes every queued row in one transaction with one
statement per row, sent together. The same Attribute written twice in a turn is written once.

Nothing is lost that a per-write save would have kept: the rows are in the database before the
reactor does anything else (the next turn starts with the flush), the server's shutdown and
reload flush first (a ``before shutdown`` trigger), and a crash can only lose the writes of the
turn it interrupted, which a crash a moment earlier would have lost as well. A flush that fails
falls back to saving each Attribute on its own, logging any that still fail.

A **lazy** write (``save_value(..., lazy=True)``) does not end the turn with a batch of its own:
its row goes with the next batch anyone makes, or after :data:`LAZY_WRITE_SECONDS`. It is for
values a crash may lose because the server's start puts them right: a tick's in-flight marks on
its events (cleared on start) and its tick counter (written with any row that names the tick).
A player's line then costs two transactions (hearing it, and the tick's end), not three.

Off the reactor thread, or with no reactor running (unit tests, scripts, ``evennia shell``),
and with ``EVENNIA_AI_BATCH_WRITES = False``, every write is saved at once, as before.
"""

from __future__ import annotations

import pickle
from base64 import b64encode
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import evennia
from django.db import DatabaseError, connection, transaction
from evennia.typeclasses.attributes import Attribute
from evennia.utils import logger
from twisted.internet import reactor
from twisted.python import threadable

from evennia_ai import conf

#: Evennia's PickledObjectField pickles with protocol 4 (its ``DEFAULT_PROTOCOL``).
PICKLE_PROTOCOL = 4

# id(attr) -> (attr, the value the pickle is of, its pickle or None), in the order first written
_pending: dict[int, tuple[Attribute, Any, bytes | None]] = {}
_state: dict[str, Any] = {"call": None, "lazy": None, "trigger": None, "immediate": 0}
#: The longest a lazy write waits for a batch (a tick's own writes usually take it along).
LAZY_WRITE_SECONDS = 1.0


def batching() -> bool:
    """Whether writes made now wait for the end of the reactor turn (never inside
    :func:`immediate`)."""
    return bool(
        not _state["immediate"]
        and reactor.running
        and threadable.isInIOThread()
        and conf.get_bool("EVENNIA_AI_BATCH_WRITES")
    )


@contextmanager
def immediate() -> Iterator[None]:
    """Save every write made inside the block at once, none with the turn's batch.

    For writes that must share a transaction of their own (a trade's item, money and ledger,
    :mod:`evennia_ai.world.atomic`): a row queued for the end of the turn would be written
    after that transaction, or lost by a crash that the transaction survived. Blocks may nest.
    """
    _state["immediate"] += 1
    try:
        yield
    finally:
        _state["immediate"] -= 1


def on_reactor_thread() -> bool:
    """Whether the database may be used now: on the reactor's thread, or with no reactor
    running (tests, scripts, ``evennia shell``)."""
    return not reactor.running or threadable.isInIOThread()


def save_value(attr: Attribute, data: bytes | None = None, *, lazy: bool = False) -> None:
    """Save ``attr.db_value`` (already set in memory): now, or with this turn's other writes.

    Args:
        attr: The Attribute.
        data: The pickle of ``attr.db_value``, if the caller has it (saves pickling again).
        lazy: The row may wait for the next batch of writes, at most
            :data:`LAZY_WRITE_SECONDS`: for a value a crash may lose because the server's
            start puts it right anyway (a tick's in-flight marks, cleared on start).
    """
    queued = _pending.get(id(attr))
    if (
        queued is not None
        and data is None
        and queued[1] is attr.db_value
        and queued[2] is None
        and (lazy or _state["call"] is not None)
    ):
        return  # the same value (changed in place) is already queued for this turn's flush
    if not attr.pk or not batching():
        attr.save(update_fields=["db_value"])
        return
    _pending[id(attr)] = (attr, attr.db_value, data)
    if lazy:
        if _state["call"] is None and _state["lazy"] is None:
            _state["lazy"] = reactor.callLater(LAZY_WRITE_SECONDS, flush)
    elif _state["call"] is None:
        _state["call"] = reactor.callLater(0, flush)
    if _state["trigger"] is not reactor:  # once per reactor
        _state["trigger"] = reactor
        reactor.addSystemEventTrigger("before", "shutdown", flush)


def create_empty(obj, keys: list[str], category: str) -> None:
    """Create Attributes ``keys`` of ``category`` on ``obj``, each holding None, together.

    Two statements for any number (Evennia's ``attributes.add`` takes about four round trips
    each): for a set of slots an object will fill, such as the tick-trace ring. Keys that exist
    already are left as they are; with none missing this is a look in the handler's cache.
    """
    handler = obj.attributes
    existing = {
        attr.db_key
        for attr in handler.get(category=category, return_list=True, return_obj=True) or []
        if attr is not None
    }
    missing = [key for key in keys if key not in existing]
    if not missing:
        return
    model = obj.__dbclass__.__name__.lower()  # what Evennia's handler stores as db_model
    with transaction.atomic():
        created = Attribute.objects.bulk_create(
            [
                Attribute(
                    db_key=key,
                    db_category=category,
                    db_model=model,
                    db_attrtype=None,
                    db_lock_storage="",
                    db_value=None,
                    db_strvalue=None,
                )
                for key in missing
            ]
        )
        obj.db_attributes.add(*created)
    # The handler has "no such Attribute" cached for keys it was asked about: read them all
    # again (one query) so that no key costs a query of its own later.
    handler.reset_cache()
    handler.all()


def pending() -> int:
    """How many Attributes wait for the end of the turn."""
    return len(_pending)


def flush() -> int:
    """Write every queued Attribute now (one transaction). Returns how many were written."""
    for name in ("call", "lazy"):
        call, _state[name] = _state[name], None
        if call is not None and call.active():
            call.cancel()
    if not _pending:
        return 0
    entries = list(_pending.values())
    _pending.clear()
    attrs, rows, apart = [], [], []
    for attr, value, data in entries:
        if not attr.pk:  # deleted since
            continue
        attrs.append(attr)
        try:
            rows.append((_encoded(attr, value, data), attr.pk))
        except Exception:  # not picklable as it is: Evennia's own save says why
            apart.append(attr)
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {Attribute._meta.db_table} SET db_value = %s WHERE id = %s", rows
                )
    except DatabaseError:
        logger.log_trace("evennia_ai: a batch of Attribute writes failed; saving them one by one")
        apart = attrs
    _save_each(apart)
    _notify_monitors(attrs)
    return len(rows)


def _encoded(attr: Attribute, value: Any, data: bytes | None) -> str:
    """``db_value`` as Evennia's PickledObjectField stores it (pickled, base64).

    The field's own encoder deep-copies the value first (for lookups by value, which state
    Attributes never see): for a history or a trace that copy cost more than the write.
    """
    if data is None or attr.db_value is not value:  # changed since: pickle what is there now
        data = pickle.dumps(attr.db_value, protocol=PICKLE_PROTOCOL)
    return b64encode(data).decode()


def _save_each(attrs: list[Attribute]) -> None:
    """Save each of ``attrs`` through Evennia (after a failed batch), logging any that fail."""
    for attr in attrs:
        try:
            attr.save(update_fields=["db_value"])
        except Exception:
            logger.log_trace(f"evennia_ai: could not save Attribute {attr.db_key!r} (#{attr.pk})")


def _notify_monitors(attrs: list[Attribute]) -> None:
    """Run Evennia's monitors of ``db_value`` (what ``Attribute.save`` would have triggered)."""
    monitors = evennia.MONITOR_HANDLER
    if monitors is None or not getattr(monitors, "monitors", True):
        return  # nothing is monitored (the usual case): no per-Attribute lookups
    for attr in attrs:
        try:
            monitors.at_update(attr, "db_value")
        except Exception:
            logger.log_trace("evennia_ai: a monitor of an Attribute failed")
