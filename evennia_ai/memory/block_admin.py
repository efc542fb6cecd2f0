"""Operator API over an NPC's memory blocks and archival entries (Evennia glue).

Thin glue over the pure :mod:`evennia_ai.memory.blocks`: every change reads a fresh plain copy
of the NPC's ``blocks`` (or ``archival``) Attribute, applies one pure function and writes it
back once (``npc_state(npc).update``). Operator writes bypass block permissions and read-only fields;
bad input raises :class:`~evennia_ai.memory.blocks.BlockError`, whose message can be shown to
the operator as is.

Sharing: a block owned by NPC A with ``shared_with = {"<B's id>": "read" | "append"}`` shows
in B's context with ``shared_from="A"``; B's own ``blocks_shared_in`` Attribute lists
``{"owner": A.id, "label": ...}`` so B finds it without scanning the game. A's
``shared_with`` is the truth: a reference it no longer backs is ignored.

Importing this module registers the confirmation executor for ``kind="block_write"``: a model's
write to a Partner or Human block waits in the confirmation queue, and approving it applies the
write here as a system write.

Example:
    from evennia_ai.memory import block_admin

    block_admin.create_block(npc, "profile", type="Core", schema="map",
                             content={"name": "Keeper"})
    block_admin.set_pinned(npc, "notes", True)
    block_admin.share_block(archive_npc, "shared_notes", npc, "append")
    block_admin.system_write(npc, "profile", "set_field", {"field": "mood", "value": "calm"})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evennia.objects.models import ObjectDB

from evennia_ai import conf
from evennia_ai.memory import blocks as pure
from evennia_ai.memory.blocks import BlockError, BlockOpResult
from evennia_ai.npc_state import ARCHIVAL, BLOCKS, BLOCKS_SHARED_IN, find_npc_state, npc_state

SHARED_IN_KEY = BLOCKS_SHARED_IN  # the name this module gave it before npc_state


def max_archival_entries() -> int:
    return conf.get_int("EVENNIA_AI_ARCHIVAL_MAX_ENTRIES")


# -- reading -------------------------------------------------------------------------------------
def _blocks(npc) -> dict:
    return npc_state(npc).blocks or {}


def list_blocks(npc) -> list[dict]:
    """Summaries (no content) of the NPC's own blocks, in creation order."""
    return [pure.describe_block(block) for block in _blocks(npc).values()]


def get_block(npc, label: str) -> dict:
    """A plain copy of one of the NPC's own blocks (BlockError when missing)."""
    return pure.get_block(_blocks(npc), label)


@dataclass
class BlockTarget:
    """A block as one NPC sees it: its own, or one another NPC shares with it.

    Attributes:
        owner: The NPC holding the block.
        label: The block's label.
        block: A plain copy of the block.
        share_mode: None for the NPC's own block, else ``read`` or ``append``.
    """

    owner: Any
    label: str
    block: dict
    share_mode: str | None = None

    @property
    def shared_from(self) -> str | None:
        """The owner's name for a shared block (None for an own block)."""
        return self.owner.key if self.share_mode else None

    @property
    def permission(self) -> str:
        """The reader's effective permission on the block."""
        return pure.effective_permission(self.block, self.share_mode)

    @property
    def address(self) -> str:
        """How the reader names it: ``label``, or ``Owner/label`` for a shared block."""
        return f"{self.owner.key}/{self.label}" if self.share_mode else self.label


def _find_object(obj_id):
    try:
        return ObjectDB.objects.get(id=int(obj_id))
    except (ObjectDB.DoesNotExist, TypeError, ValueError):
        return None


def shared_blocks_for(npc) -> list[BlockTarget]:
    """Blocks other NPCs share with ``npc`` (stale references skipped)."""
    out = []
    for ref in npc_state(npc).blocks_shared_in or []:
        owner = _find_object(ref.get("owner"))
        if owner is None or owner == npc or find_npc_state(owner) is None:
            continue
        block = _blocks(owner).get(ref.get("label"))
        mode = (block or {}).get("shared_with", {}).get(str(npc.id))
        if block is None or mode not in pure.SHARE_MODES:
            continue
        out.append(BlockTarget(owner, block["label"], block, mode))
    return out


def visible_blocks(npc) -> list[BlockTarget]:
    """The NPC's own blocks, then those shared with it."""
    own = [BlockTarget(npc, label, block) for label, block in _blocks(npc).items()]
    return own + shared_blocks_for(npc)


def find_block(npc, label: str) -> BlockTarget:
    """The block ``npc`` means by ``label``: its own first, else one shared with it.

    ``Owner/label`` names a shared block explicitly (needed when the label is ambiguous).

    Raises:
        BlockError: No such block, or the label is ambiguous; the message lists the choices.
    """
    text = str(label or "").strip()
    owner_name = None
    if "/" in text:
        owner_name, text = (part.strip() for part in text.rsplit("/", 1))
    targets = visible_blocks(npc)
    if owner_name is None:
        own = [t for t in targets if t.share_mode is None and t.label == text]
        if own:
            return own[0]
        matches = [t for t in targets if t.share_mode and t.label == text]
    else:
        lowered = owner_name.casefold()
        matches = [
            t
            for t in targets
            if t.label == text
            and (
                (t.share_mode and t.owner.key.casefold() == lowered)
                or (t.share_mode is None and lowered in ("me", "self", npc.key.casefold()))
            )
        ]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(t.address for t in targets) or "none"
    if len(matches) > 1:
        raise BlockError(
            f"Several blocks shared with you are called '{text}': "
            + ", ".join(t.address for t in matches)
            + ". Say which, as Owner/label."
        )
    raise BlockError(f"No memory block called '{label}'. Your blocks: {known}.")


# -- block configuration -------------------------------------------------------------------------
def create_block(
    npc,
    label: str,
    *,
    type: str = pure.DEFAULT_TYPE,
    schema: Any = None,
    permission: str = pure.DEFAULT_PERMISSION,
    description: str = "",
    pinned: bool = False,
    content: Any = None,
) -> dict:
    """Create a block on ``npc`` (one write); returns it. See :func:`blocks.create_block`."""
    label = pure.check_label(label)
    npc_state(npc).update(
        BLOCKS,
        lambda blocks: pure.create_block(
            blocks,
            label,
            type=type,
            schema=schema,
            permission=permission,
            description=description,
            pinned=pinned,
            content=content,
        ),
    )
    return get_block(npc, label)


def delete_block(npc, label: str) -> None:
    """Delete one of ``npc``'s blocks, and the references of the NPCs it was shared with."""
    block = get_block(npc, label)
    npc_state(npc).update(BLOCKS, lambda blocks: pure.delete_block(blocks, label))
    for target_id in block.get("shared_with", {}):
        target = _find_object(target_id)
        if target is not None and find_npc_state(target) is not None:
            _drop_shared_ref(target, npc, block["label"])


def configure_block(npc, label: str, **changes) -> dict:
    """Change ``type``, ``permission``, ``pinned``, ``description`` or ``schema``; returns the block."""
    npc_state(npc).update(BLOCKS, lambda blocks: pure.configure_block(blocks, label, **changes))
    return get_block(npc, label)


def set_permission(npc, label: str, permission: str) -> dict:
    return configure_block(npc, label, permission=permission)


def set_pinned(npc, label: str, pinned: bool = True) -> dict:
    return configure_block(npc, label, pinned=pinned)


def set_secret(npc, label: str, secret: bool = True) -> dict:
    """Mark a block secret (the NPC never says its text) or not."""
    return configure_block(npc, label, secret=secret)


def set_block_type(npc, label: str, block_type: str) -> dict:
    return configure_block(npc, label, type=block_type)


def set_description(npc, label: str, description: str) -> dict:
    return configure_block(npc, label, description=description)


# -- sharing -------------------------------------------------------------------------------------
def _drop_shared_ref(target, owner, label: str) -> None:
    def drop(refs):
        return [
            r for r in refs or [] if not (r.get("owner") == owner.id and r.get("label") == label)
        ]

    npc_state(target).update(BLOCKS_SHARED_IN, drop)


def share_block(owner, label: str, target, mode: str = "read") -> dict:
    """Share ``owner``'s block with the NPC ``target`` (``read`` or ``append``); returns it.

    Sharing again with another mode changes the mode.
    """
    if target is None or find_npc_state(target) is None:
        raise BlockError("Blocks can only be shared with AI assistants.")
    if target == owner:
        raise BlockError("An NPC cannot share a block with itself.")
    mode = pure.parse_share_mode(mode)
    label = get_block(owner, label)["label"]
    npc_state(owner).update(BLOCKS, lambda blocks: pure.share_block(blocks, label, target.id, mode))

    def add(refs):
        refs = [
            r for r in refs or [] if not (r.get("owner") == owner.id and r.get("label") == label)
        ]
        return refs + [{"owner": owner.id, "label": label}]

    npc_state(target).update(BLOCKS_SHARED_IN, add)
    return get_block(owner, label)


def unshare_block(owner, label: str, target) -> dict:
    """Stop sharing ``owner``'s block with ``target``; returns the block."""
    label = get_block(owner, label)["label"]
    npc_state(owner).update(BLOCKS, lambda blocks: pure.share_block(blocks, label, target.id, None))
    if find_npc_state(target) is not None:
        _drop_shared_ref(target, owner, label)
    return get_block(owner, label)


# -- writes --------------------------------------------------------------------------------------
def apply_fresh(
    owner,
    label: str,
    op: str,
    args: dict,
    *,
    is_system: bool,
    reader=None,
    author: str | None = None,
) -> BlockOpResult:
    """Apply one op to a fresh read of ``owner``'s block and write it once.

    Because the op (not a snapshot of the block) is applied to what is stored now, an edit
    someone made since the caller last read the block survives.

    Args:
        owner: The NPC holding the block.
        label: The block's label.
        op, args: The operation (see :data:`blocks.OPS`).
        is_system: Operator/system write (bypasses permissions).
        reader: For a model write to a shared block, the NPC writing; its share mode is
            re-checked on the fresh read.
        author: Name appends are attributed to (shared writes).

    Returns:
        The :class:`BlockOpResult`; only ``applied`` changed anything.
    """

    def change(blocks):
        block = (blocks or {}).get(label)
        if block is None:
            return blocks, BlockOpResult(
                pure.INVALID, f"No memory block called '{label}' any more."
            )
        permission = None
        if reader is not None and not is_system:
            mode = block.get("shared_with", {}).get(str(reader.id))
            if mode is None:
                return blocks, BlockOpResult(
                    pure.DENIED, f"Memory block '{label}' is no longer shared with you."
                )
            permission = pure.effective_permission(block, mode)
        new, result = pure.apply_op(
            block, op, args, is_system=is_system, permission=permission, author=author
        )
        if result.success:
            blocks[label] = new
        return blocks, result

    return npc_state(owner).update(BLOCKS, change)


def system_write(
    npc, label: str, op: str, args: dict | None = None, *, author: str | None = None
) -> BlockOpResult:
    """An operator/system write to ``npc``'s block (permissions and read-only parts bypassed).

    Raises:
        BlockError: When the block does not exist. Invalid ops come back as a failed result.
    """
    label = get_block(npc, label)["label"]
    return apply_fresh(npc, label, op, dict(args or {}), is_system=True, author=author)


def execute_block_write(npc, entry: dict) -> tuple[bool, str]:
    """Confirmation executor for ``kind="block_write"``: apply the write as a system write.

    ``npc`` is the block's owner; ``entry["payload"]`` holds ``label``, ``op``, ``args`` and, for
    a write through a share, ``author`` and ``requested_by`` (whose NPC is told the outcome).
    """
    payload = dict(entry.get("payload") or {})
    label = payload.get("label")
    if label not in _blocks(npc):
        return False, f"memory block '{label}' no longer exists"
    result = apply_fresh(
        npc,
        label,
        payload.get("op", ""),
        dict(payload.get("args") or {}),
        is_system=True,
        author=payload.get("author"),
    )
    text = result.message
    requester_id = payload.get("requested_by")
    if requester_id not in (None, npc.id):
        requester = find_npc_state(_find_object(requester_id))
        if requester is not None:
            outcome = "approved" if result.success else "approved but failed"
            requester.notify_system(
                f"An operator {outcome} your change to {npc.key}'s memory block '{label}': {text}"
            )
    return result.success, text


# -- archival ------------------------------------------------------------------------------------
def archival_insert(npc, content: str, metadata: dict | None = None) -> BlockOpResult:
    """Add an archival entry to ``npc`` (one write when added)."""
    limit = max_archival_entries()
    # Check on a plain read first, so a rejected or duplicate entry costs no write.
    _new, result = pure.archival_insert(
        npc_state(npc).archival or [], content, metadata=metadata, max_entries=limit
    )
    if not result.success or result.data.get("duplicate"):
        return result
    return npc_state(npc).update(
        ARCHIVAL,
        lambda fresh: pure.archival_insert(fresh, content, metadata=metadata, max_entries=limit),
    )


# The archival search in use: ``(entries, query, limit) -> [entry dict with "score", ...]``,
# best first. Replace it (e.g. with a BM25/vector search) by assigning this name.
search_archival = pure.search_archival


def archival_search(npc, query: str, limit: int = 5) -> list[dict]:
    """The NPC's archival entries best matching ``query``, through :data:`search_archival`."""
    return search_archival(npc_state(npc).archival or [], query, limit)


def archival_delete(npc, entry_id: str) -> BlockOpResult:
    """Delete an archival entry by id."""
    _new, result = pure.archival_delete(npc_state(npc).archival or [], entry_id)
    if not result.success:
        return result
    return npc_state(npc).update(ARCHIVAL, lambda fresh: pure.archival_delete(fresh, entry_id))
