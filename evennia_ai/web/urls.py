"""URLs of the staff dashboard; mount with ``path("ai/", include("evennia_ai.web.urls"))``."""

from django.urls import include, path, re_path

from evennia_ai.web import views
from evennia_ai.web.api import api_fallback, router

app_name = "evennia_ai"

urlpatterns = [
    path("", views.NPCListView.as_view(), name="npc-list"),
    path("npc/<int:npc_id>/", views.NPCDetailView.as_view(), name="npc-detail"),
    path(
        "npc/<int:npc_id>/trace/<int:tick_id>/",
        views.TraceDetailView.as_view(),
        name="trace-detail",
    ),
    path(
        "npc/<int:npc_id>/control/<str:name>/",
        views.NPCControlView.as_view(),
        name="npc-control",
    ),
    path(
        "confirmations/<str:confirmation_id>/<str:decision>/",
        views.ConfirmationDecisionView.as_view(),
        name="confirmation-decide",
    ),
    path("api/", include((router.urls, "api"), namespace="api")),
    # after every API route: a missing slash redirects, anything else is a JSON 404
    re_path(r"^api/(?P<path>.*)$", api_fallback, name="api-fallback"),
]
