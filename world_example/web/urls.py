"""
URLs of the evennia-ai demo game: Evennia's defaults (as in its game template) plus the
evennia-ai staff dashboard at /ai/ (copied into the game dir by `make demo`).
"""

from django.urls import include, path

# default evennia patterns
from evennia.web.urls import urlpatterns as evennia_default_urlpatterns

urlpatterns = [
    # website
    path("", include("web.website.urls")),
    # webclient
    path("webclient/", include("web.webclient.urls")),
    # web admin
    path("admin/", include("web.admin.urls")),
    # evennia-ai staff dashboard and its JSON API (needs "evennia_ai.web" in INSTALLED_APPS)
    path("ai/", include("evennia_ai.web.urls")),
]

# 'urlpatterns' must be named such for Django to find it.
urlpatterns = urlpatterns + evennia_default_urlpatterns
