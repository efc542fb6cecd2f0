"""The write-side quality gate: what a long-term memory must be to be stored (pure).

Every path that stores a long-term memory (the ``store_memory`` tool, sleep consolidation,
:func:`evennia_ai.memory.longterm.store`, and the ``archival_insert`` tool for the archive,
skipping rules only) asks :func:`decide` first. The rules, in order:

1. **Persona**: the NPC's own persona is not a fact about the world (``I am Marta, the
   innkeeper``): a text restating a sentence of the persona is skipped (``skipped_persona``).
2. **Restated**: a text restating the NPC's prompt (operator prompt, task instructions) or the
   result of a world tool this tick (``look``, ``get_system_status``...) is skipped
   (``skipped_restated``): the prompt is sent on every request and the world can be looked at
   again.
3. **Recalled**: a text restating a memory recalled into a request lately (the ``Things you
   remember`` section, ``recall_memories``) is skipped (``skipped_recalled``): it is already
   remembered.
4. **Duplicate**: a text equal to (case and spacing aside) or nearly the same as a current
   memory of the same NPC about the same person is not stored again (``skipped_duplicate``);
   when it says more than that memory (it holds all the memory's words and more), it replaces
   the memory's text under the same id, with the higher trust (``merged``).
5. **Update**: a fact ``<subject> is <value>`` whose subject matches a current memory's with
   another value (no word in common) supersedes it: the new memory is stored and the old one is kept, marked with
   when and by which memory (``superseded``); searches leave superseded memories out.
   Restating a superseded value is a duplicate: sleep re-reads old conversation, and an old
   statement must not undo newer news (a value changed back to an earlier one is therefore not
   restored by restating it).
6. Otherwise the text is stored (``stored``).

Texts are compared by their content words (:func:`content_words`: lower case, English function
words dropped, a plural ``s`` folded); a text restates or duplicates another only if that one
also holds its key words (:func:`key_words`: names, numbers, a fact's subject and value), so
``Carol's lucky number is seven`` is not ``Bob's lucky number is seven``. The thresholds:

- :data:`DUPLICATE_OVERLAP` (0.8): the share of the two texts' words they have in common
  (Jaccard) at which they are the same memory; ``Alice's horse is Thunder`` and ``Alice told me
  her horse is Thunder`` share all their words.
- :data:`CONTAINED_OVERLAP` (0.6): when one text holds all the other's words, the overlap at
  which they are the same memory (``The cellar door sticks`` and ``The cellar door sticks in
  the rain``: the fuller one is merged in, the shorter one skipped).
- :data:`RESTATED_SHARE` (0.75): the share of a text's words that the persona, the prompt, or
  one sentence of a tool result or of a recalled memory must hold for the text to restate it
  (``I remember that Alice's horse is Thunder`` restates ``Alice's horse is Thunder``: 3 of its
  4 words). The persona and the prompt are taken whole (the NPC wrote neither, and a memory
  made of their words adds nothing); a tool result sentence by sentence (one can be long).
- :data:`MIN_WORDS` (2): a text of fewer content words is never judged a restatement or a
  near-duplicate (only an equal text is a duplicate): two words say too little to compare.

Example:
    context = GateContext(persona="Marta, innkeeper of the Gilded Tankard.")
    decide("I am Marta, innkeeper of the Gilded Tankard", [], context).action
    # 'skipped_persona'
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from evennia_ai.memory.keyword_index import KeywordDoc, normalise_text, query_terms
from evennia_ai.npc_state import METRICS, npc_state

STORED = "stored"
MERGED = "merged"
SKIPPED_DUPLICATE = "skipped_duplicate"
SKIPPED_RESTATED = "skipped_restated"
SKIPPED_RECALLED = "skipped_recalled"
SKIPPED_PERSONA = "skipped_persona"
SUPERSEDED = "superseded"
#: Every decision counted in the NPC's ``memory_gate`` metrics, in display order.
DECISIONS = (
    STORED,
    MERGED,
    SKIPPED_DUPLICATE,
    SKIPPED_RESTATED,
    SKIPPED_RECALLED,
    SKIPPED_PERSONA,
    SUPERSEDED,
)
#: Decisions after which the text is not stored.
SKIPPED = (SKIPPED_DUPLICATE, SKIPPED_RESTATED, SKIPPED_RECALLED, SKIPPED_PERSONA)

DUPLICATE_OVERLAP = 0.8
CONTAINED_OVERLAP = 0.6
RESTATED_SHARE = 0.75
MIN_WORDS = 2
RECALLED_SECONDS = 600.0  # how long a recalled memory counts as "just recalled"
RECALLED_MAX = 50  # recalled memories kept per NPC (the newest)
CANDIDATES = 20  # current memories compared with a new text (the keyword index's best matches)
MAX_VALUE_WORDS = 4  # an update's value is short: "Storm", "the blue room"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# "<subject> is <value>": the subject names one thing (a possessive or a definite article
# in front), the value is short. "is now"/"are now" reads the same.
_FACT = re.compile(
    r"^(?P<subject>(?:[\w'-]+'s|my|the|his|her|their|our)\s+[\w' -]{1,60}?)\s+"
    r"(?P<verb>is|are|was|were|lives in|lives at|works at|works as)\s+(?:now\s+)?"
    r"(?P<value>.+?)(?:\s+now)?$",
    re.IGNORECASE,
)


@dataclass
class GateContext:
    """What the gate compares a new memory with, besides the stored memories.

    Attributes:
        persona: The NPC's persona.
        prompts: The NPC's prompt texts (operator prompt, task instruction).
        tool_results: Texts of this tick's world-tool results.
        recalled: Texts of memories recalled into a request lately.
    """

    persona: str = ""
    prompts: Sequence[str] = ()
    tool_results: Sequence[str] = ()
    recalled: Sequence[str] = ()


@dataclass
class GateDecision:
    """What to do with one new memory.

    Attributes:
        action: One of :data:`DECISIONS` (``superseded`` is never an action: see
            ``supersedes``).
        reason: Why, in a few words, for logs and tool results.
        existing: The memory a duplicate or a merge refers to.
        supersedes: Current memories the new one replaces (kept, marked superseded).
    """

    action: str
    reason: str = ""
    existing: KeywordDoc | None = None
    supersedes: list[KeywordDoc] = field(default_factory=list)

    @property
    def stores(self) -> bool:
        """Whether the new text is written (as a new memory or merged into one)."""
        return self.action not in SKIPPED


def content_words(text: str) -> set[str]:
    """The content words of ``text``: lower case, no function words, a plural ``s`` folded."""
    words = set()
    for word in query_terms(text):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return words


def overlap(first: set[str], second: set[str]) -> float:
    """The share of the two word sets' words they have in common (Jaccard, 0-1)."""
    union = first | second
    return len(first & second) / len(union) if union else 0.0


def share_in(words: set[str], other: set[str]) -> float:
    """The share of ``words`` that ``other`` holds (0-1)."""
    return len(words & other) / len(words) if words else 0.0


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines."""
    return [part for part in _SENTENCE.split(str(text or "")) if part.strip()]


def key_words(text: str) -> set[str]:
    """The words of ``text`` that name or count something: capitalised words, numbers, and a
    fact's subject and value (``Alice's lucky number is seven``: alice, lucky, number, seven).
    Another text says the same only if it holds them all."""
    words = re.findall(r"[\w'-]+", str(text or ""))
    found = {word for word in words if word[:1].isupper() or word.isdigit()}
    fact = fact_parts(text)
    if fact is not None:
        found |= set(fact[0].split("|")[0].split()) | set(fact[1].split())
    return content_words(" ".join(found))  # function words ("The", "I") drop out here


def restates(text: str, sources: Iterable[str], whole: bool = False) -> bool:
    """Whether ``text`` says nothing that ``sources`` do not say.

    Either ``text`` appears in a source as it is (case and spacing aside), or one sentence of a
    source (the whole source, with ``whole``) holds at least :data:`RESTATED_SHARE` of its
    content words and all its :func:`key_words` (``Carol's lucky number is seven`` does not
    restate ``Bob's lucky number is seven``). A text of fewer than :data:`MIN_WORDS` content
    words restates nothing.
    """
    wanted = normalise_text(text).rstrip(".!")
    words = content_words(text)
    if len(words) < MIN_WORDS:
        return False
    keys = key_words(text)
    for source in sources:
        if wanted in normalise_text(source):
            return True
        for part in [source] if whole else sentences(source):
            held = content_words(part)
            if share_in(words, held) >= RESTATED_SHARE and keys <= held:
                return True
    return False


def fact_parts(text: str) -> tuple[str, str] | None:
    """``(subject key, value)`` of a fact ``<subject> is <value>``, or None for another text.

    The key is the subject's content words and the verb (``alice horse|is``); the value's
    content words, sorted. Values longer than :data:`MAX_VALUE_WORDS` words are not facts of
    this kind (a description, not a value).
    """
    match = _FACT.match(" ".join(str(text or "").split()).rstrip(".!"))
    if not match:
        return None
    value = match.group("value")
    if len(value.split()) > MAX_VALUE_WORDS:
        return None
    subject = " ".join(sorted(content_words(match.group("subject"))))
    verb = match.group("verb").lower()
    verb = {"are": "is", "was": "is", "were": "is"}.get(verb, verb)
    if not subject:
        return None
    return f"{subject}|{verb}", " ".join(sorted(content_words(value)))


def decide(text: str, candidates: Sequence[KeywordDoc], context: GateContext) -> GateDecision:
    """The gate's decision for a new memory ``text``.

    Args:
        text: The new memory (cleaned).
        candidates: Memories of the same NPC about the same person, best keyword matches
            first, superseded ones included (restating an old value brings nothing back).
        context: The persona, prompts, tool results and recalled memories to compare with.

    Returns:
        A :class:`GateDecision`.
    """
    if context.persona and restates(text, [context.persona], whole=True):
        return GateDecision(SKIPPED_PERSONA, "it restates your persona")
    if restates(text, context.prompts, whole=True):
        return GateDecision(SKIPPED_RESTATED, "it restates your instructions")
    if restates(text, context.recalled):
        return GateDecision(SKIPPED_RECALLED, "it is a memory you just recalled")
    if restates(text, context.tool_results):
        return GateDecision(SKIPPED_RESTATED, "it restates a tool result")
    wanted = normalise_text(text).rstrip(".!")
    for doc in candidates:
        if normalise_text(doc.text).rstrip(".!") == wanted:
            reason = "you replaced this with newer news" if doc.superseded_by else ""
            return GateDecision(
                SKIPPED_DUPLICATE, reason or "you already remember this", existing=doc
            )
    if any(_same_fact(text, doc.text) for doc in candidates if doc.superseded_by):
        return GateDecision(SKIPPED_DUPLICATE, "you replaced this with newer news")
    candidates = [doc for doc in candidates if not doc.superseded_by]
    replaced = _replaced(text, candidates)
    words = content_words(text)
    if len(words) >= MIN_WORDS:
        for doc in candidates:
            known = content_words(doc.text)
            if doc in replaced:
                continue
            shared = overlap(words, known)
            if known < words and shared >= CONTAINED_OVERLAP:
                return GateDecision(MERGED, "it adds to a memory", existing=doc)
            same_keys = key_words(text) <= known
            if same_keys and (
                shared >= DUPLICATE_OVERLAP or (words <= known and shared >= CONTAINED_OVERLAP)
            ):
                return GateDecision(SKIPPED_DUPLICATE, "you already remember this", existing=doc)
    return GateDecision(STORED, "", supersedes=replaced)


def _same_fact(text: str, other: str) -> bool:
    """Whether both state the same value of the same fact (``<subject> is <value>``)."""
    fact = fact_parts(text)
    return fact is not None and fact == fact_parts(other)


def _replaced(text: str, candidates: Sequence[KeywordDoc]) -> list[KeywordDoc]:
    """The candidates giving another value to the fact ``text`` states (none for a non-fact)."""
    fact = fact_parts(text)
    if fact is None:
        return []
    replaced = []
    for doc in candidates:
        old = fact_parts(doc.text)
        # another value shares no word with the old one ("Storm" for "Thunder"); a reworded
        # one ("called Rex" for "Rex") is the same value
        if old is not None and old[0] == fact[0] and not set(old[1].split()) & set(fact[1].split()):
            replaced.append(doc)
    return replaced


def note_recalled(npc, texts: Iterable[str], now: float | None = None) -> None:
    """Note memories recalled into ``npc``'s request (in ``npc.ndb``, never the database).

    Kept :data:`RECALLED_SECONDS` seconds, the newest :data:`RECALLED_MAX`; a reload forgets
    them.
    """
    ndb = getattr(npc, "ndb", None)
    if ndb is None:  # a stand-in NPC (a replayed tick): nothing to note on
        return
    now = time.time() if now is None else now
    kept = _fresh(getattr(ndb, "ai_recalled", None), now)
    for text in texts:
        text = " ".join(str(text or "").split())
        if text:
            kept.pop(text, None)
            kept[text] = now
    ndb.ai_recalled = dict(list(kept.items())[-RECALLED_MAX:])


def recalled_texts(npc, now: float | None = None) -> list[str]:
    """The memories recalled into ``npc``'s requests lately (see :func:`note_recalled`)."""
    now = time.time() if now is None else now
    return list(_fresh(getattr(getattr(npc, "ndb", None), "ai_recalled", None), now))


def _fresh(recalled, now: float) -> dict:
    if not isinstance(recalled, dict):  # nothing noted yet (ndb answers None)
        return {}
    return {text: when for text, when in recalled.items() if now - float(when) < RECALLED_SECONDS}


def context_for(npc, *, instruction: str = "", tool_results: Sequence[str] = ()) -> GateContext:
    """The :class:`GateContext` of a memory ``npc`` is about to store.

    Args:
        npc: The NPC (its persona, operator prompt and recalled memories are read).
        instruction: The task instruction of the request that led to the store, if any.
        tool_results: Texts of this tick's world-tool results.
    """
    state = npc_state(npc)
    return GateContext(
        persona=str(state.persona or ""),
        prompts=[text for text in (state.user_system_prompt, instruction) if text],
        tool_results=list(tool_results),
        recalled=recalled_texts(npc),
    )


def count_decisions(metrics: dict, decisions: Iterable[str]) -> dict:
    """``metrics`` with the ``memory_gate`` counters raised by ``decisions`` (returns it)."""
    counts = dict(metrics.get("memory_gate") or {})
    for decision in decisions:
        if decision in DECISIONS:
            counts[decision] = int(counts.get(decision, 0)) + 1
    metrics["memory_gate"] = counts
    return metrics


def record_decisions(npc, decisions: Iterable[str]) -> None:
    """Count ``decisions`` in ``npc``'s ``memory_gate`` metrics (one write; reactor thread)."""
    decisions = list(decisions)
    if decisions and getattr(npc, "pk", None):
        npc_state(npc).update(METRICS, lambda metrics: count_decisions(metrics, decisions))


def describe_counts(counts: dict | None) -> str:
    """The ``memory_gate`` counters in one line (``stored 12, merged 1, ...``), or ``nothing yet``."""
    parts = [
        f"{name.replace('_', ' ')} {int(counts[name])}"
        for name in DECISIONS
        if (counts or {}).get(name)
    ]
    return ", ".join(parts) if parts else "nothing yet"
