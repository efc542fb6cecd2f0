"""``ailongterm``: an AI NPC's long-term memory (mem0 and the keyword index), through the Deferred
API of :mod:`evennia_ai.memory.longterm` (searches run in a thread; the caller is messaged when
they finish). Re-exported by :mod:`evennia_ai.commands.memory`.
"""

from __future__ import annotations

from evennia.utils.ansi import raw
from twisted.internet import reactor

from evennia_ai import access, conf
from evennia_ai.commands.base import CommandError, SwitchedCommand
from evennia_ai.commands.memory_common import short
from evennia_ai.formatting import date, timestamp
from evennia_ai.llm.errors import reason
from evennia_ai.memory import longterm
from evennia_ai.memory.gate import describe_counts
from evennia_ai.memory.keyword_index import KeywordIndexUnavailable
from evennia_ai.memory.migrate_store import CopyRefused, copy_embedded_memories
from evennia_ai.memory.search import check_mode
from evennia_ai.utils import clean_text

LTM_LIST_DEFAULT = 10
MEMORY_TEXT_MIN = 20  # characters of a memory's text a one-line summary keeps at least


# -- long-term memory ------------------------------------------------------------------------------
def memory_line(hit, width: int) -> str:
    """One long-term memory on one line of ``width``: id, day stored, score (of a search) and
    the start of its text, whitespace collapsed (``ailtm/show`` gives it in full)."""

    score = f" score {hit.score:.2f}" if hit.score else ""
    old = " (superseded)" if hit.superseded_by else ""
    head = f"{hit.id} {date(hit.time)}{score}{old}: "
    return head + raw(short(hit.text, max(MEMORY_TEXT_MIN, width - len(head))))


def memory_detail(hit, name: str) -> str:
    """One long-term memory in full, with where it came from."""

    details = [f"stored {timestamp(hit.time)}", f"kind {hit.kind or 'memory'}"]
    if hit.source:
        details.append(f"source {str(hit.source).replace('_', ' ')}")
    if hit.trust is not None:
        details.append(f"trust {hit.trust:g}")
    if hit.person_name or hit.person:
        details.append(f"about {hit.person_name or hit.person}")
    if hit.superseded_by:
        details.append(
            f"superseded {timestamp(hit.superseded_at)} by {hit.superseded_by} "
            "(kept, left out of searches)"
        )
    return (
        f"|wLong-term memory {hit.id} of {name}|n\n{'; '.join(details)}\n"
        f"{raw(clean_text(hit.text).strip())}"
    )


def unavailable_message(failure) -> str:
    """The caller's message for a long-term memory call that failed."""

    if failure.check(KeywordIndexUnavailable):
        return f"Long-term memory is unavailable: {failure.getErrorMessage()}"
    return f"Long-term memory failed: {reason(failure.value)}."


class CmdAILongTerm(SwitchedCommand):
    """
    Search and manage an AI NPC's long-term memory (mem0 and the keyword index).

    Usage:
      ailtm <npc> = <query>
      ailtm/mode <npc> = <keyword||vector||hybrid||auto> <query>
      ailtm/list <npc> [= <count>]
      ailtm/show <npc> = <memory id>
      ailtm/delete <npc> = <memory id>
      ailtm/status
      ailtm/copy
      ailtm <npc>

    Switches:
      mode   - search in one mode: keyword (exact words and names), vector (meaning,
               needs the embedder), hybrid (both) or auto (hybrid when the embedder
               is loaded, else keyword; the default).
      list   - the NPC's most recent memories, one line each.
      show   - one memory in full (by the id a search or /list shows).
      delete - forget one memory (by the id a search or /list shows).
      status - which search mode is active, and why.
      copy   - (Developers) copy every NPC's memories from the embedded stores
               (the data folder's Qdrant and keyword.db) into the configured
               PostgreSQL ones (EVENNIA_AI_MEM0_CONFIG, EVENNIA_AI_KEYWORD_INDEX).
               Safe to run again: nothing is copied twice.

    Searches run in a thread; the answer arrives when they finish. Without a
    query, shows the long-term memory status and what the quality gate
    (EVENNIA_AI_MEMORY_GATE) did with the NPC's memories: stored, merged,
    skipped (duplicate, restated, recalled, persona) and superseded. A
    superseded memory is kept but left out of searches; /list marks it.

    Examples:
      ailtm Innkeeper = who owes money?
      ailtm/mode Innkeeper = keyword Bob
      ailtm/list Innkeeper = 20
      ailtm/show Innkeeper = 3f2a9c1e-...
      ailtm/delete Innkeeper = 3f2a9c1e-...
    """

    key = "ailtm"
    switch_options = ("mode", "list", "show", "delete", "status", "copy")

    def do_default(self):
        if self.rhs is None:
            npc = self.find_npc(self.args)
            gate_line = describe_counts((npc.ai.metrics or {}).get("memory_gate"))
            self.msg(
                f"{npc.key}: "
                + self.status_text()
                + f"\nQuality gate{'' if conf.get('EVENNIA_AI_MEMORY_GATE') else ' (off)'}: "
                + f"{gate_line}."
                + "\nSearch with |wailtm <npc> = <query>|n."
            )
            return
        npc, query = self.npc_and_rhs("<query>")
        self.search(npc, query, "auto")

    def do_mode(self):
        npc, text = self.npc_and_rhs("<mode> <query>")
        mode, _, query = text.partition(" ")
        try:
            mode = check_mode(mode)
        except ValueError as err:
            raise CommandError(str(err)) from None
        self.search(npc, self.require(query, "<query>"), mode)

    def do_status(self):
        self.msg(self.status_text())

    @staticmethod
    def status_text() -> str:
        return raw(longterm.status_text(longterm.status()))

    def do_copy(self):
        self.require_perm(access.EDIT, "copy long-term memories between stores")
        reply = self.msg

        def tell(line: str) -> None:  # from the copying thread
            reactor.callFromThread(reply, line)

        def done(report):
            reply(raw(report.summary()))

        def failed(failure):
            if failure.check(CopyRefused):
                reply(f"|rNothing copied: {failure.getErrorMessage()}.|n")
            else:
                reply(f"|r{unavailable_message(failure)}|n")

        self.msg("Copying the embedded long-term memories in a thread; progress follows.")
        longterm.defer_to_thread(
            copy_embedded_memories, longterm.get_memory(), progress=tell
        ).addCallbacks(done, failed)

    def search(self, npc, query: str, mode: str) -> None:
        reply, name, width = self.msg, npc.key, self.client_width()

        def done(outcome):
            head = f"|wLong-term memory of {name}|n for '{query}' ({outcome.mode} search)"
            if outcome.note:
                head += f"\n{outcome.note}"
            if not outcome.hits:
                reply(f"{head}: nothing found.")
                return
            reply("\n".join([head] + [memory_line(hit, width) for hit in outcome.hits]))

        def failed(failure):
            reply(f"|r{unavailable_message(failure)}|n")

        self.msg(f"Searching {name}'s long-term memory...")
        longterm.recall(npc.dbref, query, mode=mode).addCallbacks(done, failed)

    def do_list(self):
        npc = self.find_npc(self.lhs)
        limit = self.parse_int(self.rhs, "The count", 1, 100) if self.rhs else LTM_LIST_DEFAULT
        reply, name, width = self.msg, npc.key, self.client_width()

        def done(memories):
            if not memories:
                reply(f"{name} has no long-term memories.")
                return
            lines = [f"|wLong-term memory of {name}|n: the {len(memories)} most recent"]
            lines += [memory_line(memory, width) for memory in memories]
            lines.append(f"(|wailtm/show {name} = <id>|n shows one in full.)")
            reply("\n".join(lines))

        def failed(failure):
            reply(f"|r{unavailable_message(failure)}|n")

        longterm.recent(npc.dbref, limit).addCallbacks(done, failed)

    def do_show(self):
        npc, memory_id = self.npc_and_rhs("<memory id>")
        reply, name = self.msg, npc.key

        def done(hit):
            if hit is None:
                reply(f"|r{name} has no long-term memory with id '{memory_id}'.|n")
            else:
                reply(memory_detail(hit, name))

        def failed(failure):
            reply(f"|r{unavailable_message(failure)}|n")

        longterm.get(npc.dbref, memory_id).addCallbacks(done, failed)

    def do_delete(self):
        npc, memory_id = self.npc_and_rhs("<memory id>")
        reply, name = self.msg, npc.key

        def done(found):
            if found:
                reply(f"{name} forgot memory {memory_id}.")
            else:
                reply(f"|r{name} has no long-term memory with id '{memory_id}'.|n")

        def failed(failure):
            reply(f"|r{unavailable_message(failure)}|n")

        longterm.delete(npc.dbref, memory_id).addCallbacks(done, failed)
