"""Plain-data state of an assistant, stored in Attributes with one write per change.

Every piece of an assistant's persistent state is a plain dict or list in an Attribute of
category ``ai`` (on the character, or on its AssistantScript for goals and execution config).
:class:`AttributeState` reads a detached plain copy, lets pure code change it, and writes the
result back once, so a nested edit never re-saves the root once per mutation and a crash
mid-change leaves the previous value intact.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

from evennia_ai.utils import plain

CATEGORY = "ai"
_SCALARS = (str, int, float, bool, type(None))
_CACHE = "_evennia_ai_plain"  # where a stored value's plain copy is kept, on its Attribute


def _is_plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples and scalars (no database objects)."""
    if isinstance(value, _SCALARS):
        return True
    if depth > 50:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, _SCALARS) and _is_plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v, depth + 1) for v in value)
    return False


def _remember(attr, value: Any) -> None:
    """Keep a pickled plain copy of ``value`` on its Attribute, valid while the stored value is.

    Reading a large Attribute (history, traces) otherwise converts it twice per read (Evennia's
    unpacking, then the detached copy); a pickle round trip is several times cheaper. The copy
    is tied to the identity of the Attribute's stored value, which every write replaces.
    """
    if attr is None or not _is_plain(value):
        return
    try:
        setattr(attr, _CACHE, (attr.db_value, pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))
    except Exception:  # pragma: no cover - plain values always pickle
        pass


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

    def _attribute(self, key: str):
        return self.obj.attributes.get(key, default=None, category=CATEGORY, return_obj=True)

    def get(self, key: str, default: Any = None) -> Any:
        """Return a plain copy of ``key`` (safe to change; nothing is written)."""
        attr = self._attribute(key)
        if attr is None:
            return self._default(key, default)
        cached = getattr(attr, _CACHE, None)
        if cached is not None and cached[0] is attr.db_value:
            return pickle.loads(cached[1])
        value = attr.value
        if value is None:
            return self._default(key, default)
        value = plain(value)
        _remember(attr, value)
        return value

    def set(self, key: str, value: Any) -> None:
        """Write ``value`` to ``key`` (one database write)."""
        self.obj.attributes.add(key, value, category=CATEGORY)
        _remember(self._attribute(key), value)

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
