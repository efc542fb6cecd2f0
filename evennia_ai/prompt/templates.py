"""Prompt templates: reusable prompt text with ``{placeholders}``, and the built-in ones.

Pure module. Placeholders are ``{identifier}`` (letters, digits, underscore, not starting with
a digit). Anything else in braces, such as a JSON example ``{"tool": "say"}``, ``{}`` or
``{{``, is literal text and survives rendering unchanged, and so does a doubled ``{{name}}``;
:meth:`str.format` is deliberately not used because it would choke on those. Values are
``str()``-ed and never rendered again.

:func:`render_template` raises :class:`TemplateRenderError`, a ``KeyError`` subclass (a missing
placeholder is a missing key) whose message and ``missing`` attribute name every missing
placeholder at once; :func:`safe_render_template` leaves missing placeholders as they are.

Example:
    >>> render_template("Hello {name}", name="Alice")
    'Hello Alice'
    >>> safe_render_template("Hello {name}, {missing}", name="Alice")
    'Hello Alice, {missing}'
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from evennia_ai.llm.json_protocol import JSON_TOOLS_PROMPT, NATIVE_TOOLS_PROMPT

PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")


class TemplateRenderError(KeyError):
    """Placeholders had no value. ``missing`` lists every one of them."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = list(missing)
        super().__init__(f"missing value for placeholder(s): {', '.join(self.missing)}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


@dataclass
class PromptTemplate:
    """A reusable piece of prompt text.

    Attributes:
        key: Unique identifier.
        name: Display name.
        description: What it is for.
        content: Text with ``{placeholders}``.
        placeholders: Names of the placeholders the content uses.
        is_builtin: True for the templates shipped here.
        category: "system_prompt", "reflection", or any operator category.
    """

    key: str
    name: str
    description: str
    content: str
    placeholders: list[str] = field(default_factory=list)
    is_builtin: bool = False
    category: str = "system_prompt"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def extract_placeholders(content: str) -> list[str]:
    """Placeholder names in ``content``, in first-seen order, without duplicates."""
    seen: list[str] = []
    for match in PLACEHOLDER.finditer(content or ""):
        if match.group(1) not in seen:
            seen.append(match.group(1))
    return seen


def _content_of(template_or_content: PromptTemplate | object) -> str:
    if isinstance(template_or_content, PromptTemplate):
        return template_or_content.content
    return "" if template_or_content is None else str(template_or_content)


def render_template(template_or_content: PromptTemplate | object, **values: object) -> str:
    """Fill every placeholder; raise :class:`TemplateRenderError` naming all missing ones."""
    content = _content_of(template_or_content)
    missing = [name for name in extract_placeholders(content) if name not in values]
    if missing:
        raise TemplateRenderError(missing)
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), content)


def safe_render_template(template_or_content: PromptTemplate | object, **values: object) -> str:
    """Fill the placeholders that have values; leave the others as they are."""
    content = _content_of(template_or_content)
    return PLACEHOLDER.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), content
    )


REFLECTION_METRICS = (
    "ticks_since_reflection",
    "tool_calls",
    "tool_failures",
    "journal_entries",
    "goals_completed",
    "recent_errors",
)
"""The six figures the ``reflection`` template shows (since the last reflection)."""

REFLECTION_CONTENT = """\
Time to reflect on your recent performance.

Since your last reflection:
- ticks: {ticks_since_reflection}
- tool calls: {tool_calls} ({tool_failures} failed)
- journal entries written: {journal_entries}
- goals completed: {goals_completed}
- recent errors: {recent_errors}

Consider: What patterns am I observing in my work? What strategies are working well? What mistakes am I repeating? What should I do differently?
Record your insights with add_journal_entry (importance 1-10). End each lasting lesson as a journal entry whose text starts with "RULE:" and is one short line; those become behavioural rules you follow from now on."""

_BUILTINS = {
    "default": PromptTemplate(
        key="default",
        name="Default assistant",
        description="System prompt for models with native tool calling.",
        content=NATIVE_TOOLS_PROMPT,
        placeholders=["tick_rate"],
        is_builtin=True,
        category="system_prompt",
    ),
    "default_fallback": PromptTemplate(
        key="default_fallback",
        name="Default assistant (JSON tool protocol)",
        description="System prompt for providers without native tool calling: tools are called by answering with JSON.",
        content=JSON_TOOLS_PROMPT,
        placeholders=["tick_rate", "tool_schemas"],
        is_builtin=True,
        category="system_prompt",
    ),
    "reflection": PromptTemplate(
        key="reflection",
        name="Reflection",
        description="Periodic self-reflection with six metrics.",
        content=REFLECTION_CONTENT,
        placeholders=list(REFLECTION_METRICS),
        is_builtin=True,
        category="reflection",
    ),
}


def _copy(template: PromptTemplate) -> PromptTemplate:
    return PromptTemplate(**{**asdict(template), "placeholders": list(template.placeholders)})


def get_template(key: str) -> PromptTemplate | None:
    """A copy of the built-in template ``key``, or None."""
    template = _BUILTINS.get(key)
    return _copy(template) if template else None


def get_default_template() -> PromptTemplate:
    """The native-tool-calling system prompt template."""
    return _copy(_BUILTINS["default"])


def get_fallback_template() -> PromptTemplate:
    """The JSON-tool-protocol system prompt template."""
    return _copy(_BUILTINS["default_fallback"])


def list_builtin_templates() -> list[PromptTemplate]:
    """Copies of every built-in template, by key."""
    return [_copy(t) for _, t in sorted(_BUILTINS.items())]


def builtin_template_keys() -> list[str]:
    """Keys of the built-in templates, sorted (user templates may not reuse them)."""
    return sorted(_BUILTINS)
