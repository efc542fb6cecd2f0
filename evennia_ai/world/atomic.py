"""All or nothing: the writes of a trade (or a restock) in one transaction, and the repair of
Evennia's cached objects when it rolls back.

Evennia keeps one cached instance per database row (the idmapper), and Django's
``refresh_from_db`` hands that same instance back, so after a rollback the cached objects still
show what the transaction wrote. Whoever writes inside the block notes what it changed in a
:class:`Touched`, and a rollback repairs exactly those instances in place from the database.

Glue: Django's transactions and Evennia's caches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
