"""The staff dashboard of evennia-ai, part of the Evennia website.

Add the app and mount its urls in the game::

    # server/conf/settings.py
    INSTALLED_APPS += ["evennia_ai", "evennia_ai.web"]

    # web/urls.py
    path("ai/", include("evennia_ai.web.urls")),

Pages (staff only): ``/ai/`` lists the AI NPCs; ``/ai/npc/<id>/`` shows one NPC's goals,
projects, memory blocks, traces, usage charts and pending confirmations; ``/ai/api/`` is the
same data as JSON (Django REST framework, session or basic authentication).
"""
