"""Memory-block tools, operator API, confirmations, sharing and context sources (database)."""

from types import SimpleNamespace
from unittest import mock

import pytest
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.memory import block_admin
from evennia_ai.memory.blocks import BlockError
from evennia_ai.prompt import block_sources
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.utils import unfence

TOOLS = (
    "block_read",
    "block_set_text",
    "block_append_text",
    "block_replace_text",
    "block_set_field",
    "block_increment",
    "block_push_item",
    "block_insert_item",
    "block_delete_item",
    "block_append_log",
    "archival_insert",
    "archival_search",
    "archival_delete",
)


@pytest.fixture(autouse=True, scope="module")
def builtin_tools():
    load_builtin_tools()  # this module may run alone: the tools register when their modules load


def test_tools_are_registered_safe_chain():
    for name in TOOLS:
        tool = TOOL_REGISTRY.get(name)
        assert tool is not None, name
        assert tool.category == ToolCategory.SAFE_CHAIN, name
        assert tool.to_schema()["function"]["parameters"]["additionalProperties"] is False


class BlockTestBase(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = self.make_npc("Keeper")
        self.ctx = ToolContext(npc=self.npc, tick_id=7)

    def make_npc(self, key):
        npc = create_object(
            "evennia_ai.typeclasses.AIAssistantCharacter", key=key, location=self.room1
        )
        npc.ai.script.trigger_tick = lambda: None
        self.addCleanup(self._remove, npc)
        return npc

    @staticmethod
    def _remove(npc):
        if not npc.pk:
            return
        script = npc.ai.script
        if script:
            script.delete()
        npc.delete()

    def run_tool(self, name, ctx=None, **arguments) -> ToolResult:
        result = TOOL_REGISTRY.get(name).safe_run(ctx or self.ctx, arguments)
        assert isinstance(result, ToolResult)
        return result

    def content(self, label, npc=None):
        return block_admin.get_block(npc or self.npc, label)["content"]


class TestBlockTools(BlockTestBase):
    def test_text_tools(self):
        block_admin.create_block(self.npc, "notes")
        assert self.run_tool("block_set_text", label="notes", text="Met Alice.").success
        assert self.run_tool("block_append_text", label="notes", text="Met Bob.").success
        result = self.run_tool("block_replace_text", label="notes", old="Met", new="Saw")
        assert result.success and result.content["replaced"] == 2
        assert self.content("notes") == "Saw Alice.\nSaw Bob."
        result = self.run_tool("block_replace_text", label="notes", old="Carol", new="x")
        assert not result.success and "does not contain 'Carol'" in result.error
        result = self.run_tool("block_set_text", label="nope", text="x")
        assert (
            not result.success
            and "No memory block called 'nope'. Your blocks: notes." in result.error
        )

    def test_map_list_and_log_tools(self):
        block_admin.create_block(
            self.npc,
            "profile",
            type="Core",
            schema={
                "kind": "map",
                "fields": [
                    {"name": "status", "read_only": True},
                    "mood",
                    {"name": "visits", "type": "counter"},
                    {"name": "tags", "type": "list"},
                ],
            },
            content={"status": "active"},
        )
        assert self.run_tool("block_set_field", label="profile", field="mood", value="calm").success
        assert self.run_tool("block_increment", label="profile", field="visits").success
        assert self.run_tool("block_increment", label="profile", field="visits", by=2).success
        assert self.run_tool("block_push_item", label="profile", field="tags", item="inn").success
        result = self.run_tool("block_set_field", label="profile", field="status", value="x")
        assert not result.success and "read-only" in result.error
        assert self.content("profile") == {
            "status": "active",
            "mood": "calm",
            "visits": 3,
            "tags": ["inn"],
        }

        block_admin.create_block(self.npc, "todo", schema="list", permission="Admin")
        assert self.run_tool("block_push_item", label="todo", item="sweep").success
        assert self.run_tool("block_insert_item", label="todo", position=1, item="open").success
        result = self.run_tool("block_insert_item", label="todo", position=9, item="x")
        assert "Position 9 is out of range; valid: 1-3." in result.error
        assert self.content("todo") == ["open", "sweep"]
        assert self.run_tool("block_delete_item", label="todo", position=2).success
        assert self.content("todo") == ["open"]
        assert "either position" in self.run_tool("block_delete_item", label="todo").error

        block_admin.create_block(self.npc, "diary", type="Log")
        result = self.run_tool(
            "block_append_log",
            label="diary",
            message="Opened the inn",
            fields={"mood": "good", "timestamp": "1999"},
        )
        assert result.success
        entry = self.content("diary")[0]
        assert entry["message"] == "Opened the inn" and entry["mood"] == "good"
        assert entry["timestamp"] != "1999"

    def test_section_edits_through_the_same_tools(self):
        block_admin.create_block(
            self.npc,
            "desk",
            schema={
                "kind": "composite",
                "sections": [
                    {"name": "notes"},
                    {"name": "diagnostics", "schema": "map", "read_only": True},
                ],
            },
        )
        assert self.run_tool("block_set_text", label="desk", section="notes", text="hi").success
        result = self.run_tool(
            "block_set_field", label="desk", section="diagnostics", field="cpu", value=1
        )
        assert not result.success and "read-only" in result.error
        result = self.run_tool("block_set_text", label="desk", text="hi")
        assert "say which one" in result.error and "notes, diagnostics" in result.data["suggestion"]

    def test_permissions_enforced_on_model_writes(self):
        block_admin.create_block(self.npc, "rules", permission="ReadOnly", content="Be kind.")
        block_admin.create_block(self.npc, "journal", permission="Append")
        block_admin.create_block(self.npc, "list", schema="list", content=["a"])
        assert "read-only" in self.run_tool("block_set_text", label="rules", text="x").error
        assert "read-only" in self.run_tool("block_append_text", label="rules", text="x").error
        assert self.run_tool("block_append_text", label="journal", text="day one").success
        assert not self.run_tool("block_set_text", label="journal", text="x").success
        assert "needs Admin" in self.run_tool("block_delete_item", label="list", position=1).error
        assert self.content("rules") == "Be kind." and self.content("list") == ["a"]
        # the operator is not bound by them
        assert block_admin.system_write(self.npc, "rules", "set_text", {"text": "Be fair."}).success
        assert self.content("rules") == "Be fair."

    def test_denied_writes_do_not_touch_the_database(self):
        block_admin.create_block(self.npc, "rules", permission="ReadOnly")
        with mock.patch.object(self.npc.ai, "update") as update:
            self.run_tool("block_set_text", label="rules", text="x")
            self.run_tool("block_set_text", label="rules", text="x" * 30000)
        assert not update.called

    def test_operator_edit_between_read_and_write_survives(self):
        block_admin.create_block(self.npc, "profile", schema="map")
        real_find = block_admin.find_block

        def find_then_operator_writes(npc, label):
            target = real_find(npc, label)  # the tool has read the block...
            block_admin.system_write(
                self.npc, "profile", "set_field", {"field": "a", "value": "operator"}
            )  # ...operator edits
            return target

        with mock.patch.object(block_admin, "find_block", find_then_operator_writes):
            result = self.run_tool("block_set_field", label="profile", field="b", value="model")
        assert result.success
        assert self.content("profile") == {"a": "operator", "b": "model"}

    def test_block_read_lists_and_pages(self):
        block_admin.create_block(
            self.npc,
            "book",
            content="\n".join(f"line {i}" for i in range(1, 61)),
            schema={"kind": "text", "viewport": {"lines": 10}},
            description="A long book",
        )
        listing = self.run_tool("block_read").content["blocks"]
        assert listing[0]["label"] == "book" and "set_text" in listing[0]["allowed_ops"]
        text = self.run_tool("block_read", label="book").content
        assert text.startswith('<block:book permission="ReadWrite">\nA long book\n\nline 1\n')
        assert "[lines 1-10 of 60]" in text
        assert "line 21\n" in self.run_tool("block_read", label="book", start_line=21).content
        assert not self.run_tool("block_read", label="ghost").success


class TestConfirmations(BlockTestBase):
    def pending(self, result):
        assert result.success and result.pending, result
        assert result.content["status"] == "pending_confirmation"
        return result.content["confirmation_id"]

    def test_partner_write_waits_then_applies_on_approval(self):
        block_admin.create_block(self.npc, "pact", permission="Partner", content="Terms:")
        result = self.run_tool("block_append_text", label="pact", text="no fighting")
        cid = self.pending(result)
        assert self.content("pact") == "Terms:"
        queue = get_confirmation_queue()
        entry = queue.get_entry(cid)
        assert entry["kind"] == "block_write" and entry["npc_id"] == self.npc.id
        assert entry["action"] == "append_text" and entry["tick_id"] == 7
        assert entry["payload"]["label"] == "pact"
        assert entry["payload"]["args"] == {"text": "no fighting"}
        assert entry["reason"].endswith("(Partner permission): text: no fighting")  # no dict
        decided = queue.approve(cid)
        assert decided["status"] == "approved", decided
        assert self.content("pact") == "Terms:\nno fighting"

    def test_human_write_rejected_changes_nothing(self):
        block_admin.create_block(self.npc, "vows", permission="Human", schema="map")
        cid = self.pending(
            self.run_tool("block_set_field", label="vows", field="oath", value="honesty")
        )
        get_confirmation_queue().reject(cid)
        assert self.content("vows") == {}

    def test_invalid_or_delete_writes_are_never_queued(self):
        block_admin.create_block(self.npc, "pact", permission="Human", schema="list")
        assert not self.run_tool("block_delete_item", label="pact", position=1).success
        assert not self.run_tool("block_set_text", label="pact", text="x").success
        assert get_confirmation_queue().list_entries(self.npc) == []

    def test_approving_a_write_to_a_deleted_block_fails_cleanly(self):
        block_admin.create_block(self.npc, "pact", permission="Partner")
        cid = self.pending(self.run_tool("block_set_text", label="pact", text="x"))
        block_admin.delete_block(self.npc, "pact")
        decided = get_confirmation_queue().approve(cid)
        assert decided["status"] == "failed" and "no longer exists" in decided["result"]


class TestSharing(BlockTestBase):
    def setUp(self):
        super().setUp()
        self.archive = self.make_npc("Archive")
        block_admin.create_block(
            self.archive, "shared_notes", pinned=True, content="Content shared from another agent"
        )

    def test_append_share_in_context_and_attributed(self):
        block_admin.share_block(self.archive, "shared_notes", self.npc, "append")
        text = block_sources.render_blocks_for_npc(self.npc, "")
        assert (
            '<block:shared_notes permission="Append" shared_from="Archive">\n'
            "Content shared from another agent\n</block:shared_notes>"
        ) in text
        assert self.run_tool("block_append_text", label="shared_notes", text="I was here").success
        assert self.content("shared_notes", self.archive) == (
            "Content shared from another agent\n[Keeper] I was here"
        )
        result = self.run_tool("block_set_text", label="shared_notes", text="mine now")
        assert not result.success and "Append permission" in result.error
        # The owner's own view is unchanged in kind: its own ReadWrite block.
        own = block_sources.render_blocks_for_npc(self.archive, "")
        assert '<block:shared_notes permission="ReadWrite">' in own

    def test_read_share_allows_no_writes(self):
        block_admin.share_block(self.archive, "shared_notes", self.npc, "read")
        assert 'permission="ReadOnly" shared_from="Archive"' in block_sources.render_blocks_for_npc(
            self.npc
        )
        assert (
            "read-only" in self.run_tool("block_append_text", label="shared_notes", text="x").error
        )

    def test_unshare_and_delete_remove_the_block_from_view(self):
        block_admin.share_block(self.archive, "shared_notes", self.npc, "append")
        block_admin.unshare_block(self.archive, "shared_notes", self.npc)
        assert block_sources.render_blocks_for_npc(self.npc) == ""
        assert not self.run_tool("block_append_text", label="shared_notes", text="x").success
        block_admin.share_block(self.archive, "shared_notes", self.npc, "read")
        block_admin.delete_block(self.archive, "shared_notes")
        assert self.npc.ai.blocks_shared_in == []

    def test_own_block_wins_and_owner_prefix_disambiguates(self):
        block_admin.share_block(self.archive, "shared_notes", self.npc, "append")
        block_admin.create_block(self.npc, "shared_notes", content="mine")
        assert self.run_tool("block_append_text", label="shared_notes", text="own").success
        assert self.content("shared_notes") == "mine\nown"
        assert self.run_tool(
            "block_append_text", label="Archive/shared_notes", text="theirs"
        ).success
        assert self.content("shared_notes", self.archive).endswith("[Keeper] theirs")

    def test_share_errors(self):
        with self.assertRaisesRegex(BlockError, "itself"):
            block_admin.share_block(self.archive, "shared_notes", self.archive, "read")
        with self.assertRaisesRegex(BlockError, "AI assistants"):
            block_admin.share_block(self.archive, "shared_notes", self.obj1, "read")
        with self.assertRaisesRegex(BlockError, "Unknown share mode 'write'"):
            block_admin.share_block(self.archive, "shared_notes", self.npc, "write")

    def test_shared_partner_block_confirmed_by_owner_operator(self):
        block_admin.set_permission(self.archive, "shared_notes", "Partner")
        block_admin.share_block(self.archive, "shared_notes", self.npc, "append")
        result = self.run_tool("block_append_text", label="shared_notes", text="please add")
        assert result.pending
        cid = result.content["confirmation_id"]
        entry = get_confirmation_queue().get_entry(cid)
        assert entry["npc_id"] == self.archive.id  # the owner's operator decides
        assert entry["payload"]["requested_by"] == self.npc.id
        with mock.patch.object(self.npc.ai, "notify_system") as told:
            decided = get_confirmation_queue().approve(cid)
        assert decided["status"] == "approved"
        assert self.content("shared_notes", self.archive).endswith("[Keeper] please add")
        assert "approved your change to Archive's memory block" in told.call_args.args[0]


class TestContextSources(BlockTestBase):
    def builder(self, tool_result=None):
        return SimpleNamespace(
            npc=self.npc, batch=[], batch_text="", tool_result=tool_result, extra={}
        )

    def test_memory_blocks_source_pinned_core_and_mentioned(self):
        block_admin.create_block(
            self.npc, "persona", type="Core", content="An innkeeper.", description="Who I am"
        )
        block_admin.create_block(self.npc, "scratch", content="half a thought")
        text = block_sources.memory_blocks_source(self.builder())
        assert text.startswith(block_sources.HEADER)
        assert '<untrusted source="memory blocks">' in text  # the model writes them: fenced
        assert (
            '<block:persona permission="ReadWrite">\nWho I am\n\nAn innkeeper.\n</block:persona>'
            in unfence(text)
        )
        assert "scratch" not in text
        text = block_sources.memory_blocks_source(self.builder("see your scratch block"))
        assert "<block:scratch" in text
        block_admin.set_pinned(self.npc, "scratch", True)
        assert "<block:scratch" in block_sources.memory_blocks_source(self.builder())

    def test_no_blocks_renders_nothing(self):
        assert block_sources.memory_blocks_source(self.builder("anything")) == ""

    def test_sources_are_registered(self):
        from evennia_ai.prompt.builder import get_sources

        sources = get_sources()
        assert sources["memory_blocks"] is block_sources.memory_blocks_source
        assert sources["archival_hits"] is block_sources.archival_hits_source


class TestArchival(BlockTestBase):
    def test_insert_search_delete(self):
        result = self.run_tool(
            "archival_insert", content="The mill burned down last winter.", tags=["history"]
        )
        assert result.success
        entry_id = result.content["id"]
        again = self.run_tool("archival_insert", content="the mill burned down last winter.")
        assert again.content["duplicate"]
        assert len(self.npc.ai.archival) == 1
        stored = self.npc.ai.archival[0]
        assert stored["metadata"] == {"tags": ["history"], "tick": 7}
        found = self.run_tool("archival_search", query="what happened to the mill?").content
        assert found["results"][0]["id"] == entry_id
        assert found["results"][0]["tags"] == ["history"]
        assert "note" in self.run_tool("archival_search", query="dragons").content
        hits = block_sources.archival_hits_source(
            SimpleNamespace(
                npc=self.npc,
                batch=[],
                batch_text="",
                tool_result="Tell me about the mill",
                extra={},
            )
        )
        assert hits.startswith('## From your archive\n<untrusted source="archive">')
        assert "\n- The mill burned down" in unfence(hits)
        assert self.run_tool("archival_delete", id=entry_id).success
        assert "No archival entry" in self.run_tool("archival_delete", id=entry_id).error
        assert self.npc.ai.archival == []

    def test_search_is_replaceable(self):
        block_admin.archival_insert(self.npc, "anything at all")
        fake = mock.Mock(return_value=[{"id": "a_1", "content": "from elsewhere", "score": 1.0}])
        with mock.patch.object(block_admin, "search_archival", fake):
            found = self.run_tool("archival_search", query="q", limit=2).content["results"]
        assert found[0]["content"] == "from elsewhere"
        assert fake.call_args.args[1:] == ("q", 2)


class TestOperatorApi(BlockTestBase):
    def test_configuration_round_trip(self):
        block_admin.create_block(self.npc, "notes", content="x")
        assert block_admin.set_permission(self.npc, "notes", "admin")["permission"] == "Admin"
        assert block_admin.set_pinned(self.npc, "notes")["pinned"] is True
        assert block_admin.set_block_type(self.npc, "notes", "core")["type"] == "Core"
        assert block_admin.set_description(self.npc, "notes", "d")["description"] == "d"
        assert block_admin.configure_block(
            self.npc, "notes", schema={"kind": "text", "viewport": {"lines": 5}}
        )["schema"]["viewport"] == {"start": 0, "lines": 5}
        assert [b["label"] for b in block_admin.list_blocks(self.npc)] == ["notes"]
        for call, words in (
            (lambda: block_admin.create_block(self.npc, "notes"), "already exists"),
            (lambda: block_admin.set_permission(self.npc, "notes", "god"), "Unknown permission"),
            (lambda: block_admin.get_block(self.npc, "ghost"), "No memory block called 'ghost'"),
            (lambda: block_admin.system_write(self.npc, "ghost", "set_text", {}), "ghost"),
        ):
            with self.assertRaisesRegex(BlockError, words):
                call()
        block_admin.delete_block(self.npc, "notes")
        assert block_admin.list_blocks(self.npc) == []


class TestInPrompt(BlockTestBase):
    def test_blocks_reach_the_assembled_request(self):
        from evennia_ai.prompt import sources  # noqa: F401  (the built-in sources)
        from evennia_ai.prompt.builder import ContextBuilder
        from evennia_ai.prompt.contexts import get_context_config

        block_admin.create_block(self.npc, "persona", type="Core", content="A gruff innkeeper.")
        built = []
        ContextBuilder(self.npc, get_context_config("tick_event")).build().addCallback(built.append)
        assert built, "the build should finish synchronously here"
        prompt = "\n".join(str(m.get("content")) for m in built[0].messages)
        assert (
            '<block:persona permission="ReadWrite">\nA gruff innkeeper.\n</block:persona>'
            in unfence(prompt)
        )
