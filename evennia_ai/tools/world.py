"""World tools: how an assistant speaks and acts in the game, as its own character.

Every tool acts *as the NPC* through the same hooks the default commands use, so players see
exactly what they would see if a player's character did the same thing, and every lock the
game sets applies to the NPC as it would to anyone else:

- speech (TERMINAL): ``say``, ``emote``, ``whisper`` and ``page``. NPCs have no account, so
  ``page`` sends a private message straight to a character anywhere in the game. None of them
  repeats a whisper the NPC received to anyone but its whisperer (:mod:`evennia_ai.tools.safety`);
- acting (SAFE_CHAIN): ``move`` through an exit, ``look``, ``inspect_location`` (structured,
  cached per tick), ``get``, ``give`` and ``drop``;
- DANGEROUS: ``execute_command`` (any command in the NPC's own cmdsets, bounded by its own
  permissions; it has no account, so account commands such as ``page`` or ``ooc`` do not
  exist for it; never on Attributes of category ``ai``) and ``set_attribute`` (only on objects the NPC itself may ``control`` or
  ``edit``, as Evennia's ``set`` command checks; never category ``ai``). Both refuse to run
  while an account puppets the NPC, because the account's permissions would then apply.

What the hooks say to the NPC while a tool runs ("You cannot go there.") is captured with
:func:`capture_messages` and handed back to the model as the tool's error or output. It and the
other helpers that find things and people (:func:`find_among`, :func:`is_character`,
:func:`is_player`, :func:`plain_text`) live in :mod:`evennia_ai.world.objects`, and are
imported here under the same names.
"""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.utils.translation import gettext as _
from evennia.utils.ansi import strip_ansi, strip_mxp
from evennia.utils.search import search_object

from evennia_ai import conf
from evennia_ai.tools.base import TEXT, Tool, ToolCategory, ToolContext, ToolResult, object_schema
from evennia_ai.tools.registry import register_tool
from evennia_ai.tools.safety import ai_state_kept, check_speech, note_spoken
from evennia_ai.utils import clean_text, is_assistant, truncate
from evennia_ai.wording import EMPTY_TOOL_OUTPUT
from evennia_ai.world import paths
from evennia_ai.world.objects import (  # noqa: F401  (re-exported: their old home)
    CHARACTER_TYPECLASS,
    _exact_matches,
    _listing,
    _names,
    _text_of,
    _visible,
    capture_messages,
    escape_inline_functions,
    find_among,
    for_room,
    is_character,
    is_player,
    plain_text,
)
from evennia_ai.world.stock import give_free, give_refusal, is_free_gift

MAX_MESSAGE_LENGTH = 2000
LOOK_LIMIT = 3000
COMMAND_OUTPUT_LIMIT = 3000
MAX_VALUE_JSON_LENGTH = 10000
PROTECTED_CATEGORIES = frozenset({"ai"})
# Tools whose cached answers describe the NPC's surroundings; moving things invalidates them.
VIEW_TOOLS = frozenset({"inspect_location"})

_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# ``obj/attr:category`` naming a protected category, as ``set``, ``wipe`` and friends take it.
_PROTECTED_ATTRIBUTE_REF = re.compile(
    r"/[^=]*?:\s*(?:" + "|".join(map(re.escape, sorted(PROTECTED_CATEGORIES))) + r")\b", re.I
)
_NOT_AVAILABLE = re.compile(r"^Command '.*?' is not available", re.M)
_UNTRAPPED = "An untrapped error occurred"
_SENTENCE_END = tuple(".!?\"')…")

_MESSAGE_SCHEMA = {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_LENGTH}


# -- helpers -------------------------------------------------------------------------------------
def _check_message(text: str, what: str = "message") -> str | None:
    """An error when ``text`` is blank; None when it can be spoken."""
    if not isinstance(text, str) or not text.strip():
        return f"The {what} is empty; say something."
    return None


_LAYOUT_CODES = re.compile(r"\|[/\-_>]")  # Evennia's line break, tab, space and indent codes


def inert(text: str) -> str:
    """Model-written text made safe to show players: it can only be read, never run.

    Escape and control characters, MXP links and Evennia's line-break and tab codes are
    removed and the text is kept on one line; colour codes stay unless
    ``EVENNIA_AI_OUTPUT_STRIP_COLOUR``. When the game parses outgoing text for inline functions
    (``FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED``), every ``$`` is escaped so no ``$func()``
    in it runs. At most ``EVENNIA_AI_MAX_OUTPUT_CHARS`` characters.
    """
    return inert_cut(text)[0]


def inert_cut(text: str) -> tuple[str, bool]:
    """:func:`inert` ``text``, and whether it was cut at ``EVENNIA_AI_MAX_OUTPUT_CHARS``."""
    text = strip_mxp(clean_text(text))
    text = " ".join(_LAYOUT_CODES.sub(" ", text).split())
    if conf.get_bool("EVENNIA_AI_OUTPUT_STRIP_COLOUR"):
        text = strip_ansi(text)
    limit = conf.get_int("EVENNIA_AI_MAX_OUTPUT_CHARS")
    cut = len(text) > limit
    if cut:
        text = text[: limit - 1].rstrip() + "\u2026"
    return escape_inline_functions(text), cut


def _location_error(npc) -> ToolResult | None:
    if npc is None:
        return ToolResult.fail("No character is acting.")
    if npc.location is None:
        return ToolResult.fail("You are nowhere (you have no location).")
    return None


def _puppet_error(npc) -> ToolResult | None:
    """DANGEROUS tools never borrow an account's permissions."""
    if getattr(npc, "account", None) or npc.has_account:
        return ToolResult.fail(
            f"{npc.key} is puppeted by an account right now; dangerous actions would run with "
            "the account's permissions, so they are refused until it is released."
        )
    return None


def _characters_here(npc) -> list:
    return [obj for obj in npc.location.contents if obj != npc and is_character(obj)]


def _room_things(npc) -> list:
    """Things in the room one can interact with (no exits, not the NPC)."""
    return [obj for obj in npc.location.contents if obj != npc and not obj.destination]


def _appearance(npc, target) -> str:
    return truncate(plain_text(npc.at_look(target)), LOOK_LIMIT)


def _display(obj, looker) -> str:
    return plain_text(obj.get_display_name(looker)) or obj.key


def _forget_views(ctx: ToolContext) -> None:
    for key in [k for k in ctx.cache if isinstance(k, tuple) and k and k[0] in VIEW_TOOLS]:
        ctx.cache.pop(key, None)


def _private_leak(npc, text: str, audience) -> ToolResult | None:
    """A refusal when ``text`` would repeat a whisper to someone who did not whisper it."""

    refusal = check_speech(npc, text, audience)
    return ToolResult.fail(refusal) if refusal else None


# Who a game command or a set Attribute may reach is unknown: anyone but a whisperer.
_ANYONE = ("anyone",)


def _listeners(npc) -> str:
    others = [obj.key for obj in _characters_here(npc)]
    if not others:
        return "No one else is here to hear you."
    return f"Heard by: {', '.join(others)}."


# -- speech (TERMINAL) ---------------------------------------------------------------------------
@register_tool
class Say(Tool):
    name = "say"
    group = "conversation"
    description = "Say something aloud to everyone in your room."
    parameters = {
        "type": "object",
        "properties": {"message": {**_MESSAGE_SCHEMA, "description": "what you say"}},
        "required": ["message"],
        "additionalProperties": False,
    }
    category = ToolCategory.TERMINAL

    def run(self, ctx, message):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        problem = _check_message(message)
        if problem:
            return ToolResult.fail(problem)
        leak = _private_leak(npc, message, _characters_here(npc))
        if leak:
            return leak
        speech = npc.at_pre_say(inert(message))
        if not speech:
            return ToolResult.fail("You could not speak just now.")
        npc.at_say(speech, msg_self=True)
        note_spoken(npc, speech, _characters_here(npc))
        return said(npc, speech)

    def utterance(self, ctx: ToolContext) -> "StreamedSay":
        """A say of ``ctx``'s NPC to be shown sentence by sentence while the model writes it
        (:mod:`evennia_ai.engine.streaming`)."""
        return StreamedSay(ctx.npc)


def said(npc, speech: str) -> ToolResult:
    """The result of a say that was heard (streamed or not)."""
    return ToolResult.ok(f'You said: "{speech}" {_listeners(npc)}', data={"spoken": speech})


class StreamedSay:
    """One ``say`` shown sentence by sentence: the say tool's checks on each, one utterance.

    Every sentence gets what a ``say`` gets before anyone sees it, counting what was said
    before it in the same utterance (so the checks read the text as the whole say would have
    been read): a location, the message's length (``MAX_MESSAGE_LENGTH``), the secret and
    whisper guards with the speakable lines (:func:`~evennia_ai.tools.safety.check_speech`),
    :func:`inert` output with ``EVENNIA_AI_MAX_OUTPUT_CHARS`` counted over the whole utterance,
    and the NPC's ``at_pre_say``.

    What players see: the first sentence as the say command shows it (``Marta says,
    "Evening."``), each later one as a line of its own in ``EVENNIA_AI_STREAM_CONTINUATION``
    (``Marta adds, "The stew is hot."``): every line whole, its quote closed, so a reply cut
    short never leaves half a line. Other assistants in the room hear nothing until the
    utterance ends (:meth:`end`), then all of it as one ``say`` line, as they would hear a
    ``say`` that was not streamed: one event, one line in their context buffer. The whisper
    guard's window notes the utterance once.

    Every method runs on the reactor thread.
    """

    def __init__(self, npc):
        self.npc = npc
        self.shown: list[str] = []  # what each line said (after at_pre_say)
        self._raw = ""  # the model's words so far, as the say tool would read them
        self._inert = ""  # what inert() made of them
        self._cut = False  # the utterance reached EVENNIA_AI_MAX_OUTPUT_CHARS
        self._ended = False

    @property
    def speech(self) -> str:
        """What was said so far, as one line."""
        return " ".join(self.shown)

    def add(self, sentence: str) -> str | None:
        """Check ``sentence`` and show it; the reason it may not be shown, else None (also
        when it is left out past ``EVENNIA_AI_MAX_OUTPUT_CHARS``, as a say's text is cut)."""
        npc = self.npc
        if self._ended:
            return "the utterance had ended"
        error = _location_error(npc)
        if error is not None:
            return str(error.error)
        raw = f"{self._raw} {sentence}".strip()
        if len(raw) > MAX_MESSAGE_LENGTH:
            return f"the message is longer than {MAX_MESSAGE_LENGTH} characters"
        refusal = check_speech(npc, raw, _characters_here(npc))
        if refusal:
            return refusal
        if self._cut:  # past EVENNIA_AI_MAX_OUTPUT_CHARS: left out, as inert() cuts a say
            return None
        whole, cut = inert_cut(raw)
        piece = whole[len(self._inert) :] if whole.startswith(self._inert) else inert(sentence)
        speech = npc.at_pre_say(piece.strip()) if piece.strip() else ""
        if not speech:
            return "You could not speak just now."
        self._raw, self._inert, self._cut = raw, whole, cut
        self._show(speech)
        return None

    def _show(self, speech: str) -> None:
        npc = self.npc
        later = conf.get_str("EVENNIA_AI_STREAM_CONTINUATION") if self.shown else ""
        template = later or _('{object} says, "{speech}"')
        self.shown.append(speech)
        npc.msg(
            text=(
                _('{self} say, "|n{speech}|n"').format_map({"self": _("You"), "speech": speech}),
                {"type": "say"},
            ),
            from_obj=npc,
        )
        npc.location.msg_contents(
            text=(template, {"type": "say"}),
            from_obj=npc,
            exclude=[npc, *_assistants_here(npc)],
            mapping={"object": npc, "speech": speech},
        )

    def end(self) -> None:
        """The utterance is over: other assistants here hear all of it as one say line, and
        the whisper guard notes it (idempotent)."""
        if self._ended:
            return
        self._ended = True
        npc = self.npc
        if not self.shown or npc.location is None:
            return
        listeners = _assistants_here(npc)
        if listeners:
            npc.location.msg_contents(
                text=(_('{object} says, "{speech}"'), {"type": "say"}),
                from_obj=npc,
                exclude=[obj for obj in npc.location.contents if obj not in listeners],
                mapping={"object": npc, "speech": self.speech},
            )
        note_spoken(npc, self.speech, _characters_here(npc))

    def result(self, withheld: str | None) -> ToolResult:
        """The say's result for the model: a streamed say that was said in full reads as one
        that was not streamed; one whose rest was withheld fails with why, and what was said."""
        if not withheld:
            return said(self.npc, self.speech)
        return ToolResult.fail(
            f'{withheld} Only the first part was said: "{self.speech}"',
            data={"spoken": self.speech},
        )


def _assistants_here(npc) -> list:
    """The other assistants in ``npc``'s room (they perceive what they hear)."""
    return [obj for obj in npc.location.contents if obj != npc and is_assistant(obj)]


@register_tool
class Emote(Tool):
    name = "emote"
    group = "conversation"
    description = (
        "Show an action to everyone in your room, written after your name: "
        "action='smiles warmly' shows 'Innkeeper smiles warmly.'"
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {**_MESSAGE_SCHEMA, "description": "what you do, without your name"},
        },
        "required": ["action"],
        "additionalProperties": False,
    }
    category = ToolCategory.TERMINAL

    def run(self, ctx, action):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        problem = _check_message(action, "action")
        if problem:
            return ToolResult.fail(problem)
        pose = compose_pose(npc.key, inert(action))
        leak = _private_leak(npc, pose, _characters_here(npc))
        if leak:
            return leak
        # The pose goes in as a mapping value: msg_contents' inline-function parser reads the
        # template, never the model's text.
        npc.location.msg_contents(
            text=("{pose}", {"type": "pose"}), mapping={"pose": pose}, from_obj=npc
        )
        note_spoken(npc, pose, _characters_here(npc))
        return ToolResult.ok(f"Everyone here sees: {pose}", data={"pose": pose})


def compose_pose(name: str, action: str) -> str:
    """The pose line as the pose command writes it, ending with a full stop.

    Example:
        >>> compose_pose("Innkeeper", "smiles warmly")
        'Innkeeper smiles warmly.'
        >>> compose_pose("Innkeeper", "'s eyes narrow")
        "Innkeeper's eyes narrow."
    """
    action = action.strip()
    if action.lower().startswith(name.lower() + " "):  # the model repeated the name
        action = action[len(name) :].strip()
    if not action.endswith(_SENTENCE_END):
        action += "."
    joiner = "" if action[0] in ("'", ",", ":") else " "
    return f"{name}{joiner}{action}"


@register_tool
class Whisper(Tool):
    name = "whisper"
    group = "conversation"
    description = "Whisper privately to one character in your room; no one else hears it."
    parameters = object_schema(
        {"target": {**TEXT, "description": "who, in your room"}, "message": _MESSAGE_SCHEMA},
        required=["target", "message"],
    )
    category = ToolCategory.TERMINAL

    def run(self, ctx, target, message):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        problem = _check_message(message)
        if problem:
            return ToolResult.fail(problem)
        people = _characters_here(npc)
        if not people:
            return ToolResult.fail("No one else is here to whisper to.")
        receiver, problem = find_among(npc, target, people, what="here", label="Present")
        if problem:
            return ToolResult.fail(problem, available=_names(_visible(npc, people)))
        leak = _private_leak(npc, message, [receiver])
        if leak:
            return leak
        speech = npc.at_pre_say(inert(message), whisper=True, receivers=[receiver])
        if not speech:
            return ToolResult.fail("You could not whisper just now.")
        npc.at_say(speech, msg_self=True, receivers=[receiver], whisper=True)
        note_spoken(npc, speech, [receiver])
        return ToolResult.ok(
            f'You whispered to {receiver.key}: "{speech}"',
            data={"spoken": speech, "to": receiver.dbref},
        )


def find_character_anywhere(npc, name: str) -> tuple[object | None, str | None]:
    """A character anywhere in the game by exact name, alias or #dbref (not ``npc`` itself)."""

    name = (name or "").strip()
    if not name:
        return None, "No name given."
    found = [obj for obj in search_object(name, exact=True) if is_character(obj) and obj != npc]
    if len(found) > 1:
        found = [obj for obj in found if obj.key.lower() == name.lower()] or found
    if len(found) == 1:
        return found[0], None
    if not found:
        return None, f"No character called '{name}' exists in the game."
    options = ", ".join(f"{obj.key} ({obj.dbref})" for obj in found)
    return None, f"'{name}' could mean: {options}. Page one of them by #dbref."


@register_tool
class Page(Tool):
    name = "page"
    group = "conversation"
    description = "Send a private message to a character anywhere in the game (by exact name)."
    parameters = object_schema(
        {"target": {**TEXT, "description": "character name or #dbref"}, "message": _MESSAGE_SCHEMA},
        required=["target", "message"],
    )
    category = ToolCategory.TERMINAL

    def run(self, ctx, target, message):
        npc = ctx.npc
        if npc is None:
            return ToolResult.fail("No character is acting.")
        problem = _check_message(message)
        if problem:
            return ToolResult.fail(problem)
        receiver, problem = find_character_anywhere(npc, target)
        if problem:
            return ToolResult.fail(problem)
        # Accounts guard paging with a "msg" lock; honour the same lock on the character.
        account = getattr(receiver, "account", None)
        if not receiver.access(npc, "msg", default=True) or (
            account and not account.access(npc, "msg", default=True)
        ):
            return ToolResult.fail(f"{receiver.key} does not accept pages from you.")
        leak = _private_leak(npc, message, [receiver])
        if leak:
            return leak
        message = inert(message)
        text = f"{npc.key} pages: {message}"
        receiver.msg(text=(text, {"type": "page"}), from_obj=npc)
        note_spoken(npc, message, [receiver])
        note = ""
        if not is_player(receiver) and not is_assistant(receiver):
            note = f" (no one plays {receiver.key} right now; the page may go unread)"
        return ToolResult.ok(
            f'You paged {receiver.key}: "{message.strip()}"{note}', data={"to": receiver.dbref}
        )


# -- acting (SAFE_CHAIN) -------------------------------------------------------------------------
def find_exit(npc, direction: str) -> tuple[object | None, str | None]:
    """An exit of the NPC's room by key or alias (or a unique beginning of one)."""
    exits = list(npc.location.exits)
    wanted = (direction or "").strip().lower()
    visible = [ex for ex in exits if ex.access(npc, "view", default=True)]
    listing = _listing([f"{ex.key} (to {ex.destination.key})" for ex in visible], "none")
    if not wanted:
        return None, f"Say which way to go. Exits: {listing}."

    def labels(ex):
        return [ex.key.lower()] + [a.lower() for a in ex.aliases.all()]

    matches = [ex for ex in exits if wanted in labels(ex)]
    if not matches:
        matches = [ex for ex in visible if any(lab.startswith(wanted) for lab in labels(ex))]
    if len(matches) == 1:
        return matches[0], None
    if not matches:
        return None, f"There is no exit '{direction}' here. Exits: {listing}."
    return None, f"'{direction}' could mean: {_listing(_names(matches))}. Be more specific."


@register_tool
class Move(Tool):
    name = "move"
    group = "movement"
    description = "Walk through an exit of your room (its name or alias, e.g. 'north')."
    parameters = object_schema({"direction": TEXT}, required=["direction"])
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, direction):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        exit_obj, problem = find_exit(npc, direction)
        if problem:
            return ToolResult.fail(problem, available=_names(_visible(npc, npc.location.exits)))
        # As the exit's own command does (a routine's walk steps the same way)
        went = paths.traverse(npc, exit_obj)
        if not went.moved:
            reason = went.reason or "You cannot go that way."
            return ToolResult.fail(f"You could not go {exit_obj.key}: {reason}")
        _forget_views(ctx)
        return ToolResult.ok(
            f"You go {exit_obj.key} and arrive in {npc.location.key}.\n\n"
            f"{_appearance(npc, npc.location)}",
            data={"location": npc.location.dbref},
        )


@register_tool
class Look(Tool):
    name = "look"
    group = "conversation"
    description = (
        "Look at your room (no target) or at someone or something here or in your inventory."
    )
    parameters = {
        "type": "object",
        "properties": {"target": {"type": "string", "description": "omit for the room"}},
        "additionalProperties": False,
    }
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, target=None):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        if not target or not target.strip() or target.strip().lower() in ("here", "room"):
            return ToolResult.ok(_appearance(npc, npc.location))
        candidates = [npc.location, npc] + list(npc.location.contents) + list(npc.contents)
        candidates = list(dict.fromkeys(candidates))  # the NPC appears twice
        found, problem = find_among(npc, target, candidates, what="here")
        if problem:
            return ToolResult.fail(problem)
        return ToolResult.ok(_appearance(npc, found))


@register_tool
class InspectLocation(Tool):
    name = "inspect_location"
    group = "items"
    description = (
        "Structured view of your room: name, description, exits, who is here (players and "
        "NPCs), objects, and what you carry."
    )
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    category = ToolCategory.SAFE_CHAIN
    cacheable = True

    def run(self, ctx):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        return ToolResult.ok(describe_location(npc))


def describe_location(npc) -> dict:
    """Plain data about the NPC's room, as far as the NPC can see it."""
    room = npc.location
    visible = _visible(npc, room.contents)
    exits, players, npcs, things = [], [], [], []
    for obj in visible:
        if obj.destination:
            exits.append(
                {
                    "name": obj.key,
                    "aliases": list(obj.aliases.all()),
                    "destination": obj.destination.key,
                }
            )
        elif is_character(obj):
            entry = {"name": obj.key, "dbref": obj.dbref}
            if is_player(obj):
                players.append(entry)
            else:
                entry["assistant"] = is_assistant(obj)
                npcs.append(entry)
        else:
            things.append({"name": obj.key, "dbref": obj.dbref})
    try:
        desc = room.get_display_desc(npc)
    except Exception:  # custom rooms may break the hook; the raw Attribute still helps
        desc = room.db.desc or ""
    return {
        "success": True,
        "room": {"name": room.key, "dbref": room.dbref},
        "description": truncate(plain_text(desc), LOOK_LIMIT),
        "exits": exits,
        "characters": {"players": players, "npcs": npcs},
        "objects": things,
        "carrying": [{"name": obj.key, "dbref": obj.dbref} for obj in npc.contents],
    }


def _item_name(obj, looker) -> str:
    try:
        return plain_text(obj.get_numbered_name(1, looker, return_string=True)) or obj.key
    except Exception:
        return obj.key


@register_tool
class Get(Tool):
    name = "get"
    group = "items"
    description = "Pick up something from your room."
    parameters = object_schema({"item": TEXT}, required=["item"])
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, item):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        held = _exact_matches(list(npc.contents), item)
        if held and not _exact_matches(_room_things(npc), item):
            return ToolResult.fail(f"You already carry {held[0].key}.")
        obj, problem = find_among(npc, item, _room_things(npc), what="here")
        if problem:
            return ToolResult.fail(problem)
        if not obj.access(npc, "get"):
            return ToolResult.fail(obj.db.get_err_msg or f"You can't get {obj.key}.")
        with capture_messages(npc) as said:
            allowed = obj.at_pre_get(npc)
            moved = allowed and obj.move_to(npc, quiet=True, move_type="get")
            if moved:
                obj.at_get(npc)
        if not allowed:
            return ToolResult.fail(" ".join(said) or f"You can't get {obj.key}.")
        if not moved:
            return ToolResult.fail(" ".join(said) or f"{obj.key} can't be picked up.")
        name = _item_name(obj, npc)
        npc.location.msg_contents(
            "$You() $conj(pick) up {item}.", mapping={"item": name}, from_obj=npc
        )  # the name as a mapping value: no inline function in it runs
        _forget_views(ctx)
        return ToolResult.ok(f"You pick up {name}.", data={"object": obj.dbref})


@register_tool
class Give(Tool):
    name = "give"
    group = "items"
    description = "Give something you carry to someone in your room."
    parameters = object_schema(
        {
            "item": {**TEXT, "description": "something you carry"},
            "target": {**TEXT, "description": "who receives it"},
        },
        required=["item", "target"],
    )
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, item, target):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        obj, problem = find_among(
            npc, item, list(npc.contents), what="in your inventory", label="You carry"
        )
        if problem:
            return ToolResult.fail(problem)
        receiver, problem = find_among(npc, target, _room_things(npc), what="here")
        if problem:
            return ToolResult.fail(problem)
        refusal = give_refusal(npc, obj, receiver)  # stock is sold, never given (its rules)
        if refusal:
            return ToolResult.fail(refusal)
        problem = None
        with capture_messages(npc) as said:
            allowed = obj.at_pre_give(npc, receiver)
            if allowed and is_free_gift(npc, obj):  # the move and its ledger entry together
                problem = give_free(npc, obj, receiver)
                moved = problem is None
            else:
                moved = allowed and obj.move_to(receiver, quiet=True, move_type="give")
            if moved:
                obj.at_give(npc, receiver)
        if not moved:
            reason = problem or " ".join(said) or f"You could not give {obj.key} to {receiver.key}."
            return ToolResult.fail(reason)
        name = _item_name(obj, npc)
        npc.msg(f"You give {name} to {_display(receiver, npc)}.")
        receiver.msg(f"{_display(npc, receiver)} gives you {_item_name(obj, receiver)}.")
        _forget_views(ctx)
        return ToolResult.ok(
            f"You give {name} to {receiver.key}.", data={"object": obj.dbref, "to": receiver.dbref}
        )


@register_tool
class Drop(Tool):
    name = "drop"
    group = "items"
    description = "Drop something you carry into your room."
    parameters = object_schema({"item": TEXT}, required=["item"])
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, item):
        npc = ctx.npc
        error = _location_error(npc)
        if error:
            return error
        obj, problem = find_among(
            npc, item, list(npc.contents), what="in your inventory", label="You carry"
        )
        if problem:
            return ToolResult.fail(problem)
        refusal = give_refusal(npc, obj, None)  # nor left on the floor for anyone to take
        if refusal:
            return ToolResult.fail(refusal)
        with capture_messages(npc) as said:
            allowed = obj.at_pre_drop(npc)
            moved = allowed and obj.move_to(npc.location, quiet=True, move_type="drop")
            if moved:
                obj.at_drop(npc)
        if not moved:
            return ToolResult.fail(" ".join(said) or f"You can't drop {obj.key}.")
        name = _item_name(obj, npc)
        npc.location.msg_contents(
            "$You() $conj(drop) {item}.", mapping={"item": name}, from_obj=npc
        )
        _forget_views(ctx)
        return ToolResult.ok(f"You drop {name}.", data={"object": obj.dbref})


# -- DANGEROUS -----------------------------------------------------------------------------------
def _is_py_command(command: str) -> bool:
    """Whether ``command`` calls Evennia's ``py`` command (``py``, ``@py``, ``@!``, ``!``)."""

    head = command.strip().lstrip(getattr(settings, "CMD_IGNORE_PREFIXES", "@&/+"))
    return head.startswith("!") or re.split(r"[\s/]", head, maxsplit=1)[0].lower() == "py"


@register_tool
class ExecuteCommand(Tool):
    name = "execute_command"
    group = "building"
    description = (
        "Run a game command as yourself (e.g. 'look', 'inventory', 'dig ...'), with only your "
        "own permissions; you have no account, so account commands are unavailable. Returns "
        "what the command showed you."
    )
    parameters = object_schema({"command": {**TEXT, "maxLength": 1000}}, required=["command"])
    category = ToolCategory.DANGEROUS
    lock = ""

    def run(self, ctx, command):
        npc = ctx.npc
        if npc is None:
            return ToolResult.fail("No character is acting.")
        command = (command or "").strip()
        if not command:
            return ToolResult.fail("The command is empty.")
        error = _puppet_error(npc)
        if error:
            return error
        if _PROTECTED_ATTRIBUTE_REF.search(command.split("=", 1)[0]):
            return ToolResult.fail(
                "Attributes of category 'ai' hold assistants' own state (the operator's prompt, "
                "memory, tool settings); no command run by an assistant may touch them."
            )
        leak = _private_leak(npc, command, _ANYONE)
        if leak:
            return leak
        if _is_py_command(command) and not npc.locks.check_lockstring(
            npc, "_dummy:perm(py) or perm(Developer)"
        ):
            return ToolResult.fail(
                "Running Python needs the Developer (or py) permission, "
                f"which {npc.key} does not have."
            )

        with ai_state_kept(npc) as kept, capture_messages(npc) as said:
            deferred = npc.execute_cmd(command)
        note_spoken(npc, command, _ANYONE)
        if kept.restored:
            return ToolResult.fail(kept.describe(command, npc.key))
        finished = True
        if deferred is not None and hasattr(deferred, "addErrback"):
            finished = bool(getattr(deferred, "called", True))
            # The command handler reports its own errors to the caller; keep Twisted quiet.
            deferred.addErrback(lambda _failure: None)
        output = "\n".join(said)
        if _UNTRAPPED in output:  # the handler also sent a traceback: keep it out of the prompt
            return ToolResult.fail(
                f"'{command}' raised an error inside the game (the traceback "
                "is in the server log)."
            )
        if _NOT_AVAILABLE.search(output):
            return ToolResult.fail(
                f"{output} (commands are limited to your own cmdsets and permissions)",
            )
        if not finished:
            output += "\n(the command is still running; later output is not shown)"
        return ToolResult.ok(
            f"> {command}\n{truncate(output, COMMAND_OUTPUT_LIMIT) if output else EMPTY_TOOL_OUTPUT}",
            data={"command": command},
        )


@register_tool
class SetAttribute(Tool):
    name = "set_attribute"
    group = "building"
    description = (
        "Set an Attribute on an object you are allowed to edit (by name here, 'me', 'here', "
        "or #dbref). Strings are stored as text; numbers, booleans, lists and objects as "
        "themselves."
    )
    parameters = {
        "type": "object",
        "properties": {
            "target": {"type": "string", "minLength": 1},
            "attribute": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": "Attribute name (name:category also accepted)",
            },
            "value": {"type": ["string", "number", "boolean", "array", "object"]},
            "category": {"type": "string", "maxLength": 100},
        },
        "required": ["target", "attribute", "value"],
        "additionalProperties": False,
    }
    category = ToolCategory.DANGEROUS
    lock = ""

    def run(self, ctx, target, attribute, value, category=None):
        npc = ctx.npc
        if npc is None:
            return ToolResult.fail("No character is acting.")
        error = _puppet_error(npc)
        if error:
            return error
        name = attribute.strip()
        if category is None and ":" in name:  # the set command's obj/attr:category form
            name, category = (part.strip() for part in name.split(":", 1))
        category = (category or "").strip() or None
        if category and category.lower() in PROTECTED_CATEGORIES:
            return ToolResult.fail(
                f"Attributes of category '{category}' hold assistants' own state and cannot be "
                "set with this tool."
            )
        if not _ATTRIBUTE_NAME.match(name):
            return ToolResult.fail(
                f"'{name}' is not a valid Attribute name (letters, digits and _, not starting "
                "with a digit)."
            )
        if len(json.dumps(value, default=str)) > MAX_VALUE_JSON_LENGTH:
            return ToolResult.fail(
                f"The value is too large (over {MAX_VALUE_JSON_LENGTH} " "characters as JSON)."
            )
        leak = _private_leak(npc, json.dumps(value, default=str, ensure_ascii=False), _ANYONE)
        if leak:
            return leak
        obj, problem = self._find_target(npc, target)
        if problem:
            return ToolResult.fail(problem)
        # Mirror Evennia's `set`: control or edit access on the object, then the Attribute locks.
        if not (obj.access(npc, "control") or obj.access(npc, "edit")):
            return ToolResult.fail(f"You don't have permission to edit {obj.key}.")
        existing = obj.attributes.get(name, category=category, return_obj=True)
        if not obj.access(npc, "attrcreate", default=True) or (
            existing is not None and not existing.access(npc, "attredit", default=True)
        ):
            return ToolResult.fail(f"You may not change the Attribute '{name}' on {obj.key}.")
        obj.attributes.add(name, value, category=category, accessing_obj=npc, default_access=True)
        note_spoken(npc, json.dumps(value, default=str, ensure_ascii=False), _ANYONE)
        verb = "Modified" if existing is not None else "Created"
        shown = f"{name}:{category}" if category else name
        text = truncate(json.dumps(value, default=str, ensure_ascii=False), 300)
        return ToolResult.ok(
            f"{verb} Attribute {obj.key}/{shown} = {text}",
            data={"object": obj.dbref, "attribute": name, "category": category},
        )

    @staticmethod
    def _find_target(npc, target: str):
        target = (target or "").strip()
        results = npc.search(target, quiet=True) or []
        if len(results) > 1:
            results = _exact_matches(results, target) or results
        if len(results) == 1:
            return results[0], None
        if not results:
            return None, (
                f"Found nothing called '{target}' (the search covers your room, your "
                "inventory, 'me' and 'here')."
            )
        options = ", ".join(f"{obj.key} ({obj.dbref})" for obj in results)
        return None, f"'{target}' could mean: {options}. Use a more specific name."
