"""Memory-block and archival tools: the model edits its memory blocks within their permissions.

Thin glue over :mod:`evennia_ai.memory.blocks` (pure) and
:mod:`evennia_ai.memory.block_admin`. One tool per kind of edit, each taking the block's
``label`` (``Owner/label`` for an ambiguous block shared by another NPC) and, for a composite
block, the ``section`` to edit; so section edits are the same tools with ``section`` set, and
there is no separate section tool.

========================  ====================================================================
tool                      operation (:data:`evennia_ai.memory.blocks.OPS`)
========================  ====================================================================
block_read                (read a block, or list all without a label)
block_set_text            set_text
block_append_text         append_text
block_replace_text        replace_text
block_set_field           set_field (a string into a text field is set_text_field)
block_increment           increment_counter
block_push_item           push_item; with ``field``: append_to_list_field
block_insert_item         insert_item (``position`` 1-based, as the numbered list shows)
block_delete_item         delete_item; with ``field`` instead of ``position``: delete_field
block_append_log          append_log_entry
archival_insert / archival_search / archival_delete   the archive beside the blocks
========================  ====================================================================

A write is checked on the block as read, then applied to a fresh read and written once (see
:func:`~evennia_ai.memory.block_admin.apply_fresh`). A write to a Partner or Human block is
queued for the owning NPC's operator (``kind="block_write"``) and the model is told it waits.
Writes to a block another NPC shares are bounded by the share (``read``: none; ``append``:
appends only, attributed to the writer).
"""

from __future__ import annotations

from evennia_ai import conf
from evennia_ai.formatting import arguments_text
from evennia_ai.memory import block_admin
from evennia_ai.memory import blocks as pure
from evennia_ai.memory import gate
from evennia_ai.memory.blocks import BlockError, BlockOpResult
from evennia_ai.memory.keyword_index import KeywordDoc, normalise_text
from evennia_ai.npc_state import npc_state
from evennia_ai.tools.approvals import ConfirmationError, get_confirmation_queue
from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.longterm import gate_context
from evennia_ai.tools.registry import register_tool

ANY_VALUE = {"type": ["string", "number", "boolean", "array", "object"]}
LABEL = {
    "type": "string",
    "minLength": 1,
    "maxLength": 140,
    "description": "the block's label (Owner/label for a block shared with you)",
}
SECTION = {"type": "string", "maxLength": 64, "description": "section of a block with sections"}
TEXT = {"type": "string", "maxLength": pure.MAX_TEXT}


def _params(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def to_tool_result(result: BlockOpResult) -> ToolResult:
    """A block/archival result as the model reads it."""
    if result.success:
        return ToolResult.ok(result.to_dict())
    extra = {"suggestion": result.suggestion} if result.suggestion else {}
    return ToolResult.fail(result.message, **extra)


def queue_confirmation(
    ctx: ToolContext, target: block_admin.BlockTarget, op: str, args: dict, result: BlockOpResult
) -> ToolResult:
    """Queue a model write to a Partner/Human block for the owning NPC's operator."""
    writer = ctx.npc
    payload = {
        "label": target.label,
        "op": op,
        "args": args,
        "author": writer.key if target.share_mode else None,
        "requested_by": writer.id,
        "requested_by_key": writer.key,
    }
    reason = (
        f"{writer.key} wants to {op.replace('_', ' ')} in memory block "
        f"'{target.address}' ({target.permission} permission): {arguments_text(args)}"
    )
    try:
        confirmation_id = get_confirmation_queue().add_entry(
            target.owner,
            op,
            payload,
            kind="block_write",
            reason=reason[:500],
            tick_id=ctx.tick_id or None,
        )
    except ConfirmationError as err:
        return ToolResult.fail(str(err))
    return ToolResult(
        success=True,
        content={
            "status": "pending_confirmation",
            "confirmation_id": confirmation_id,
            "message": f"{result.message} It has not been applied yet.",
        },
        pending=True,
        data={"confirmation_id": confirmation_id},
    )


def model_write(ctx: ToolContext, label: str, op: str, args: dict) -> ToolResult:
    """Run one model-driven block op: permission-checked, pending when it needs confirmation."""
    npc = ctx.npc
    try:
        target = block_admin.find_block(npc, label)
    except BlockError as err:
        return ToolResult.fail(str(err))
    author = npc.key if target.share_mode else None
    args = {k: v for k, v in args.items() if v is not None}
    # First on the block as read: denied, invalid and pending ops write nothing.
    _block, check = pure.apply_op(
        target.block, op, args, is_system=False, permission=target.permission, author=author
    )
    if check.status == pure.PENDING:
        return queue_confirmation(ctx, target, op, args, check)
    if not check.success:
        return to_tool_result(check)
    result = block_admin.apply_fresh(
        target.owner,
        target.label,
        op,
        args,
        is_system=False,
        reader=npc if target.share_mode else None,
        author=author,
    )
    if result.status == pure.PENDING:  # its permission changed since the check
        return queue_confirmation(ctx, target, op, args, result)
    return to_tool_result(result)


class BlockWriteTool(Tool):
    """Base of the block-editing tools (bookkeeping: they only note things down)."""

    category = ToolCategory.SAFE_CHAIN
    bookkeeping = True


@register_tool
class BlockRead(Tool):
    bookkeeping = True  # a look-up: the answer still comes in a single-action tick
    name = "block_read"
    group = "blocks"
    description = (
        "Read one of your memory blocks in full (blocks not shown in your context appear only "
        "when named), or list all your blocks with what you may do to each (no label). "
        "start_line pages through a long text block."
    )
    parameters = _params({"label": LABEL, "start_line": {"type": "integer", "minimum": 1}}, [])

    def run(self, ctx, label=None, start_line=None):
        npc = ctx.npc
        if not label:
            listing = [
                pure.describe_block(t.block, shared_from=t.shared_from, permission=t.permission)
                for t in block_admin.visible_blocks(npc)
            ]
            return ToolResult.ok({"success": True, "blocks": listing})
        try:
            target = block_admin.find_block(npc, label)
        except BlockError as err:
            return ToolResult.fail(str(err))
        start = start_line - 1 if start_line else None
        return ToolResult.ok(
            pure.render_block(
                target.block,
                shared_from=target.shared_from,
                permission=target.permission,
                start=start,
            )
        )


@register_tool
class BlockSetText(BlockWriteTool):
    name = "block_set_text"
    group = "blocks"
    description = "Replace all text of a text memory block (or text section)."
    parameters = _params({"label": LABEL, "text": TEXT, "section": SECTION}, ["label", "text"])

    def run(self, ctx, label, text, section=None):
        return model_write(ctx, label, "set_text", {"text": text, "section": section})


@register_tool
class BlockAppendText(BlockWriteTool):
    name = "block_append_text"
    group = "blocks"
    description = "Add text at the end of a text memory block (on a new line)."
    parameters = _params({"label": LABEL, "text": TEXT, "section": SECTION}, ["label", "text"])

    def run(self, ctx, label, text, section=None):
        return model_write(ctx, label, "append_text", {"text": text, "section": section})


@register_tool
class BlockReplaceText(BlockWriteTool):
    name = "block_replace_text"
    group = "blocks"
    description = "Replace exact text in a text memory block (every occurrence of 'old')."
    parameters = _params(
        {
            "label": LABEL,
            "old": {"type": "string", "minLength": 1},
            "new": {"type": "string"},
            "section": SECTION,
        },
        ["label", "old", "new"],
    )

    def run(self, ctx, label, old, new, section=None):
        return model_write(ctx, label, "replace_text", {"old": old, "new": new, "section": section})


@register_tool
class BlockSetField(BlockWriteTool):
    name = "block_set_field"
    group = "blocks"
    description = "Set a field of a map memory block (fields marked [read-only] cannot be set)."
    parameters = _params(
        {
            "label": LABEL,
            "field": {"type": "string", "minLength": 1},
            "value": ANY_VALUE,
            "section": SECTION,
        },
        ["label", "field", "value"],
    )

    def run(self, ctx, label, field, value, section=None):
        return model_write(
            ctx, label, "set_field", {"field": field, "value": value, "section": section}
        )


@register_tool
class BlockIncrement(BlockWriteTool):
    name = "block_increment"
    group = "blocks"
    description = "Add to a number/counter field of a map memory block (by defaults to 1)."
    parameters = _params(
        {
            "label": LABEL,
            "field": {"type": "string", "minLength": 1},
            "by": {"type": "number"},
            "section": SECTION,
        },
        ["label", "field"],
    )

    def run(self, ctx, label, field, by=1, section=None):
        return model_write(
            ctx, label, "increment_counter", {"field": field, "by": by, "section": section}
        )


@register_tool
class BlockPushItem(BlockWriteTool):
    name = "block_push_item"
    group = "blocks"
    description = (
        "Add an item at the end of a list memory block, or (with field) to a list field of a "
        "map block."
    )
    parameters = _params(
        {
            "label": LABEL,
            "item": ANY_VALUE,
            "field": {"type": "string", "minLength": 1},
            "section": SECTION,
        },
        ["label", "item"],
    )

    def run(self, ctx, label, item, field=None, section=None):
        if field:
            return model_write(
                ctx,
                label,
                "append_to_list_field",
                {"field": field, "item": item, "section": section},
            )
        return model_write(ctx, label, "push_item", {"item": item, "section": section})


@register_tool
class BlockInsertItem(BlockWriteTool):
    name = "block_insert_item"
    group = "blocks"
    description = "Insert an item into a list memory block at a position (1 = first)."
    parameters = _params(
        {
            "label": LABEL,
            "position": {"type": "integer", "minimum": 1},
            "item": ANY_VALUE,
            "section": SECTION,
        },
        ["label", "position", "item"],
    )

    def run(self, ctx, label, position, item, section=None):
        return model_write(
            ctx, label, "insert_item", {"position": position, "item": item, "section": section}
        )


@register_tool
class BlockDeleteItem(BlockWriteTool):
    name = "block_delete_item"
    group = "blocks"
    description = (
        "Delete the item at a position (1 = first) of a list memory block, or clear a field of "
        "a map block (give field instead of position). Needs Admin permission."
    )
    parameters = _params(
        {
            "label": LABEL,
            "position": {"type": "integer", "minimum": 1},
            "field": {"type": "string", "minLength": 1},
            "section": SECTION,
        },
        ["label"],
    )

    def run(self, ctx, label, position=None, field=None, section=None):
        if (position is None) == (field is None):
            return ToolResult.fail("Give either position (a list item) or field (a map field).")
        if field is not None:
            return model_write(ctx, label, "delete_field", {"field": field, "section": section})
        return model_write(ctx, label, "delete_item", {"position": position, "section": section})


@register_tool
class BlockAppendLog(BlockWriteTool):
    name = "block_append_log"
    group = "blocks"
    description = "Add an entry to a log memory block (timestamped; shown newest first)."
    parameters = _params(
        {
            "label": LABEL,
            "message": {"type": "string", "minLength": 1, "maxLength": 2000},
            "fields": {"type": "object", "description": "extra details"},
            "section": SECTION,
        },
        ["label", "message"],
    )

    def run(self, ctx, label, message, fields=None, section=None):
        entry = dict(fields or {})
        entry.pop("timestamp", None)  # the time of an entry is when it is written
        entry["message"] = message
        return model_write(ctx, label, "append_log_entry", {"entry": entry, "section": section})


# -- archival ------------------------------------------------------------------------------------
@register_tool
class ArchivalInsert(Tool):
    bookkeeping = True
    name = "archival_insert"
    group = "memory"
    description = (
        "Store a passage in your archive (long-term storage, not shown in your context; find "
        "it again with archival_search)."
    )
    parameters = _params(
        {
            "content": {"type": "string", "minLength": 3, "maxLength": pure.MAX_ARCHIVAL_CHARS},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 50}, "maxItems": 10},
        },
        ["content"],
    )

    def run(self, ctx, content, tags=None):
        refusal = archival_gate(ctx, content)
        if refusal is not None:
            return refusal
        metadata = {"tags": list(tags)} if tags else {}
        if ctx.tick_id:
            metadata["tick"] = ctx.tick_id
        result = to_tool_result(block_admin.archival_insert(ctx.npc, content, metadata))
        if conf.get_bool("EVENNIA_AI_MEMORY_GATE") and result.success:
            content = result.content if isinstance(result.content, dict) else {}
            duplicate = bool(content.get("duplicate"))
            gate.record_decisions(ctx.npc, [gate.SKIPPED_DUPLICATE if duplicate else gate.STORED])
        return result


def archival_gate(ctx: ToolContext, content: str) -> ToolResult | None:
    """The quality gate for an archival entry: a result refusing it, or None to archive it.

    The archive keeps passages as written (no merging, no superseding): only the skipping rules
    apply, against the archive's entries. An entry equal to one archived is left to
    :func:`~evennia_ai.memory.blocks.archival_insert` ("Already archived.").
    """
    if not conf.get_bool("EVENNIA_AI_MEMORY_GATE"):
        return None
    entries = [
        KeywordDoc(id=str(entry.get("id") or ""), npc="", text=str(entry.get("content") or ""))
        for entry in npc_state(ctx.npc).archival or []
    ]
    decision = gate.decide(content, entries, gate_context(ctx))
    existing = decision.existing
    equal = existing is not None and normalise_text(existing.text) == normalise_text(content)
    if decision.stores or equal:
        return None
    gate.record_decisions(ctx.npc, [decision.action])
    return ToolResult.ok(
        {"success": True, "archived": False, "note": f"Not archived: {decision.reason}."}
    )


@register_tool
class ArchivalSearch(Tool):
    bookkeeping = True  # a look-up: the answer still comes in a single-action tick
    name = "archival_search"
    group = "memory"
    description = "Search your archive by words; returns the best entries with their ids."
    parameters = _params(
        {
            "query": {"type": "string", "minLength": 1, "maxLength": 500},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            "offset": {"type": "integer", "minimum": 0, "maximum": 80},
        },
        ["query"],
    )

    def run(self, ctx, query, limit=5, offset=0):
        hits = block_admin.archival_search(ctx.npc, query, limit + offset)[offset:]
        found = [
            {
                "id": h.get("id"),
                "content": h.get("content"),
                "score": h.get("score"),
                "created": h.get("created"),
                "tags": (h.get("metadata") or {}).get("tags", []),
            }
            for h in hits
        ]
        data = {"success": True, "results": found}
        if not found:
            data["note"] = "Nothing in your archive matches those words."
        return ToolResult.ok(data)


@register_tool
class ArchivalDelete(Tool):
    name = "archival_delete"
    group = "memory"
    description = "Delete an entry from your archive by its id."
    parameters = _params({"id": {"type": "string", "minLength": 1}}, ["id"])

    def run(self, ctx, id):  # noqa: A002 - the argument name the model sees
        return to_tool_result(block_admin.archival_delete(ctx.npc, id))
