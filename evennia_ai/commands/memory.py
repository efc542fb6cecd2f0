"""Admin commands over an AI NPC's memory: memory blocks and archival entries, long-term
memory (mem0 and the keyword index), entity profiles, and its conversation history with
its compaction state.

Thin glue: blocks go through :mod:`evennia_ai.memory.block_admin` (operator writes, which
bypass block permissions and read-only fields), long-term memory through the Deferred API of
:mod:`evennia_ai.memory.longterm` (searches run in a thread; the caller is messaged when they
finish), and entity profiles through :mod:`evennia_ai.memory.entities`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evennia.objects.objects import DefaultCharacter
from evennia.utils.ansi import raw
from evennia.utils.search import search_object
from evennia.utils.utils import crop
from twisted.internet import reactor

from evennia_ai import access, conf
from evennia_ai.commands.base import AICommand, CommandError, SwitchedCommand
from evennia_ai.commands.workspace import apply_character, checked
from evennia_ai.formatting import count, date, percent, timestamp
from evennia_ai.memory import block_admin
from evennia_ai.memory import blocks as pure
from evennia_ai.memory import entities as entities_mod
from evennia_ai.memory import longterm
from evennia_ai.memory.blocks import BlockError
from evennia_ai.memory.entities import forget
from evennia_ai.memory.gate import describe_counts
from evennia_ai.memory.history import render_text
from evennia_ai.memory.keyword_index import KeywordIndexUnavailable
from evennia_ai.memory.migrate_store import CopyRefused, copy_embedded_memories
from evennia_ai.memory.search import check_mode
from evennia_ai.npc.history_report import history_report
from evennia_ai.utils import clean_text
from evennia_ai.workspace.journal import TRUST

ARCHIVAL_SHOWN = 20  # archival entries listed / found at once
LTM_LIST_DEFAULT = 10
MEMORY_TEXT_MIN = 20  # characters of a memory's text a one-line summary keeps at least
ENTITY_OBSERVATIONS_SHOWN = 20
# How far an observation the operator notes is trusted (the operator tells the NPC directly).
OPERATOR_TRUST_SOURCE = "told_directly"


def short(text: Any, width: int = 70) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    return crop(" ".join(str(text or "").split()), width=width, suffix="\u2026")


# -- memory blocks ---------------------------------------------------------------------------------
CREATE_KEYS = ("label", "type", "schema", "permission", "description", "pinned", "content")
_SHARE = re.compile(r"^(\S+)\s+to\s+(.+?)(?:\s+(read|append))?\s*$", re.I)
_UNSHARE = re.compile(r"^(\S+)\s+from\s+(.+?)\s*$", re.I)


def parse_value(text: str) -> Any:
    """A value typed by the operator: JSON when it parses (numbers, true, lists...), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class CmdAIBlock(SwitchedCommand):
    """
    Show and edit an AI NPC's memory blocks and archival entries.

    Usage:
      aiblock <npc>
      aiblock/show <npc> = <label>
      aiblock/create <npc> = <label>
      aiblock/create <npc> = <json spec>
      aiblock/set <npc> = <label>[:<section>] <text or field=value>
      aiblock/append <npc> = <label>[:<section>] <text, item or field=item>
      aiblock/delitem <npc> = <label>[:<section>] <position or field>
      aiblock/permission <npc> = <label> <ReadOnly||Partner||Human||Append||ReadWrite||Admin>
      aiblock/type <npc> = <label> <Core||Working||Archival||Log>
      aiblock/describe <npc> = <label> <description>
      aiblock/pin <npc> = <label>
      aiblock/unpin <npc> = <label>
      aiblock/secret <npc> = <label>
      aiblock/unsecret <npc> = <label>
      aiblock/delete <npc> = <label>
      aiblock/share <npc> = <label> to <other npc> [read||append]
      aiblock/unshare <npc> = <label> from <other npc>
      aiblock/archival <npc> [= <query>]
      aiblock/archdel <npc> = <entry id>

    Switches:
      show       - the block as the NPC sees it in its context.
      create     - a new block: just a label (a Working text block), or a JSON spec
                   with label, type, schema, permission, description, pinned, content.
      set        - text blocks: replace the text; map blocks: set a field (the value
                   is read as JSON when it parses, e.g. 3, true, ["a","b"]).
      append     - text: add a line; list: add an item; log: add an entry;
                   map: add an item to a list field (field=item).
      delitem    - list: delete the item at a position (1 = first); map: clear a field.
      permission - what the NPC itself may do to the block (operators are never limited).
      type       - Core blocks are always in context; others only when pinned or named.
      describe   - the description shown under the block's tag.
      pin/unpin  - keep a non-Core block in context every tick, or not.
      secret/unsecret - the NPC knows the block's text but never says, emotes,
                   whispers or pages it (5 words in a row of it are refused).
      delete     - delete the block (and its shares).
      share      - let another AI NPC read (default) or append to the block.
      unshare    - stop sharing it.
      archival   - list the newest archival entries, or search them by words.
      archdel    - delete an archival entry by id.

    Operator writes bypass block permissions and read-only fields. Composite blocks
    take the section after a colon: profile:mood.

    Examples:
      aiblock Innkeeper
      aiblock/create Innkeeper = notes
      aiblock/create Innkeeper = {"label": "profile", "type": "Core", "schema": "map"}
      aiblock/set Innkeeper = notes The well is dry.
      aiblock/set Innkeeper = profile mood=cheerful
      aiblock/permission Innkeeper = notes Append
      aiblock/share Innkeeper = notes to Blacksmith append
      aiblock/archival Innkeeper = well water
    """

    key = "aiblock"
    aliases = ["aiblocks"]
    switch_options = (
        "show",
        "create",
        "set",
        "append",
        "delitem",
        "permission",
        "type",
        "describe",
        "pin",
        "unpin",
        "secret",
        "unsecret",
        "delete",
        "share",
        "unshare",
        "archival",
        "archdel",
    )

    def run(self):
        try:
            super().run()
        except BlockError as err:
            raise CommandError(str(err)) from None

    # -- reading -------------------------------------------------------------------------------
    def do_default(self):
        npc = self.find_npc(self.args)
        targets = block_admin.visible_blocks(npc)
        if not targets:
            self.msg(f"{npc.key} has no memory blocks. |waiblock/create|n makes one.")
            return
        table = self.table("Label", "Type", "Schema", "Permission", "Context", "Size", keep=(0,))
        for target in targets:
            block = target.block
            schema = block.get("schema") or pure.normalise_schema(None)
            if block.get("type") == "Core":
                presence = "always"
            else:
                presence = "pinned" if block.get("pinned") else "ephemeral"
            size = len(pure.render_content(schema, block.get("content")))
            label = target.address + (f" (from {target.shared_from})" if target.share_mode else "")
            table.add_row(
                label,
                block.get("type", "?"),
                schema.get("kind", "text"),
                target.permission,
                presence,
                count(size),
            )
        self.msg(f"|wMemory blocks of {npc.key}|n\n{table}")

    def do_show(self):
        npc, label = self.npc_and_rhs("<label>")
        target = block_admin.find_block(npc, label)
        block = target.block
        details = [
            f"type {block.get('type')}",
            f"schema {(block.get('schema') or {}).get('kind', 'text')}",
        ]
        if block.get("pinned"):
            details.append("pinned")
        shared = block.get("shared_with") or {}
        if shared and not target.share_mode:
            names = []
            for npc_id, mode in shared.items():
                found = search_object(f"#{npc_id}")
                names.append(f"{found[0].key if found else '#' + str(npc_id)} ({mode})")
            details.append("shared with " + ", ".join(names))
        rendered = pure.render_block(
            block,
            include_description=bool(conf.get("EVENNIA_AI_BLOCK_DESCRIPTIONS")),
            shared_from=target.shared_from,
            permission=target.permission,
        )
        self.msg(f"|wBlock {target.address}|n of {npc.key}: {', '.join(details)}\n{rendered}")

    # -- configuration ---------------------------------------------------------------------------
    def do_create(self):
        npc, text = self.npc_and_rhs("<label> or <json spec>")
        if text.startswith("{"):
            spec = self.parse_json(text, "block spec")
            if not isinstance(spec, dict):
                raise CommandError("The block spec must be a JSON object.")
            unknown = sorted(set(spec) - set(CREATE_KEYS))
            if unknown:
                raise CommandError(
                    f"Unknown key(s) in the block spec: {', '.join(unknown)}. "
                    f"Keys: {', '.join(CREATE_KEYS)}."
                )
            if "label" not in spec:
                raise CommandError('The block spec needs a "label".')
        else:
            spec = {"label": text}
        label = spec.pop("label")
        block = block_admin.create_block(npc, label, **spec)
        self.msg(
            f"Created memory block '{block['label']}' on {npc.key} "
            f"({block['type']}, {block['schema']['kind']}, {block['permission']})."
        )

    def label_and_rest(self, what: str) -> tuple[Any, str, str]:
        npc, text = self.npc_and_rhs(f"<label> {what}")
        label, _, rest = text.partition(" ")
        return npc, label, self.require(rest, what)

    def do_permission(self):
        npc, label, value = self.label_and_rest("<permission>")
        block = block_admin.set_permission(npc, label, value)
        self.msg(
            f"Memory block '{block['label']}' of {npc.key} now has {block['permission']} permission."
        )

    def do_type(self):
        npc, label, value = self.label_and_rest("<type>")
        block = block_admin.set_block_type(npc, label, value)
        self.msg(f"Memory block '{block['label']}' of {npc.key} is now a {block['type']} block.")

    def do_describe(self):
        npc, label, value = self.label_and_rest("<description>")
        block = block_admin.set_description(npc, label, value)
        self.msg(f"Described memory block '{block['label']}' of {npc.key}.")

    def do_pin(self, pinned: bool = True):
        npc, label = self.npc_and_rhs("<label>")
        block = block_admin.set_pinned(npc, label, pinned)
        state = "pinned: it is in context every tick" if pinned else "unpinned"
        if not pinned and block.get("type") != "Core":
            state += ": it is in context only when named"
        self.msg(f"Memory block '{block['label']}' of {npc.key} is {state}.")

    def do_unpin(self):
        self.do_pin(False)

    def do_secret(self, secret: bool = True):
        npc, label = self.npc_and_rhs("<label>")
        block = block_admin.set_secret(npc, label, secret)
        state = "secret: the NPC never says its text" if secret else "no longer secret"
        self.msg(f"Memory block '{block['label']}' of {npc.key} is {state}.")

    def do_unsecret(self):
        self.do_secret(False)

    def do_delete(self):
        npc, label = self.npc_and_rhs("<label>")
        block_admin.delete_block(npc, label)
        self.msg(f"Deleted memory block '{label}' of {npc.key}.")

    def do_share(self):
        npc, text = self.npc_and_rhs("<label> to <other npc> [read||append]")
        match = _SHARE.match(text)
        if not match:
            raise CommandError("Give <label> to <other npc> [read||append].")
        label, other_name, mode = match.groups()
        other = self.find_npc(other_name)
        block = block_admin.share_block(npc, label, other, (mode or "read").lower())
        self.msg(
            f"Memory block '{block['label']}' of {npc.key} is shared with {other.key} "
            f"({block['shared_with'][str(other.id)]})."
        )

    def do_unshare(self):
        npc, text = self.npc_and_rhs("<label> from <other npc>")
        match = _UNSHARE.match(text)
        if not match:
            raise CommandError("Give <label> from <other npc>.")
        other = self.find_npc(match.group(2))
        block = block_admin.unshare_block(npc, match.group(1), other)
        self.msg(
            f"Memory block '{block['label']}' of {npc.key} is no longer shared with {other.key}."
        )

    # -- content -------------------------------------------------------------------------------
    def target_schema(self, npc, spec: str) -> tuple[str, str | None, dict]:
        """``(label, section, schema)`` of ``label[:section]`` on the NPC's own blocks."""
        label, _, section = spec.partition(":")
        block = block_admin.get_block(npc, label)
        schema = block.get("schema") or pure.normalise_schema(None)
        if schema.get("kind") == "composite":
            if not section:
                names = ", ".join(s["name"] for s in schema.get("sections", []))
                raise CommandError(
                    f"Memory block '{label}' has sections; name one as "
                    f"{label}:<section>. Sections: {names}."
                )
            found = next((s for s in schema.get("sections", []) if s["name"] == section), None)
            if found is None:
                names = ", ".join(s["name"] for s in schema.get("sections", []))
                raise CommandError(
                    f"Memory block '{label}' has no section '{section}'. Sections: {names}."
                )
            schema = found["schema"]
        elif section:
            raise CommandError(f"Memory block '{label}' has no sections.")
        return block["label"], section or None, schema

    def write(self, npc, label: str, section: str | None, op: str, args: dict) -> None:
        if section:
            args["section"] = section
        result = checked(block_admin.system_write(npc, label, op, args))
        self.msg(f"{npc.key}/{label}: {result.message}")

    @staticmethod
    def field_value(schema: dict, text: str, what: str) -> tuple[str, Any]:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"This is a map block: give <field>={what}.")
        name = name.strip()
        fdef = next((f for f in schema.get("fields", []) if f["name"] == name), None)
        value = raw.strip() if fdef and fdef["type"] == "text" else parse_value(raw.strip())
        return name, value

    def do_set(self):
        npc, spec, text = self.label_and_rest("<text or field=value>")
        label, section, schema = self.target_schema(npc, spec)
        kind = schema.get("kind")
        if kind == "text":
            self.write(npc, label, section, "set_text", {"text": text})
        elif kind == "map":
            name, value = self.field_value(schema, text, "<value>")
            self.write(npc, label, section, "set_field", {"field": name, "value": value})
        else:
            raise CommandError(f"A {kind} block is changed with /append and /delitem, not /set.")

    def do_append(self):
        npc, spec, text = self.label_and_rest("<text or item>")
        label, section, schema = self.target_schema(npc, spec)
        kind = schema.get("kind")
        if kind == "text":
            self.write(npc, label, section, "append_text", {"text": text})
        elif kind == "list":
            self.write(npc, label, section, "push_item", {"item": parse_value(text)})
        elif kind == "log":
            self.write(npc, label, section, "append_log_entry", {"entry": {"message": text}})
        else:
            name, item = self.field_value(schema, text, "<item>")
            self.write(npc, label, section, "append_to_list_field", {"field": name, "item": item})

    def do_delitem(self):
        npc, spec, text = self.label_and_rest("<position or field>")
        label, section, schema = self.target_schema(npc, spec)
        kind = schema.get("kind")
        if kind == "list":
            position = self.parse_int(text, "The position", 1)
            self.write(npc, label, section, "delete_item", {"position": position})
        elif kind == "map":
            self.write(npc, label, section, "delete_field", {"field": text})
        else:
            raise CommandError(f"/delitem works on list and map blocks, not on a {kind} block.")

    # -- archival ------------------------------------------------------------------------------
    def do_archival(self):
        npc = self.find_npc(self.lhs)
        entries = npc.ai.archival or []
        if self.rhs:
            found = block_admin.archival_search(npc, self.rhs, ARCHIVAL_SHOWN)
            if not found:
                self.msg(f"Nothing in {npc.key}'s archive matches '{self.rhs}'.")
                return
            head = f"|wArchive of {npc.key}|n: {len(found)} match(es) for '{self.rhs}'"
        else:
            if not entries:
                self.msg(f"{npc.key}'s archive is empty.")
                return
            found = list(reversed(entries))[:ARCHIVAL_SHOWN]
            head = f"|wArchive of {npc.key}|n: {len(found)} newest of {len(entries)} entries"
        lines = [head]
        for entry in found:
            score = f" (score {entry['score']:.2f})" if "score" in entry else ""
            lines.append(
                f"{entry.get('id')} {timestamp(entry.get('created'))}{score}: "
                f"{short(entry.get('content'))}"
            )
        self.msg("\n".join(lines))

    def do_archdel(self):
        npc, entry_id = self.npc_and_rhs("<entry id>")
        checked(block_admin.archival_delete(npc, entry_id))
        self.msg(f"Deleted archival entry {entry_id} of {npc.key}.")


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
    return f"Long-term memory failed: {failure.type.__name__}: {failure.getErrorMessage()}"


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
        caller = self.caller

        def tell(line: str) -> None:  # from the copying thread
            reactor.callFromThread(caller.msg, line)

        def done(report):
            caller.msg(raw(report.summary()))

        def failed(failure):
            if failure.check(CopyRefused):
                caller.msg(f"|rNothing copied: {failure.getErrorMessage()}.|n")
            else:
                caller.msg(f"|r{unavailable_message(failure)}|n")

        self.msg("Copying the embedded long-term memories in a thread; progress follows.")
        longterm.defer_to_thread(
            copy_embedded_memories, longterm.get_memory(), progress=tell
        ).addCallbacks(done, failed)

    def search(self, npc, query: str, mode: str) -> None:
        caller, name, width = self.caller, npc.key, self.client_width()

        def done(outcome):
            head = f"|wLong-term memory of {name}|n for '{query}' ({outcome.mode} search)"
            if outcome.note:
                head += f"\n{outcome.note}"
            if not outcome.hits:
                caller.msg(f"{head}: nothing found.")
                return
            caller.msg("\n".join([head] + [memory_line(hit, width) for hit in outcome.hits]))

        def failed(failure):
            caller.msg(f"|r{unavailable_message(failure)}|n")

        self.msg(f"Searching {name}'s long-term memory...")
        longterm.recall(npc.dbref, query, mode=mode).addCallbacks(done, failed)

    def do_list(self):
        npc = self.find_npc(self.lhs)
        limit = self.parse_int(self.rhs, "The count", 1, 100) if self.rhs else LTM_LIST_DEFAULT
        caller, name, width = self.caller, npc.key, self.client_width()

        def done(memories):
            if not memories:
                caller.msg(f"{name} has no long-term memories.")
                return
            lines = [f"|wLong-term memory of {name}|n: the {len(memories)} most recent"]
            lines += [memory_line(memory, width) for memory in memories]
            lines.append(f"(|wailtm/show {name} = <id>|n shows one in full.)")
            caller.msg("\n".join(lines))

        def failed(failure):
            caller.msg(f"|r{unavailable_message(failure)}|n")

        longterm.recent(npc.dbref, limit).addCallbacks(done, failed)

    def do_show(self):
        npc, memory_id = self.npc_and_rhs("<memory id>")
        caller, name = self.caller, npc.key

        def done(hit):
            if hit is None:
                caller.msg(f"|r{name} has no long-term memory with id '{memory_id}'.|n")
            else:
                caller.msg(memory_detail(hit, name))

        def failed(failure):
            caller.msg(f"|r{unavailable_message(failure)}|n")

        longterm.get(npc.dbref, memory_id).addCallbacks(done, failed)

    def do_delete(self):
        npc, memory_id = self.npc_and_rhs("<memory id>")
        caller, name = self.caller, npc.key

        def done(found):
            if found:
                caller.msg(f"{name} forgot memory {memory_id}.")
            else:
                caller.msg(f"|r{name} has no long-term memory with id '{memory_id}'.|n")

        def failed(failure):
            caller.msg(f"|r{unavailable_message(failure)}|n")

        longterm.delete(npc.dbref, memory_id).addCallbacks(done, failed)


# -- entity profiles -------------------------------------------------------------------------------
def find_profile(entities: dict, name: str) -> tuple[str, dict] | None:
    """``(dbref, profile)`` of the profile called ``name`` (its name, any case, or its dbref)."""
    wanted = name.strip()
    lowered = wanted.lower()
    for dbref, profile in (entities or {}).items():
        if dbref == wanted or (profile.get("name") or "").lower() == lowered:
            return dbref, profile
    return None


class CmdAIEntity(SwitchedCommand):
    """
    Show and edit what an AI NPC knows about the people and things it met.

    Usage:
      aientity <npc>
      aientity/show <npc> = <entity>
      aientity/note <npc> = <entity>: <observation>
      aientity/relationship <npc> = <entity>: <relationship>
      aientity/delete <npc> = <entity>

    Switches:
      show         - the whole profile: relationship, observations, last seen.
      note         - add an observation (trusted as told directly).
      relationship - set how the NPC relates to the entity.
      delete       - forget the profile.

    An entity is named as in its profile (or by #dbref); /note and /relationship
    can also start a profile for any character or object in the game.

    Examples:
      aientity Innkeeper
      aientity/show Innkeeper = Alice
      aientity/note Innkeeper = Alice: orders the stew every evening
      aientity/relationship Innkeeper = Alice: a regular, friendly
      aientity/delete Innkeeper = #42
    """

    key = "aientity"
    aliases = ["aientities"]
    switch_options = ("show", "note", "relationship", "delete")

    def do_default(self):
        npc = self.find_npc(self.args)
        profiles = sorted(
            (npc.ai.entities or {}).values(),
            key=lambda p: p.get("last_seen") or "",
            reverse=True,
        )
        if not profiles:
            self.msg(f"{npc.key} has no entity profiles.")
            return
        lines = [f"|wEntities known to {npc.key}|n (most recently seen first)"]
        for profile in profiles:
            seen = timestamp(profile.get("last_seen") or "never")
            lines.append(
                f"{profile.get('name')} ({profile.get('dbref')}, {profile.get('kind', '?')}): "
                f"{short(profile.get('relationship') or '-', 40)}; last seen {seen}; "
                f"{len(profile.get('observations') or [])} observation(s)"
            )
        self.msg("\n".join(lines))

    def profile(self, npc, name: str) -> tuple[str, dict]:
        found = find_profile(npc.ai.entities, name)
        if found is None:
            raise CommandError(
                f"{npc.key} has no profile of '{name}'. |waientity {npc.key}|n lists them."
            )
        return found

    def do_show(self):
        npc, name = self.npc_and_rhs("<entity>")
        dbref, profile = self.profile(npc, name)
        lines = [
            f"|w{profile.get('name')}|n ({dbref}, {profile.get('kind', '?')}) as {npc.key} knows them",
            f"Relationship: {profile.get('relationship') or '(none)'}",
            f"First met: {timestamp(profile.get('created'))}  "
            f"Last seen: {timestamp(profile.get('last_seen') or 'never')}",
        ]
        observations = profile.get("observations") or []
        lines.append("Observations:" if observations else "Observations: (none)")
        for obs in observations[-ENTITY_OBSERVATIONS_SHOWN:]:
            lines.append(f"- {obs.get('text')} (trust {obs.get('trust')}, {date(obs.get('time'))})")
        self.msg("\n".join(lines))

    def resolve(self, npc, name: str) -> tuple[str, str, str]:
        """``(dbref, name, kind)`` of a known profile, else of a game object called ``name``."""
        found = find_profile(npc.ai.entities, name)
        if found is not None:
            dbref, profile = found
            return dbref, profile.get("name") or name, profile.get("kind", "character")

        matches = [obj for obj in search_object(name) if obj != npc]
        if not matches:
            raise CommandError(
                f"{npc.key} has no profile of '{name}', and nothing in the game " "is called that."
            )
        if len(matches) > 1:
            names = ", ".join(f"{obj.key}({obj.dbref})" for obj in matches[:10])
            raise CommandError(f"'{name}' matches several objects: {names}. Use the #dbref.")
        obj = matches[0]
        character = obj.is_typeclass(DefaultCharacter, exact=False) or bool(obj.has_account)
        return obj.dbref, obj.key, "character" if character else "object"

    def entity_and_text(self, what: str) -> tuple[Any, str, str]:
        npc, text = self.npc_and_rhs(f"<entity>: {what}")
        name, sep, rest = text.partition(":")
        if not sep or not name.strip():
            raise CommandError(f"Give the entity, a colon, then the {what.strip('<>')}.")
        return npc, name.strip(), self.require(rest, what)

    def update(self, npc, name: str, observation: str = "", relationship: str | None = None):
        dbref, key, kind = self.resolve(npc, name)
        return apply_character(
            npc,
            "entities",
            lambda current: entities_mod.update_observation(
                current,
                dbref,
                key,
                observation,
                relationship=relationship,
                trust=TRUST[OPERATOR_TRUST_SOURCE],
                kind=kind,
            ),
        )

    def do_note(self):
        npc, name, text = self.entity_and_text("<observation>")
        op = self.update(npc, name, observation=text)
        self.msg(f"{npc.key}: {op.message}")

    def do_relationship(self):
        npc, name, text = self.entity_and_text("<relationship>")
        op = self.update(npc, name, relationship=text)
        self.msg(f"{npc.key}: {op.message} Relationship: {short(text, 200)}")

    def do_delete(self):
        npc, name = self.npc_and_rhs("<entity>")
        dbref, profile = self.profile(npc, name)

        npc.ai.update("entities", lambda current: forget(current, dbref)[0])
        self.msg(f"{npc.key} forgot its profile of {profile.get('name')} ({dbref}).")


# -- conversation history --------------------------------------------------------------------------
HISTORY_SHOWN = 10  # messages aihistory/last shows by default


class CmdAIHistory(AICommand):
    """
    Show the size of an AI NPC's conversation history and its compaction state.

    Usage:
      aihistory <npc>
      aihistory/last <npc> [= <count>]

    Switches:
      last - the last <count> messages (default 10) as a transcript, by tick.

    Without a switch: the history's messages and ticks, its size in tokens
    (counted for the NPC's model), characters and messages against the caps that
    call for a compaction, its share of the model's window, the last compaction
    (when, and what it folded) and whether one is pending or due.

    A compaction folds the oldest ticks (all but the last
    EVENNIA_AI_COMPACTION_KEEP_RECENT messages) into one summary, or drops them
    (EVENNIA_AI_COMPACTION_STRATEGY). It is due past
    EVENNIA_AI_COMPACTION_EMERGENCY_RATIO of a cap at any time, past
    EVENNIA_AI_COMPACTION_SLEEP_RATIO while asleep, never on the tick right after
    the last one; once due it is pending and runs on a following tick.

    Examples:
      aihistory Marta
      aihistory/last Marta = 20
    """

    key = "aihistory"
    switch_options = ("last",)

    def run(self):
        if self.switch() == "last":
            self.msg(self.last(self.find_npc(self.lhs)))
        else:
            self.msg(self.report(self.find_npc(self.args)))

    def last(self, npc) -> str:
        wanted = self.parse_int(self.rhs, "The count", 1, 200) if self.rhs else HISTORY_SHOWN
        shown = npc.ai.history[-wanted:]
        if not shown:
            return f"{npc.key} has no conversation history."
        text = raw(render_text(shown, assistant_name=npc.key))
        return f"|wThe last {len(shown)} message(s) of {npc.key}'s history|n\n{text}"

    def report(self, npc) -> str:
        report = history_report(npc)
        lines = [
            f"|wHistory of {npc.key}({npc.dbref})|n: {count(report.messages)} message(s) from "
            f"{count(report.ticks)} tick(s), {count(report.tokens)} tokens for {report.model} "
            f"({percent(report.tokens, report.window)} of its {count(report.window)}-token "
            "window)",
        ]
        if report.messages:
            lines.append(f"  oldest {timestamp(report.oldest)}, newest {timestamp(report.newest)}")
        if report.summary_chars:
            lines.append(
                "  starts with a summary of earlier conversation "
                f"({count(report.summary_chars)} characters)"
            )
        table = self.table("Size", "Now", "Cap", "Share", "Compacts at", keep=(0,))
        for m in report.measures:
            table.add_row(
                m.what,
                count(m.used),
                count(m.cap),
                percent(m.used, m.cap),
                f"{count(m.compacts_at)} (asleep {count(m.compacts_asleep_at)})",
            )
        lines.append(str(table))
        lines.append(
            "  caps: tokens - the history's share of the window; characters - "
            "EVENNIA_AI_HISTORY_MAX_CHARS; messages - EVENNIA_AI_HISTORY_MAX_MESSAGES"
        )
        last = raw(report.last_compaction)
        if report.last_failed:
            last = last.replace(": failed: ", ": |rfailed|n: ", 1)
        lines.append(f"|wLast compaction|n: {last}")
        state = report.state if report.state == "not due" else f"|y{report.state}|n"
        lines.append(
            f"|wNow|n: {state}{'; ' if report.state == 'not due' else ' '}{report.now}; "
            f"strategy {report.strategy}, keeps the last {count(report.keep_recent)} messages"
        )
        return "\n".join(lines)


COMMANDS = [CmdAIBlock, CmdAILongTerm, CmdAIEntity, CmdAIHistory]
