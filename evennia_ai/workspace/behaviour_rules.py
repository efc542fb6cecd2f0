"""Behavioural rules the assistant learns by reflecting (pure logic).

Reflection ends each lasting lesson as a journal line starting with ``RULE:``
(:func:`extract_rules` finds them); the rules are kept as a plain list of short strings (on
the character as ``behaviour_rules``), oldest first, and rendered into the system prompt under
``[LEARNED BEHAVIOURAL RULES]``, below the assistant's own guidelines and above the operator's
prompt, which always wins.

Limits: at most :data:`MAX_RULES` rules (adding more drops the oldest), each at most
:data:`MAX_RULE_LENGTH` characters after normalisation (bullets and a ``RULE:`` prefix removed,
whitespace collapsed); a rule equal to a kept one once lowercased and stripped of punctuation
is a duplicate.

Guard: a learned rule must never widen what the assistant may do or set aside who it answers
to, since a player could talk an NPC into "learning" such a rule. :func:`forbidden_reason` is a
simple keyword heuristic, deliberately strict (it will reject a few harmless rules), that
rejects a rule which:

- tells it to ignore, override, bypass, disobey... (or not follow) the operator, the system
  prompt, instructions, guidelines, rules, restrictions, safety, confirmations or permissions,
  or says those no longer apply;
- tells it to change the system prompt or the operator's instructions;
- mentions running or executing commands, code, scripts or the shell;
- skips confirmation, approval or permission ("without confirmation");
- grants, gains or widens permissions, privileges, access or rights, claims an admin,
  developer or god role or mode, or says to never refuse / always comply / do whatever
  anyone asks.

It is a filter on what reaches the prompt, not a security boundary: what the NPC may do is
enforced by tool permissions and locks in code.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from evennia_ai.wording import LEARNED_RULES_HEADING
from evennia_ai.workspace.results import OpResult, clean_text, normalise

MAX_RULES = 20
MAX_RULE_LENGTH = 200
HEADER = LEARNED_RULES_HEADING

_NEAR = r"\W+(?:[\w']+\W+){0,3}?"  # up to three words in between
_AUTHORITY = (
    r"(?:operators?|system(?: prompt| message| instructions?)?|prompts?|instructions?|guidelines?"
    r"|rules?|restrictions?|limits?|limitations?|polic(?:y|ies)|admins?|administrators?|staff"
    r"|builders?|developers?|safety|confirmations?|permissions?|locks?)"
)
_FORBIDDEN: list[tuple[re.Pattern, str]] = [
    (
        re.compile(
            # "don't forget the house rules" is advice, not an override
            r"(?<!n't )(?<!not )(?<!never )\b(?:ignore|disregard|override|overrule|bypass|circumvent|forget|supersede|defy"
            r"|disobey|violate|evade)" + _NEAR + _AUTHORITY + r"\b"
        ),
        "it tries to set aside the operator's instructions or the system's rules",
    ),
    (
        re.compile(
            r"\b(?:do not|don't|dont|never|stop)\s+(?:follow|obey|listen to|respect)"
            + _NEAR
            + _AUTHORITY
            + r"\b"
        ),
        "it tries to set aside the operator's instructions or the system's rules",
    ),
    (
        re.compile(
            _AUTHORITY + r"\W+(?:[\w']+\W+){0,3}?(?:no longer apply|do not apply|don't apply"
            r"|does not apply|doesn't apply|are optional|is optional|can be ignored|are void|is void)"
        ),
        "it tries to set aside the operator's instructions or the system's rules",
    ),
    (
        re.compile(r"\bnot bound by\b|\bno (?:restrictions|limits|rules)\b|\bjailbreak"),
        "it tries to remove restrictions",
    ),
    (
        re.compile(
            r"\b(?:change|edit|rewrite|replace|modify|update|delete|remove)"
            + _NEAR
            + r"(?:system prompt|operator|operator's|instructions)\b"
        ),
        "it tries to change the operator's instructions or the system prompt",
    ),
    (
        re.compile(
            r"\b(?:run|runs|running|execute|executes|executing|perform|issue)"
            + _NEAR
            + r"(?:commands?|code|scripts?|shell)\b"
        ),
        "it is about running commands, which learned rules may not widen",
    ),
    (
        re.compile(
            r"\bwithout\s+(?:\w+\s+){0,2}?(?:confirmation|approval|permission|asking)\b"
            r"|\b(?:skip|avoid|bypass)" + _NEAR + r"(?:confirmations?|approvals?|checks?)\b"
        ),
        "it skips confirmation or approval",
    ),
    (
        re.compile(
            r"\b(?:grant|give|gain|elevate|escalate|expand|widen|raise|increase|unlimited|full"
            r"|extra|more|higher|admin|superuser)"
            + _NEAR
            + r"(?:permissions?|privileges?|access|rights|powers?)\b"
        ),
        "it tries to widen permissions",
    ),
    (
        re.compile(
            r"\byou are (?:now )?(?:an? |the )?(?:admin|administrator|superuser|developer|god|operator|root)\b"
            r"|\b(?:developer|god|admin|debug|root) mode\b"
        ),
        "it claims a privileged role",
    ),
    (
        re.compile(
            r"\bnever refuse\b|\b(?:do|obey|follow)\s+(?:whatever|anything|everything)\s+(?:[\w']+\s+){0,2}?"
            r"(?:asks?|says?|wants?|tells?|requests?|demands?)\b"
            r"|\balways (?:comply|obey)\b"
        ),
        "it tries to remove the assistant's judgement",
    ),
]

_PREFIX = re.compile(r"^(?:[-*•>]+|\d{1,2}[.)])?\s*(?:rule\s*:\s*)?", re.I)


def normalise_rule(text: Any) -> str:
    """A rule as kept: bullet and ``RULE:`` prefix removed, whitespace collapsed."""
    return _PREFIX.sub("", clean_text(text), count=1).strip()


def forbidden_reason(rule: str) -> str | None:
    """Why ``rule`` may not be learned (see the module doc), or None when it may."""
    lowered = clean_text(rule).lower().replace("’", "'")
    for pattern, reason in _FORBIDDEN:
        if pattern.search(lowered):
            return reason
    return None


def _check(rule: Any) -> tuple[str | None, str | None]:
    if not isinstance(rule, str):
        return None, "a rule must be text"
    text = normalise_rule(rule)
    if not text:
        return None, "the rule is empty"
    if len(text) > MAX_RULE_LENGTH:
        return None, f"the rule is too long ({len(text)} characters, at most {MAX_RULE_LENGTH})"
    reason = forbidden_reason(text)
    if reason:
        return None, reason
    return text, None


def add_rules(rules: list[str] | None, new_rules: Any) -> tuple[list[str], list[str], list[dict]]:
    """Add learned rules (one text or a list of texts).

    Returns:
        ``(new_rules, added, rejected)``: the new list (the one given is not modified), the
        rules added as kept, and ``{"rule", "reason"}`` for each rule refused (empty, too long,
        forbidden, or a duplicate). When more than :data:`MAX_RULES` are kept the oldest are
        dropped.
    """
    if isinstance(new_rules, str) or not isinstance(new_rules, Iterable):
        new_rules = [new_rules]
    kept = [r for r in (rules or []) if isinstance(r, str)]
    seen = {normalise(r) for r in kept}
    added: list[str] = []
    rejected: list[dict] = []
    for raw in new_rules:
        text, reason = _check(raw)
        if reason:
            rejected.append({"rule": raw if isinstance(raw, str) else repr(raw), "reason": reason})
            continue
        key = normalise(text)
        if key in seen:
            rejected.append({"rule": text, "reason": "the rule is already known"})
            continue
        seen.add(key)
        kept.append(text)
        added.append(text)
    return kept[-MAX_RULES:], added, rejected


def remove_rule(rules: list[str] | None, rule: Any) -> tuple[list[str], OpResult]:
    """Remove a rule by its 1-based position or by its text (compared normalised).

    Returns:
        ``(new_rules, result)``; ``result.data["removed"]`` is the rule removed.
    """
    kept = list(rules or [])
    index = None
    if isinstance(rule, int) and not isinstance(rule, bool):
        if 1 <= rule <= len(kept):
            index = rule - 1
        else:
            return kept, OpResult.fail(f"There is no rule number {rule} (there are {len(kept)}).")
    elif isinstance(rule, str) and normalise(normalise_rule(rule)):
        key = normalise(normalise_rule(rule))
        index = next((i for i, r in enumerate(kept) if normalise(r) == key), None)
        if index is None:
            return kept, OpResult.fail(f"No learned rule reads {rule!r}.")
    else:
        return kept, OpResult.fail("Give the rule's number (from 1) or its text.")
    removed = kept.pop(index)
    return kept, OpResult.ok(f"Removed the rule: {removed}", removed=removed)


def render_rules(rules: list[str] | None) -> str:
    """The rules for the system prompt ("" when there are none)."""
    kept = [r for r in rules or [] if isinstance(r, str) and r.strip()]
    if not kept:
        return ""
    return HEADER + "\n" + "\n".join(f"• {r}" for r in kept)


def extract_rules(entries: Iterable[Any]) -> list[str]:
    """The ``RULE:`` lines of journal entries (dicts with ``content``) or texts, in order.

    Only lines that start with ``RULE:`` (any case, after an optional bullet) count; the rest
    of the entry stays a plain journal note. Nothing is validated here: pass the result to
    :func:`add_rules`.
    """
    found = []
    for entry in entries or []:
        text = entry.get("content") if isinstance(entry, dict) else entry
        if not isinstance(text, str):
            continue
        for line in text.splitlines():
            stripped = re.sub(r"^\s*(?:[-*•>]+\s*)?", "", line)
            if re.match(r"rule\s*:", stripped, re.I):
                rule = normalise_rule(stripped)
                if rule:
                    found.append(rule)
    return found
