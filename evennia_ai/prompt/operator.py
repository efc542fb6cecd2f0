"""The operator's section: what the game's operators say to an NPC's model, in every acting request.

The section is not a prompt component. The context builder gathers its parts for every request
in which the model acts or speaks (the seven context types of a tick, and a delegated helper's
request builds it with :func:`section_for`), whatever the context's component list, the
components' ``enabled`` flags or their content say, and assembly puts it first in the system
message (:func:`~evennia_ai.prompt.assembly.assemble_messages`, ``operator=``). Fitting a request
to the window never shrinks it (:data:`~evennia_ai.prompt.fitting.NEVER_SHRUNK`): a request
that does not fit with it is not sent.

Its parts, in order, each a placeholder value the builder gathers (see :data:`PARTS`):

- ``operator_override``: the override file (``EVENNIA_AI_OPERATOR_OVERRIDE``), fenced as
  ``<operator>``;
- ``operator_prompt``: the operator's prompt for this NPC (``ainpc/prompt``, the dashboard),
  fenced as ``<operator>`` under :data:`OPERATOR_HEADER`;
- ``tool_rules``: the "# Tool Execution Rules" the operator set for this NPC (``aitools/addrule``);
- ``trust_note``: how to read fenced text, only when the request does not carry it already in
  the NPC's own system prompt (component 0 left out of the context, say).

Requests that only transform text (the assessment) get :func:`public_text` of the section: the
same without the lines an operator marked ``Secret:``.

Pure module (no Django, Evennia or Twisted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evennia_ai.npc_state import npc_state
from evennia_ai.tools.rules import parse_rules, render_tool_rules
from evennia_ai.utils import OPERATOR_TAG
from evennia_ai.wording import OPERATOR_HEADER as OPERATOR_HEADER

PARTS = ("operator_override", "operator_prompt", "tool_rules")
"""The placeholder names of the section's parts, in the order they are shown."""
TRUST_PART = "trust_note"
"""The placeholder name of the trust note (shown only when the NPC's own prompt lacks it)."""
SECTION_KEY = "operator"
"""The section key of the operator's section in an assembled request (token counts, traces)."""

_SECRET_LINE = re.compile(r"^\s*secret\s*:", re.I)


def render_override(text: str | None) -> str:
    """The override file's text as the section shows it ("" when there is none)."""
    text = (text or "").strip()
    return f"<{OPERATOR_TAG}>\n{text}\n</{OPERATOR_TAG}>" if text else ""


def render_operator_prompt(text: str | None) -> str:
    """The NPC's operator prompt as the section shows it ("" when there is none)."""
    text = (text or "").strip()
    return f"<{OPERATOR_TAG}>\n{OPERATOR_HEADER}\n{text}\n</{OPERATOR_TAG}>" if text else ""


def render_operator_rules(stored_rules: Iterable[Mapping[str, Any]] | None) -> str:
    """The operator's tool rules of an NPC as the section shows them ("" without rules)."""
    rules, _errors = parse_rules(stored_rules or [])
    return render_tool_rules(rules)


def section_text(values: Mapping[str, object], *, own_prompt: str | None = None) -> str:
    """The operator's section from gathered placeholder ``values``.

    Args:
        values: Placeholder values; the section's parts (:data:`PARTS`, :data:`TRUST_PART`)
            are taken from it, missing ones read as empty.
        own_prompt: The NPC's own system prompt as gathered (``system_prompt``), or None when
            the request does not carry it: the trust note joins the section when it is not in
            there.

    Returns:
        The parts joined by blank lines, or "" when the operator said nothing and no trust
        note is needed.
    """
    parts = [_text(values.get(name)) for name in PARTS]
    trust = _text(values.get(TRUST_PART))
    if trust and trust not in (own_prompt or ""):
        parts.insert(1 if parts[0] else 0, trust)  # after the override file, before the rest
    return "\n\n".join(part for part in parts if part)


def public_text(section: str) -> str:
    """``section`` without the lines an operator marked ``Secret:`` (for text-only requests)."""
    lines = [line for line in (section or "").splitlines() if not _SECRET_LINE.match(line)]
    return "\n".join(lines)


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


@dataclass(frozen=True)
class OperatorSection:
    """The operator's section of one request.

    Attributes:
        text: The section as the acting request carries it ("" when empty).
    """

    text: str

    @property
    def public(self) -> str:
        """The section without ``Secret:`` lines (what a text-only request may carry)."""
        return public_text(self.text)

    def system_message(self, rest: str) -> str:
        """``rest`` (the system text of a request) with the section first."""
        return "\n\n".join(part for part in (self.text, (rest or "").strip()) if part)


def section_for(npc: Any, override_text: str, trust_note: str) -> OperatorSection:
    """The operator's section of a request that is built without the context builder (a helper).

    Args:
        npc: The NPC, an Evennia character (its operator prompt and tool rules are read).
        override_text: The override file's text (``read_operator_override()``; the caller
            fails closed when it cannot be read).
        trust_note: The trust note; a helper's request has no other place for it.
    """
    state = npc_state(npc)
    values = {
        "operator_override": render_override(override_text),
        "operator_prompt": render_operator_prompt(state.user_system_prompt),
        "tool_rules": render_operator_rules(state.tool_rules),
        TRUST_PART: trust_note,
    }
    return OperatorSection(section_text(values, own_prompt=None))


def without_secrets(messages: list[dict[str, Any]], section: str) -> list[dict[str, Any]]:
    """``messages`` with ``section`` in their first system message replaced by its public text.

    For requests that only transform text and take an acting request's messages as their input
    (the assessment). Messages are copied; the input is not changed.
    """
    out = [dict(m) for m in messages or ()]
    public = public_text(section)
    if not section or public == section:
        return out
    for message in out:
        content = message.get("content")
        if message.get("role") == "system" and isinstance(content, str) and section in content:
            message["content"] = content.replace(section, public, 1)
            break
    return out
