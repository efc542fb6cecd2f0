"""``aiblock``: an AI NPC's memory blocks and archival entries, written as the operator (through
:mod:`evennia_ai.memory.block_admin`, which bypasses block permissions and read-only fields).
Re-exported by :mod:`evennia_ai.commands.memory`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evennia.utils.search import search_object

from evennia_ai import conf
from evennia_ai.commands.base import CommandError, SwitchedCommand
from evennia_ai.commands.memory_common import short
from evennia_ai.commands.workspace import checked
from evennia_ai.formatting import count, timestamp
from evennia_ai.memory import block_admin
from evennia_ai.memory import blocks as pure
from evennia_ai.memory.blocks import BlockError

ARCHIVAL_SHOWN = 20  # archival entries listed / found at once


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
      aiblock/permission <npc> = <label> <permission>
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
      create     - a new block: just a label (a Working text block), or a JSON
                   spec with label, type, schema, permission, description,
                   pinned, content.
      set        - text blocks: replace the text; map blocks: set a field (the value
                   is read as JSON when it parses, e.g. 3, true, ["a","b"]).
      append     - text: add a line; list: add an item; log: add an entry;
                   map: add an item to a list field (field=item).
      delitem    - list: delete the item at a position (1 = first); map: clear
                   a field.
      permission - what the NPC itself may do to the block (operators are
                   never limited): ReadOnly, Partner, Human, Append, ReadWrite
                   or Admin.
      type       - Core blocks are always in context; others only when pinned
                   or named.
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
      aiblock/create Innkeeper = {"label": "profile", "schema": "map"}
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
            include_description=conf.get_bool("EVENNIA_AI_BLOCK_DESCRIPTIONS"),
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
