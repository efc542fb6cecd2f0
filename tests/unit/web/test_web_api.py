"""The staff dashboard and its JSON API through Django's test client (in-process, fast)."""

import json
import re

from django.test import Client, modify_settings, override_settings
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.engine.trace import IterationTrace, TickTrace, ToolCallTrace
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.web import charts, data


def make_trace(tick_id: int, tokens: int = 120) -> dict:
    trace = TickTrace(
        tick_id=tick_id,
        context_type="tick_event",
        stop_reason="terminal_tool",
        event_text='Bob says "hello"',
    )
    trace.add_iteration(
        IterationTrace(
            index=0,
            sections={"system_prompt": tokens, "pending_event": 30, "goals": 20},
            prompt_tokens=tokens + 50,
            usage={"prompt_tokens": tokens + 50, "completion_tokens": 12},
            cost=0.0004,
            model="openai/test-model",
            tool_calls=[
                ToolCallTrace(
                    id="t1",
                    name="say",
                    arguments={"message": "Hi <there>"},
                    success=True,
                    result="said",
                )
            ],
        )
    )
    trace.ended = trace.started
    return trace.to_dict()


@override_settings(ROOT_URLCONF="web_test_urls")
@modify_settings(INSTALLED_APPS={"append": "evennia_ai.web"})
class DashboardTestBase(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        load_builtin_tools()  # the server does this at start; approving runs a tool
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        script = self.npc.ai.script
        if script is not None:
            script.trigger_tick = lambda: None
        self.npc.ai.set_persona("A warm innkeeper.")
        self.npc.ai.update_goals(
            lambda _old: [
                {
                    "id": "goal_0_0",
                    "description": "Ready the tavern",
                    "priority": "high",
                    "status": "active",
                    "progress": 0,
                    "created": "2026-01-01T00:00:00+00:00",
                    "parent_id": None,
                    "subtask_ids": [],
                    "auto_generated": False,
                },
                {
                    "id": "goal_0_1",
                    "description": "Count the barrels",
                    "priority": "low",
                    "status": "active",
                    "progress": 50,
                    "created": "2026-01-01T00:00:00+00:00",
                    "parent_id": "goal_0_0",
                    "subtask_ids": [],
                    "auto_generated": False,
                },
            ]
        )
        self.npc.ai.record_trace(make_trace(1))
        self.npc.ai.record_trace(make_trace(2, tokens=300))
        self.queue = get_confirmation_queue()
        self.cid = self.queue.add_entry(self.npc, "noop", {"arguments": {}}, reason="testing")
        self.account.is_staff = False  # staff through the Developer permission only
        self.staff = Client()
        self.staff.force_login(self.account)
        self.player = Client()
        self.player.force_login(self.account2)

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        self.queue.delete()
        super().tearDown()


class TestPages(DashboardTestBase):
    def test_staff_sees_the_npc_list(self):
        response = self.staff.get("/ai/")
        assert response.status_code == 200
        html = response.content.decode()
        assert 'data-npc="Innkeeper"' in html
        assert "website/css/website.css" in html  # extends Evennia's website base template
        assert "evennia_ai/dashboard.css" in html
        assert self.cid in html

    def test_staff_sees_the_npc_page(self):
        response = self.staff.get(f"/ai/npc/{self.npc.id}/")
        assert response.status_code == 200
        html = response.content.decode()
        for needle in (
            "Ready the tavern",
            "Count the barrels",
            f"/ai/npc/{self.npc.id}/trace/2/",
            "<svg",
            "ai-sections",
            "tick_event",
            "system_prompt",
            self.cid,
            "csrfmiddlewaretoken",
            f"/ai/confirmations/{self.cid}/approve/",
        ):
            assert needle in html, needle
        assert "https://" not in html.split("evennia_ai/dashboard.css")[1].split("<footer")[0]

    def test_trace_page_shows_the_calls_escaped(self):
        response = self.staff.get(f"/ai/npc/{self.npc.id}/trace/2/")
        assert response.status_code == 200
        html = response.content.decode()
        assert "tick #2" in html and "say" in html and "pending_event" in html
        assert "Hi <there>" not in html and "Hi &lt;there&gt;" in html

    def test_unknown_npc_and_trace_are_404(self):
        assert self.staff.get("/ai/npc/999999/").status_code == 404
        assert self.staff.get(f"/ai/npc/{self.npc.id}/trace/77/").status_code == 404
        assert self.staff.get(f"/ai/npc/{self.room1.id}/").status_code == 404

    def test_non_staff_refused_and_anonymous_sent_to_login(self):
        for url in ("/ai/", f"/ai/npc/{self.npc.id}/", f"/ai/npc/{self.npc.id}/trace/1/"):
            assert self.player.get(url).status_code == 403
            response = Client().get(url)
            assert response.status_code == 302 and "/auth/login/" in response["Location"]
        response = self.player.post(f"/ai/confirmations/{self.cid}/approve/")
        assert response.status_code == 403
        assert self.queue.get_entry(self.cid)["status"] == "pending"

    def test_staff_means_builder_permission_not_is_staff(self):
        from evennia_ai.web.permissions import is_ai_staff

        self.account2.is_staff = True  # Django's flag alone grants nothing here
        assert not is_ai_staff(self.account2)
        self.account2.is_staff = False
        self.account2.permissions.add("Builder")
        assert is_ai_staff(self.account2)
        assert self.player.get("/ai/").status_code == 200

    def test_approve_through_the_form_with_csrf(self):
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.account)
        url = f"/ai/confirmations/{self.cid}/approve/"
        assert client.post(url).status_code == 403  # no CSRF token
        assert self.queue.get_entry(self.cid)["status"] == "pending"
        page = client.get(f"/ai/npc/{self.npc.id}/")
        token = page.cookies["csrftoken"].value
        response = client.post(
            url, {"csrfmiddlewaretoken": token, "next": f"/ai/npc/{self.npc.id}/"}
        )
        assert response.status_code == 302 and response["Location"] == f"/ai/npc/{self.npc.id}/"
        entry = self.queue.get_entry(self.cid)
        assert entry["status"] == "approved", entry["result"]
        assert entry["decided_by"] == self.account.key
        html = client.get(response["Location"]).content.decode()
        assert f"Approved {self.cid}: Innkeeper&#x27;s noop ran." in html
        # deciding twice is a message, not an error page
        response = client.post(url, {"csrfmiddlewaretoken": token}, follow=True)
        assert response.status_code == 200
        assert "already decided" in response.content.decode()

    def test_reject_with_reason_and_unsafe_next_ignored(self):
        response = self.staff.post(
            f"/ai/confirmations/{self.cid}/reject/",
            {"reason": "Not now", "next": "https://evil.example/"},
        )
        assert response.status_code == 302 and response["Location"] == "/ai/"
        entry = self.queue.get_entry(self.cid)
        assert entry["status"] == "rejected" and entry["result"] == "Not now"

    def test_over_budget_message(self):
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=10):
            metrics = self.npc.ai.metrics
            metrics["daily"] = {data_today(): {"tokens": 50, "cost": 0.0}}
            self.npc.ai.set("metrics", metrics)
            html = self.staff.get("/ai/").content.decode()
        assert (
            "Over its own daily budget: telling speakers it cannot answer until 00:00 UTC." in html
        )


def data_today():
    from evennia_ai.npc.spending import today

    return today()


class TestAPI(DashboardTestBase):
    def get_json(self, url, client=None):
        response = (client or self.staff).get(url, HTTP_ACCEPT="application/json")
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return json.loads(response.content)

    def test_npc_list_and_detail_shapes(self):
        rows = self.get_json("/ai/api/npcs/")
        row = next(r for r in rows if r["key"] == "Innkeeper")
        for key in (
            "id",
            "dbref",
            "state",
            "model",
            "tokens_today",
            "cost_today",
            "over_budget",
            "budget_message",
            "budget_state",
            "queued_events",
            "ticks",
            "paused",
            "asleep",
        ):
            assert key in row, key
        assert row["id"] == self.npc.id and row["state"] in (
            "running",
            "paused",
            "asleep",
            "stopped",
        )
        detail = self.get_json(f"/ai/api/npcs/{self.npc.id}/")
        assert detail["persona"] == "A warm innkeeper."
        assert [t["tick_id"] for t in detail["traces"]] == [2, 1]
        assert detail["confirmations"][0]["id"] == self.cid
        assert set(detail["usage"]) == {"daily", "ticks"}

    def test_goals_memory_traces(self):
        goals = self.get_json(f"/ai/api/npcs/{self.npc.id}/goals/")
        assert goals[0]["id"] == "goal_0_0" and goals[0]["children"][0]["id"] == "goal_0_1"
        from evennia_ai.memory.block_admin import create_block

        create_block(self.npc, "tavern_notes", content="Stew on Fridays.")
        blocks = self.get_json(f"/ai/api/npcs/{self.npc.id}/memory/")
        note = next(b for b in blocks if b["label"] == "tavern_notes")
        assert "Stew on Fridays." in note["content"] and "permission" in note
        traces = self.get_json(f"/ai/api/npcs/{self.npc.id}/traces/?last=1")
        assert [t["tick_id"] for t in traces] == [2]
        assert traces[0]["sections"]["system_prompt"] == 300
        trace = self.get_json(f"/ai/api/npcs/{self.npc.id}/traces/2/")
        assert trace["tick_id"] == 2 and trace["iterations"][0]["tool_calls"][0]["name"] == "say"
        assert trace["summary"]["tools"] == ["say"]
        assert self.staff.get(f"/ai/api/npcs/{self.npc.id}/traces/9/").status_code == 404
        assert self.staff.get("/ai/api/npcs/999999/").status_code == 404

    def test_contexts_list_component_order(self):
        contexts = self.get_json("/ai/api/contexts/")
        tick = next(c for c in contexts if c["context_type"] == "tick_event")
        keys = [c["key"] for c in tick["components"]]
        assert keys[0] == "system_prompt" and "pending_event" in keys

    def test_confirmations_list_approve_reject(self):
        entries = self.get_json("/ai/api/confirmations/")
        assert [e["id"] for e in entries] == [self.cid]
        assert self.get_json(f"/ai/api/confirmations/?npc={self.npc.id}")[0]["id"] == self.cid
        assert self.get_json(f"/ai/api/confirmations/{self.cid}/")["action"] == "noop"
        response = self.staff.post(f"/ai/api/confirmations/{self.cid}/approve/")
        assert response.status_code == 200 and response.json()["status"] == "approved"
        again = self.staff.post(f"/ai/api/confirmations/{self.cid}/approve/")
        assert again.status_code == 409 and "already decided" in again.json()["detail"]
        assert self.get_json("/ai/api/confirmations/") == []
        assert len(self.get_json("/ai/api/confirmations/?status=all")) == 1
        other = self.queue.add_entry(self.npc, "noop", {"arguments": {}})
        response = self.staff.post(
            f"/ai/api/confirmations/{other}/reject/",
            data=json.dumps({"reason": "no"}),
            content_type="application/json",
        )
        assert response.status_code == 200 and response.json()["result"] == "no"
        assert self.staff.post("/ai/api/confirmations/c_nothere/approve/").status_code == 404
        assert self.staff.get("/ai/api/confirmations/?status=bogus").status_code == 400

    def test_api_post_needs_csrf_with_a_session(self):
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.account)
        response = client.post(f"/ai/api/confirmations/{self.cid}/approve/")
        assert response.status_code == 403 and "CSRF" in response.json()["detail"]
        assert self.queue.get_entry(self.cid)["status"] == "pending"

    def test_api_basic_auth_for_scripts(self):
        import base64

        self.account.set_password("testpassword")
        self.account.save()
        header = "Basic " + base64.b64encode(b"TestAccount:testpassword").decode()
        client = Client(enforce_csrf_checks=True)
        assert client.get("/ai/api/npcs/", HTTP_AUTHORIZATION=header).status_code == 200
        response = client.post(
            f"/ai/api/confirmations/{self.cid}/reject/", HTTP_AUTHORIZATION=header
        )
        assert response.status_code == 200  # basic auth carries no CSRF risk

    def test_api_refuses_non_staff_and_anonymous(self):
        for url in (
            "/ai/api/",
            "/ai/api/npcs/",
            f"/ai/api/npcs/{self.npc.id}/",
            "/ai/api/confirmations/",
        ):
            assert self.player.get(url).status_code == 403, url
            assert Client().get(url).status_code in (401, 403), url
        assert self.player.post(f"/ai/api/confirmations/{self.cid}/approve/").status_code == 403
        assert self.queue.get_entry(self.cid)["status"] == "pending"

    def test_api_errors_are_json(self):
        for url in (
            "/ai/api/nothing/",
            "/ai/api/npcs/abc/",
            "/ai/api/npcs/999999/",
            f"/ai/api/npcs/{self.npc.id}/traces/9/",
            "/ai/api/confirmations/c_nothere/",
        ):
            response = self.staff.get(url, HTTP_ACCEPT="text/html,application/json")
            assert response.status_code == 404, url
            assert response["Content-Type"].startswith("application/json"), url
            assert response.json()["detail"], url

    def test_api_failure_is_a_logged_json_500(self):
        from unittest import mock

        with mock.patch.object(data, "context_orders", side_effect=RuntimeError("boom")):
            with mock.patch("evennia_ai.web.api.logger.log_trace") as log_trace:
                response = self.staff.get("/ai/api/contexts/", HTTP_ACCEPT="application/json")
        assert response.status_code == 500 and "server log" in response.json()["detail"]
        assert "evennia_ai: the JSON API failed on /ai/api/contexts/" in log_trace.call_args[0][0]

    def test_api_links_end_with_a_slash_and_the_old_form_redirects(self):
        root = self.get_json("/ai/api/")
        assert root and all(link.endswith("/") for link in root.values()), root
        response = self.staff.get(f"/ai/api/npcs/{self.npc.id}/traces?last=1")
        assert response.status_code == 308
        assert response["Location"] == f"/ai/api/npcs/{self.npc.id}/traces/?last=1"
        posted = self.staff.post(f"/ai/api/confirmations/{self.cid}/approve")
        assert posted.status_code == 308
        assert posted["Location"] == f"/ai/api/confirmations/{self.cid}/approve/"
        assert self.staff.get("/ai/api/nothing").status_code == 404
        assert self.queue.get_entry(self.cid)["status"] == "pending"  # a redirect decides nothing

    def test_pages_and_api_share_the_data(self):
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        for row in data.trace_list(self.npc):
            assert f"/trace/{row['tick_id']}/" in html


def test_charts_escape_and_handle_empty_data():
    assert "No usage recorded yet" in charts.usage_chart([], "t")
    svg = charts.usage_chart(
        [{"label": "<b>", "tokens": 10, "cost": 0.1}, {"label": "d2", "tokens": 0, "cost": 0.0}],
        "x & y",
    )
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "x &amp; y" in svg and "polyline" in svg
    bar = charts.section_bar({"a<": 3, "b": 1, "c": 0})
    assert bar.count("<rect") == 2 and "a&lt;" in bar
    assert "no sections" in charts.section_bar({})


class TestBrowsableAPI(DashboardTestBase):
    def test_browsable_api_renders_for_staff(self):
        response = self.staff.get("/ai/api/npcs/", HTTP_ACCEPT="text/html")
        assert response.status_code == 200
        assert "Innkeeper" in response.content.decode()
        root = self.staff.get("/ai/api/", HTTP_ACCEPT="application/json").json()
        assert set(root) == {"npcs", "confirmations", "contexts"}

    def breadcrumbs(self, url: str) -> list[str]:
        """The names in the page's breadcrumb bar, first to last."""
        html = self.staff.get(url, HTTP_ACCEPT="text/html").content.decode()
        bar = re.search(r'<ul class="breadcrumb">(.*?)</ul>', html, re.S)
        assert bar, html[:500]
        return [" ".join(name.split()) for name in re.findall(r">([^<>]+)</a>", bar.group(1))]

    def test_breadcrumbs_and_headings_read_as_names(self):
        """The issue's breadcrumb "Aiapi Root / Npc List": each page named for people."""
        npc = self.npc.id
        assert self.breadcrumbs("/ai/api/") == ["evennia-ai API"]
        assert self.breadcrumbs("/ai/api/npcs/") == ["evennia-ai API", "NPCs"]
        assert self.breadcrumbs(f"/ai/api/npcs/{npc}/goals/") == [
            "evennia-ai API",
            "NPCs",
            "NPC",
            "Goals",
        ]
        assert self.breadcrumbs(f"/ai/api/npcs/{npc}/operator_prompt/")[-1] == "Operator prompt"
        assert self.breadcrumbs("/ai/api/confirmations/") == ["evennia-ai API", "Confirmations"]
        assert self.breadcrumbs(f"/ai/api/confirmations/{self.cid}/")[-1] == "Confirmation"
        assert self.breadcrumbs("/ai/api/contexts/") == ["evennia-ai API", "Context types"]
        html = self.staff.get("/ai/api/npcs/", HTTP_ACCEPT="text/html").content.decode()
        assert "<h1>NPCs</h1>" in html
        for word in ("Aiapi", "Npc List", "Npc Instance", "Confirmation List"):
            assert word not in html


class TestPagesReadForPeople(DashboardTestBase):
    """Numbers, money, times and tool calls read on the pages as in game (one formatter)."""

    def test_counts_and_money_by_the_rules(self):
        metrics = self.npc.ai.metrics
        metrics["daily"] = {data_today(): {"tokens": 149483, "cost": 0.0123456}}
        self.npc.ai.set("metrics", metrics)
        html = self.staff.get("/ai/").content.decode()
        assert "149,483" in html and "$0.0123" in html
        assert "149483" not in html and "0.012346" not in html

    def test_trace_page_durations_steps_and_times(self):
        trace = make_trace(3)
        trace.update(
            started="2026-11-25T14:03:07.123456Z",
            ended="2026-11-25T14:03:07.144456Z",
            duration=0.021,
        )
        trace["iterations"][0]["latency"] = 0.021
        trace["iterations"][0]["tool_calls"][0]["result"] = '{"success": true, "message": "Said."}'
        self.npc.ai.record_trace(trace)
        html = self.staff.get(f"/ai/npc/{self.npc.id}/trace/3/").content.decode()
        assert "2026-11-25 14:03:07 UTC" in html and ".123456" not in html
        assert "(21 ms)" in html and "0.02 s" not in html
        assert "step 1" in html and "act #0" not in html and "#0" not in html
        assert "<strong>message</strong>: Hi &lt;there&gt;" in html  # arguments as a list
        assert "{&#x27;message&#x27;" not in html and "Said." in html
        assert "&quot;success&quot;" not in html
        page = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert "2026-11-25 14:03:07 UTC" in page and "$0.0004" in page

    def test_tool_calls_say_what_came_of_them_in_words(self):
        """The issue's ``noop (none) skipped (failed)``: the page says what happened."""
        trace = make_trace(4)
        calls = trace["iterations"][0]["tool_calls"]
        calls.append(dict(calls[0], id="t2", name="noop", arguments={}, success=False))
        calls[-1].update(status="skipped", result="")
        calls.append(dict(calls[0], id="t3", name="go", success=False, error="No exit north."))
        self.npc.ai.record_trace(trace)
        html = self.staff.get(f"/ai/npc/{self.npc.id}/trace/4/").content.decode()
        cells = [" ".join(c.split()) for c in re.findall(r"<td[^>]*>([^<]*)</td>", html)]
        assert "not run (the tick ended before it)" in cells and "ran and failed" in cells
        assert "ran" in cells and "skipped" not in cells and "failed" not in cells

    def test_a_long_persona_is_folded(self):
        persona = "A warm innkeeper who remembers every guest. " * 115  # about 5,000 characters
        self.npc.ai.set_persona(persona)
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert '<details class="ai-persona" id="ai-persona">' in html
        summary = html.split("<summary>", 1)[1].split("</summary>", 1)[0]
        assert len(summary) < 500 and f"show all {len(persona.strip()):,} characters" in summary
        assert persona.strip().split(". ")[-1] in html  # all of it, behind the summary
        self.npc.ai.set_persona("A warm innkeeper.")
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert '<p class="ai-persona" id="ai-persona">A warm innkeeper.</p>' in html

    def test_confirmation_arguments_read_as_a_list(self):
        cid = self.queue.add_entry(
            self.npc, "say", {"arguments": {"message": "Hello all", "loud": True}}
        )
        html = self.staff.get("/ai/").content.decode()
        row = html.split(f'id="confirmation-{cid}"', 1)[1].split("</tr>", 1)[0]
        assert "<strong>message</strong>: Hello all" in row and "<strong>loud</strong>: yes" in row
        assert "{" not in row.split("ai-args", 1)[1].split("</ul>", 1)[0]
        assert "just now" in row or " s ago" in row

    def test_approval_result_in_words(self):
        cid = self.queue.add_entry(self.npc, "say", {"arguments": {"message": "Hello all"}})
        response = self.staff.post(f"/ai/confirmations/{cid}/approve/", follow=True)
        html = response.content.decode()
        assert f"Approved {cid}: Innkeeper&#x27;s say ran. You said" in html
        assert "&quot;success&quot;" not in html and "{&#x27;" not in html
        cid = self.queue.add_entry(self.npc, "move", {"arguments": {"direction": "nowhere"}})
        html = self.staff.post(f"/ai/confirmations/{cid}/approve/", follow=True).content.decode()
        entry = self.queue.get_entry(cid)
        assert entry["status"] == "failed" and entry["result"].startswith("{")
        assert f"Approved {cid}, but Innkeeper&#x27;s move failed." in html
        assert "&quot;success&quot;" not in html and "&quot;error&quot;" not in html


class TestSettingsOnTheDashboard(DashboardTestBase):
    """Part 3 of the staff issue on the web: tool rules, budget, history, as the commands."""

    def post(self, name, value=""):
        response = self.staff.post(
            f"/ai/npc/{self.npc.id}/control/{name}/", {"value": value}, follow=True
        )
        assert response.status_code == 200
        return response.content.decode()

    def test_tool_rules_added_shown_rendered_and_removed(self):
        html = self.post("add_rule", "max_calls look 2")
        assert "has a new tool rule (#1)" in html
        assert 'id="ai-rule-table"' in html and "max_calls look 2" in html
        rendered = html.split('id="ai-rendered-rules">')[1].split("</pre>")[0]
        assert "Tool Execution Rules" in rendered and "look" in rendered
        html = self.post("add_rule", "requires_prior look look")
        assert self.npc.ai.tool_rules == [{"type": "max_calls", "tool": "look", "value": 2}]
        html = self.post("add_rule", "max_calls fly_to_moon 2")
        assert "Unknown tool(s): fly_to_moon" in html
        html = self.post("remove_rule", "1")
        assert "tool rule #1 is removed" in html and self.npc.ai.tool_rules == []

    def test_budget_override_set_shown_and_refused_when_bad(self):
        html = self.post("budget", "tokens=20k cost=$0.50")
        assert self.npc.ai.budget == {"tokens": 20000, "cost": 0.5}
        assert "own daily limits are now tokens 20,000, cost $0.50" in html
        assert 'value="tokens=20000 cost=0.5"' in html
        limits = html.split('id="ai-budget-limits"')[1].split("</table>")[0]
        assert "this NPC" in limits and "20,000" in limits
        html = self.post("budget", "tokens=lots")
        assert "tokens must be a whole number" in html
        assert self.npc.ai.budget == {"tokens": 20000, "cost": 0.5}
        self.post("budget", "none")
        assert self.npc.ai.budget == {}

    def test_history_and_compaction_view(self):
        self.npc.ai.set(
            "history",
            [
                {
                    "role": "user",
                    "content": "Bob says: hello",
                    "batch": 1,
                    "ts": "2026-01-01T00:00:00+00:00",
                },
                {
                    "role": "assistant",
                    "content": "Welcome!",
                    "batch": 1,
                    "ts": "2026-01-01T00:00:01+00:00",
                },
            ],
        )
        self.npc.ai.set("compaction", {"last_tick": 4, "removed": 12, "strategy": "summarize"})
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        history = html.split('id="ai-history"')[1].split('id="ai-longterm"')[0]
        assert "2 message(s) from 1 tick(s)" in history
        for size in ("tokens", "characters", "messages"):
            assert f"<td>{size}</td>" in history
        assert "tick 4: 12 older message(s) summarised into one message" in history
        assert "not due" in history
        api = self.staff.get(f"/ai/api/npcs/{self.npc.id}/history/").json()
        assert api["messages"] == 2 and api["state"] == "not due"

    def test_longterm_memory_status_on_both_pages(self):
        for url in ("/ai/", f"/ai/npc/{self.npc.id}/"):
            html = self.staff.get(url).content.decode()
            status = html.split('id="ai-longterm-status">')[1].split("</p>")[0]
            assert "Long-term memory:" in status and "mode" in status

    def test_api_setting_errors_are_400_with_the_reason(self):
        url = f"/ai/api/npcs/{self.npc.id}/settings/"
        response = self.staff.post(
            url + "add_rule/", {"value": "fly"}, content_type="application/json"
        )
        assert response.status_code == 400 and "detail" in response.json()
        response = self.staff.post(url + "launch/", {}, content_type="application/json")
        assert response.status_code == 404
        response = self.staff.post(
            url + "persona/", {"value": "x" * 20_001}, content_type="application/json"
        )
        assert response.status_code == 400
        response = self.staff.post(
            url + "model/", {"value": "gpt 4"}, content_type="application/json"
        )
        assert response.status_code == 400 and "no spaces" in response.json()["detail"]
        response = self.staff.post(
            url + "model/", {"value": "openai/x"}, content_type="application/json"
        )
        assert response.status_code == 200 and self.npc.ai.model == "openai/x"


class TestDashboardCharts(DashboardTestBase):
    """Part 4: cost beside tokens, bars on one scale, error ticks marked, tables that scroll."""

    def test_cost_is_drawn_even_when_zero(self):
        svg = str(
            charts.usage_chart(
                [
                    {"label": "a", "tokens": 10, "cost": 0.0},
                    {"label": "b", "tokens": 20, "cost": 0.0},
                ],
                "t",
            )
        )
        assert "ai-cost-line" in svg and "cost</text>" in svg

    def test_error_points_are_marked(self):
        svg = str(
            charts.usage_chart(
                [{"label": "#1", "tokens": 0, "cost": 0, "error": "model <down>"}], "t"
            )
        )
        assert "ai-error-mark" in svg and "model &lt;down&gt;" in svg and "<down>" not in svg

    def test_section_bars_share_the_largest_scale(self):
        import re

        small = str(charts.section_bar({"a": 50, "b": 50}, width=300, scale=400))
        widths = [float(w) for w in re.findall(r'<rect x="[^"]+" y="0" width="([^"]+)"', small)]
        assert abs(sum(widths) - 75.0) < 0.5  # 100 of 400 tokens: a quarter of the width
        assert "25% of the largest shown" in small
        failed = str(charts.section_bar({}, error="timeout"))
        assert "failed" in failed and "timeout" in failed

    def test_npc_page_marks_error_ticks_and_scrolls_tables(self):
        trace = make_trace(3, tokens=40)
        trace["error"] = "model call failed: timeout"
        self.npc.ai.record_trace(trace)
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert 'class="ai-tick-error"' in html and "ai-sections-error" in html
        assert "ai-error-mark" in html  # in the per-tick chart and the table
        assert html.count('<div class="ai-scroll"><table') >= 5
        assert "ai-cost" in html.split('id="ai-chart-ticks"')[1].split("</figcaption>")[0]
