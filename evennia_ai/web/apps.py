"""Django app of the dashboard (its templates and static files)."""

import os

from django.apps import AppConfig
from django.conf import settings
from django.template import engines

from evennia_ai import conf

# Holds ``website/_menu.html``: the site menu with a link to the dashboard (see ready()).
MENU_TEMPLATES = os.path.join(os.path.dirname(__file__), "templates", "evennia_ai", "site")


def add_menu_link(template_settings: list[dict], evennia_dir: str) -> bool:
    """Put :data:`MENU_TEMPLATES` in front of Evennia's own template folders.

    The game's folders stay in front of it (a game's own ``website/_menu.html`` wins), and the
    menu it holds extends whichever ``_menu.html`` comes next, so the game's or Evennia's menu
    is kept and the link added. Returns whether it was added (False when already there, or no
    Django template engine lists Evennia's folders).
    """
    for engine in template_settings:
        if not engine.get("BACKEND", "").endswith("DjangoTemplates"):
            continue
        dirs = engine.setdefault("DIRS", [])
        if MENU_TEMPLATES in dirs:
            return False
        evennia = [i for i, d in enumerate(dirs) if str(d).startswith(str(evennia_dir))]
        if evennia:
            dirs.insert(evennia[0], MENU_TEMPLATES)
            return True
    return False


class EvenniaAIWebConfig(AppConfig):
    """``evennia_ai.web``: no models, only templates, static files, views and the API."""

    name = "evennia_ai.web"
    label = "evennia_ai_web"
    verbose_name = "evennia-ai dashboard"

    def ready(self):
        """Link the dashboard from the website's menu (``EVENNIA_AI_WEB_MENU_LINK``).

        Django builds its template engines from ``settings.TEMPLATES`` on first use, normally
        after this; an engine built earlier gets the folder too.
        """
        if not conf.get_bool("EVENNIA_AI_WEB_MENU_LINK"):
            return
        evennia_dir = getattr(settings, "EVENNIA_DIR", "")
        add_menu_link(settings.TEMPLATES, evennia_dir)
        if "templates" in vars(engines):  # already built (its settings were copied)
            for backend in engines.all():
                dirs = getattr(getattr(backend, "engine", None), "dirs", None)
                if isinstance(dirs, list):
                    add_menu_link([{"BACKEND": "DjangoTemplates", "DIRS": dirs}], evennia_dir)
