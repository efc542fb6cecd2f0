"""The game's objects as the NPCs meet them: found by name, told apart, heard while they act.

- :func:`find_among` finds a thing or a person by name the way a player's search would (key,
  alias or a unique part of the name; an exact name wins among several), and says in words what
  there is when nothing or several match.
- :func:`is_character` and :func:`is_player` tell characters and played characters apart.
- :func:`capture_messages` records what the game's hooks say to an object inside a block ("You
  cannot go there."), so a tool or a walk can hand the reason on; :func:`plain_text` is such a
  message without Evennia's markup.

The world tools (:mod:`evennia_ai.tools.world`) use them under the same names; the modules of
this package use them without importing ``tools``.

Glue: Evennia's markup and typeclass helpers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from evennia.utils.ansi import raw, strip_ansi, strip_mxp
from evennia.utils.utils import inherits_from

CHARACTER_TYPECLASS = "evennia.objects.objects.DefaultCharacter"


def plain_text(text: object) -> str:
    """Evennia markup (colour, MXP links) stripped from ``text``."""
    if text is None:
        return ""
    return str(strip_ansi(strip_mxp(str(text)))).strip()


def _text_of(text: object) -> str:
    """The text part of a ``msg(text=...)`` argument (a string or a ``(text, options)`` tuple)."""
    if isinstance(text, (tuple, list)):
        text = text[0] if text else ""
    return plain_text(text)


@contextlib.contextmanager
def capture_messages(obj: Any) -> Iterator[list[str]]:
    """Record, as plain strings, everything sent to ``obj.msg`` inside the block.

    Messages still reach ``obj`` as usual (its ``at_msg_receive`` and any session); the capture
    only listens. Works on the one cached instance Evennia keeps per database object.

    Example:
        with capture_messages(npc) as said:
            exit_obj.at_failed_traverse(npc)
        reason = " ".join(said)
    """
    captured: list[str] = []
    had_own = "msg" in obj.__dict__
    own = obj.__dict__.get("msg")
    original = obj.msg

    def recording_msg(text: Any = None, *args: Any, **kwargs: Any) -> Any:
        plain = _text_of(text)
        if plain:
            captured.append(plain)
        return original(text, *args, **kwargs)

    obj.msg = recording_msg
    try:
        yield captured
    finally:
        if had_own:
            obj.msg = own
        else:
            obj.__dict__.pop("msg", None)


def is_character(obj: Any) -> bool:
    """Whether ``obj`` is a character (player-controlled or not)."""
    return bool(obj) and bool(inherits_from(obj, CHARACTER_TYPECLASS))


def is_player(obj: Any) -> bool:
    """Whether a character is played by an account (connected or linked)."""
    return bool(obj.has_account or getattr(obj, "account", None))


def _names(objs: Any) -> list[str]:
    return [obj.key for obj in objs]


def _listing(names: list[str], empty: str = "nothing", limit: int = 20) -> str:
    if not names:
        return empty
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _exact_matches(results: list[Any], name: str) -> list[Any]:
    lowered = name.strip().lower()
    exact = []
    for obj in results:
        aliases = [a.lower() for a in obj.aliases.all()]
        if obj.key.lower() == lowered or lowered in aliases:
            exact.append(obj)
    return exact


def find_among(
    npc: Any, name: str, candidates: list[Any], *, what: str, label: str = "You see"
) -> tuple[object | None, str | None]:
    """Find ``name`` among ``candidates`` the way a player's search would.

    Args:
        npc: The searching character.
        name: What the model called it (key, alias or a unique part of the name).
        candidates: Objects the search may return.
        what: Phrase for errors, e.g. "here" or "in your inventory".
        label: Introduces the list of what there is, in the not-found error.

    Returns:
        ``(obj, None)`` on a unique match, else ``(None, error)`` naming what there is.
    """
    name = (name or "").strip()
    if not name:
        return None, "No name given."
    if not candidates:
        return None, f"There is nothing {what}."
    results = [
        obj
        for obj in npc.search(name, candidates=candidates, quiet=True) or []
        if obj in candidates
    ]
    if len(results) > 1:
        results = _exact_matches(results, name) or results
    if len(results) == 1:
        return results[0], None
    if not results:
        present = _listing(_names(_visible(npc, candidates)))
        return None, f"There is no '{name}' {what}. {label}: {present}."
    options = ", ".join(f"{obj.key} ({obj.dbref})" for obj in results)
    return None, f"'{name}' could mean: {options}. Use a more specific name."


def _visible(npc: Any, objs: Any) -> list[Any]:
    return [obj for obj in objs if obj != npc and obj.access(npc, "view", default=True)]


def escape_inline_functions(text: str) -> str:
    """``text`` with every ``$`` escaped when the game parses outgoing text for inline
    functions (``FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED``), so no ``$func()`` in it runs;
    unchanged otherwise (an escape would then show as a backslash)."""
    if getattr(settings, "FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED", False):
        return text.replace("$", "\\$")
    return text


def as_shown(text: object) -> str:
    """A name a player chose (an item's, a character's) as a message shows it to players: its
    colour codes and inline functions shown as written, never run."""
    return escape_inline_functions(raw(str(text)))


def for_room(text: str) -> str:
    """Text for ``msg_contents``, which fills ``{...}`` from its mapping: braces kept as
    written."""
    return text.replace("{", "{{").replace("}", "}}")
