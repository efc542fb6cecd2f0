"""All or nothing: the writes of a trade (or a restock) in one transaction, and the repair of
Evennia's cached objects when it rolls back.

Evennia keeps one cached instance per database row (the idmapper), and Django's
``refresh_from_db`` hands that same instance back, so after a rollback the cached objects still
show what the transaction wrote. Whoever writes inside the block notes what it changed in a
:class:`Touched`, and a rollback repairs exactly those instances in place from the database.

Glue: Django's transactions and Evennia's caches.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from evennia.objects.models import ObjectDB
from evennia.typeclasses.attributes import Attribute
from evennia.utils import logger

from evennia_ai import attribute_writes


@dataclass
class Touched:
    """What the writes inside one all-or-nothing block changed, for the repair after a
    rollback. Each writer adds what it changes before it writes it.

    Attributes:
        moved: Objects whose location changes.
        holders: Their old and new locations (whose contents caches are re-read).
        attributes: The Attribute rows written.
        created: Objects created inside the block (restock spawns).
    """

    moved: list[Any] = field(default_factory=list)
    holders: set[Any] = field(default_factory=set)
    attributes: list[Any] = field(default_factory=list)
    created: list[Any] = field(default_factory=list)


@contextmanager
def all_or_nothing(touched: Touched) -> Iterator[Touched]:
    """One transaction for the writes of the block, outside the turn's batching.

    The rows other code queued this turn are written first (a repair after a rollback then
    cannot put an older row back over a newer value held in memory); inside, every Attribute
    write of the plugin is saved at once, in the transaction. On any exception the
    transaction rolls back, :func:`repair_after_rollback` puts the cached objects back as the
    database has them, and the exception goes on to the caller.

    Args:
        touched: Where the writers note what they change, before they write it.

    Yields:
        ``touched``.
    """
    attribute_writes.flush()
    with attribute_writes.immediate():
        try:
            with transaction.atomic():
                yield touched
        except BaseException:
            repair_after_rollback(touched)
            raise


def repair_after_rollback(touched: Touched) -> None:
    """Put the cached instances that ``touched`` names back as the database has them.

    Under Evennia's idmapper there is one instance per row, and ``refresh_from_db`` hands the
    same instance back, so the values written in a rolled-back transaction would stay in
    memory (an item shown in the buyer's inventory while the database has it in the shop),
    and the next save of that object would write them. This reads the rows again and sets
    the fields in place. Never raises: a repair that fails is logged and the instances are
    dropped from the idmapper as a last resort (the next look-up reads them afresh).
    """
    try:
        _repair_locations(touched)
        _repair_attributes(touched)
        for obj in touched.created:
            obj.flush_from_cache(force=True)
    except Exception:
        logger.log_trace("evennia_ai: the caches could not be repaired after a rollback")
        for obj in [*touched.moved, *touched.holders, *touched.attributes, *touched.created]:
            try:
                obj.flush_from_cache(force=True)
            except Exception:
                logger.log_trace("evennia_ai: an instance could not be flushed from the cache")


def _repair_locations(touched: Touched) -> None:
    moved = [obj for obj in touched.moved if obj.pk]
    rows = dict(
        ObjectDB.objects.filter(pk__in=[obj.pk for obj in moved]).values_list(
            "id", "db_location_id"
        )
    )
    holders = set(touched.holders)
    for obj in moved:
        location_id = rows.get(obj.pk)
        holders.add(obj.db_location)
        obj.db_location = ObjectDB.objects.get(pk=location_id) if location_id else None
        holders.add(obj.db_location)
    for holder in holders:
        if holder is not None and holder.pk:
            holder.contents_cache.init()


def _repair_attributes(touched: Touched) -> None:
    attrs = [attr for attr in touched.attributes if attr.pk]
    values = dict(
        Attribute.objects.filter(pk__in=[attr.pk for attr in attrs]).values_list("id", "db_value")
    )
    for attr in attrs:
        if attr.pk in values:
            attr.db_value = values[attr.pk]
        else:  # created inside the rolled-back block: its row is gone
            attr.flush_from_cache(force=True)
