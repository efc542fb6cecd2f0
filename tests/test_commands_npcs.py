"""The ainpc and aistatus admin commands."""

from support.commands import AICommandTestBase

from evennia_ai.commands.cmdset import AIAdminCmdSet
from evennia_ai.commands.npcs import COMMANDS, CmdAINpc, CmdAIStatus
from evennia_ai.npc.lookup import all_ai_npcs


class NpcCommandTest(AICommandTestBase):
    npc_aliases = ("keeper",)


class TestAINpc(NpcCommandTest):
    def test_exports(self):
        assert COMMANDS == [CmdAINpc, CmdAIStatus]

    def test_usage_and_unknown_switch(self):
        self.call(CmdAINpc(), "", "Usage:")
        self.call(CmdAINpc(), "Innkeeper", "Give a switch")
        out = self.call(CmdAINpc(), "/fly Innkeeper", "Unknown switch /fly. Valid: /list")
        assert "Usage:" in out
        self.call(
            CmdAINpc(),
            "/p Innkeeper",
            "Ambiguous switch /p. Did you mean /pause, /persona, /prompt?",
        )
        self.call(CmdAINpc(), "/pau Innkeeper", "Innkeeper is paused")  # a unique prefix

    def test_list(self):
        out = self.call(CmdAINpc(), "/list", "AI NPCs (1):")
        assert "Innkeeper(#" in out and "running" in out and "within" in out

    def test_create_with_aliases_and_model(self):
        self.call(CmdAINpc(), "/create Marta;barkeep = openai/test-model", "Created AI NPC Marta")
        marta = [n for n in all_ai_npcs() if n.key == "Marta"][0]
        assert marta.location == self.room1
        assert "barkeep" in marta.aliases.all()
        assert marta.ai.model == "openai/test-model"
        assert marta.ai.script is not None and marta.ai.enabled
        assert marta.access(self.char1, "delete")

    def test_create_bad_arguments(self):
        self.call(CmdAINpc(), "/create ;alias", "The NPC needs a name")
        self.call(CmdAINpc(), "/create Innkeeper", "An AI NPC called 'Innkeeper' already exists")
        self.call(CmdAINpc(), "/create Bob = bad model", "A model name has no spaces")
        self.call(
            CmdAINpc(), "/create Bad\x80name", "A name cannot hold control or unassigned characters"
        )
        self.call(CmdAINpc(), "/create " + "x" * 81, "A name can be at most 80 characters long.")
        assert [npc.key for npc in all_ai_npcs()] == ["Innkeeper"]  # nothing was created

    def test_create_requires_builder(self):
        self.call(CmdAINpc(), "/create Bob", "You need Builder permission", caller=self.player())
        assert not [n for n in all_ai_npcs() if n.key == "Bob"]

    def test_delete(self):
        dbref = self.npc.dbref
        self.call(CmdAINpc(), "/delete Innkeeper", f"Deleted AI NPC Innkeeper({dbref})")
        assert not all_ai_npcs()

    def test_delete_only_ai_npcs(self):
        self.call(CmdAINpc(), "/delete Obj", "No AI NPC called 'Obj'")
        assert self.obj1.pk

    def test_start_stop_pause_resume(self):
        self.call(CmdAINpc(), "/stop Innkeeper", "Innkeeper is stopped")
        assert not self.npc.ai.enabled and not self.npc.ai.script.is_active
        out = self.call(CmdAINpc(), "/list", "AI NPCs")
        assert "stopped" in out
        self.call(CmdAINpc(), "/start keeper", "Innkeeper is enabled")
        assert self.npc.ai.enabled and self.npc.ai.script.is_active
        self.npc.ai.script.trigger_tick = lambda: None
        self.call(CmdAINpc(), "/pause Innkeeper", "Innkeeper is paused")
        assert self.npc.ai.paused
        self.call(CmdAINpc(), "/pause Innkeeper", "Innkeeper is already paused")
        self.call(CmdAINpc(), "/resume Innkeeper", "Innkeeper resumes")
        assert not self.npc.ai.paused
        self.call(CmdAINpc(), "/resume Innkeeper", "Innkeeper is not paused")
        self.call(CmdAINpc(), "/pause Nobody", "No AI NPC called 'Nobody'")

    def test_model_and_persona(self):
        self.call(CmdAINpc(), "/model Innkeeper = openai/gpt-x", "Innkeeper now uses openai/gpt-x")
        assert self.npc.ai.model == "openai/gpt-x"
        self.call(CmdAINpc(), "/model Innkeeper = default", "Innkeeper now uses")
        assert self.npc.ai.model == ""
        self.call(CmdAINpc(), "/model Innkeeper", "Give the model after '='")
        self.call(CmdAINpc(), "/persona Innkeeper = A gruff dwarf.", "Innkeeper's persona is set")
        assert self.npc.ai.persona == "A gruff dwarf."
        self.call(CmdAINpc(), "/persona Innkeeper =", "Missing persona text")

    def test_prompt_is_developer_only(self):
        self.call(CmdAINpc(), "/prompt Innkeeper = Be kind.", "Innkeeper's operator prompt is set")
        assert self.npc.ai.user_system_prompt == "Be kind."
        builder = self.char2
        builder.account.permissions.clear()
        builder.permissions.clear()
        builder.account.permissions.add("Builder")
        assert CmdAINpc().access(builder, "cmd")
        self.call(CmdAINpc(), "/prompt Innkeeper = Be rude.", "Only Developers", caller=builder)
        assert self.npc.ai.user_system_prompt == "Be kind."

    def test_locked_for_players(self):
        player = self.player()
        assert not CmdAINpc().access(player, "cmd")
        assert not CmdAIStatus().access(player, "cmd")
        assert CmdAINpc().access(self.char1, "cmd")
        cmdset = AIAdminCmdSet()
        assert any(cmd.key == "ainpc" for cmd in cmdset.commands)


class TestAIStatus(NpcCommandTest):
    def test_server_summary_without_args(self):
        out = self.call(CmdAIStatus(), "", "AI NPCs (1)")
        assert "Innkeeper" in out and "Server:" in out

    def test_npc_status(self):
        self.npc.ai.record_trace(
            {
                "tick_id": 3,
                "context_type": "tick_event",
                "stop_reason": "error",
                "error": "model down",
                "started": "2026-01-01T10:00:00+00:00",
            }
        )
        self.npc.ai.update("metrics", lambda m: {**m, "last_error": "model down", "errors": 1})
        out = self.call(CmdAIStatus(), "Innkeeper", f"Innkeeper({self.npc.dbref})")
        for part in (
            "model:",
            "budget: within budget",
            "sleep: awake",
            "queue: 0 pending",
            "#3 2026-01-01 10:00:00 UTC tick_event error",
            "recent errors",
            "model down",
        ):
            assert part in out, part

    def test_bad_npc(self):
        self.call(CmdAIStatus(), "Nobody", "No AI NPC called 'Nobody'")
