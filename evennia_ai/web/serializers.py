"""DRF serializers of the dashboard API's input (its output is the plain dicts of
:mod:`evennia_ai.web.data`)."""

from __future__ import annotations

from rest_framework import serializers

from evennia_ai.web.data import MAX_VALUE_CHARS

STATUSES = ("pending", "approved", "failed", "rejected", "all")


class DecisionSerializer(serializers.Serializer):
    """Body of ``POST .../confirmations/<id>/reject/`` (and, ignored, of ``approve``)."""

    reason = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")


class ConfirmationFilterSerializer(serializers.Serializer):
    """Query of ``GET .../confirmations/``: ``?status=pending|approved|failed|rejected|all&npc=<id>``."""

    status = serializers.ChoiceField(choices=STATUSES, required=False, default="pending")
    npc = serializers.IntegerField(required=False, min_value=1)


class TraceFilterSerializer(serializers.Serializer):
    """Query of ``GET .../npcs/<id>/traces/``: ``?last=<n>`` (default: every kept trace)."""

    last = serializers.IntegerField(required=False, min_value=1, max_value=1000)


class SettingSerializer(serializers.Serializer):
    """Body of ``POST .../npcs/<id>/settings/<name>/``: ``{"value": "..."}`` (none for
    ``pause``, ``resume`` and ``reset_tools``)."""

    value = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_VALUE_CHARS,
        default="",
        trim_whitespace=True,
    )
