"""Context sources ``memory_blocks`` and ``archival_hits`` (see :mod:`evennia_ai.prompt.builder`).

``memory_blocks``: the NPC's blocks that belong in this tick (Core and pinned always; ephemeral
ones when the tick's event text or tool result names them), then the blocks other NPCs share
with it (``shared_from="..."``), each as :func:`evennia_ai.memory.blocks.render_block` renders
it::

    ## Memory blocks
    Your own memory, kept between conversations. Change it with the block_* tools, as each
    block's permission allows.

    <block:profile permission="ReadWrite">
    Who I am

    status [read-only]: active
    </block:profile>

    <block:shared_notes permission="Append" shared_from="Archive">
    ...
    </block:shared_notes>

``archival_hits``: the NPC's archival entries matching the tick's text (at most
``EVENNIA_AI_ARCHIVAL_HITS``, default 3), as ``## From your archive``.

Both read plain copies on the reactor thread and never write. Import this module to register
them (it also registers the ``block_write`` confirmation executor).
"""

from __future__ import annotations

from typing import Any

from evennia_ai import conf
from evennia_ai.memory import block_admin
from evennia_ai.memory import blocks as pure
from evennia_ai.npc_state import npc_state
from evennia_ai.prompt.builder import ContextBuilder, register_source
from evennia_ai.prompt.sources import mentioned_text
from evennia_ai.utils import fence, fence_section
from evennia_ai.wording import MEMORY_BLOCKS_HEADER as HEADER


def render_blocks_for_npc(npc: Any, mentioned_text: str = "", *, header: bool = True) -> str:
    """The rendered blocks ``npc`` should see this tick ("" when there are none).

    Args:
        npc: The assistant (an Evennia character).
        mentioned_text: The tick's event text and tool result; unpinned blocks named there
            are included.
        header: Start with the short :data:`HEADER` telling the model what the blocks are.
    """
    descriptions = conf.get_bool("EVENNIA_AI_BLOCK_DESCRIPTIONS")
    parts: list[str] = []
    own = npc_state(npc).blocks or {}
    for block in pure.blocks_for_context(own, mentioned_text=mentioned_text):
        parts.append(pure.render_block(block, include_description=descriptions))
    shared = block_admin.shared_blocks_for(npc)
    chosen = pure.blocks_for_context([t.block for t in shared], mentioned_text=mentioned_text)
    by_identity = {id(t.block): t for t in shared}
    for block in chosen:
        target = by_identity[id(block)]
        parts.append(
            pure.render_block(
                block,
                include_description=descriptions,
                shared_from=target.shared_from,
                permission=target.permission,
            )
        )
    if not parts:
        return ""
    return "\n\n".join(([HEADER] if header else []) + parts)


def _mentioned_text(builder: ContextBuilder) -> str:
    return mentioned_text(builder)


@register_source("memory_blocks")
def memory_blocks_source(builder: ContextBuilder) -> str:
    """The ``memory_blocks`` source: :func:`render_blocks_for_npc` for the builder's tick."""
    blocks = render_blocks_for_npc(builder.npc, _mentioned_text(builder), header=False)
    return f"{HEADER}\n{fence(blocks, 'memory blocks')}" if blocks else ""


@register_source("archival_hits")
def archival_hits_source(builder: ContextBuilder) -> str:
    """Archival entries sharing words with the tick's event text / tool result."""
    query = _mentioned_text(builder)
    if not query.strip():
        return ""
    limit = conf.get_int("EVENNIA_AI_ARCHIVAL_HITS")
    hits = pure.render_archival_hits(block_admin.archival_search(builder.npc, query, limit))
    return fence_section(hits, "archive")
