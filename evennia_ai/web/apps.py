"""Django app of the dashboard (its templates and static files)."""

from django.apps import AppConfig


class EvenniaAIWebConfig(AppConfig):
    """``evennia_ai.web``: no models, only templates, static files, views and the API."""

    name = "evennia_ai.web"
    label = "evennia_ai_web"
    verbose_name = "evennia-ai dashboard"
