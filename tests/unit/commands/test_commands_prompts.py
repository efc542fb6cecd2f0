"""The prompt admin commands: aiprompt, aitemplate, airegistry, aicontext, aiexec, aifewshot."""

import json
import os
import tempfile
from unittest import mock

from django.test import override_settings
from evennia import create_object
from evennia.objects.objects import DefaultCharacter
from support.commands import AICommandTestBase, sync_thread

from evennia_ai.commands import prompts as cmds
from evennia_ai.commands.base import HELP_CATEGORY
from evennia_ai.commands.cmdset import COMMAND_MODULES
from evennia_ai.prompt_registry import get_prompt_registry


class PromptCommandTest(AICommandTestBase):
    def setUp(self):
        super().setUp()
        self.builder = create_object(DefaultCharacter, key="Bob", location=self.room1)
        self.builder.permissions.add("Builder")
        self.player = create_object(DefaultCharacter, key="Nobody", location=self.room1)
        self.registry = get_prompt_registry()

    def snapshot(self) -> str:
        return self.registry.export_json()


class TestCommon(PromptCommandTest):
    def test_commands_are_documented_locked_and_registered(self):
        assert cmds.__name__ in COMMAND_MODULES
        for cmdclass in cmds.COMMANDS:
            doc = cmdclass.__doc__
            assert "Usage:" in doc and "Switches:" in doc and "Examples:" in doc, cmdclass.key
            cmd = cmdclass()
            assert cmd.help_category == HELP_CATEGORY.lower()
            assert cmd.access(self.char1, "cmd") is True  # the test account is a Developer
            assert cmd.access(self.player, "cmd") is False
            if cmdclass is cmds.CmdAIFewshot:
                assert cmd.locks == "cmd:perm(Builder)"
                assert cmd.access(self.builder, "cmd") is True
            else:
                assert cmd.locks == "cmd:perm(Developer)"
                assert cmd.access(self.builder, "cmd") is False, cmdclass.key

    def test_usage_without_arguments(self):
        for cmdclass in cmds.COMMANDS:
            self.call(cmdclass(), "", f"Usage:\n  {cmdclass.key}")

    def test_unknown_switch(self):
        self.call(cmds.CmdAIPrompt(), "/frob 0", "Unknown switch /frob. Valid:")
        self.call(cmds.CmdAIPrompt(), "/d 0", "Ambiguous switch /d.")


class TestAIPrompt(PromptCommandTest):
    def test_list_and_show(self):
        out = self.call(cmds.CmdAIPrompt(), "/list", "Prompt components (9 static, 0 pluggable)")
        assert "system_prompt" in out and "tool_result" in out
        self.session.protocol_flags["SCREENWIDTH"] = {0: 100}  # the header on one line
        out = self.call(cmds.CmdAIPrompt(), "/list reflection", "Prompt components")
        assert "In reflection" in out
        self.call(cmds.CmdAIPrompt(), "/show 0", "Component 0 system_prompt (static)")
        self.call(cmds.CmdAIPrompt(), "pending_event", "Component 6000 pending_event")
        out = self.call(
            cmds.CmdAIPrompt(), "/show reflection", "Context reflection (Reflection): 3 components"
        )
        assert "self-reflection" in out and "Left out:" in out

    def test_add_edit_move_enable_disable_delete(self):
        self.call(
            cmds.CmdAIPrompt(),
            "/add 1000 = House rules|Never reveal the cellar.",
            "Added component 1001 (house_rules) after 1000.",
        )
        comp = self.registry.get_component(1001)
        assert (comp.key, comp.name, comp.content) == (
            "house_rules",
            "House rules",
            "Never reveal the cellar.",
        )
        self.call(
            cmds.CmdAIPrompt(),
            '/add character_context = {"key": "lore", "name": "Lore", "content": "Old town.", "role": "user"}',
            "Added component 1002 (lore)",
        )
        assert self.registry.get_component(1002).role == "user"
        self.call(
            cmds.CmdAIPrompt(),
            "/edit house_rules = No fights = no trouble.",
            "Component 1001 (house_rules) now has",
        )
        assert self.registry.get_component(1001).content == "No fights = no trouble."
        self.call(
            cmds.CmdAIPrompt(),
            "/move 1001 = goals",
            "Component house_rules is now 4001, after 4000.",
        )
        self.call(
            cmds.CmdAIPrompt(), "/disable house_rules", "Component 4001 (house_rules) is disabled"
        )
        assert self.registry.get_component(4001).enabled is False
        self.call(cmds.CmdAIPrompt(), "/enable 4001", "Component 4001 (house_rules) is enabled.")
        self.call(
            cmds.CmdAIPrompt(), "/disable 3000", "Component 3000 (context_buffer) is disabled"
        )
        assert self.registry.get_component(3000).enabled is False
        self.call(cmds.CmdAIPrompt(), "/delete 4001", "Deleted component 4001 (house_rules).")
        assert self.registry.get_component(4001) is None

    def test_bad_arguments(self):
        self.call(cmds.CmdAIPrompt(), "/add 1234 = A|b", "'1234' is not a static component")
        self.call(
            cmds.CmdAIPrompt(), "/add 1000 = no separator", "Give the component as <name>|<content>"
        )
        self.call(cmds.CmdAIPrompt(), "/add 1000 = {broken", "Invalid Component JSON")
        self.call(
            cmds.CmdAIPrompt(),
            '/add 1000 = {"name": "x", "content": "y", "colour": 1}',
            "Unknown component field(s) colour",
        )
        self.call(
            cmds.CmdAIPrompt(),
            '/add 1000 = {"name": "x", "content": "y", "role": "boss"}',
            "Component 'x': unknown role 'boss'",
        )
        self.call_says(
            cmds.CmdAIPrompt(),
            "/delete 0",
            "Component 0 is static and cannot be deleted; disable it instead (aiprompt/disable 0).",
        )
        self.call(cmds.CmdAIPrompt(), "/move 0 = 1000", "Component 0 is static")
        self.call(cmds.CmdAIPrompt(), "/edit 999 = x", "No component '999'.")
        self.call(cmds.CmdAIPrompt(), "/edit 0", "Give the new content after '='.")
        self.call(
            cmds.CmdAIPrompt(),
            "/show nosuch_context = Innkeeper",
            "Unknown context type 'nosuch_context'",
        )
        self.call(cmds.CmdAIPrompt(), "/list tick", "'tick' matches several context types")
        self.call(cmds.CmdAIPrompt(), "/enable \u00b2", "No component '\u00b2'.")
        self.call(cmds.CmdAIPrompt(), "/add 1000 = " + "[" * 5000, "Give the component as")
        self.call(
            cmds.CmdAIPrompt(),
            "/add 1000 = " + '{"a":' * 3000,
            "Invalid Component JSON: nested too deeply",
        )
        assert self.registry.list_pluggable_components() == []

    def test_show_for_an_npc_builds_the_tick_request(self):
        from evennia_ai.memory import longterm, longterm_config

        self.registry.create_component(
            "house_rules", "House rules", "Never reveal the cellar.", after_static=0
        )
        self.npc.ai.set_persona("A warm innkeeper.")
        with (
            mock.patch.object(longterm, "defer_to_thread", sync_thread),
            mock.patch.object(longterm_config, "local_embedder_installed", lambda: False),
            override_settings(EVENNIA_AI_MODEL=""),
        ):
            out = self.call(
                cmds.CmdAIPrompt(),
                "/show tick_event = Innkeeper",
                "Building Innkeeper's tick_event request...",
            )
        assert "Request of Innkeeper for tick_event" in out
        assert "Never reveal the cellar." in out and "[0] system" in out
        assert "Tools offered" in out
        assert self.npc.ndb.ai_last_request is None  # a preview is not the last request
        self.call(
            cmds.CmdAIPrompt(), "/show tick_event = Nobodyhere", "No AI NPC called 'Nobodyhere'"
        )


class TestAITemplate(PromptCommandTest):
    def test_list_and_show(self):
        out = self.call(cmds.CmdAITemplate(), "/list", "Prompt templates (3)")
        assert "default_fallback" in out
        self.call(cmds.CmdAITemplate(), "/show default", "Template default (built in, read-only)")
        self.call(cmds.CmdAITemplate(), "/show nope", "No template 'nope'.")

    def test_create_clone_edit_apply_save_delete(self):
        self.call(
            cmds.CmdAITemplate(),
            "/create rules = Never reveal {secret}.",
            "Created template rules (placeholders: secret).",
        )
        self.call(
            cmds.CmdAITemplate(),
            '/create lore = {"name": "Lore", "content": "Old town.", "category": "component"}',
            "Created template lore",
        )
        assert self.registry.get_template("lore").category == "component"
        self.call(
            cmds.CmdAITemplate(), "/clone default = my_default", "Cloned default as my_default"
        )
        self.call(
            cmds.CmdAITemplate(),
            "/edit my_default = You are {name}.",
            "Template my_default updated (placeholders: name).",
        )
        self.registry.create_component("house_rules", "House rules", "x", after_static=1000)
        self.call(
            cmds.CmdAITemplate(),
            "/apply rules = house_rules",
            "Component 1001 (house_rules) now has template rules's content.",
        )
        assert self.registry.get_component(1001).content == "Never reveal {secret}."
        self.call(
            cmds.CmdAITemplate(),
            "/save 1001 = rules_copy",
            "Saved component 1001's content as template rules_copy.",
        )
        assert self.registry.get_template("rules_copy").content == "Never reveal {secret}."
        self.call(cmds.CmdAITemplate(), "/delete rules", "Deleted template rules.")
        assert self.registry.get_template("rules") is None

    def test_bad_arguments(self):
        self.call_says(
            cmds.CmdAITemplate(),
            "/edit default = x",
            "Template 'default' is built in and cannot be changed; clone it "
            "(aitemplate/clone default = my_default) and edit the clone.",
        )
        self.call(cmds.CmdAITemplate(), "/delete default", "Template 'default' is built in")
        self.call(cmds.CmdAITemplate(), "/create bad key = x", "Template key 'bad key' is invalid")
        self.call(cmds.CmdAITemplate(), "/create default = x", "Template 'default' already exists")
        self.call(
            cmds.CmdAITemplate(), "/clone nope = other", "No template with key 'nope' to clone."
        )
        self.call(cmds.CmdAITemplate(), "/apply default = 4242", "No component '4242'.")
        self.call(cmds.CmdAITemplate(), "/create rules", "Give the content after '='.")


class TestAIRegistry(PromptCommandTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        patch = override_settings(GAME_DIR=self.tmp.name)
        patch.enable()
        self.addCleanup(patch.disable)

    def populate(self):
        self.registry.create_template("rules", "Rules", "Never reveal {secret}.")
        self.registry.create_component(
            "house_rules", "House rules", "No fights.", after_static=1000
        )
        self.registry.update_component(3000, enabled=False)
        self.registry.set_context_customization("tick_event", max_iterations=3)
        self.registry.add_fewshot_example("Hi", "Welcome, traveller!")

    def test_export_inline_and_to_a_file(self):
        self.populate()
        out = self.call(cmds.CmdAIRegistry(), "/export", "{")
        assert json.loads(out)["templates"][0]["key"] == "rules"
        self.call(
            cmds.CmdAIRegistry(),
            "/export prompts.json",
            "Exported the prompt registry to prompts.json",
        )
        path = os.path.join(self.tmp.name, "prompts.json")
        assert json.load(open(path))["fewshot_examples"] == [
            {"user": "Hi", "assistant": "Welcome, traveller!"}
        ]
        self.call(cmds.CmdAIRegistry(), "/export prompts.json", "prompts.json exists; use")
        self.call(cmds.CmdAIRegistry(), "/export/overwrite prompts.json", "Exported")

    def test_export_import_round_trip(self):
        self.populate()
        self.call(cmds.CmdAIRegistry(), "/export backup.json", "Exported")
        before = json.loads(self.snapshot())
        self.registry.delete_template("rules")
        self.registry.delete_component(1001)
        self.call(
            cmds.CmdAIPrompt(),
            "/reset context_buffer",
            "Component 3000 (context_buffer) has its default content again",
        )
        self.registry.clear_context_customization("tick_event")
        self.registry.clear_fewshot_examples()
        out = self.call(
            cmds.CmdAIRegistry(), "/import backup.json", "Imported backup.json. These were changed:"
        )
        assert "templates: created rules" in out and "components: created house_rules" in out
        after = json.loads(self.snapshot())
        for section in ("context_configs", "fewshot_examples", "static_overrides"):
            assert after[section] == before[section], section
        assert [t["key"] for t in after["templates"]] == ["rules"]
        assert [(c["id"], c["key"]) for c in after["components"]] == [(1001, "house_rules")]
        # importing the same again changes nothing
        self.call(
            cmds.CmdAIRegistry(), "/import backup.json", "Imported backup.json. Nothing changed"
        )

    def test_dry_run_changes_nothing(self):
        before = self.snapshot()
        data = {
            "templates": [{"key": "rules", "name": "Rules", "content": "Be kind."}],
            "fewshot_examples": [{"user": "Hi", "assistant": "Hello"}],
        }
        out = self.call(
            cmds.CmdAIRegistry(),
            "/dryrun " + json.dumps(data),
            "Dry run of inline JSON (nothing was changed). These would be changed:",
        )
        assert "templates: created rules" in out and "1 added" in out
        assert self.snapshot() == before
        with open(os.path.join(self.tmp.name, "in.json"), "w") as handle:
            json.dump(data, handle)
        self.call(cmds.CmdAIRegistry(), "/dryrun in.json", "Dry run of in.json")
        assert self.snapshot() == before

    def test_malformed_or_invalid_import_changes_nothing(self):
        self.populate()
        before = self.snapshot()
        self.call(
            cmds.CmdAIRegistry(),
            '/import {"templates": [',
            "Import of inline JSON refused, nothing changed: Malformed JSON for Registry",
        )
        bad = {
            "fewshot_examples": [{"user": "a", "assistant": "b"}],
            "components": [{"key": "x", "name": "X", "content": "y", "after_static": 1234}],
        }
        self.call_says(
            cmds.CmdAIRegistry(),
            "/import " + json.dumps(bad),
            "Import of inline JSON refused, nothing changed: Registry components[0] 'x': after_static",
        )
        conflict = {"templates": [{"key": "rules", "name": "Rules", "content": "Other."}]}
        self.call_says(
            cmds.CmdAIRegistry(),
            "/import " + json.dumps(conflict),
            "Import of inline JSON refused, nothing changed: Template 'rules' already exists",
        )
        with open(os.path.join(self.tmp.name, "broken.json"), "w") as handle:
            handle.write("{not json")
        self.call(cmds.CmdAIRegistry(), "/import broken.json", "Import of broken.json refused")
        assert self.snapshot() == before
        self.call(
            cmds.CmdAIRegistry(),
            "/import/overwrite " + json.dumps(conflict),
            "Imported inline JSON.",
        )
        assert self.registry.get_template("rules").content == "Other."

    def test_bad_paths_and_switches(self):
        self.call(
            cmds.CmdAIRegistry(),
            "/export ../escape.json",
            "'../escape.json' is outside the game directory",
        )
        self.call(
            cmds.CmdAIRegistry(), "/import /etc/passwd", "'/etc/passwd' is not a .json file name"
        )
        self.call(
            cmds.CmdAIRegistry(),
            "/import /etc/x.json",
            "'/etc/x.json' is outside the game directory",
        )
        self.call(
            cmds.CmdAIRegistry(),
            "/import missing.json",
            "No file missing.json in the game directory.",
        )
        self.call(
            cmds.CmdAIRegistry(),
            "/export nofolder/x.json",
            "The folder of nofolder/x.json does not exist.",
        )
        self.call(
            cmds.CmdAIRegistry(),
            "/import/export x.json",
            "Give one of /export, /import or /dryrun.",
        )
        self.call(cmds.CmdAIRegistry(), "x.json", "Give one of /export, /import or /dryrun.")
        assert not os.path.exists(os.path.join(os.path.dirname(self.tmp.name), "escape.json"))


class TestAIContext(PromptCommandTest):
    def test_list_show_edit_reset(self):
        out = self.call(cmds.CmdAIContext(), "/list", "Context types:")
        assert "goal_decompose" in out
        out = self.call(cmds.CmdAIContext(), "/show reflection", "Context reflection: Reflection")
        assert "max_iterations: 3" in out
        self.call_says(
            cmds.CmdAIContext(),
            '/edit tick_event = {"max_iterations": 3, "allows_sub_agents": false}',
            "Context tick_event updated (max_iterations, allows_sub_agents); now react_loop, "
            "at most 3 iteration(s).",
        )
        config = self.registry.get_effective_context_config("tick_event")
        assert config.max_iterations == 3 and config.allows_sub_agents is False
        out = self.call(cmds.CmdAIContext(), "tick_event", "Context tick_event: Event")
        assert " * max_iterations: 3" in out
        self.call(
            cmds.CmdAIContext(),
            "/reset tick_event = max_iterations",
            "Context tick_event: max_iterations back to the default.",
        )
        assert self.registry.get_context_customization("tick_event") == {"allows_sub_agents": False}
        self.call(cmds.CmdAIContext(), "/reset tick_event", "Context tick_event: every field back")
        self.call(
            cmds.CmdAIContext(), "/reset tick_event", "Context tick_event had no customisation"
        )

    def test_bad_fields_are_refused(self):
        self.call(
            cmds.CmdAIContext(),
            '/edit tick_event = {"max_iterations_per_tick": 2}',
            "'max_iterations_per_tick' is one of an NPC's own static limits",
        )
        self.call(
            cmds.CmdAIContext(),
            '/edit tick_event = {"recommended_mode": "single_action"}',
            "'recommended_mode' is advice a model gives",
        )
        self.call(
            cmds.CmdAIContext(),
            '/edit tick_event = {"colour": "red"}',
            "'colour' is not a context setting",
        )
        self.call_says(
            cmds.CmdAIContext(),
            '/edit tick_event = {"max_iterations": 42}',
            "Invalid customisation of context 'tick_event': max_iterations must be from 1 to 10",
        )
        self.call(
            cmds.CmdAIContext(),
            '/edit tick_event = {"context_type": "reflection"}',
            "Invalid customisation of context 'tick_event': context_type cannot be changed",
        )
        self.call(
            cmds.CmdAIContext(),
            "/edit tick_event = max_iterations=3",
            "Give the fields as a JSON object",
        )
        self.call(cmds.CmdAIContext(), "/edit tick_event = {oops", "Invalid Context fields")
        self.call(cmds.CmdAIContext(), "/show nowhere", "Unknown context type 'nowhere'")
        assert self.registry.list_context_customizations() == {}


class TestAIExec(PromptCommandTest):
    def test_show_and_set(self):
        out = self.call(
            cmds.CmdAIExec(), "Innkeeper", "Execution config of Innkeeper (static limits):"
        )
        assert "max_iterations_per_tick: 5" in out and "goal_decompose" in out
        assert "Layer" not in out and "Layer" not in cmds.CmdAIExec.__doc__
        out = self.call_says(
            cmds.CmdAIExec(),
            "/set Innkeeper = max_iterations_per_tick=3 sub_agents_enabled=on",
            "Innkeeper's execution config updated (max_iterations_per_tick, sub_agents_enabled).",
        )
        config = self.npc.ai.execution_config
        assert config["max_iterations_per_tick"] == 3 and config["sub_agents_enabled"] is True
        self.call(
            cmds.CmdAIExec(),
            "/set Innkeeper = allowed_tool_categories=safe_chain,TERMINAL",
            "Innkeeper's execution config updated (allowed_tool_categories).",
        )
        assert self.npc.ai.execution_config["allowed_tool_categories"] == ["SAFE_CHAIN", "TERMINAL"]
        self.call(cmds.CmdAIExec(), "/set Innkeeper = allowed_tool_categories=all", "Innkeeper's")
        assert "allowed_tool_categories" not in self.npc.ai.execution_config

    def test_bad_values_change_nothing(self):
        before = self.npc.ai.execution_config
        self.call(
            cmds.CmdAIExec(), "/set Innkeeper = colour=red", "Unknown execution setting 'colour'"
        )
        self.call(
            cmds.CmdAIExec(),
            "/set Innkeeper = max_iterations_per_tick=3 sub_agent_budget=99",
            "sub_agent_budget must be between 0 and 10. Nothing was changed.",
        )
        self.call(
            cmds.CmdAIExec(),
            "/set Innkeeper = multi_action_enabled=maybe",
            "multi_action_enabled must be on or off",
        )
        self.call(
            cmds.CmdAIExec(), "/set Innkeeper = max_iterations_per_tick", "Give key=value pairs"
        )
        self.call(
            cmds.CmdAIExec(),
            "/set Innkeeper = max_iterations_per_tick=2 allowed_tool_categories=EVIL",
            "allowed_tool_categories takes 'all'",
        )
        self.call(cmds.CmdAIExec(), "/set Innkeeper", "Give key=value pairs after '='.")
        self.call(cmds.CmdAIExec(), "Nobodyhere", "No AI NPC called 'Nobodyhere'")
        assert self.npc.ai.execution_config == before


class TestAIFewshot(PromptCommandTest):
    def test_add_list_delete_clear(self):
        self.call(cmds.CmdAIFewshot(), "/list", "No few-shot examples.", caller=self.builder)
        self.call(
            cmds.CmdAIFewshot(),
            "/add What do you sell? || Ale = bread, friend.",
            "Added few-shot example 1.",
            caller=self.builder,
        )
        self.call(
            cmds.CmdAIFewshot(),
            '/add {"user": "Hi", "assistant": "Welcome!"}',
            "Added few-shot example 2.",
        )
        assert self.registry.list_fewshot_examples() == [
            {"user": "What do you sell?", "assistant": "Ale = bread, friend."},
            {"user": "Hi", "assistant": "Welcome!"},
        ]
        out = self.call(
            cmds.CmdAIFewshot(), "/list tick_event", "Few-shot examples (2 of at most 15):"
        )
        assert "1. Player: What do you sell?" in out and "Context tick_event shows them" in out
        out = self.call(cmds.CmdAIFewshot(), "/list sleep", "Few-shot examples")
        assert "Context sleep_consolidate shows them" in out
        self.call(
            cmds.CmdAIFewshot(), "/delete 1", "Deleted few-shot example 1 (What do you sell?)."
        )
        assert self.registry.list_fewshot_examples() == [{"user": "Hi", "assistant": "Welcome!"}]
        self.call(cmds.CmdAIFewshot(), "/clear", "Deleted 1 few-shot example.")

    def test_bad_arguments_and_the_limit(self):
        self.call(cmds.CmdAIFewshot(), "/add just text", "Separate the player's text")
        self.call(
            cmds.CmdAIFewshot(), "/add  || answer", "Few-shot example: 'user' must not be empty."
        )
        self.call(
            cmds.CmdAIFewshot(), "/add tick_event = Hi || Hello", "Few-shot examples are shared"
        )
        self.call(cmds.CmdAIFewshot(), '/add {"user": "Hi"}', 'Give the example as {"user"')
        self.call(cmds.CmdAIFewshot(), "/delete 1", "There are no few-shot examples.")
        for number in range(15):
            self.registry.add_fewshot_example(f"q{number}", f"a{number}")
        self.call(
            cmds.CmdAIFewshot(), "/add one more || no", "There are already 15 few-shot examples"
        )
        self.call(cmds.CmdAIFewshot(), "/delete 16", "The example number must be at most 15.")
        self.call(cmds.CmdAIFewshot(), "/delete x", "The example number must be a whole number")
        self.call(cmds.CmdAIFewshot(), "something", "Give a switch")
        assert len(self.registry.list_fewshot_examples()) == 15


# -- the modules by job ------------------------------------------------------------------------------
def test_prompt_commands_live_in_modules_by_job_and_are_re_exported():
    """``commands/prompts.py`` re-exports the commands of its modules by job (the cmdset and
    docs/commands.md read them there), in the same help order; each module under 700 lines."""
    import importlib
    from pathlib import Path

    homes = {
        "CmdAIPrompt": "prompt_edit",
        "CmdAITemplate": "prompt_edit",
        "CmdAIRegistry": "prompt_io",
        "CmdAIContext": "prompt_config",
        "CmdAIExec": "prompt_config",
        "CmdAIFewshot": "prompt_config",
    }
    assert [command.__name__ for command in cmds.COMMANDS] == list(homes)
    for name, module in homes.items():
        assert getattr(cmds, name).__module__ == f"evennia_ai.commands.{module}"
    for module in set(homes.values()) | {"prompt_common", "prompts"}:
        path = Path(importlib.import_module(f"evennia_ai.commands.{module}").__file__)
        assert len(path.read_text().splitlines()) < 700, module
