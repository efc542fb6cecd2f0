"""The dashboard's data and pages say why an NPC does not answer (issue 35: an outage showed a
green ``running`` badge)."""

from unit.web.test_web_api import DashboardTestBase

from evennia_ai.engine.outages import BOARD
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageRecord
from evennia_ai.web import data


class TestNotAnsweringOnTheDashboard(DashboardTestBase):
    def outage(self) -> str:
        model = resolve_model(None)
        failed = UsageRecord(
            kind="act", model=model, error="could not connect", error_kind="connection"
        )
        BOARD.observe([failed] * 3)
        return BOARD.unreachable(model).describe()

    def test_the_list_row_and_badge_name_the_outage(self):
        assert data.npc_summary(self.npc)["state_label"] == "running"
        status = self.outage()
        row = data.npc_summary(self.npc)
        assert row["state"] == "running"  # the one-word state stays for the API's readers
        assert row["state_label"] == status and row["state_class"] == "not-answering"
        assert row["not_answering"][0]["label"] == status
        html = self.staff.get("/ai/").content.decode()
        assert '<span class="ai-state ai-state-not-answering"' in html
        assert f">{status}</span>" in html
        assert "ai-state-running" not in html

    def test_the_npc_page_says_why_in_full(self):
        status = self.outage()
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        assert 'id="ai-not-answering"' in html
        assert f"Not answering: {status}: " in html and "could not connect" in html
        api = self.staff.get(f"/ai/api/npcs/{self.npc.id}/", HTTP_ACCEPT="application/json")
        assert api.json()["state_label"] == status
