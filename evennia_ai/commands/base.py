"""The base of every evennia-ai admin command: usage replies, clear errors, NPC lookup.

Each admin command subclasses :class:`AICommand` and implements :meth:`AICommand.run`
instead of ``func``. Raise :class:`CommandError` with a message for the caller; any other
exception is logged with its traceback to the server log and the caller sees one sentence in
words (:func:`internal_error_text`), never the traceback nor the exception's name. Replies are
wrapped to the caller's screen width (:class:`FitsScreen`).

Example::

    class CmdAIPing(AICommand):
        '''
        Check that an AI NPC answers.

        Usage:
          aiping <npc>
        '''

        key = "aiping"

        def run(self):
            npc = self.find_npc(self.args)
            self.msg(f"{npc.key} is {'paused' if npc.ai.paused else 'running'}.")
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from evennia.utils import logger
from evennia.utils.ansi import raw
from evennia.utils.utils import class_from_module

from evennia_ai import access, screen
from evennia_ai.commands.tables import ClientTable
from evennia_ai.npc.controls import ControlError
from evennia_ai.npc.lookup import NPCMatchError, find_ai_npc

# Evennia lower-cases a help category and shows it title-cased in the help index ("AI" would
# read "-- Ai --"), so the category is words that read well that way.
HELP_CATEGORY = "Artificial Intelligence"
# Narrowest table drawn: below this a table of several columns cannot be read anyway, and
# EvTable cannot shrink columns below their borders and padding.
MIN_TABLE_WIDTH = 40
# The two command locks of the permission story (:mod:`evennia_ai.access`).
BUILDER_LOCK = access.lock(access.VIEW)
DEVELOPER_LOCK = access.lock(access.EDIT)


class CommandError(Exception):
    """A problem with the caller's input; its message is shown to the caller as is."""


# The game's base command class, as Evennia's contribs build on it (MuxCommand by default; a
# game's replacement must keep MuxCommand's parsing: switches, lhs/rhs).
COMMAND_DEFAULT_CLASS = class_from_module(settings.COMMAND_DEFAULT_CLASS)


TRUE_WORDS = ("on", "true", "yes", "1")
FALSE_WORDS = ("off", "false", "no", "0")


def parse_switch(value: str, what: str, words: str = "on or off") -> bool:
    """``on``/``true``/``yes``/``1`` -> True, ``off``/``false``/``no``/``0`` -> False (any case).

    Raises:
        CommandError: anything else, saying ``<what> must be <words>``.
    """
    lowered = str(value).strip().lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    raise CommandError(f"{what} must be {words}, not {value!r}.")


def partition_bar(text: str) -> tuple[str, str, str]:
    """``text`` split at its ``|`` separator, like :meth:`str.partition`.

    Help shows the separator as ``|``, which is what players type; ``||`` (how Evennia's markup
    writes one ``|``, and what older help showed) works too. When ``||`` is present it is the
    separator, so single ``|`` may then appear in either part. Without one: ``(text, "", "")``.
    """
    head, sep, tail = text.partition("||")
    return (head, sep, tail) if sep else text.partition("|")


class FitsScreen:
    """A command mixin: every reply's long lines are wrapped to the caller's screen width.

    Put it before the command class (``class CmdX(FitsScreen, MuxCommand)``). Every reply of
    the AI commands, also one sent later from a callback, goes through ``self.msg``, so a
    reply read at 80 columns keeps its layout (:func:`evennia_ai.screen.fit_lines`).
    """

    session: Any  # the command's session, set by Evennia's command handler

    def msg(self, text=None, *args, wrap: bool = True, **kwargs):
        """Send ``text`` as Evennia's ``Command.msg`` does, its long lines wrapped (not with
        ``wrap=False``: text the caller copies as it is, such as JSON)."""
        if wrap and isinstance(text, str):
            text = screen.fit_lines(text, screen.session_width(self.session))
        return super().msg(text, *args, **kwargs)


def internal_error_text(key: str) -> str:
    """What the caller of command ``key`` reads when it stopped on a fault of the plugin.

    A sentence in words: the exception (its class, its message, its traceback) goes to the
    server log only, under ``evennia_ai: command <key> failed``.
    """
    return (
        f"{key} stopped on an internal error: a fault in the plugin, not in what you typed. "
        f"The server log has the details (search it for 'command {key} failed')."
    )


def plain_value(value: Any, limit: int = 120) -> str:
    """A stored value as people read it: text as it is, numbers and flags as words, lists and
    dicts as JSON; never a Python repr. Cut to ``limit`` characters (an ellipsis marks the cut).
    """
    if value is None:
        text = "(none)"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (int, float)):
        text = f"{value:g}" if isinstance(value, float) else str(value)
    else:
        try:
            text = json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            text = str(value)
    text = " ".join(text.split())  # one line
    return text if len(text) <= limit else text[: max(0, limit - 3)].rstrip() + "..."


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` with Evennia's saved containers and other objects made JSON-ready."""
    if depth > 8:
        return "..."
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v, depth + 1) for k, v in dict(value.items()).items()}
    if isinstance(value, (list, tuple, set, frozenset)) or (
        hasattr(value, "__iter__") and not isinstance(value, (str, bytes))
    ):
        return [_plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class AICommand(FitsScreen, COMMAND_DEFAULT_CLASS):
    """Base of the AI admin commands (help category ``Artificial Intelligence``, Builder lock).

    Subclasses implement :meth:`run`. Class attributes:

    - ``switch_options``: the switches the command accepts; any other is refused clearly.
    - ``needs_args``: when True (default), a call with neither arguments nor switches replies
      with the usage section of the docstring.
    """

    help_category = HELP_CATEGORY
    locks = BUILDER_LOCK
    switch_options: tuple[str, ...] = ()
    needs_args = True

    # -- entry point ---------------------------------------------------------------------------
    def parse(self):
        """MuxCommand's parsing, but an unknown or ambiguous switch is refused, not dropped.

        MuxCommand ignores a switch it does not know and runs the command without it, which
        for an admin command means doing something other than what was asked. Here a unique
        prefix still selects its switch (``/del`` for ``/delete``).
        """
        self.switch_options = None  # MuxCommand keeps every switch as typed
        try:
            super().parse()
        finally:
            del self.switch_options  # back to the class's tuple
        self.switch_error = ""
        valid = [option.lower() for option in type(self).switch_options]
        resolved = []
        for typed in self.switches:
            typed = typed.lower()
            matches = [option for option in valid if option == typed] or [
                option for option in valid if option.startswith(typed)
            ]
            if len(matches) == 1:
                resolved.append(matches[0])
            elif not self.switch_error:
                listed = ", ".join("/" + option for option in (matches or valid)) or "(none)"
                what = "Ambiguous" if matches else "Unknown"
                self.switch_error = f"{what} switch /{typed}. " + (
                    f"Did you mean {listed}?" if matches else f"Valid: {listed}."
                )
        self.switches = resolved

    def func(self):
        try:
            if getattr(self, "switch_error", ""):
                raise CommandError(self.switch_error + "\n" + self.usage())
            if self.needs_args and not self.args.strip() and not self.switches:
                self.msg(self.usage())
                return
            self.run()
        except CommandError as err:
            self.msg(f"|r{err}|n")
        except ControlError as err:  # plain text, maybe quoting what the caller typed
            self.msg(f"|r{raw(str(err))}|n")
        except Exception:  # never a traceback (nor an exception's name) to the caller
            logger.log_trace(f"evennia_ai: command {self.key} failed")
            self.msg(f"|r{internal_error_text(self.key)}|n")

    def run(self):  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    # -- replies -------------------------------------------------------------------------------
    def usage(self) -> str:
        """The ``Usage:`` section of the command's docstring (its in-game help)."""
        doc = (self.__doc__ or "").strip("\n")
        match = re.search(r"^\s*Usage:\s*\n(.*?)(?:\n\s*\n|\Z)", doc, re.S | re.M)
        body = match.group(1) if match else doc
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        return "Usage:\n  " + "\n  ".join(lines) + f"\n(See |whelp {self.key}|n for details.)"

    def table(self, *headers: str, keep: tuple[int, ...] = (), **kwargs) -> ClientTable:
        """A table in Evennia's own style (``styled_table``) that fits the caller's client.

        When printed, its columns are sized to the client's screen width (``client_width()``;
        the game's ``CLIENT_DEFAULT_WIDTH`` when the client does not say): narrow columns keep
        their width, long cells wrap. Every table of the AI commands is made here.

        Args:
            *headers: The column headers.
            keep: Indexes of columns that should not wrap (ids and keys the caller copies).
            **kwargs: Other EvTable options.
        """
        width = max(MIN_TABLE_WIDTH, int(self.client_width() or settings.CLIENT_DEFAULT_WIDTH))
        return ClientTable(self.styled_table(*headers, **kwargs), headers, width, keep)

    def switch(self) -> str | None:
        """The first switch given, or None."""
        return self.switches[0] if self.switches else None

    # -- argument helpers ----------------------------------------------------------------------
    def find_npc(self, name: str):
        """The AI NPC called ``name`` (a key, alias or #dbref), searched globally.

        Raises:
            CommandError: no AI NPC, or several, match.
        """

        try:
            return find_ai_npc(name, caller=self.caller)
        except NPCMatchError as err:
            raise CommandError(str(err)) from None

    @staticmethod
    def parse_json(text: str, what: str = "JSON") -> Any:
        """Parse ``text`` as JSON or raise a :class:`CommandError` saying where it broke."""
        try:
            return json.loads(text)
        except (TypeError, ValueError) as err:
            raise CommandError(f"Invalid {what}: {err}.") from None
        except RecursionError:
            raise CommandError(f"Invalid {what}: nested too deeply.") from None

    @staticmethod
    def parse_int(
        text: str, what: str, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        """``text`` as an int within bounds, or a :class:`CommandError` naming ``what``."""
        try:
            value = int(str(text).strip().lstrip("#"))
        except (TypeError, ValueError):
            raise CommandError(f"{what} must be a whole number, not {text!r}.") from None
        if minimum is not None and value < minimum:
            raise CommandError(f"{what} must be at least {minimum}.")
        if maximum is not None and value > maximum:
            raise CommandError(f"{what} must be at most {maximum}.")
        return value

    def require_perm(self, permission: str, action: str) -> None:
        """Refuse unless the caller has ``permission``: ``Only Developers may <action>.``

        For switches that change what a Builder may only view (the command's lock lets both in).
        """
        if not access.passes(self.caller, permission):
            raise CommandError(access.refusal(permission, action))

    def require(self, value: str, what: str) -> str:
        """``value`` stripped, or a :class:`CommandError` asking for ``what`` with the usage."""
        value = (value or "").strip()
        if not value:
            raise CommandError(f"Missing {what}.\n" + self.usage())
        return value


class SwitchedCommand(AICommand):
    """An AICommand dispatching to ``do_<switch>`` (``do_default`` without a switch)."""

    def run(self):
        handler = getattr(self, f"do_{self.switch() or 'default'}")
        handler()

    def npc_and_rhs(self, what: str) -> tuple[Any, str]:
        """The NPC named left of ``=`` and the text right of it (required)."""
        if self.rhs is None:
            raise CommandError(f"Missing '= {what}'.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        return npc, self.require(self.rhs, what)
