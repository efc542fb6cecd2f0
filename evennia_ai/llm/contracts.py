"""What every kind of model call must carry: its task instruction and the inputs the task needs.

Pure module (no Django, Evennia or Twisted). One :class:`CallContract` per kind of call the
plugin makes: the seven context types of a tick, a ``delegate_task`` helper, the task
assessment, a history summary and mem0's fact extraction. The request builders render each
task with :func:`render_task` (a ``## Task: <kind>`` heading, the instruction, then one heading
per input), and the client's request gate (:mod:`evennia_ai.llm.request_gate`) checks every
request against its kind's contract with :func:`contract_problems` before anything is sent.

A contract is checked by what a reader of the request can see: the instruction heading with
some text under it, and the heading of every input (an input may be empty, shown as
:data:`NOTHING`, but never missing). The contracts section of ``docs/prompts.md`` is
generated from :data:`CALL_CONTRACTS` (``python -m evennia_ai.llm.contracts docs/prompts.md``
rewrites it between its markers; a test keeps the two equal).

Violations are counted per kind (:func:`violation_counts`), logged by the client, and in tests
(``EVENNIA_AI_STRICT_CONTRACTS``) raised as :class:`ContractViolation`. A tick checks its
request before the client sees it and does not send one that breaks its contract (stop reason
``contract_violation``); the prompt registry refuses an edit that would remove a component an
input comes from (:func:`required_components`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evennia_ai.utils import fence
from evennia_ai.wording import ASSESSMENT_INSTRUCTION as ASSESSMENT_INSTRUCTION
from evennia_ai.wording import AUTONOMOUS_INSTRUCTION as AUTONOMOUS_INSTRUCTION
from evennia_ai.wording import COMPACTION_BATCH_HEADING, CONVERSATION_LOG_HEADING
from evennia_ai.wording import DECOMPOSE_INSTRUCTION as DECOMPOSE_INSTRUCTION
from evennia_ai.wording import DEFAULT_USER_TURN
from evennia_ai.wording import DELEGATE_INSTRUCTION as DELEGATE_INSTRUCTION
from evennia_ai.wording import (
    DELEGATED_TASK_HEADING,
    GOAL_TO_DECOMPOSE_HEADING,
    GOALS_HEADING,
    HISTORY_TO_FOLD_HEADING,
    JOURNAL_SINCE_REFLECTION_HEADING,
    JOURNAL_SINCE_SLEEP_HEADING,
)
from evennia_ai.wording import NOTHING as NOTHING
from evennia_ai.wording import PRE_COMPACTION_INSTRUCTION as PRE_COMPACTION_INSTRUCTION
from evennia_ai.wording import REFLECTION_CONT_INSTRUCTION as REFLECTION_CONT_INSTRUCTION
from evennia_ai.wording import REFLECTION_RESULTS_HEADING
from evennia_ai.wording import SLEEP_INSTRUCTION as SLEEP_INSTRUCTION
from evennia_ai.wording import SUMMARY_INSTRUCTION as SUMMARY_INSTRUCTION
from evennia_ai.wording import TASK_HEADING as TASK_HEADING

# The instructions, headings and ``NOTHING`` are words the model reads: they live in
# evennia_ai.wording and keep their names here (``contracts.SLEEP_INSTRUCTION`` still works).
FILLER_TURNS = frozenset({DEFAULT_USER_TURN, ""})


@dataclass(frozen=True)
class TaskInput:
    """One input a task needs.

    Attributes:
        name: Short name (``journal``, ``metrics``, ...).
        heading: The heading that introduces it in the request (``## Your journal ...``), or
            None for "a user message that is not filler" (a tick's event).
        description: What it holds, for ``docs/prompts.md``.
        source: Where the request builder takes it from, for ``docs/prompts.md``.
        in_task: Whether :func:`render_task` writes it into the task message (False: another
            part of the request carries it, such as the goals component).
        component: The key of the prompt component that carries it when that is not the task
            message (``pending_event``, ``goals``, ``tool_result``), else None: a context
            config or component edit that would leave it out is refused
            (:func:`required_components`).
    """

    name: str
    heading: str | None
    description: str
    source: str
    in_task: bool = True
    component: str | None = None


@dataclass(frozen=True)
class CallContract:
    """What one kind of model call must carry.

    Attributes:
        kind: The kind of call (a context type, ``delegate``, ``assessment``, ``summarise``,
            ``memory_extraction``).
        purpose: What the call is for.
        instruction: The task instruction, as the request builder writes it by default
            (operators may customise some; the heading stays).
        instruction_marker: Text the request must contain to carry its instruction (the
            ``## Task: <kind>`` heading for the plugin's own tasks).
        inputs: The inputs the task needs.
        reply: What the reply must be.
        tools: Which tools the call offers.
        made_by: Where the request is built.
    """

    kind: str
    purpose: str
    instruction: str
    instruction_marker: str | None
    inputs: tuple[TaskInput, ...]
    reply: str
    tools: str
    made_by: str


def task_marker(kind: str) -> str:
    """The heading that opens the task of ``kind`` in a request."""
    return f"{TASK_HEADING}{kind}"


# -- the inputs ---------------------------------------------------------------------------------
EVENT = TaskInput(
    "event",
    None,
    'The events the tick answers, rendered (``Alice says to you: "..."``).',
    "pending_event component (the tick's batch)",
    in_task=False,
    component="pending_event",
)
GOALS = TaskInput(
    "goals",
    GOALS_HEADING,
    "The NPC's goals with their progress.",
    "goals component",
    in_task=False,
    component="goals",
)
METRICS = TaskInput(
    "metrics",
    # Written by the operator-editable ``reflection`` template (evennia_ai.prompt.templates):
    # the words are the template's, this only names what the contract looks for.
    "Since your last reflection:",
    "Six figures since the last reflection: ticks, tool calls and failures, journal entries, "
    "goals completed, recent errors.",
    "the registry's ``reflection`` template, rendered",
)
JOURNAL_SINCE_REFLECTION = TaskInput(
    "journal",
    JOURNAL_SINCE_REFLECTION_HEADING,
    "The journal entries written since the last reflection (the latest "
    "``EVENNIA_AI_TASK_JOURNAL_ENTRIES``).",
    "the NPC's journal",
)
REFLECTION_RESULTS = TaskInput(
    "tool_results",
    REFLECTION_RESULTS_HEADING,
    "What the reflection's journal tools returned.",
    "tool_result component (stored by the reflection tick)",
    in_task=False,
    component="tool_result",
)
JOURNAL_SINCE_SLEEP = TaskInput(
    "journal",
    JOURNAL_SINCE_SLEEP_HEADING,
    "Journal entries written since the last consolidation.",
    "the NPC's journal",
)
HISTORY_TO_FOLD = TaskInput(
    "history",
    HISTORY_TO_FOLD_HEADING,
    "The recent conversation, as a transcript.",
    "the NPC's history",
)
COMPACTION_BATCH = TaskInput(
    "batch",
    COMPACTION_BATCH_HEADING,
    "The history messages older than the ``EVENNIA_AI_COMPACTION_KEEP_RECENT`` kept ones, as a "
    "transcript.",
    "the NPC's history",
)
GOAL = TaskInput(
    "goal", GOAL_TO_DECOMPOSE_HEADING, "The goal's id and description.", "the decompose_goal call"
)
DELEGATED = TaskInput(
    "task", DELEGATED_TASK_HEADING, "The task the parent handed over.", "the delegate_task call"
)
SITUATION = TaskInput(
    "situation",
    None,
    "The tick's own request (system prompt, event), which the assessment judges.",
    "the tick's built request",
    in_task=False,
)
LOG = TaskInput(
    "log",
    CONVERSATION_LOG_HEADING,
    "One chunk of old history, as a transcript.",
    "the NPC's history",
)
NEW_MESSAGES = TaskInput(
    "messages",
    "## New Messages",  # mem0's own heading (its prompt's words, not the plugin's)
    "The journal entries and transcript being consolidated (mem0 writes this heading).",
    "the sleep consolidation's texts",
    in_task=False,
)


def _contract(
    kind: str,
    purpose: str,
    instruction: str,
    inputs: Iterable[TaskInput],
    reply: str,
    tools: str,
    made_by: str,
    marker: str | None | Literal[True] = True,
) -> CallContract:
    return CallContract(
        kind=kind,
        purpose=purpose,
        instruction=instruction,
        instruction_marker=task_marker(kind) if marker is True else marker,
        inputs=tuple(inputs),
        reply=reply,
        tools=tools,
        made_by=made_by,
    )


CALL_CONTRACTS: dict[str, CallContract] = {
    c.kind: c
    for c in (
        _contract(
            "tick_event",
            "Answer what happened around the NPC.",
            "The system prompt (identity, the base template's guidelines, the operator's "
            "section) tells the NPC how to act; the event is the task.",
            [EVENT],
            "Tool calls (say, emote, ...) or text spoken aloud.",
            "Every tool the NPC may use (the context's filter, categories, static limits).",
            "engine.tick via prompt.builder",
            marker=None,
        ),
        _contract(
            "tick_autonomous",
            "Work on goals when nothing needs an answer.",
            AUTONOMOUS_INSTRUCTION,
            [GOALS],
            "Tool calls that advance a goal, or noop.",
            "Every tool the NPC may use.",
            "engine.tick via prompt.builder",
        ),
        _contract(
            "reflection",
            "Turn recent experience into lessons and behavioural rules.",
            "The registry's ``reflection`` template (operators may edit it): the six metrics, "
            'what to consider, and to write lasting lessons as lines starting with "RULE:".',
            [METRICS, JOURNAL_SINCE_REFLECTION],
            'add_journal_entry calls; lines starting with "RULE:" become behavioural rules.',
            "noop, add_journal_entry, review_journal.",
            "engine.tick via prompt.builder",
        ),
        _contract(
            "reflection_cont",
            "Act on what the reflection's journal tools returned.",
            REFLECTION_CONT_INSTRUCTION,
            [REFLECTION_RESULTS],
            'add_journal_entry with "RULE:" lines, or noop.',
            "noop, add_journal_entry, review_journal.",
            "engine.tick via prompt.builder",
        ),
        _contract(
            "sleep_consolidate",
            "Move the journal's and the conversation's facts into long-term memory.",
            SLEEP_INSTRUCTION,
            [JOURNAL_SINCE_SLEEP, HISTORY_TO_FOLD],
            "store_memory calls (one fact each), journal entries, then noop.",
            "noop, add_journal_entry, review_journal, recall_memories, store_memory.",
            "engine.tick via prompt.builder",
        ),
        _contract(
            "goal_decompose",
            "Break one goal into 3-7 subtasks.",
            DECOMPOSE_INSTRUCTION.format(min_subtasks=3, max_subtasks=7),
            [GOAL],
            'JSON: {"subtasks": [{"description", "priority"}, ...]}.',
            "None.",
            "tools.workspace.decompose through the goal_decompose context",
        ),
        _contract(
            "pre_compaction",
            "Save the facts of the history batch about to be compacted.",
            PRE_COMPACTION_INSTRUCTION,
            [COMPACTION_BATCH],
            "update_entity_observation and add_journal_entry calls, then noop.",
            "noop, add_journal_entry, update_entity_observation.",
            "engine.tick via prompt.builder",
        ),
        _contract(
            "delegate",
            "A helper does one delegated task and reports back.",
            DELEGATE_INSTRUCTION,
            [DELEGATED],
            "Tool calls, then a plain-text report.",
            "The parent's tools minus DANGEROUS, TERMINAL and delegate_task.",
            "engine.delegate.run_helper",
        ),
        _contract(
            "assessment",
            "Advise how much work the tick needs (restrict-only).",
            ASSESSMENT_INSTRUCTION,
            [SITUATION],
            "One JSON object (recommended_iterations, recommended_mode, "
            "recommend_confirm_dangerous).",
            "None.",
            "engine.assessment.assess_task",
        ),
        _contract(
            "summarise",
            "Fold old history into a short factual summary.",
            SUMMARY_INSTRUCTION,
            [LOG],
            "A few short factual lines (empty is rejected: the history stays).",
            "None.",
            "engine.tick (compaction, strategy summarize)",
        ),
        _contract(
            "memory_extraction",
            "mem0 extracts lasting facts from what sleep consolidates.",
            "mem0's own extraction prompt (its system message).",
            [NEW_MESSAGES],
            "mem0's JSON.",
            "None (mem0 may pass its own).",
            "memory.longterm.NpcModelLLM (inside mem0)",
            marker=None,
        ),
    )
}


ACTING_KINDS: tuple[str, ...] = (
    "tick_event",
    "tick_autonomous",
    "reflection",
    "reflection_cont",
    "goal_decompose",
    "sleep_consolidate",
    "pre_compaction",
    "delegate",
)
"""Kinds of call in which the model acts or speaks: each carries the operator's section
(:mod:`evennia_ai.prompt.operator`). The others (assessment, summarise, memory_extraction) only
transform text and never carry the operator's ``Secret:`` lines."""


def required_components(kind: str) -> tuple[tuple[str, str], ...]:
    """``(component key, input name)`` of every input of ``kind`` that a prompt component
    carries (its event, its goals, its tool results). Removing one of those components from a
    ``kind`` request, by a context config or a component edit, breaks the contract."""
    contract = CALL_CONTRACTS.get(kind)
    if contract is None:
        return ()
    return tuple((item.component, item.name) for item in contract.inputs if item.component)


class ContractViolation(AssertionError):
    """A request that does not carry what its kind of call needs (raised in strict mode)."""


# -- rendering ----------------------------------------------------------------------------------
def render_task(kind: str, instruction: str, inputs: Mapping[str, str] | None = None) -> str:
    """The task message of ``kind``: its heading, the instruction, then each input's section.

    Args:
        kind: A key of :data:`CALL_CONTRACTS`.
        instruction: The instruction text (the default or an operator's).
        inputs: Input name -> text; a missing or empty input reads :data:`NOTHING`. Each is
            fenced (:func:`~evennia_ai.utils.fence`): what players and models wrote is data
            under its heading, never a section or an instruction of its own.
    """
    contract = CALL_CONTRACTS[kind]
    inputs = dict(inputs or {})
    parts = [f"{task_marker(kind)}\n{instruction.strip()}"]
    for item in contract.inputs:
        # An input without a heading is a user message of its own, never part of the task.
        if not item.in_task or item.heading is None or item.heading in instruction:
            continue
        text = str(inputs.get(item.name) or "").strip()
        parts.append(f"{item.heading}\n{fence(text, item.name) if text else NOTHING}")
    return "\n\n".join(parts)


def request_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """Every text of a request, joined (contents and tool-call arguments)."""
    parts = []
    for message in messages or ():
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "\n".join(parts)


def _has_real_user_turn(messages: Iterable[Mapping[str, Any]]) -> bool:
    return any(
        m.get("role") in ("user", "tool")
        and isinstance(m.get("content"), str)
        and m["content"].strip() not in FILLER_TURNS
        for m in messages
    )


def contract_problems(kind: str | None, messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What a request of ``kind`` lacks (empty when it carries its task; unknown kinds pass)."""
    contract = CALL_CONTRACTS.get(kind or "")
    if contract is None or not isinstance(messages, list):
        return []
    if not all(isinstance(m, Mapping) for m in messages):
        return []  # a malformed request: the client refuses it as a bad request
    problems = []
    if not any(m.get("role") == "system" and (m.get("content") or "").strip() for m in messages):
        problems.append("no system message")
    text = request_text(messages)
    marker = contract.instruction_marker
    if marker is not None:
        at = text.find(marker)
        body = text[at + len(marker) :].lstrip().split("\n## ", 1)[0].strip() if at >= 0 else ""
        if at < 0:
            problems.append(f"no task instruction ({marker!r} missing)")
        elif not body:
            problems.append(f"the task instruction under {marker!r} is empty")
    for item in contract.inputs:
        if item.heading is None:
            if not _has_real_user_turn(messages):
                problems.append(f"no {item.name}: no user message carries it")
        elif item.heading not in text:
            problems.append(f"no {item.name} ({item.heading!r} missing)")
    return problems


# -- counting -----------------------------------------------------------------------------------
_lock = threading.Lock()
_counts: dict[str, int] = {}
_recent: list[tuple[str, list[str]]] = []


def record_violation(kind: str, problems: list[str]) -> None:
    """Count one violation of ``kind`` (thread-safe); the latest 50 are kept for tests."""
    with _lock:
        _counts[kind] = _counts.get(kind, 0) + 1
        _recent.append((kind, list(problems)))
        del _recent[:-50]


def violation_counts() -> dict[str, int]:
    """Violations counted since the server started, per kind of call."""
    with _lock:
        return dict(_counts)


def take_violations() -> list[tuple[str, list[str]]]:
    """The violations recorded since the last call (and forget them): for tests."""
    with _lock:
        taken = list(_recent)
        _recent.clear()
        return taken


# -- docs/prompts.md ----------------------------------------------------------------------------
DOC_BEGIN = "<!-- contracts:begin -->"
DOC_END = "<!-- contracts:end -->"


def render_markdown() -> str:
    """The contracts section of ``docs/prompts.md``: every kind of call, what it must carry."""
    lines = [
        "## What every model call carries",
        "",
        "<!-- Generated from evennia_ai/llm/contracts.py: "
        "python -m evennia_ai.llm.contracts docs/prompts.md -->",
        "",
        "Every request the plugin sends is checked before it leaves: it must carry its task "
        f"instruction (the `{TASK_HEADING}<kind>` heading with text under it) and every input "
        f"its task needs (an input may be empty, shown as `{NOTHING}`, but never missing), and "
        "it must fit the model's window with the reply reserved. A tick's request that does "
        "not is not sent: the tick stops with `contract_violation`, shown in `aistatus` and "
        "the trace; any other request that does not is logged; both are counted "
        "(`violation_counts()`), and in tests (`EVENNIA_AI_STRICT_CONTRACTS = True`) the "
        "client raises. Operators customise the instructions through the PromptRegistry "
        "(`aicontext`, the `reflection` template); the headings stay. An edit that would "
        "remove the component an input comes from (the event's `pending_event`, say) is "
        "refused when it is made, on every path (`aiprompt`, `aicontext`, `airegistry` "
        "import, the registry's methods).",
        "",
        "Every request in which the model acts or speaks ("
        + ", ".join(f"`{kind}`" for kind in ACTING_KINDS)
        + ") opens with the operator's section (the override file, the operator's prompt, "
        "the tool rules), which is not a component: no component or context edit removes it. "
        "The others only transform text and never carry the operator's `Secret:` lines.",
        "",
    ]
    for contract in CALL_CONTRACTS.values():
        lines += [
            f"### `{contract.kind}`",
            "",
            contract.purpose,
            "",
            f"- **Instruction:** {contract.instruction}",
            f"- **Reply:** {contract.reply}",
            f"- **Tools:** {contract.tools}",
            f"- **Built by:** `{contract.made_by}`",
            "- **Inputs:**",
        ]
        for item in contract.inputs:
            where = f"under `{item.heading}`" if item.heading else "a user message"
            needs = f"; needs component `{item.component}`" if item.component else ""
            lines.append(
                f"  - `{item.name}` ({where}, from {item.source}{needs}): {item.description}"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def with_contracts(document: str) -> str:
    """``document`` with the text between its contract markers replaced by :func:`render_markdown`."""
    start, end = document.index(DOC_BEGIN) + len(DOC_BEGIN), document.index(DOC_END)
    return f"{document[:start]}\n{render_markdown()}\n{document[end:]}"


if __name__ == "__main__":  # pragma: no cover - the docs generator
    path = sys.argv[1]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(with_contracts(text))
