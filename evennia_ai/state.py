"""Plain-data state of an assistant, stored in Attributes with one write per change.

Every piece of an assistant's persistent state is a plain dict or list in an Attribute of
category ``ai`` (on the character, or on its AssistantScript for goals and execution config).
:class:`AttributeState` reads a detached plain copy, lets pure code change it, and writes the
result back once, so a nested edit never re-saves the root once per mutation and a crash
mid-change leaves the previous value intact.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from evennia.utils.dbserialize import deserialize

CATEGORY = "ai"


def _plain(value: Any) -> Any:
    """Return a detached plain copy of a stored value (no _SaverDict/_SaverList)."""
    if value is None:
        return None
    try:
        return deserialize(value)
    except Exception:
        return copy.deepcopy(value)


class AttributeState:
    """Read, change and write plain values stored in an object's Attributes (category ``ai``).

    Args:
        obj: Any typeclassed entity with an ``attributes`` handler.
        defaults: Factories for keys that have a default value.
    """

    def __init__(self, obj, defaults: dict[str, Callable[[], Any]] | None = None):
        self.obj = obj
        self.defaults = defaults or {}

    def _default(self, key: str, default: Any = None) -> Any:
        factory = self.defaults.get(key)
        if factory is not None:
            return factory()
        return copy.deepcopy(default)

    def get(self, key: str, default: Any = None) -> Any:
        """Return a plain copy of ``key`` (safe to change; nothing is written)."""
        value = self.obj.attributes.get(key, default=None, category=CATEGORY)
        if value is None:
            return self._default(key, default)
        return _plain(value)

    def set(self, key: str, value: Any) -> None:
        """Write ``value`` to ``key`` (one database write)."""
        self.obj.attributes.add(key, value, category=CATEGORY)

    def has(self, key: str) -> bool:
        """Whether ``key`` is stored."""
        return self.obj.attributes.has(key, category=CATEGORY)

    def update(self, key: str, change: Callable[[Any], Any], default: Any = None) -> Any:
        """Apply ``change`` to a plain copy of ``key`` and write the result once.

        Args:
            key: Attribute key.
            change: Called with the plain copy. It returns either the new value, or a tuple
                ``(new_value, result)``; in the second form ``result`` is returned.
            default: Value used when nothing is stored yet (a registered default wins).

        Returns:
            The ``result`` part, or the new value.
        """
        current = self.get(key, default)
        out = change(current)
        if isinstance(out, tuple) and len(out) == 2:
            new_value, result = out
        else:
            new_value, result = out, out
        self.set(key, new_value)
        return result
