"""The dashboard's filters for numbers, money, times and tool calls (``{% load ai_format %}``).

Each filter is a function of :mod:`evennia_ai.formatting`, so a page shows a figure exactly as
the in-game commands do::

    {{ npc.tokens_today|tokens }}     149,483
    {{ npc.cost_today|money }}        $0.0123
    {{ used|percent:cap }}            12%
    {{ trace.started|timestamp }}     2026-11-25 14:03:07 UTC
    {{ c.created|ago }}               3 min ago
    {{ trace.duration|duration }}     21 ms
    {{ it.index|step:it.kind }}       step 1
    {{ tc.arguments|arguments }}      [("message", "Hello"), ...]
    {{ tc.result|result }}            the result in words
    {{ tc.status|outcome:tc.success }}  ran / ran and failed / not run (the tick ended before it)
    {{ c|action_arguments }}          a confirmation's arguments as (name, value) pairs
    {{ user|ai_staff }}               whether the account may see the dashboard (Builder)
    {% ai_dashboard_url %}            /ai/ (or "" when the game has not mounted it)
"""

from django import template
from django.urls import NoReverseMatch, reverse

from evennia_ai import formatting
from evennia_ai.web.permissions import is_ai_staff

register = template.Library()

register.filter("tokens", formatting.count)
register.filter("money", formatting.money)
register.filter("percent", formatting.percent)
register.filter("timestamp", formatting.timestamp)
register.filter("ago", formatting.ago)
register.filter("duration", formatting.duration)
register.filter("step", formatting.step_label)
register.filter("arguments", formatting.argument_items)
register.filter("result", formatting.result_text)
register.filter("outcome", formatting.tool_outcome)


@register.filter
def action_arguments(entry: dict) -> list[tuple[str, str]]:
    """A confirmation entry's arguments as ``(name, value)`` pairs in words."""
    return formatting.argument_items(formatting.action_arguments(entry))


register.filter("ai_staff", is_ai_staff)


@register.simple_tag
def ai_dashboard_url() -> str:
    """The dashboard's URL, or "" when the game has not mounted ``evennia_ai.web.urls`` (the
    site menu must render either way)."""
    try:
        return reverse("evennia_ai:npc-list")
    except NoReverseMatch:
        return ""
