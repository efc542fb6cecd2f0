"""The memory admin commands: aiblock, ailtm, aientity.

Long-term memory runs in keyword mode in a temporary folder, with its thread hop made
synchronous (``longterm.defer_to_thread``), so a search's answer arrives inside ``self.call``.
"""

from unittest import mock

import pytest
from evennia import create_object
from evennia.objects.objects import DefaultCharacter
from support.commands import AICommandTestBase, words
from support.memory import use_keyword_memory

from evennia_ai.commands import memory as cmds
from evennia_ai.commands.base import HELP_CATEGORY
from evennia_ai.commands.cmdset import COMMAND_MODULES
from evennia_ai.memory import block_admin, longterm
from evennia_ai.memory.keyword_index import KeywordIndexUnavailable

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)


def fired(deferred):
    box = []
    deferred.addBoth(box.append)
    assert box, "the call did not complete synchronously"
    return box[0]


class MemoryCommandTest(AICommandTestBase):
    def setUp(self):
        super().setUp()
        self.smith = self.make_npc("Blacksmith")
        self.nobody = create_object(DefaultCharacter, key="Nobody", location=self.room1)


class TestCommon(MemoryCommandTest):
    def test_every_command_is_in_the_ai_category_locked_and_documented(self):
        assert cmds.__name__ in COMMAND_MODULES
        for cmdclass in cmds.COMMANDS:
            cmd = cmdclass()
            assert cmd.help_category == HELP_CATEGORY.lower() and cmd.locks == "cmd:perm(Builder)"
            for section in ("Usage:", "Switches:", "Examples:"):
                assert section in cmdclass.__doc__
            assert cmd.access(self.nobody, "cmd") is False  # no Builder permission
            assert cmd.access(self.char1, "cmd") is True

    def test_usages(self):
        self.call(cmds.CmdAIBlock(), "", "Usage:\n  aiblock <npc>")
        self.call(cmds.CmdAILongTerm(), "", "Usage:\n  ailtm <npc> = <query>")
        self.call(cmds.CmdAIEntity(), "", "Usage:\n  aientity <npc>")


# -- memory blocks -----------------------------------------------------------------------------------
class TestBlocks(MemoryCommandTest):
    def blocks(self, npc=None):
        return (npc or self.npc).ai.blocks

    def test_create_list_show(self):
        self.call(cmds.CmdAIBlock(), "Innkeeper", "Innkeeper has no memory blocks.")
        self.call(
            cmds.CmdAIBlock(),
            "/create Innkeeper = notes",
            "Created memory block 'notes' on Innkeeper (Working, text, ReadWrite).",
        )
        self.call(
            cmds.CmdAIBlock(),
            '/create Innkeeper = {"label": "profile", "type": "Core", "schema": {"kind": "map", '
            '"fields": [{"name": "status", "read_only": true}, {"name": "mood", "type": "text"}]}, '
            '"permission": "ReadOnly", "description": "Who I am"}',
            "Created memory block 'profile' on Innkeeper (Core, map, ReadOnly).",
        )
        blocks = self.blocks()
        assert set(blocks) == {"notes", "profile"}
        assert (
            blocks["profile"]["permission"] == "ReadOnly"
            and blocks["profile"]["description"] == "Who I am"
        )
        out = self.call(cmds.CmdAIBlock(), "Innkeeper", "Memory blocks of Innkeeper")
        assert "notes" in out and "ephemeral" in out and "always" in out
        out = self.call(
            cmds.CmdAIBlock(), "/show Innkeeper = profile", "Block profile of Innkeeper: type Core"
        )
        assert '<block:profile permission="ReadOnly">' in out and "Who I am" in out

    def test_operator_writes_bypass_permissions_and_read_only_fields(self):
        block_admin.create_block(
            self.npc,
            "profile",
            type="Core",
            permission="ReadOnly",
            schema={
                "kind": "map",
                "fields": [
                    {"name": "status", "read_only": True},
                    {"name": "gold", "type": "number"},
                    {"name": "tags", "type": "list"},
                ],
            },
        )
        block_admin.create_block(self.npc, "notes", permission="ReadOnly")
        self.call(
            cmds.CmdAIBlock(),
            "/set Innkeeper = profile status=resting",
            "Innkeeper/profile: Field 'status' set.",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/set Innkeeper = profile gold=12",
            "Innkeeper/profile: Field 'gold' set.",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/append Innkeeper = profile tags=friendly",
            "Innkeeper/profile: Added to field",
        )
        assert self.blocks()["profile"]["content"] == {
            "status": "resting",
            "gold": 12,
            "tags": ["friendly"],
        }
        self.call(cmds.CmdAIBlock(), "/set Innkeeper = notes The well is dry.", "Innkeeper/notes:")
        self.call(cmds.CmdAIBlock(), "/append Innkeeper = notes Bob is back.", "Innkeeper/notes:")
        assert self.blocks()["notes"]["content"] == "The well is dry.\nBob is back."
        self.call(cmds.CmdAIBlock(), "/delitem Innkeeper = profile gold", "Innkeeper/profile:")
        assert self.blocks()["profile"]["content"]["gold"] == 0  # a declared field is cleared

    def test_lists_logs_and_sections(self):
        block_admin.create_block(self.npc, "todo", schema="list")
        block_admin.create_block(self.npc, "events", type="Log")
        block_admin.create_block(
            self.npc,
            "me",
            schema={
                "kind": "composite",
                "sections": [
                    {"name": "mood", "schema": "text"},
                    {"name": "facts", "schema": "list"},
                ],
            },
        )
        self.call(
            cmds.CmdAIBlock(),
            "/append Innkeeper = todo Sweep the floor",
            "Innkeeper/todo: Item added as number 1.",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/append Innkeeper = todo Fix the sign",
            "Innkeeper/todo: Item added as number 2.",
        )
        self.call(
            cmds.CmdAIBlock(), "/delitem Innkeeper = todo 1", "Innkeeper/todo: Item 1 deleted."
        )
        assert self.blocks()["todo"]["content"] == ["Fix the sign"]
        self.call(
            cmds.CmdAIBlock(),
            "/append Innkeeper = events The bell rang",
            "Innkeeper/events: Log entry added.",
        )
        assert self.blocks()["events"]["content"][0]["message"] == "The bell rang"
        self.call(cmds.CmdAIBlock(), "/set Innkeeper = me:mood calm", "Innkeeper/me:")
        assert self.blocks()["me"]["content"]["mood"] == "calm"
        self.call(cmds.CmdAIBlock(), "/set Innkeeper = me calm", "Memory block 'me' has sections")
        self.call(
            cmds.CmdAIBlock(), "/set Innkeeper = todo x", "A list block is changed with /append"
        )

    def test_configuration_and_delete(self):
        block_admin.create_block(self.npc, "notes")
        self.call(
            cmds.CmdAIBlock(),
            "/permission Innkeeper = notes append",
            "Memory block 'notes' of Innkeeper now has Append permission.",
        )
        assert self.blocks()["notes"]["permission"] == "Append"
        self.call(
            cmds.CmdAIBlock(),
            "/pin Innkeeper = notes",
            "Memory block 'notes' of Innkeeper is pinned",
        )
        assert self.blocks()["notes"]["pinned"] is True
        self.call(
            cmds.CmdAIBlock(),
            "/unpin Innkeeper = notes",
            "Memory block 'notes' of Innkeeper is unpinned",
        )
        assert self.blocks()["notes"]["pinned"] is False
        self.call(
            cmds.CmdAIBlock(),
            "/type Innkeeper = notes core",
            "Memory block 'notes' of Innkeeper is now a Core block.",
        )
        self.call(cmds.CmdAIBlock(), "/describe Innkeeper = notes Things to remember", "Described")
        assert self.blocks()["notes"]["description"] == "Things to remember"
        self.call(
            cmds.CmdAIBlock(),
            "/delete Innkeeper = notes",
            "Deleted memory block 'notes' of Innkeeper.",
        )
        assert self.blocks() == {}

    def test_share_and_unshare(self):
        block_admin.create_block(self.npc, "rumours")
        self.call(
            cmds.CmdAIBlock(),
            "/share Innkeeper = rumours to Blacksmith append",
            "Memory block 'rumours' of Innkeeper is shared with Blacksmith (append).",
        )
        assert self.blocks()["rumours"]["shared_with"] == {str(self.smith.id): "append"}
        assert self.smith.ai.blocks_shared_in == [{"owner": self.npc.id, "label": "rumours"}]
        out = self.call(cmds.CmdAIBlock(), "Blacksmith", "Memory blocks of Blacksmith")
        assert "Innkeeper/rumours" in out
        self.call_says(
            cmds.CmdAIBlock(),
            "/show Innkeeper = rumours",
            "Block rumours of Innkeeper: type Working, schema text, shared with Blacksmith (append)",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/unshare Innkeeper = rumours from Blacksmith",
            "Memory block 'rumours' of Innkeeper is no longer shared",
        )
        assert self.blocks()["rumours"]["shared_with"] == {}

    def test_bad_arguments(self):
        self.call(cmds.CmdAIBlock(), "/create Innkeeper = {bad json", "Invalid block spec")
        self.call(
            cmds.CmdAIBlock(),
            '/create Innkeeper = {"label": "x", "colour": 1}',
            "Unknown key(s) in the block spec: colour",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/create Innkeeper = bad label!",
            "'bad label!' is not a valid block label",
        )
        self.call(
            cmds.CmdAIBlock(),
            '/create Innkeeper = {"label": "x", "type": "Weird"}',
            "Unknown block type 'Weird'",
        )
        self.call(
            cmds.CmdAIBlock(), "/show Innkeeper = nothing", "No memory block called 'nothing'"
        )
        block_admin.create_block(self.npc, "notes")
        self.call(
            cmds.CmdAIBlock(), "/create Innkeeper = notes", "A block called 'notes' already exists."
        )
        self.call(
            cmds.CmdAIBlock(),
            "/permission Innkeeper = notes Superuser",
            "Unknown permission 'Superuser'",
        )
        self.call(cmds.CmdAIBlock(), "/permission Innkeeper = notes", "Missing <permission>")
        self.call(
            cmds.CmdAIBlock(),
            "/share Innkeeper = notes with Blacksmith",
            "Give <label> to <other npc>",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/share Innkeeper = notes to Innkeeper",
            "An NPC cannot share a block with itself.",
        )
        self.call(
            cmds.CmdAIBlock(),
            "/delitem Innkeeper = notes 1",
            "/delitem works on list and map blocks",
        )
        assert (
            self.blocks()["notes"]["permission"] == "ReadWrite"
            and self.blocks()["notes"]["shared_with"] == {}
        )

    def test_archival(self):
        self.call(cmds.CmdAIBlock(), "/archival Innkeeper", "Innkeeper's archive is empty.")
        block_admin.archival_insert(self.npc, "The well water turned bitter in spring.")
        block_admin.archival_insert(self.npc, "Bob owes five gold coins.")
        out = self.call(
            cmds.CmdAIBlock(), "/archival Innkeeper", "Archive of Innkeeper: 2 newest of 2 entries"
        )
        assert "Bob owes" in out.splitlines()[1]  # newest first
        out = self.call(
            cmds.CmdAIBlock(),
            "/archival Innkeeper = well water",
            "Archive of Innkeeper: 1 match(es)",
        )
        assert "bitter" in out
        self.call(
            cmds.CmdAIBlock(),
            "/archival Innkeeper = dragons",
            "Nothing in Innkeeper's archive matches",
        )
        entry_id = self.npc.ai.archival[0]["id"]
        self.call(
            cmds.CmdAIBlock(),
            f"/archdel Innkeeper = {entry_id}",
            f"Deleted archival entry {entry_id}",
        )
        assert [e["id"] for e in self.npc.ai.archival] != [entry_id]
        assert len(self.npc.ai.archival) == 1
        self.call(
            cmds.CmdAIBlock(),
            "/archdel Innkeeper = a_nothing",
            "No archival entry with id 'a_nothing'.",
        )


# -- long-term memory --------------------------------------------------------------------------------
class TestLongTerm(MemoryCommandTest):
    def setUp(self):
        super().setUp()
        use_keyword_memory(self)

    def store(self, text, **kwargs):
        return fired(longterm.store(self.npc.dbref, text, **kwargs))

    def test_search_and_modes(self):
        stored = self.store("Bob owes Alice five gold coins", source="told_directly", trust=0.9)
        self.store("The well water is bitter")
        self.session.protocol_flags["SCREENWIDTH"] = {0: 120}  # room for the whole text
        out = self.call(
            cmds.CmdAILongTerm(),
            "Innkeeper = gold coins",
            "Searching Innkeeper's long-term memory...|Long-term memory of Innkeeper for 'gold coins' (keyword search)",
        )
        assert f"{stored.id} {stored.time[:10]} score 1.00: Bob owes Alice five gold coins" in out
        assert "well" not in out
        out = self.call(
            cmds.CmdAILongTerm(),
            "/mode Innkeeper = vector well",
            "Searching Innkeeper's long-term memory...|Long-term memory of Innkeeper for 'well' (keyword search)",
        )
        assert "vector search needs an embedder" in out and "The well water is bitter" in out
        self.call(
            cmds.CmdAILongTerm(),
            "Innkeeper = dragons",
            "Searching Innkeeper's long-term memory...|"
            "Long-term memory of Innkeeper for 'dragons' (keyword search): nothing found.",
        )

    def test_status(self):
        self.call(
            cmds.CmdAILongTerm(),
            "/status",
            "Long-term memory: uninitialised, searching in keyword mode",
        )
        self.call(cmds.CmdAILongTerm(), "Innkeeper", "Innkeeper: Long-term memory:")

    def test_delete(self):
        stored = self.store("Bob owes Alice five gold coins")
        self.call(
            cmds.CmdAILongTerm(),
            f"/delete Innkeeper = {stored.id}",
            f"Innkeeper forgot memory {stored.id}.",
        )
        outcome = fired(longterm.recall(self.npc.dbref, "gold coins"))
        assert outcome.hits == []
        self.call(
            cmds.CmdAILongTerm(),
            f"/delete Innkeeper = {stored.id}",
            "Innkeeper has no long-term memory with id",
        )

    def test_list(self):
        self.call(cmds.CmdAILongTerm(), "/list Innkeeper", "Innkeeper has no long-term memories.")
        older = self.store("Bob owes Alice five gold coins", source="observed", trust=0.8)
        newer = self.store("The well water is bitter")
        out = self.call(
            cmds.CmdAILongTerm(),
            "/list Innkeeper = 5",
            "Long-term memory of Innkeeper: the 2 most recent",
        )
        assert out.index(newer.id) < out.index(older.id)
        assert f"{older.id} {older.time[:10]}: Bob owes Alice five gold coins\n" in out
        out = self.call(cmds.CmdAILongTerm(), f"/show Innkeeper = {older.id}", None)
        assert out.startswith(
            f"Long-term memory {older.id} of Innkeeper\nstored {older.time[:10]} "
        )
        assert "source observed; trust 0.8" in out and out.endswith(
            "Bob owes Alice five gold coins"
        )
        self.call(
            cmds.CmdAILongTerm(),
            "/show Innkeeper = nothere",
            "Innkeeper has no long-term memory with id 'nothere'.",
        )
        out = self.call(
            cmds.CmdAILongTerm(),
            "/list Innkeeper = 1",
            "Long-term memory of Innkeeper: the 1 most recent",
        )
        assert older.id not in out

    def test_a_long_transcript_is_one_clipped_line_and_show_gives_it_all(self):
        turns = [f"Bob said: I need   a room\n\tfor night {n}." for n in range(80)]
        stored = self.store("\n".join(turns) + " THE END")
        self.session.protocol_flags["SCREENWIDTH"] = {0: 80}
        out = self.call(cmds.CmdAILongTerm(), "/list Innkeeper", None)
        line = next(line for line in out.split("\n") if line.startswith(stored.id))
        assert (
            len(line) <= 80
            and line.endswith("\u2026")
            and "Bob said: I need a room for night" in line
        )
        assert "THE END" not in out and "\t" not in out
        out = self.call(cmds.CmdAILongTerm(), f"/show Innkeeper = {stored.id}", None)
        assert words(out).endswith(words(stored.text)) and "for night 50." in out  # all of it

    def test_bad_arguments(self):
        self.call(
            cmds.CmdAILongTerm(),
            "/mode Innkeeper = sideways well",
            "Unknown search mode 'sideways'",
        )
        self.call(cmds.CmdAILongTerm(), "/mode Innkeeper = keyword", "Missing <query>")
        self.call(
            cmds.CmdAILongTerm(), "/list Innkeeper = many", "The count must be a whole number"
        )
        self.call(cmds.CmdAILongTerm(), "Nobodyhere = x", "No AI NPC called 'Nobodyhere'")

    def test_unavailable_memory_is_said_clearly(self):
        def broken(self_):
            raise KeywordIndexUnavailable("SQLite here was built without FTS5")

        with mock.patch.object(longterm.LongTermMemory, "keyword_index", broken):
            self.call(
                cmds.CmdAILongTerm(),
                "Innkeeper = gold",
                "Searching Innkeeper's long-term memory...|"
                "Long-term memory is unavailable: SQLite here was built without FTS5",
            )


# -- entities ----------------------------------------------------------------------------------------
class TestEntities(MemoryCommandTest):
    def entities(self):
        return self.npc.ai.entities

    def test_note_relationship_list_show_delete(self):
        self.call(cmds.CmdAIEntity(), "Innkeeper", "Innkeeper has no entity profiles.")
        dbref = self.char2.dbref
        self.call(
            cmds.CmdAIEntity(),
            "/note Innkeeper = Char2: orders the stew every evening",
            "Innkeeper: Noted about Char2.",
        )
        profile = self.entities()[dbref]
        assert profile["observations"][0]["text"] == "orders the stew every evening"
        assert profile["observations"][0]["trust"] == 0.9 and profile["kind"] == "character"
        self.call(
            cmds.CmdAIEntity(),
            "/relationship Innkeeper = char2: a regular, friendly",
            "Innkeeper: Noted about Char2. Relationship: a regular, friendly",
        )
        assert self.entities()[dbref]["relationship"] == "a regular, friendly"
        self.call(
            cmds.CmdAIEntity(),
            "Innkeeper",
            f"Entities known to Innkeeper (most recently seen first)\nChar2 ({dbref}, character): a regular, friendly",
        )
        out = self.call(
            cmds.CmdAIEntity(),
            f"/show Innkeeper = {dbref}",
            f"Char2 ({dbref}, character) as Innkeeper knows them",
        )
        assert "- orders the stew every evening (trust 0.9" in out
        self.call(
            cmds.CmdAIEntity(),
            "/delete Innkeeper = Char2",
            f"Innkeeper forgot its profile of Char2 ({dbref}).",
        )
        assert self.entities() == {}

    def test_bad_arguments(self):
        self.call(
            cmds.CmdAIEntity(),
            "/note Innkeeper = Char2 orders stew",
            "Give the entity, a colon, then the observation.",
        )
        self.call(
            cmds.CmdAIEntity(),
            "/note Innkeeper = Zyxx: hello",
            "Innkeeper has no profile of 'Zyxx', and nothing",
        )
        self.call(
            cmds.CmdAIEntity(), "/show Innkeeper = Char2", "Innkeeper has no profile of 'Char2'."
        )
        self.call(cmds.CmdAIEntity(), "/note Innkeeper = Char2:", "Missing <observation>")
        assert self.entities() == {}


# -- the modules by job ------------------------------------------------------------------------------
def test_memory_commands_live_in_modules_by_job_and_are_re_exported():
    """``commands/memory.py`` re-exports one module per command, in the same help order."""
    homes = {
        "CmdAIBlock": "memory_blocks",
        "CmdAILongTerm": "memory_longterm",
        "CmdAIEntity": "memory_entities",
        "CmdAIHistory": "memory_history",
    }
    assert [command.__name__ for command in cmds.COMMANDS] == list(homes)
    for name, module in homes.items():
        assert getattr(cmds, name).__module__ == f"evennia_ai.commands.{module}"
