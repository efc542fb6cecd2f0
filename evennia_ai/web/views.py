"""HTML pages of the staff dashboard (templates extend Evennia's ``website/base.html``).

The pages get their data from :mod:`evennia_ai.web.data`, as the JSON API does. Visitors who
are not logged in are sent to the website's login page; logged-in accounts below the level a
page or form needs get a page saying what it needs, with status 403 (see
:mod:`evennia_ai.access`).
"""

from __future__ import annotations

import json

from django.apps import apps
from django.contrib import messages
from django.contrib.auth.mixins import UserPassesTestMixin
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.generic import TemplateView

from evennia_ai import access
from evennia_ai.engine.audience import LINE_USES, render_line
from evennia_ai.formatting import decision_text
from evennia_ai.memory import longterm
from evennia_ai.npc import controls, spending
from evennia_ai.npc.controls import ControlError
from evennia_ai.tools.approvals import ConfirmationError
from evennia_ai.web import charts, data
from evennia_ai.web.permissions import REFUSED_VIEW, may, permission_names

PERSONA_SHOWN = 300  # characters of a persona shown before "show all"


def refused(request, needed: str, what: str):
    """The page for an account below ``needed``: what it needs and what the account has."""
    return render(
        request,
        "evennia_ai/refused.html",
        {
            "page_title": "Not allowed",
            "needed": needed,
            "what": what,
            "held": permission_names(request.user),
        },
        status=403,
    )


class StaffRequiredMixin(UserPassesTestMixin):
    """Builders and above (:data:`access.VIEW`): anonymous visitors go to the login page,
    other accounts get a page saying what they need (403)."""

    def test_func(self):
        return may(self.request.user, access.VIEW)

    def handle_no_permission(self):
        if not self.request.user.is_authenticated:
            return super().handle_no_permission()
        return refused(self.request, access.VIEW, REFUSED_VIEW)

    def dispatch(self, request, *args, **kwargs):
        if not apps.is_installed("evennia_ai.web"):
            raise ImproperlyConfigured(
                'The evennia-ai dashboard needs INSTALLED_APPS += ["evennia_ai.web"] in '
                "server/conf/settings.py (its templates and static files live there)."
            )
        return super().dispatch(request, *args, **kwargs)


class DashboardPage(StaffRequiredMixin, TemplateView):
    """Common context of the dashboard pages."""

    page_title = "AI NPCs"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        context.update(
            page_title=self.page_title,
            may_approve=may(user, access.APPROVE),
            may_operate=may(user, access.OPERATE),
            may_edit=may(user, access.EDIT),
        )
        return context

    def npc(self):
        try:
            return data.get_npc(self.kwargs["npc_id"])
        except data.NotFound as err:
            raise Http404(str(err)) from None


def _with_bars(traces: list[dict]) -> list[dict]:
    """Trace rows with their section bar (SVG) added for the template, every bar on the scale
    of the largest prompt among them so ticks compare by size."""
    largest = charts.largest_total(row.get("sections") for row in traces)
    for row in traces:
        row["section_bar"] = charts.section_bar(
            row.get("sections") or {}, scale=largest, error=row.get("error")
        )
    return traces


def npc_lines(npc) -> list[dict]:
    """The NPC's lines for when no model answers, as the settings form shows them: each kind,
    when it is heard, its text, whether it is the NPC's own, its setting, and how it reads."""
    return [
        {
            "kind": line.kind,
            "control": f"line_{line.kind}",
            "use": LINE_USES[line.kind],
            "text": line.text,
            "value": line.text if line.own else "",
            "own": line.own,
            "setting": line.setting,
            "heard": render_line(npc, line, None).replace("||", "|"),
        }
        for line in controls.lines_of(npc)
    ]


def _tree_rows(nodes: list[dict], depth: int = 0) -> list[dict]:
    """A goal tree flattened to rows with their depth (templates cannot recurse cheaply)."""
    rows = []
    for node in nodes:
        rows.append(
            {
                **{k: v for k, v in node.items() if k != "children"},
                "depth": depth,
                "indent": depth * 1.5,
            }
        )
        rows.extend(_tree_rows(node.get("children") or [], depth + 1))
    return rows


class NPCListView(DashboardPage):
    """``/ai/``: every AI NPC with its state, model, usage today and budget."""

    template_name = "evennia_ai/npc_list.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["npcs"] = data.npc_list(self.request.user)
        context["totals"] = spending.server_totals()
        context["pending"] = data.confirmations()
        context["longterm_text"] = longterm.status_text(longterm.status())
        return context


class NPCDetailView(DashboardPage):
    """``/ai/npc/<id>/``: one NPC's goals, projects, memory, traces, usage, confirmations."""

    template_name = "evennia_ai/npc_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        npc = self.npc()
        detail = data.npc_detail(npc, self.request.user)
        _with_bars(detail["traces"])
        names = []
        for row in detail["traces"]:
            names.extend(n for n in row["sections"] if n not in names)
        context.update(
            npc=detail,
            page_title=f"AI NPC {npc.key}",
            goal_rows=_tree_rows(detail["goals"]),
            legend=charts.legend(names),
            daily_chart=charts.usage_chart(
                detail["usage"]["daily"], f"{npc.key}: tokens and cost per day"
            ),
            tick_chart=charts.usage_chart(
                detail["usage"]["ticks"], f"{npc.key}: tokens and cost per tick"
            ),
            daily_totals=charts.totals(detail["usage"]["daily"]),
            tick_totals=charts.totals(detail["usage"]["ticks"]),
            contexts=data.context_orders(),
            persona_shown=PERSONA_SHOWN,
            operator_prompt=data.operator_prompt(npc) if context["may_edit"] else "",
            model_choices=data.model_choices(self.request.user),
            npc_lines=npc_lines(npc),
            host_choices=["no", "yes"],  # what controls.set_host reads
        )
        return context


class TraceDetailView(DashboardPage):
    """``/ai/npc/<id>/trace/<tick_id>/``: every model call and tool call of one tick."""

    template_name = "evennia_ai/trace_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        npc = self.npc()
        try:
            trace = data.trace_detail(npc, self.kwargs["tick_id"], self.request.user)
        except data.NotFound as err:
            raise Http404(str(err)) from None
        iterations = []
        largest = charts.largest_total(it.get("sections") for it in trace.get("iterations") or [])
        for iteration in trace.get("iterations") or []:
            sections = iteration.get("sections") or {}
            total = sum(int(v or 0) for v in sections.values()) or 1
            rows = [
                {
                    "name": name,
                    "tokens": int(tokens or 0),
                    "colour": charts.colour_for(name),
                    "share": round(100 * int(tokens or 0) / total),
                }
                for name, tokens in sorted(sections.items(), key=lambda kv: -int(kv[1] or 0))
            ]
            iterations.append(
                {
                    **iteration,
                    "section_bar": charts.section_bar(sections, width=480, scale=largest),
                    "section_rows": rows,
                }
            )
        context.update(
            npc=data.npc_summary(npc, self.request.user),
            trace=trace,
            pattern_text=json.dumps(trace.get("pattern") or {}, indent=2, default=str),
            iterations=iterations,
            page_title=f"{npc.key}: tick #{trace.get('tick_id')}",
        )
        return context


def _back(request, fallback: str) -> HttpResponseRedirect:
    """Back to the page the form was on (``next``, same host only), else ``fallback``."""
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = fallback
    return HttpResponseRedirect(target)


class NPCControlView(StaffRequiredMixin, View):
    """``POST /ai/npc/<id>/control/<name>/``: change one setting, as the admin commands do.

    ``name`` is one of :data:`evennia_ai.web.data.CONTROLS` (``model``, ``add_rule``,
    ``budget``...), the form's ``value`` its value. Each needs its own level (a model, the
    level of the model chosen: :func:`evennia_ai.web.data.refusal`): an account below it gets
    the refusal page and nothing changes.
    """

    http_method_names = ["post"]

    def post(self, request, npc_id: int, name: str):
        try:
            needed = data.control_level(name)
            npc = data.get_npc(npc_id)
        except data.NotFound as err:
            raise Http404(str(err)) from None
        value = request.POST.get("value", "")
        problem = data.refusal(request.user, name, value)  # its level, and the model chosen
        if problem:
            # a Builder's model outside EVENNIA_AI_BUILDER_MODELS needs Developer
            shown = needed if not may(request.user, needed) else access.EDIT
            return refused(request, shown, problem)
        try:
            messages.success(request, data.change(npc, name, value, request.user))
        except ControlError as err:
            messages.error(request, str(err))
        return _back(request, reverse("evennia_ai:npc-detail", args=[npc.id]) + "#ai-settings")


class ConfirmationDecisionView(StaffRequiredMixin, View):
    """``POST /ai/confirmations/<id>/<approve|reject>/``: decide as ``aiconfirm`` does."""

    http_method_names = ["post"]

    def post(self, request, confirmation_id: str, decision: str):
        if decision not in ("approve", "reject"):
            raise Http404("The decision must be approve or reject.")
        if not may(request.user, access.APPROVE):
            return refused(
                request, access.APPROVE, access.refusal(access.APPROVE, f"{decision} actions")
            )
        reason = (request.POST.get("reason") or "").strip()[:500]
        try:
            entry = data.decide(confirmation_id, decision == "approve", request.user, reason)
        except ConfirmationError as err:
            messages.error(request, str(err))
        else:
            notify = messages.warning if entry["status"] == "failed" else messages.success
            notify(request, decision_text(entry))
        return _back(request, reverse("evennia_ai:npc-list"))
