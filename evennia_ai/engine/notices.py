"""Notices to staff: an action waits for approval, an approval was decided, state was set aside.

When the confirmation queue gains a pending entry (a DANGEROUS tool call, or a model's write to
a Partner or Human memory block), every online session whose character or account passes the
lock of ``aiconfirm`` (:data:`~evennia_ai.tools.approvals.APPROVER_LOCK`, Builder and above)
gets one notice: which NPC wants what, and the commands to approve or reject it. When the entry
is decided, the same staff (but the one who decided, who has the command's reply) get the
decision and its outcome in words. The channel named by ``EVENNIA_AI_CONFIRMATION_CHANNEL``,
if any, gets the same lines.

Each session gets the lines wrapped to its client's width (:func:`evennia_ai.screen.fit_lines`),
continuation lines indented under the ``[AI]`` tag.

Names, arguments and results were written by players or a model: in a notice they are cleaned
(escape and control characters removed), kept on one line, clipped, and their Evennia markup
escaped, so ``|r`` or ``$func()`` in them reads literally and never runs.

When a stored value of an NPC's state cannot be read and is set aside
(:mod:`evennia_ai.npc.state`), the same staff get one notice per value set aside
(:func:`announce_set_aside`): which NPC, which key, what is wrong with it, what is in force
meanwhile, and the commands to look at it and decide. The value itself is never in the line
(it may be a Developer-only text such as the operator's prompt).

When a model endpoint stops answering, the same staff get one notice when it becomes
unreachable (:func:`announce_outage`) and one when it answers again (:func:`announce_recovery`),
per endpoint, not per NPC (:mod:`evennia_ai.engine.outages` decides when).

The queue calls :func:`announce_waiting` and :func:`announce_decision` on the reactor thread,
where it writes its entries. A notice that cannot be delivered is logged and never stops the
queue.

Example::

    [AI] Innkeeper(#12) wants to run execute_command: command: open door.
         aiconfirm/approve c_1a2b3c4d or aiconfirm/reject c_1a2b3c4d = <reason>
"""

from __future__ import annotations

from evennia.comms.models import ChannelDB
from evennia.locks.lockhandler import check_lockstring
from evennia.server.sessionhandler import SESSION_HANDLER
from evennia.utils import logger
from evennia.utils.ansi import raw

from evennia_ai import conf
from evennia_ai.formatting import action_arguments, arguments_text, decision_text
from evennia_ai.screen import fit_lines, session_width, visible_length
from evennia_ai.tools.approvals import APPROVER_LOCK
from evennia_ai.tools.world import escape_inline_functions
from evennia_ai.utils import clean_text, one_line

PREFIX = "|y[AI]|n "
NAME_CHARS = 60  # an NPC's name
VALUE_CHARS = 60  # one argument's value
SUMMARY_CHARS = 200  # all the arguments together
DECISION_CHARS = 300  # the decision sentence, with what the action answered


def literal(text, limit: int) -> str:
    """``text`` shown exactly as written: clean, on one line, clipped, its markup escaped."""
    return escape_inline_functions(raw(one_line(clean_text(text), limit)))


# -- the lines -----------------------------------------------------------------------------------
def waiting_text(entry: dict) -> str:
    """The notice of a new pending confirmation: who wants what, and how to decide it."""
    ident = literal(entry.get("id"), 20)
    wanted = _wanted(entry)
    stop = "" if wanted.endswith(".") else "."
    return (
        f"{PREFIX}{wanted}{stop} |waiconfirm/approve {ident}|n or "
        f"|waiconfirm/reject {ident} = <reason>|n"
    )


def decision_notice(entry: dict) -> str:
    """The notice of a decided confirmation: who decided what, and what came of it."""
    return PREFIX + literal(decision_text(entry, name_decider=True), DECISION_CHARS)


def _wanted(entry: dict) -> str:
    """``Innkeeper(#12) wants to run execute_command: command: open door`` (escaped)."""
    owner = _npc_name(entry.get("npc_key"), entry.get("npc_id"))
    summary = literal(arguments_text(action_arguments(entry), VALUE_CHARS), SUMMARY_CHARS)
    if entry.get("kind") != "block_write":
        return f"{owner} wants to run {literal(entry.get('action'), NAME_CHARS)}: {summary}"
    payload = entry.get("payload") or {}
    writer_id = payload.get("requested_by", entry.get("npc_id"))
    writer = _npc_name(payload.get("requested_by_key") or entry.get("npc_key"), writer_id)
    where = f"memory block '{literal(payload.get('label'), NAME_CHARS)}'"
    if writer_id != entry.get("npc_id"):
        where += f" of {owner}"
    operation = literal(str(payload.get("op") or entry.get("action")).replace("_", " "), 40)
    summary = literal(arguments_text(payload.get("args"), VALUE_CHARS), SUMMARY_CHARS)
    return f"{writer} wants to {operation} in {where}: {summary}"


def _npc_name(key, npc_id) -> str:
    name = literal(key or "?", NAME_CHARS)
    return f"{name}(#{npc_id})" if npc_id is not None else name


# -- who is told -----------------------------------------------------------------------------------
def approvers(skip_account=None) -> list[tuple[object, object]]:
    """``(puppet or account, session)`` for every online session that may approve.

    The lock is checked on what a command typed in that session would see as its caller (the
    puppet, else the account), as ``aiconfirm`` checks it. Sessions of ``skip_account`` are left
    out.
    """
    found = []
    for session in SESSION_HANDLER.get_sessions():
        caller = session.get_puppet_or_account()
        if caller is None or session.get_account() == skip_account:
            continue
        if check_lockstring(caller, APPROVER_LOCK):
            found.append((caller, session))
    return found


def _account_of(decider):
    """The account behind whoever decided (a character, an account, a web user), or None."""
    if decider is None or isinstance(decider, str):
        return None
    return getattr(decider, "account", None) or decider


def _to_channel(text: str) -> None:
    """Send ``text`` to the channel of ``EVENNIA_AI_CONFIRMATION_CHANNEL``, if one is named."""
    name = conf.get_optional_str("EVENNIA_AI_CONFIRMATION_CHANNEL")
    if not name:
        return
    channel = ChannelDB.objects.get_channel(name)
    if channel is None:
        logger.log_warn(
            f"evennia_ai: EVENNIA_AI_CONFIRMATION_CHANNEL is '{name}', but there is no channel "
            "by that name; the confirmation notice went to online staff only."
        )
        return
    # the channel puts its prefix (``[ainotices] ``) before the first line
    prefix = visible_length(channel.channel_prefix())
    channel.msg(fit_lines(text, session_width(None) - prefix))


def _announce(text: str, skip_account=None) -> None:
    """Send ``text`` to every approver's session, its lines wrapped to that session's screen
    width (under the ``[AI]`` tag), and to the notice channel at the game's default width."""
    try:
        for caller, session in approvers(skip_account):
            caller.msg(fit_lines(text, session_width(session)), session=session)
        _to_channel(text)
    except Exception:
        logger.log_trace("evennia_ai: a confirmation notice could not be sent")


# -- what the queue calls ------------------------------------------------------------------------
def announce_waiting(entry: dict) -> None:
    """Tell online approvers and the notice channel that ``entry`` waits for a decision."""
    _announce(waiting_text(entry))


def announce_decision(entry: dict, decider=None) -> None:
    """Tell online approvers (but ``decider``) and the notice channel how ``entry`` was decided."""
    _announce(decision_notice(entry), skip_account=_account_of(decider))


def set_aside_text(npc, key: str, problem: str, meanwhile: str) -> str:
    """The notice of a stored value set aside: whose, which key, why, what holds meanwhile."""
    name = literal(getattr(npc, "key", "?"), NAME_CHARS)
    who = _npc_name(getattr(npc, "key", "?"), getattr(npc, "id", None))
    return (
        f"{PREFIX}{who}: its stored {literal(key, NAME_CHARS)} cannot be read "
        f"({literal(problem, VALUE_CHARS * 2)}) and is set aside; {literal(meanwhile, 120)}. "
        f"|waistatus {name}|n, then |waistatus/restore {name} = {literal(key, NAME_CHARS)}|n "
        f"or |waistatus/discard {name} = {literal(key, NAME_CHARS)}|n"
    )


def announce_set_aside(npc, key: str, problem: str, meanwhile: str) -> None:
    """Tell online staff (and the notice channel) once that ``npc``'s ``key`` was set aside."""
    _announce(set_aside_text(npc, key, problem, meanwhile))


def outage_text(endpoint: str, status: str, npcs: list[str]) -> str:
    """The notice of an endpoint that stopped answering: which, since when, who waits."""
    names = ", ".join(literal(name, NAME_CHARS) for name in npcs[:5])
    more = f" and {len(npcs) - 5} more" if len(npcs) > 5 else ""
    who = f" Waiting for it: {names}{more}." if names else ""
    return (
        f"{PREFIX}{literal(endpoint, 200)}: {literal(status, 80)}.{who} Lines said "
        "meanwhile are answered when it is back; |waistatus|n shows who is not answering."
    )


def recovery_text(endpoint: str, since: str, waiting: int) -> str:
    """The notice of an endpoint that answers again after an outage."""
    woken = (
        f"; the lines {count_text(waiting, 'NPC')} held back are answered now" if waiting else ""
    )
    return f"{PREFIX}{literal(endpoint, 200)} answers again (unreachable since {since}){woken}."


def count_text(number: int, noun: str) -> str:
    """``1 NPC``, ``3 NPCs``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def announce_outage(endpoint: str, status: str, npcs: list[str]) -> None:
    """Tell online staff (and the notice channel) once that ``endpoint`` is unreachable."""
    _announce(outage_text(endpoint, status, npcs))


def announce_recovery(endpoint: str, since: str, waiting: int) -> None:
    """Tell online staff (and the notice channel) once that ``endpoint`` answers again."""
    _announce(recovery_text(endpoint, since, waiting))
