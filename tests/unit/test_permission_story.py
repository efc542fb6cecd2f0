"""One permission story, the same in game and on the web (docs/security.md, "Who may do what").

Every page, API endpoint, dashboard control and admin command is walked as a Player, a
Builder, an Admin and a Developer (Evennia's hierarchy: Player < Builder < Admin < Developer):
viewing and deciding need Builder, running an NPC day to day needs Builder, changing what an
NPC is told, may do or may spend needs Developer: its model too, unless the operators list the
model for Builders (``EVENNIA_AI_BUILDER_MODELS``). The expectations are written out here, not
read from the code, so a lock changed by mistake fails a test.
"""

from __future__ import annotations

from django.test import Client, modify_settings, override_settings
from evennia import create_object
from evennia.utils import create
from evennia.utils.test_resources import BaseEvenniaTest
from support.commands import AICommandTestBase

from evennia_ai.commands.cmdset import all_command_classes
from evennia_ai.commands.memory import CmdAIHistory
from evennia_ai.commands.npc_lines import CmdAILines
from evennia_ai.commands.npcs import CmdAINpc, CmdAIStatus
from evennia_ai.commands.runtime import CmdAIConfirm, CmdAITools
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.typeclasses import AIAssistantCharacter

ROLES = ("Player", "Builder", "Admin", "Developer")
RANK = {role: rank for rank, role in enumerate(ROLES)}

# The lock each admin command has; every other one is Builder.
DEVELOPER_COMMANDS = {"aiprompt", "aitemplate", "airegistry", "aicontext", "aiexec"}

# Switches of Builder commands that change what an NPC is told, may do or may spend.
EDIT_CALLS = [
    (CmdAINpc, "/prompt Innkeeper = Be kind."),
    (CmdAINpc, "/budget Innkeeper = tokens=10k"),
    (CmdAITools, "/deny Innkeeper = look"),
    (CmdAITools, "/allow Innkeeper = look"),
    (CmdAITools, "/only Innkeeper = look, say"),
    (CmdAITools, "/category Innkeeper = SAFE_CHAIN TERMINAL"),
    (CmdAITools, "/reset Innkeeper"),
    (CmdAITools, "/addrule Innkeeper = max_calls look 2"),
    (CmdAITools, "/delrule Innkeeper = all"),
    (CmdAIStatus, "/restore Innkeeper = user_system_prompt"),
    # the model sets what the NPC spends: Developer unless listed in EVENNIA_AI_BUILDER_MODELS
    (CmdAINpc, "/model Innkeeper = openai/gpt-4o-mini"),
    (CmdAINpc, "/model Innkeeper = default"),
]
# Views and day-to-day operations every Builder may run (their replies, not refusals).
BUILDER_CALLS = [
    (CmdAINpc, "/budget Innkeeper", "Innkeeper"),
    (CmdAINpc, "/pause Innkeeper", "Innkeeper is paused"),
    (CmdAINpc, "/resume Innkeeper", "Innkeeper resumes"),
    (CmdAINpc, "/persona Innkeeper = A kind innkeeper.", "Innkeeper's persona is set"),
    (CmdAINpc, "/host Innkeeper = on", "Innkeeper is"),
    (CmdAINpc, "/host Innkeeper", "Innkeeper is"),
    (CmdAITools, "Innkeeper", "Tools of Innkeeper"),
    (CmdAITools, "/rules Innkeeper", "Innkeeper has no tool rules"),
    (CmdAIHistory, "Innkeeper", "History of Innkeeper"),
    (CmdAIConfirm, "", ""),
    (CmdAILines, "Innkeeper", "Innkeeper's lines"),
    (CmdAILines, "/set Innkeeper = thinking {name} hums.", "Innkeeper's thinking line is set"),
    (CmdAILines, "/reset Innkeeper", "Innkeeper's own lines are removed"),
]

# Dashboard controls: the level each needs and a value it accepts.
CONTROLS = {
    "pause": ("Builder", ""),
    "resume": ("Builder", ""),
    "model": ("Developer", "openai/gpt-4o-mini"),
    "persona": ("Builder", "A kind innkeeper."),
    "host": ("Builder", "yes"),
    "line_unavailable": ("Builder", "{name} is busy."),
    "line_thinking": ("Builder", "{name} hums."),
    "line_approval": ("Builder", ""),
    "operator_prompt": ("Developer", "Be kind."),
    "budget": ("Developer", "tokens=10k cost=0.5"),
    "deny_tools": ("Developer", "look"),
    "allow_tools": ("Developer", "look"),
    "only_tools": ("Developer", "look say"),
    "categories": ("Developer", "SAFE_CHAIN TERMINAL"),
    "reset_tools": ("Developer", ""),
    "add_rule": ("Developer", "max_calls look 2"),
    "remove_rule": ("Developer", "all"),
    "routine": ("Builder", "00:00-12:00 Room: x"),
    "clear_routine": ("Builder", ""),
    "check_routine": ("Builder", ""),
    "add_goods": ("Builder", "sell lantern 12"),
    "remove_goods": ("Builder", "lantern"),
}


def allowed(role: str, needed: str) -> bool:
    return RANK[role] >= RANK[needed]


def settings_of(npc) -> dict:
    """Everything a control may change, to prove a refused one changed nothing."""
    return {
        "model": npc.ai.model,
        "persona": npc.ai.persona,
        "operator_prompt": npc.ai.user_system_prompt,
        "budget": npc.ai.budget,
        "allow": npc.ai.tool_allow,
        "deny": npc.ai.tool_deny,
        "rules": npc.ai.tool_rules,
        "config": npc.ai.execution_config,
        "paused": npc.ai.paused,
        "lines": npc.ai.lines,
        "host": npc.ai.host,
        "routine": npc.ai.get("routine"),
        "goods": npc.ai.get("goods"),
    }


class TestCommands(AICommandTestBase):
    """Every admin command's lock, and its switches that need more than the lock."""

    def test_every_command_has_the_lock_of_its_level(self):
        for cls in all_command_classes():
            cmd = cls()
            if cmd.key == "page":  # Evennia's own, for everyone
                continue
            needed = "Developer" if cmd.key in DEVELOPER_COMMANDS else "Builder"
            assert cmd.locks == f"cmd:perm({needed})", cmd.key
            for role in ROLES:
                caller = self.with_permission(role)
                assert cmd.access(caller, "cmd") == allowed(role, needed), (cmd.key, role)

    def test_edits_need_developer(self):
        for role in ROLES[1:]:
            for cls, args in EDIT_CALLS:
                self.npc.ai.set("tool_rules", [{"type": "exit_loop", "tool": "say"}])
                before = settings_of(self.npc)
                reply = self.call(cls(), args, caller=self.with_permission(role))
                refused = reply.startswith("Only Developers may")
                assert refused == (not allowed(role, "Developer")), (role, args, reply)
                if refused:
                    assert settings_of(self.npc) == before, (role, args)

    def test_views_and_operations_need_builder(self):
        for role in ROLES[1:]:
            for cls, args, expected in BUILDER_CALLS:
                reply = self.call(cls(), args, caller=self.with_permission(role))
                assert "Only " not in reply and reply.startswith(expected), (role, args, reply)

    def test_builders_choose_only_the_listed_models(self):
        listed = ["openai/gpt-4o-mini", "default"]
        with override_settings(EVENNIA_AI_BUILDER_MODELS=listed):
            for role in ROLES[1:]:
                caller = self.with_permission(role)
                for model in ("openai/gpt-4o-mini", "default"):
                    reply = self.call(CmdAINpc(), f"/model Innkeeper = {model}", caller=caller)
                    assert reply.startswith("Innkeeper now uses"), (role, model, reply)
                before = self.npc.ai.model
                reply = self.call(CmdAINpc(), "/model Innkeeper = openai/gpt-4o", caller=caller)
                assert reply.startswith("Only Developers may") == (role != "Developer"), reply
                if role != "Developer":
                    assert self.npc.ai.model == before
                    assert "openai/gpt-4o-mini, default" in reply  # what a Builder may choose


@override_settings(ROOT_URLCONF="web_test_urls")
@modify_settings(INSTALLED_APPS={"append": "evennia_ai.web"})
class TestWeb(BaseEvenniaTest):
    """Every page, API endpoint and control as each role, anonymous visitors too."""

    def setUp(self):
        super().setUp()
        load_builtin_tools()
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        script = self.npc.ai.script
        if script is not None:
            script.trigger_tick = lambda: None
        self.npc.ai.set_persona("A warm innkeeper.")
        self.npc.ai.set_user_system_prompt("Secret: the cellar key is under the mat.")
        self.queue = get_confirmation_queue()
        self.clients = {}
        for role in ROLES:
            account = create.create_account(
                f"{role}Ann", email=f"{role.lower()}@example.com", password="pw-12345678"
            )
            account.permissions.clear()
            account.permissions.add(role)
            account.is_staff = False
            client = Client()
            client.force_login(account)
            self.clients[role] = client
            self.addCleanup(account.delete)

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        self.queue.delete()
        super().tearDown()

    def pages(self) -> list[str]:
        npc = self.npc.id
        return [
            "/ai/",
            f"/ai/npc/{npc}/",
            "/ai/api/",
            "/ai/api/npcs/",
            f"/ai/api/npcs/{npc}/",
            f"/ai/api/npcs/{npc}/goals/",
            f"/ai/api/npcs/{npc}/memory/",
            f"/ai/api/npcs/{npc}/traces/",
            f"/ai/api/npcs/{npc}/usage/",
            f"/ai/api/npcs/{npc}/tools/",
            f"/ai/api/npcs/{npc}/budget/",
            f"/ai/api/npcs/{npc}/history/",
            "/ai/api/confirmations/",
            "/ai/api/contexts/",
        ]

    def test_viewing_needs_builder(self):
        for role, client in self.clients.items():
            for url in self.pages():
                response = client.get(url, HTTP_ACCEPT="application/json")
                expected = 200 if allowed(role, "Builder") else 403
                assert response.status_code == expected, (role, url, response.status_code)
        for url in self.pages():
            response = Client().get(url, HTTP_ACCEPT="application/json")
            assert response.status_code in (302, 401, 403), url
            if not url.startswith("/ai/api/"):
                assert "/auth/login/" in response["Location"]

    def test_the_refusal_page_says_what_is_needed(self):
        response = self.clients["Player"].get("/ai/")
        assert response.status_code == 403
        html = response.content.decode()
        assert "Not allowed" in html and "Builder" in html
        assert "perm *PlayerAnn = Builder" in html
        assert "website/css/website.css" in html  # the site's own look, not a bare 403

    def test_the_operator_prompt_text_is_for_developers(self):
        url = f"/ai/api/npcs/{self.npc.id}/operator_prompt/"
        for role, client in self.clients.items():
            response = client.get(url, HTTP_ACCEPT="application/json")
            assert response.status_code == (200 if role == "Developer" else 403), role
            page = client.get(f"/ai/npc/{self.npc.id}/")
            if allowed(role, "Builder"):
                shown = "cellar key" in page.content.decode()
                assert shown == (role == "Developer"), role
        detail = self.clients["Builder"].get(f"/ai/api/npcs/{self.npc.id}/").json()
        assert "cellar" not in str(detail) and detail["operator_prompt_chars"] > 0

    def test_every_control_at_its_level_on_the_page_and_the_api(self):
        for role, client in self.clients.items():
            for name, (needed, value) in CONTROLS.items():
                self.npc.ai.set("tool_rules", [{"type": "exit_loop", "tool": "say"}])
                if name == "resume":
                    self.npc.ai.pause()
                before = settings_of(self.npc)
                page = client.post(f"/ai/npc/{self.npc.id}/control/{name}/", {"value": value})
                api = client.post(
                    f"/ai/api/npcs/{self.npc.id}/settings/{name}/",
                    {"value": value},
                    content_type="application/json",
                )
                if allowed(role, needed):
                    assert page.status_code == 302, (role, name, page.status_code)
                    assert api.status_code in (200, 400), (role, name, api.content)
                else:
                    assert page.status_code == 403, (role, name)
                    assert api.status_code == 403, (role, name)
                    assert settings_of(self.npc) == before, (role, name)
                    if allowed(role, "Builder"):
                        assert f"Only {needed}s may" in page.content.decode()
                        assert f"Only {needed}s may" in api.json()["detail"]
                if name == "resume" and self.npc.ai.paused:
                    self.npc.ai.resume()

    def test_a_listed_model_is_the_builders_choice_on_the_page_and_the_api(self):
        with override_settings(EVENNIA_AI_BUILDER_MODELS=["openai/gpt-4o-mini"]):
            for role, client in self.clients.items():
                for model, needed in (
                    ("openai/gpt-4o-mini", "Builder"),
                    ("openai/gpt-4o", "Developer"),
                ):
                    self.npc.ai.set_model("")
                    page = client.post(f"/ai/npc/{self.npc.id}/control/model/", {"value": model})
                    assert (page.status_code == 302) == allowed(role, needed), (role, model)
                    assert (self.npc.ai.model == model) == allowed(role, needed), (role, model)
                    self.npc.ai.set_model("")
                    api = client.post(
                        f"/ai/api/npcs/{self.npc.id}/settings/model/",
                        {"value": model},
                        content_type="application/json",
                    )
                    assert (api.status_code == 200) == allowed(role, needed), (role, model)
                    assert (self.npc.ai.model == model) == allowed(role, needed), (role, model)
                    if role == "Builder" and needed == "Developer":
                        assert "Only Developers may give an NPC 'openai/gpt-4o'" in (
                            api.json()["detail"]
                        )
                        assert "Builders may choose openai/gpt-4o-mini" in page.content.decode()

    def test_deciding_needs_builder(self):
        for role, client in self.clients.items():
            cid = self.queue.add_entry(self.npc, "noop", {"arguments": {}}, reason="test")
            response = client.post(f"/ai/confirmations/{cid}/reject/", {"reason": "no"})
            api_cid = self.queue.add_entry(self.npc, "noop", {"arguments": {}}, reason="test")
            api = client.post(
                f"/ai/api/confirmations/{api_cid}/reject/", {}, content_type="application/json"
            )
            if allowed(role, "Builder"):
                assert response.status_code == 302 and api.status_code == 200, role
                assert self.queue.get_entry(cid)["status"] == "rejected"
            else:
                assert response.status_code == 403 and api.status_code == 403, role
                assert self.queue.get_entry(cid)["status"] == "pending"
                assert self.queue.get_entry(api_cid)["status"] == "pending"

    def test_the_site_menu_links_the_dashboard_for_builders(self):
        for role, client in self.clients.items():
            html = client.get("/").content.decode()
            assert ('id="ai-menu-link"' in html) == allowed(role, "Builder"), role
            assert "Characters" in html  # Evennia's own menu is kept
        assert 'id="ai-menu-link"' not in Client().get("/").content.decode()

    def test_builders_see_edit_forms_disabled(self):
        html = self.clients["Builder"].get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert "Developer only" in html
        form = html.split('id="ai-control-add_rule"')[1].split("</form>")[0]
        assert "disabled" in form
        form = html.split('id="ai-control-model"')[1].split("</form>")[0]
        assert "disabled" in form  # no model is listed for Builders
        with override_settings(EVENNIA_AI_BUILDER_MODELS=["openai/gpt-4o-mini", "default"]):
            html = self.clients["Builder"].get(f"/ai/npc/{self.npc.id}/").content.decode()
        form = html.split('id="ai-control-model"')[1].split("</form>")[0]
        assert "disabled" not in form and "<select" in form
        assert '<option value="openai/gpt-4o-mini">' in form
        assert '<option value="default" selected>' in form
        html = self.clients["Developer"].get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert "Developer only" not in html
        form = html.split('id="ai-control-model"')[1].split("</form>")[0]
        assert 'type="text"' in form and "disabled" not in form
