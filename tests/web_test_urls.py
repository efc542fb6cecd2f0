"""URLconf of the dashboard tests: Evennia's website (login page, base template) plus /ai/."""

from django.urls import include, path
from evennia.web.urls import urlpatterns as evennia_urlpatterns

urlpatterns = [path("ai/", include("evennia_ai.web.urls"))] + evennia_urlpatterns
