"""The dashboard's NPC page shows and edits the NPC's lines for when no model answers."""

from django.test import Client
from unit.web.test_web_api import DashboardTestBase


class TestLinesOnTheDashboard(DashboardTestBase):
    def url(self, kind="unavailable"):
        return f"/ai/npc/{self.npc.id}/control/line_{kind}/"

    def test_the_page_shows_every_line_and_how_it_is_heard(self):
        self.npc.ai.set("lines", {"approval": '{name} says, "I\'ll ask the owner."'})
        html = self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()
        section = html.split('id="ai-lines"')[1].split('id="ai-budget"')[0]
        for kind in ("unavailable", "thinking", "approval"):
            assert f'id="ai-control-line_{kind}"' in section
        assert "Innkeeper seems lost in thought and does not answer." in section
        assert "EVENNIA_AI_UNAVAILABLE_MESSAGE" in section
        assert "Innkeeper says, &quot;I&#x27;ll ask the owner.&quot;" in section

    def test_staff_save_and_reset_a_line(self):
        response = self.staff.post(
            self.url(), {"value": "{name} is busy at the hearth."}, follow=True
        )
        assert response.status_code == 200
        assert "unavailable line is set" in response.content.decode()
        assert self.npc.ai.lines == {"unavailable": "{name} is busy at the hearth."}
        self.staff.post(self.url(), {"value": ""})
        assert self.npc.ai.lines == {}

    def test_a_builder_may_edit(self):
        self.account2.permissions.add("Builder")
        builder = Client()
        builder.force_login(self.account2)
        builder.post(self.url("thinking"), {"value": "{name} scratches her head."})
        assert self.npc.ai.lines == {"thinking": "{name} scratches her head."}

    def test_a_bad_line_is_refused_with_its_reason(self):
        html = self.staff.post(self.url(), {"value": "{nmae} sighs."}, follow=True).content.decode()
        assert "Only {name} is filled in" in html
        assert self.npc.ai.lines == {}

    def test_players_and_visitors_may_not(self):
        response = self.player.post(self.url(), {"value": "{name} is out."})
        assert response.status_code == 403
        assert Client().post(self.url(), {"value": "{name} is out."}).status_code == 302
        assert self.npc.ai.lines == {}
