"""Who may use the dashboard and its API: the permission story of :mod:`evennia_ai.access`.

Viewing every page and every ``GET`` of the API, and approving or rejecting a waiting action,
need Evennia's ``Builder`` permission (as the in-game commands do); changing an NPC's settings
needs the level of that setting (``Builder`` to pause it, set its persona, routine or goods,
or its model among ``EVENNIA_AI_BUILDER_MODELS``; ``Developer`` for any other model, its operator prompt,
tools, tool rules and budget; see :data:`evennia_ai.web.data.CONTROLS` and
:func:`evennia_ai.web.data.refusal`). Permissions are checked on the account through Evennia's
permission hierarchy, as Evennia's own REST API does; a superuser passes every check.
"""

from __future__ import annotations

from evennia.web.api.permissions import EvenniaPermission

from evennia_ai import access

REFUSED_VIEW = (
    "The AI NPC dashboard is for staff with the Builder permission (or above); changing an "
    "NPC's operator prompt, tools, tool rules, budget or (unless listed for Builders) model "
    "needs Developer."
)


def is_ai_staff(user) -> bool:
    """Whether ``user`` (a request's user) may see the dashboard (:data:`access.VIEW`)."""
    return access.passes(user, access.VIEW)


def may(user, permission: str) -> bool:
    """Whether ``user`` (a request's user) holds ``permission`` (a level of :mod:`access`)."""
    return access.passes(user, permission)


def permission_names(user) -> list[str]:
    """The Evennia permissions ``user`` holds, for a refusal page (``[]`` when anonymous)."""
    if not getattr(user, "is_authenticated", False):
        return []
    names = list(user.permissions.all()) if hasattr(user, "permissions") else []
    return (["superuser"] if user.is_superuser else []) + [str(n) for n in names]


class AIStaffPermission(EvenniaPermission):
    """DRF permission of the dashboard API: Builder for every endpoint; the settings endpoint
    checks the level of the setting it changes as well."""

    message = REFUSED_VIEW

    def has_permission(self, request, view):
        return is_ai_staff(request.user)

    def has_object_permission(self, request, view, obj):
        return is_ai_staff(request.user)
