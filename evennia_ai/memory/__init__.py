"""An assistant's memory beyond its workspace.

Pure modules (no Django, Evennia or Twisted) work on the plain data kept in Attributes; glue
modules read and write it on the reactor thread or run slow work in threads.

Modules:
    blocks: memory blocks (types, permissions, schemas, operations, rendering, context
        selection) and archival entries (pure).
    block_admin: the operator API over an NPC's blocks, sharing, system writes, archival
        entries, and the ``block_write`` confirmation executor (glue).
    block_sources: the ``memory_blocks`` and ``archival_hits`` context sources (glue).
    compression: conversation-history compression (pure).
    entities: profiles of the people and things an assistant knows (pure).
    procedures: tool sequences that worked, recalled as hints (pure).
    keyword_index, search, longterm, longterm_sources: long-term memory and its search.

The pure memory-block API is re-exported here; glue modules are imported by name.
"""

from evennia_ai.memory.blocks import (
    BLOCK_TYPES,
    OPS,
    PERMISSIONS,
    BlockError,
    BlockOpResult,
    apply_op,
    archival_delete,
    archival_insert,
    blocks_for_context,
    create_block,
    effective_permission,
    normalise_schema,
    render_block,
    search_archival,
)

__all__ = [
    "BLOCK_TYPES",
    "OPS",
    "PERMISSIONS",
    "BlockError",
    "BlockOpResult",
    "apply_op",
    "archival_delete",
    "archival_insert",
    "blocks_for_context",
    "create_block",
    "effective_permission",
    "normalise_schema",
    "render_block",
    "search_archival",
]
