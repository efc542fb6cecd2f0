"""Staff-only JSON API of the dashboard, in the style of Evennia's REST API (``evennia.web.api``).

Mounted at ``/ai/api/`` (independent of ``REST_API_ENABLED``). Session authentication (the
website login, CSRF enforced on POST) or HTTP basic authentication with an account's name and
password, as Evennia's API allows by default.

=====================================================  ========================================
``GET  npcs/``                                          every AI NPC's state and usage today
``GET  npcs/<id>/``                                     one NPC: state, goals, projects, blocks,
                                                        recent traces, usage, confirmations
``GET  npcs/<id>/goals/``                               goal tree
``GET  npcs/<id>/memory/``                              memory blocks (rendered content)
``GET  npcs/<id>/traces/?last=<n>``                     trace summaries, newest first
``GET  npcs/<id>/traces/<tick_id>/``                    one full trace
``GET  npcs/<id>/usage/``                               tokens and cost per day and per tick
``GET  npcs/<id>/tools/``                               tools, lists, categories and tool rules
``GET  npcs/<id>/budget/``                              own limits and every limit in force
``GET  npcs/<id>/history/``                             history size and compaction state
``GET  npcs/<id>/world/``                               routine, goods and stock, latest trades
``GET  npcs/<id>/operator_prompt/``                     the operator prompt (Developer)
``POST npcs/<id>/settings/<name>/`` ``{"value"}``       change a setting (its own level)
``GET  confirmations/?status=pending&npc=<id>``         confirmation entries
``GET  confirmations/<cid>/``                           one entry
``POST confirmations/<cid>/approve/``                   approve (runs the action as the NPC)
``POST confirmations/<cid>/reject/``  ``{"reason"}``    reject
``GET  contexts/``                                      component order of each context type
=====================================================  ========================================

Every endpoint needs the Builder permission; a setting needs its own level too (Builder for
``pause``, ``resume``, ``persona``, ``host`` (yes or no), the ``line_<kind>`` lines,
``routine`` (its text form), ``clear_routine``, ``check_routine``, ``add_goods`` (one rule),
``remove_goods`` (an item), and ``model`` among ``EVENNIA_AI_BUILDER_MODELS``;
Developer for any other model and the others: ``operator_prompt``, ``budget``,
``allow_tools``, ``deny_tools``, ``only_tools``, ``categories``, ``reset_tools``, ``add_rule``,
``remove_rule``); below it the answer is 403 with the level it needs. A refused change is 400
with the reason, e.g. ``{"detail": "Unknown tool(s): fly."}``.

What only Developers see stays with them: below Developer, ``quarantined`` (values kept aside)
shows no value of a key only Developers change, and traces show no text that would reveal one
of the NPC's secrets (see :mod:`evennia_ai.engine.redaction`).

Every URL ends with a slash; the same URL without it redirects there (308, so a POST stays a
POST). Errors are JSON too: ``{"detail": "..."}`` with the status (404 for an unknown URL or
object, 500, logged, for a failure of ours).

Example::

    curl -u admin:password http://localhost:4001/ai/api/npcs/
"""

from __future__ import annotations

from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from evennia.utils import logger
from rest_framework import exceptions, renderers, routers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import exception_handler

from evennia_ai import access
from evennia_ai.npc.controls import ControlError
from evennia_ai.tools.approvals import ConfirmationError
from evennia_ai.web import data
from evennia_ai.web.permissions import AIStaffPermission
from evennia_ai.web.serializers import (
    ConfirmationFilterSerializer,
    DecisionSerializer,
    SettingSerializer,
    TraceFilterSerializer,
)


class AIBrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    """The browsable HTML view, with a page of its own (Evennia's needs its REST API enabled)."""

    template = "evennia_ai/api.html"


RENDERERS = [renderers.JSONRenderer, AIBrowsableAPIRenderer]
API_NAME = "evennia-ai API"  # the index's heading and the first breadcrumb


def api_exception_handler(exc, context):
    """DRF's handler, and a JSON 500 (logged with its traceback) for any other exception."""
    response = exception_handler(exc, context)
    if response is None:
        logger.log_trace(f"evennia_ai: the JSON API failed on {context['request'].path}")
        response = Response(
            {"detail": "Internal error; the server log has the details."},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    return response


def api_fallback(request, path: str = ""):
    """What no API route matched: the URL with its slash added (308), else a JSON 404."""
    if not request.path_info.endswith("/"):
        try:
            routed = resolve(request.path_info + "/").func is not api_fallback
        except Resolver404:
            routed = False
        if routed:
            query = request.META.get("QUERY_STRING", "")
            response = HttpResponsePermanentRedirect(
                request.path + "/" + (f"?{query}" if query else "")
            )
            response.status_code = 308  # keeps the method and body (a POST stays a POST)
            return response
    return JsonResponse({"detail": "Not found."}, status=404)


class AIViewSetMixin:
    """Staff permission for every action (see :mod:`evennia_ai.web.permissions`); errors as
    JSON; names for people on the browsable page.

    ``plural`` names a viewset's list page and ``singular`` one item's page (DRF would derive
    "Npc List" and "Npc Instance" from the class name); an extra action keeps the name DRF gives
    it from its method ("Goals", "Operator prompt").
    """

    permission_classes = [AIStaffPermission]
    renderer_classes = RENDERERS
    plural = ""
    singular = ""

    def get_exception_handler(self):
        return api_exception_handler

    def get_view_name(self) -> str:
        """The page's heading and its breadcrumb: "NPCs", "NPC", "Goals"."""
        action_name = getattr(self, "name", None)
        if action_name:
            return str(action_name)
        return self.singular if getattr(self, "suffix", None) == "Instance" else self.plural


def _require(request, permission: str, action: str) -> None:
    """403 with the level it needs unless the request's account holds ``permission``."""
    if not access.passes(request.user, permission):
        raise exceptions.PermissionDenied(access.refusal(permission, action))


def _npc(pk):
    try:
        return data.get_npc(pk)
    except data.NotFound as err:
        raise exceptions.NotFound(str(err)) from None


class NPCViewSet(AIViewSetMixin, viewsets.ViewSet):
    """AI NPCs: state, usage and budget; goals, memory, traces and usage per NPC."""

    lookup_value_regex = "[0-9]+"
    plural = "NPCs"
    singular = "NPC"

    def list(self, request):
        return Response(data.npc_list(request.user))

    def retrieve(self, request, pk=None):
        return Response(data.npc_detail(_npc(pk), request.user))

    @action(detail=True, methods=["get"])
    def world(self, request, pk=None):
        return Response(data.world_view(_npc(pk)))

    @action(detail=True, methods=["get"])
    def goals(self, request, pk=None):
        return Response(data.goals_tree(_npc(pk)))

    @action(detail=True, methods=["get"])
    def memory(self, request, pk=None):
        return Response(data.memory_blocks(_npc(pk)))

    @action(detail=True, methods=["get"])
    def traces(self, request, pk=None):
        query = TraceFilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(data.trace_list(_npc(pk), query.validated_data.get("last"), request.user))

    @action(
        detail=True,
        methods=["get"],
        url_path=r"traces/(?P<tick_id>[0-9]+)",
        url_name="trace-detail",
    )
    def trace(self, request, pk=None, tick_id=None):
        try:
            return Response(data.trace_detail(_npc(pk), tick_id, request.user))
        except data.NotFound as err:
            raise exceptions.NotFound(str(err)) from None

    @action(detail=True, methods=["get"])
    def usage(self, request, pk=None):
        return Response(data.usage_series(_npc(pk), viewer=request.user))

    @action(detail=True, methods=["get"])
    def tools(self, request, pk=None):
        return Response(data.tool_settings(_npc(pk)))

    @action(detail=True, methods=["get"])
    def budget(self, request, pk=None):
        return Response(data.budget_limits(_npc(pk)))

    @action(detail=True, methods=["get"])
    def history(self, request, pk=None):
        return Response(data.history(_npc(pk)))

    @action(detail=True, methods=["get"], url_path="operator_prompt")
    def operator_prompt(self, request, pk=None):
        _require(request, access.EDIT, "read an NPC's operator prompt")
        return Response({"operator_prompt": data.operator_prompt(_npc(pk))})

    @action(
        detail=True,
        methods=["post"],
        url_path=r"settings/(?P<name>[a-z_]+)",
        url_name="setting",
    )
    def setting(self, request, pk=None, name=None):
        try:
            needed = data.control_level(name)
        except data.NotFound as err:
            raise exceptions.NotFound(str(err)) from None
        _require(request, needed, f"change an NPC's {name.replace('_', ' ')}")
        npc = _npc(pk)
        body = SettingSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        value = body.validated_data.get("value", "")
        refused = data.refusal(request.user, name, value)  # the model chosen, too
        if refused:
            raise exceptions.PermissionDenied(refused)
        try:
            message = data.change(npc, name, value, request.user)
        except ControlError as err:
            return Response({"detail": str(err)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"detail": message, "npc": data.npc_summary(npc, request.user)})


class ConfirmationViewSet(AIViewSetMixin, viewsets.ViewSet):
    """Actions awaiting a decision; approve and reject run what ``aiconfirm`` runs."""

    lookup_value_regex = "[A-Za-z0-9_]+"
    plural = "Confirmations"
    singular = "Confirmation"

    def list(self, request):
        query = ConfirmationFilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        wanted = query.validated_data.get("status", "pending")
        npc = _npc(query.validated_data["npc"]) if query.validated_data.get("npc") else None
        return Response(data.confirmations(npc=npc, status=None if wanted == "all" else wanted))

    def retrieve(self, request, pk=None):
        try:
            return Response(data.confirmation(pk))
        except data.NotFound as err:
            raise exceptions.NotFound(str(err)) from None

    def _decide(self, request, pk, approve: bool):
        _require(request, access.APPROVE, "decide waiting actions")
        self.retrieve(request, pk)  # 404 for an unknown id
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            entry = data.decide(pk, approve, request.user, body.validated_data.get("reason", ""))
        except ConfirmationError as err:
            return Response({"detail": str(err)}, status=status.HTTP_409_CONFLICT)
        return Response(entry)

    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._decide(request, pk, True)

    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        return self._decide(request, pk, False)


class ContextViewSet(AIViewSetMixin, viewsets.ViewSet):
    """The components each context type assembles, in the order they are sent."""

    plural = "Context types"

    def list(self, request):
        return Response(data.context_orders())


class AIAPIRootView(AIViewSetMixin, routers.APIRootView):
    """The API's index (staff only, like the rest)."""

    plural = API_NAME


class AIRouter(routers.DefaultRouter):
    APIRootView = AIAPIRootView


router = AIRouter()
router.trailing_slash = "/"  # the URL without it redirects (api_fallback)
router.register(r"npcs", NPCViewSet, basename="npc")
router.register(r"confirmations", ConfirmationViewSet, basename="confirmation")
router.register(r"contexts", ContextViewSet, basename="context")
