"""Tool groups: each request carries the schemas its situation needs, and a way to ask for more.

Pure module: no Django, Evennia or Twisted at import time.

Every built-in tool belongs to a group (its ``group`` attribute): ``conversation``, ``movement``,
``items``, ``trade``, ``memory``, ``blocks``, ``goals``, ``building``, ``self``. A tool without a
group (a game's own tool that sets none) is always sent. A context type names the groups its requests
carry (``ContextConfig.tool_groups``; None: every group): an ordinary ``tick_event`` sends the
conversation tools only, about a tenth of the whole set's tokens. The situation adds groups:
words in the events the tick answers (:data:`CUES`: "journal" adds ``memory``, "build" adds
``building``...) and the events' kinds (a gift adds ``items``).

When some of the NPC's tools are left out, the request also carries ``request_tools``
(:class:`RequestTools`): the model calls it with a group's name and that group's tools are
sent with its next request in the same tick. It can only add tools the NPC already may use
(the context's filter, the categories and the NPC's locks chose them): groups narrow what is
*sent*, never what is *allowed*, and a call to an allowed tool whose schema was not sent still
runs (its arguments are checked as always).

Example:
    chosen = choose_tools(tools, ["conversation"], situation="Alice: can you build a hut?")
    chosen.offered        # the conversation and building tools, and request_tools
    chosen.withheld       # {"movement": [...], "items": [...], ...}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evennia_ai.tools.base import Tool, ToolCategory, ToolResult, object_schema

#: The built-in groups, in the order ``request_tools`` lists them, with what they are for.
GROUPS: dict[str, str] = {
    "conversation": "talk, emote, whisper, page and look around",
    "movement": "walk through exits to other rooms",
    "items": "pick up, drop, give and inspect things",
    "trade": "offer players deals (sell or buy at a price) and read your wares",
    "memory": "long-term memories, your journal, notes on people, archival memory",
    "blocks": "read and edit your memory blocks",
    "goals": "goals, projects, session notes and helpers",
    "building": "run game commands and set attributes (a Builder may have to approve)",
    "self": "your status, your own instructions, going to sleep",
}

#: Words in the events a tick answers that call for a group (whole words, any case; a trailing
#: ``*`` matches any ending).
CUES: dict[str, tuple[str, ...]] = {
    "memory": ("remember*", "recall*", "forget*", "forgot*", "journal*", "memor*", "notes"),
    "movement": ("go", "goes", "come", "follow*", "lead", "walk*", "way", "where", "take me"),
    "items": ("give*", "gave", "take", "took", "drop*", "hand", "pick", "carry*"),
    "trade": (
        "buy*",
        "bought",
        "sell*",
        "sold",
        "price*",
        "cost*",
        "ware*",
        "trade*",
        "deal*",
        "offer*",
        "pay*",
        "paid",
        "coin*",
        "cheap*",
        "for free",
        "haggl*",
        "barter*",
        "shop*",
        "how much",
    ),
    "goals": ("goal*", "project*", "plan*", "task*"),
    "building": ("build*", "dig*", "creat*", "destroy*", "describe", "desc"),
    "self": ("sleep*", "rest", "status", "tired"),
    "blocks": ("block*",),
}

#: Event kinds that call for a group.
KIND_CUES: dict[str, str] = {"give": "items"}

REQUEST_TOOLS = "request_tools"


def group_of(tool) -> str | None:
    """The group of ``tool`` (None: sent in every request)."""
    group = getattr(tool, "group", None)
    return group if isinstance(group, str) and group else None


def _cue_pattern(words: tuple[str, ...]) -> re.Pattern:
    parts = [re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) for w in words]
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.I)


_CUE_PATTERNS = {group: _cue_pattern(words) for group, words in CUES.items()}


def situation_groups(text: str = "", kinds=()) -> set[str]:
    """The groups the events' words (``text``) and ``kinds`` call for."""
    found = {KIND_CUES[k] for k in kinds if k in KIND_CUES}
    if text:
        found |= {group for group, pattern in _CUE_PATTERNS.items() if pattern.search(text)}
    return found


@dataclass
class ChosenTools:
    """The tools one request carries.

    Attributes:
        offered: The tools whose schemas are sent (with ``request_tools`` when some are left
            out), in the order given.
        withheld: Group -> names of the allowed tools left out.
        groups: The groups sent (sorted); empty when every tool is sent.
    """

    offered: list = field(default_factory=list)
    withheld: dict[str, list[str]] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)


def choose_tools(tools, groups, situation: str = "", kinds=()) -> ChosenTools:
    """Narrow ``tools`` (already allowed) to the groups a request needs.

    Args:
        tools: The tools the NPC may use in this context.
        groups: The context's groups; None sends every tool.
        situation: The text of the events the tick answers (its words add groups).
        kinds: The kinds of those events.
    """
    tools = [t for t in tools if getattr(t, "name", "") != REQUEST_TOOLS]
    if groups is None:
        return ChosenTools(offered=list(tools))
    wanted = set(groups) | situation_groups(situation, kinds)
    offered, withheld = [], {}
    for tool in tools:
        group = group_of(tool)
        if group is None or group in wanted:
            offered.append(tool)
        else:
            withheld.setdefault(group, []).append(tool.name)
    if withheld:
        offered.append(RequestTools(withheld))
    sent = {group_of(t) for t in offered} - {None}
    return ChosenTools(offered=offered, withheld=withheld, groups=sorted(sent))


class RequestTools(Tool):
    """``request_tools(group)``: send a withheld group's tools with the next request.

    Made for one tick with the groups left out of its request (never registered: it exists
    only where something was left out). Running it hands the group's names to the tick's
    ``services.offer_tools``, which adds those the tick may use to the loop's next request.
    """

    name = REQUEST_TOOLS
    category = ToolCategory.SAFE_CHAIN
    bookkeeping = True  # asking for tools is not the tick's one action

    def __init__(self, withheld: dict[str, list[str]]):
        self.withheld = {g: list(names) for g, names in sorted(withheld.items(), key=_order)}
        listed = "; ".join(
            f"{group}: {GROUPS.get(group) or ', '.join(names)}"
            for group, names in self.withheld.items()
        )
        self.description = (
            "Get more tools for this turn; they come with your next step. Groups: " + listed + "."
        )
        self.parameters = object_schema(
            {"group": {"type": "string", "enum": list(self.withheld)}}, required=["group"]
        )

    def run(self, ctx, group: str):
        names = self.withheld.get(group)
        if not names:
            return ToolResult.fail(
                f"No group {group!r} to add.", available=", ".join(self.withheld) or "none"
            )
        offer = getattr(ctx.services, "offer_tools", None)
        added = offer(names) if offer else []
        if not added:
            return ToolResult.ok(f"The {group} tools are already yours to use this turn.")
        return ToolResult.ok(f"Added for this turn: {', '.join(added)}.")


def _order(item) -> tuple[int, str]:
    group = item[0]
    builtin = list(GROUPS)
    return (builtin.index(group) if group in builtin else len(builtin), group)
