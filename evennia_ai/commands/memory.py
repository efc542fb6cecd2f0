"""Admin commands over an AI NPC's memory: memory blocks and archival entries, long-term
memory (mem0 and the keyword index), entity profiles, and its conversation history with
its compaction state.

Thin glue: blocks go through :mod:`evennia_ai.memory.block_admin` (operator writes, which
bypass block permissions and read-only fields), long-term memory through the Deferred API of
:mod:`evennia_ai.memory.longterm` (searches run in a thread; the caller is messaged when they
finish), and entity profiles through :mod:`evennia_ai.memory.entities`.

The commands live in one module each and are re-exported here (the cmdset reads
:data:`COMMANDS`): :mod:`~evennia_ai.commands.memory_blocks` (``aiblock``),
:mod:`~evennia_ai.commands.memory_longterm` (``ailongterm``),
:mod:`~evennia_ai.commands.memory_entities` (``aientity``) and
:mod:`~evennia_ai.commands.memory_history` (``aihistory``).
"""

from __future__ import annotations

from evennia_ai.commands.memory_blocks import CmdAIBlock
from evennia_ai.commands.memory_entities import CmdAIEntity
from evennia_ai.commands.memory_history import CmdAIHistory
from evennia_ai.commands.memory_longterm import CmdAILongTerm

__all__ = ["COMMANDS", "CmdAIBlock", "CmdAIEntity", "CmdAIHistory", "CmdAILongTerm"]

COMMANDS = [CmdAIBlock, CmdAILongTerm, CmdAIEntity, CmdAIHistory]
