"""Who may use the dashboard and its API: staff.

Staff means a superuser, an account with Django's ``is_staff`` (what Evennia's own web admin
asks for), or an account holding Evennia's ``Admin`` permission or higher (``Developer``),
checked through the permission hierarchy as Evennia's REST API does.
"""

from __future__ import annotations

from evennia.locks.lockhandler import check_perm
from evennia.web.api.permissions import EvenniaPermission

STAFF_PERMISSION = "Admin"


def is_ai_staff(user) -> bool:
    """Whether ``user`` (a request's user) may see and use the dashboard."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser or getattr(user, "is_staff", False):
        return True
    try:
        return bool(check_perm(user, STAFF_PERMISSION))
    except Exception:
        return False


class AIStaffPermission(EvenniaPermission):
    """DRF permission of the dashboard API: staff only, for every action and object."""

    def has_permission(self, request, view):
        return is_ai_staff(request.user)

    def has_object_permission(self, request, view, obj):
        return is_ai_staff(request.user)
