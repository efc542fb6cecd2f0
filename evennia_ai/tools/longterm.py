"""``store_memory`` and ``recall_memories``: the assistant's long-term memory as tools.

Thin glue over :mod:`evennia_ai.memory.longterm`: names are resolved to dbrefs here, on the
reactor thread; the store and the search run in a thread and the tool returns their Deferred.
As with the journal, the model never chooses a memory's trust: it comes from how the tick's
event reached the NPC (:func:`~evennia_ai.tools.workspace.event_source`).

``store_memory`` stores the text as given (no LLM call), so it works with the offline model;
sleep consolidation is where facts are extracted by the model. What it stores passes the
quality gate (:mod:`evennia_ai.memory.gate`) first, told this tick's persona, prompt, world-tool
results and recalled memories; its decisions are counted in the NPC's ``memory_gate`` metrics.
What ``recall_memories`` finds is noted as recalled.
"""

from __future__ import annotations

from evennia_ai import conf
from evennia_ai.llm.contracts import CALL_CONTRACTS
from evennia_ai.memory import gate, longterm
from evennia_ai.memory.search import MODES
from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.entities import resolve_entity
from evennia_ai.tools.registry import register_tool
from evennia_ai.tools.workspace import event_source

MAX_CONTENT = 1000


def resolve_person(ctx: ToolContext, name: str | None) -> tuple[str | None, str, ToolResult | None]:
    """``(dbref, name, None)`` of the person called ``name``, or ``(None, "", failure)``.

    Someone in the room, or someone the NPC has a profile of. An empty name means no one.
    """
    if name is None or not str(name).strip():
        return None, "", None

    found = resolve_entity(ctx.npc, str(name).strip())
    if found is None:
        return (
            None,
            "",
            ToolResult.fail(
                f"You know no one called '{name}' here. Name someone present or someone you know, "
                "or leave 'about' out."
            ),
        )
    dbref, key, kind = found
    if kind != "character":
        return (
            None,
            "",
            ToolResult.fail(
                f"'{key}' is a thing, not a person. Leave 'about' out and mention it in the text."
            ),
        )
    return dbref, key, None


def gate_context(ctx: ToolContext) -> gate.GateContext:
    """What the gate compares a memory the tick stores with: the NPC's persona and prompt,
    the tick's task instruction and world-tool results, and what it recalled lately."""
    contract = CALL_CONTRACTS.get(ctx.context_type)
    instruction = contract.instruction if contract and contract.instruction_marker else ""
    return gate.context_for(ctx.npc, instruction=instruction, tool_results=ctx.state.world_results)


def _failed(action: str):
    def errback(failure):
        return ToolResult.fail(f"Could not {action}: {failure.getErrorMessage()}")

    return errback


@register_tool
class StoreMemory(Tool):
    bookkeeping = True
    name = "store_memory"
    group = "memory"
    description = (
        "Remember something for the long term (weeks, not just this session): a fact about the "
        "world or about a person. Set 'about' to the person's name when it concerns someone; "
        "recall_memories finds it later by words or meaning."
    )
    parameters = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 3, "maxLength": MAX_CONTENT},
            "about": {"type": "string", "description": "name of the person it is about"},
        },
        "required": ["content"],
        "additionalProperties": False,
    }
    category = ToolCategory.ASYNC_REQUIRED

    def run(self, ctx, content, about=None):
        if not content.strip():
            return ToolResult.fail("There is nothing to remember: the content is empty.")
        person, person_name, problem = resolve_person(ctx, about)
        if problem is not None:
            return problem
        source = event_source(ctx)

        def done(stored):
            gate.record_decisions(ctx.npc, stored.decisions)
            if not stored.written and not stored.duplicate:
                return ToolResult.ok(
                    {"success": True, "stored": False, "note": f"Not stored: {stored.note}."}
                )
            data = {
                "success": True,
                "id": stored.id,
                "remembered": stored.text,
                "source": stored.source,
                "trust": stored.trust,
            }
            if person_name:
                data["about"] = person_name
            if stored.duplicate:
                data["note"] = "You already remembered this."
            elif stored.superseded:
                data["note"] = "This replaces what you remembered before."
            elif stored.note:
                data["note"] = stored.note
            return ToolResult.ok(data)

        return (
            longterm.store(
                ctx.npc.dbref,
                content,
                person=person,
                person_name=person_name,
                source=source,
                trust=longterm.trust_of(source),
                context=gate_context(ctx),
            )
            .addCallback(done)
            .addErrback(_failed("remember that"))
        )


@register_tool
class RecallMemories(Tool):
    bookkeeping = True  # a look-up: the answer still comes in a single-action tick
    name = "recall_memories"
    group = "memory"
    description = (
        "Search your long-term memory. 'about' limits it to memories about one person. Modes: "
        "auto (best available), keyword (exact words and names), vector (meaning), hybrid (both)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500},
            "about": {"type": "string", "description": "name of a person"},
            "mode": {"type": "string", "enum": list(MODES)},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            "offset": {"type": "integer", "minimum": 0, "maximum": 80},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    category = ToolCategory.ASYNC_REQUIRED

    def run(self, ctx, query, about=None, mode="auto", limit=None, offset=0):
        person, person_name, problem = resolve_person(ctx, about)
        if problem is not None:
            return problem

        def done(outcome):
            gate.note_recalled(ctx.npc, [hit.text for hit in outcome.hits[offset:]])
            memories = []
            for hit in outcome.hits[offset:]:
                item = {
                    "text": hit.text,
                    "score": hit.score,
                    "source": hit.source,
                    "trust": hit.trust,
                    "time": hit.time,
                }
                if hit.person_name or hit.person:
                    item["about"] = hit.person_name or hit.person
                memories.append(item)
            data = {"success": True, "mode": outcome.mode, "memories": memories}
            if outcome.note:
                data["note"] = outcome.note
            if not memories:
                data["note"] = ((outcome.note + " ") if outcome.note else "") + (
                    f"You remember nothing about that{' concerning ' + person_name if person_name else ''}."
                )
            return ToolResult.ok(data)

        return (
            longterm.recall(
                ctx.npc.dbref,
                query,
                person=person,
                mode=mode,
                limit=(
                    (limit or conf.get_int("EVENNIA_AI_MEMORY_TOP_K")) + offset if offset else limit
                ),
            )
            .addCallback(done)
            .addErrback(_failed("search your memory"))
        )
