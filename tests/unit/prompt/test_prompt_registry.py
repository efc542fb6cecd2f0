"""PromptRegistry script: CRUD, bridge, JSON, customisations, few-shots, persistence, one write
per operation, every invalid input leaving the registry exactly as it was, and a registry saved
under the typeclass path it had before it moved into ``prompt/``."""

import json
from datetime import datetime
from unittest import mock

from django.db import connection
from django.test.utils import CaptureQueriesContext
from evennia import ScriptDB, create_script
from evennia.scripts.scripts import DefaultScript
from evennia.utils.idmapper.models import flush_cache
from evennia.utils.test_resources import BaseEvenniaTestCase
from evennia.utils.utils import class_from_module

import evennia_ai
from evennia_ai import prompt_registry
from evennia_ai.prompt import registry as registry_storage
from evennia_ai.prompt import registry_io
from evennia_ai.prompt.components import PromptComponent, get_static_components
from evennia_ai.prompt.templates import PromptTemplate, get_default_template
from evennia_ai.prompt_registry import (
    MAX_FEWSHOT_EXAMPLES,
    REGISTRY_KEY,
    PromptRegistry,
    PromptRegistryError,
    effective_context_config,
    get_prompt_registry,
)


def _writes(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT", "DELETE"))
    ]


class RegistryTestCase(BaseEvenniaTestCase):
    def setUp(self):
        super().setUp()
        self.registry = get_prompt_registry()

    def once(self, func, *args, **kwargs):
        """Run an operation and assert it wrote exactly one Attribute row, once."""
        with CaptureQueriesContext(connection) as ctx:
            result = func(*args, **kwargs)
        writes = _writes(ctx.captured_queries)
        self.assertEqual(len(writes), 1, writes)
        self.assertIn('"typeclasses_attribute"', writes[0])
        self.assertTrue(writes[0].startswith("UPDATE"))
        return result

    def rejected(self, match, func, *args, **kwargs) -> str:
        """Assert the operation raises PromptRegistryError naming ``match`` and changes nothing."""
        before = self.registry.export_json()
        with CaptureQueriesContext(connection) as ctx:
            with self.assertRaises(PromptRegistryError) as info:
                func(*args, **kwargs)
        self.assertIsInstance(info.exception, ValueError)
        self.assertIn(match, str(info.exception))
        self.assertEqual(_writes(ctx.captured_queries), [])
        self.assertEqual(self.registry.export_json(), before)
        return str(info.exception)

    def reloaded(self) -> PromptRegistry:
        """The registry fetched again from the database as fresh objects."""
        pk = self.registry.id
        flush_cache()
        fresh = ScriptDB.objects.get(id=pk)
        self.assertIsNot(fresh, self.registry)
        return fresh


class TestGetOrCreate(RegistryTestCase):
    def test_singleton_script(self):
        reg = self.registry
        self.assertIsInstance(reg, PromptRegistry)
        self.assertIsInstance(reg, DefaultScript)
        self.assertEqual(reg.key, REGISTRY_KEY)
        self.assertTrue(reg.persistent)
        self.assertFalse(reg.interval)
        self.assertIsNone(reg.obj)
        self.assertEqual(get_prompt_registry().id, reg.id)
        self.assertEqual(ScriptDB.objects.filter(db_key=REGISTRY_KEY).count(), 1)
        for name in ("templates", "components", "static_overrides", "context_configs"):
            self.assertEqual(dict(reg.attributes.get(name)), {})
        self.assertEqual(list(reg.db.fewshot_examples), [])

    def test_found_again_after_cache_flush(self):
        self.registry.create_template("t", "T", "x")
        flush_cache()
        again = get_prompt_registry()
        self.assertEqual(again.id, self.registry.id)
        self.assertEqual(again.get_template("t").content, "x")

    def test_script_with_the_key_but_another_typeclass_is_converted(self):
        self.registry.delete()
        flush_cache()
        plain = create_script(DefaultScript, key=REGISTRY_KEY, persistent=True)
        plain.attributes.add(
            "templates",
            {
                "keep": {
                    "key": "keep",
                    "name": "Keep",
                    "description": "",
                    "content": "c",
                    "placeholders": [],
                    "category": "system_prompt",
                    "is_builtin": False,
                    "created": None,
                    "updated": None,
                }
            },
        )
        reg = get_prompt_registry()
        self.assertIsInstance(reg, PromptRegistry)
        self.assertEqual(reg.id, plain.id)
        self.assertEqual(reg.get_template("keep").name, "Keep")
        reg.create_component("c", "C", "x", after_static=0)  # missing attributes recreated


class TestTemplates(RegistryTestCase):
    def test_create_get_and_derived_placeholders(self):
        tpl = self.once(
            self.registry.create_template,
            "pirate",
            "Pirate",
            "You are a {personality} pirate. {greeting}",
            description="Arr",
            category="system_prompt",
        )
        self.assertIsInstance(tpl, PromptTemplate)
        self.assertEqual(tpl.placeholders, ["personality", "greeting"])
        self.assertFalse(tpl.is_builtin)
        got = self.registry.get_template("pirate")
        self.assertEqual(
            (got.name, got.description, got.category), ("Pirate", "Arr", "system_prompt")
        )
        record = self.registry.db.templates["pirate"]
        self.assertIsInstance(record["created"], datetime)
        self.assertEqual(record["created"], record["updated"])
        self.assertFalse(record["is_builtin"])

    def test_declared_placeholders_may_include_unused_ones(self):
        tpl = self.registry.create_template("t", "T", "Hi {name}", placeholders=["name", "mood"])
        self.assertEqual(tpl.placeholders, ["name", "mood"])

    def test_get_falls_back_to_builtin(self):
        self.assertEqual(
            self.registry.get_template("default").content, get_default_template().content
        )
        self.assertTrue(self.registry.get_template("reflection").is_builtin)
        self.assertIsNone(self.registry.get_template("missing"))
        self.assertIsNone(self.registry.get_template(None))

    def test_update(self):
        self.registry.create_template("t", "T", "Hi {name}")
        created = self.registry.db.templates["t"]["created"]
        tpl = self.once(self.registry.update_template, "t", content="Bye {who}", name="T2")
        self.assertEqual((tpl.content, tpl.name, tpl.placeholders), ("Bye {who}", "T2", ["who"]))
        tpl = self.once(
            self.registry.update_template,
            "t",
            placeholders=["who", "extra"],
            description="d",
            category="mine",
        )
        self.assertEqual(
            (tpl.placeholders, tpl.description, tpl.category), (["who", "extra"], "d", "mine")
        )
        record = self.registry.db.templates["t"]
        self.assertEqual(record["created"], created)
        self.assertGreaterEqual(record["updated"], created)

    def test_delete(self):
        self.registry.create_template("t", "T", "x")
        self.once(self.registry.delete_template, "t")
        self.assertIsNone(self.registry.get_template("t"))

    def test_list(self):
        self.registry.create_template("zeta", "Z", "z")
        self.registry.create_template("alpha", "A", "a")
        self.assertEqual(
            [t.key for t in self.registry.list_templates(include_builtin=False)], ["alpha", "zeta"]
        )
        self.assertEqual(
            [t.key for t in self.registry.list_templates()],
            ["alpha", "default", "default_fallback", "reflection", "zeta"],
        )

    def test_clone_builtin_and_user(self):
        tpl = self.once(
            self.registry.clone_template, "default", "my_default", new_name="My default"
        )
        self.assertEqual(tpl.content, get_default_template().content)
        self.assertEqual(
            (tpl.name, tpl.placeholders, tpl.is_builtin), ("My default", ["tick_rate"], False)
        )
        self.registry.update_template("my_default", content="Short. {tick_rate}")
        copy2 = self.registry.clone_template("my_default", "my_default2")
        self.assertEqual(copy2.name, "My default (copy)")
        self.assertEqual(copy2.content, "Short. {tick_rate}")

    def test_invalid_template_input(self):
        self.registry.create_template("mine", "Mine", "Hi {name}")
        reg = self.registry
        self.rejected("already exists", reg.create_template, "mine", "Again", "x")
        self.rejected("built-in", reg.create_template, "default", "Again", "x")
        self.rejected("invalid", reg.create_template, "has space", "X", "x")
        self.rejected("invalid", reg.create_template, "", "X", "x")
        self.rejected("'name' must not be empty", reg.create_template, "new", "  ", "x")
        self.rejected("'content' must be text", reg.create_template, "new", "N", 5)
        msg = self.rejected(
            "missing from the placeholder list",
            reg.create_template,
            "new",
            "N",
            "{a} {b} {c}",
            placeholders=["b"],
        )
        self.assertIn("a, c", msg)
        self.rejected(
            "placeholders must be a list", reg.create_template, "new", "N", "x", placeholders="a"
        )
        self.rejected(
            "placeholders must be a list",
            reg.create_template,
            "new",
            "N",
            "x",
            placeholders=["not valid"],
        )
        self.rejected("No template", reg.update_template, "nope", content="x")
        self.rejected("No template", reg.delete_template, "nope")
        self.rejected("No template", reg.clone_template, "nope", "copy")
        self.rejected("already exists", reg.clone_template, "default", "mine")
        self.rejected("clone it", reg.update_template, "default", content="x")
        self.rejected("clone it", reg.delete_template, "reflection")
        self.rejected("cannot set 'key'", reg.update_template, "mine", key="other")
        self.rejected("cannot set 'is_builtin'", reg.update_template, "mine", is_builtin=True)
        self.rejected("nothing to update", reg.update_template, "mine")
        self.rejected(
            "missing from the placeholder list: zz",
            reg.update_template,
            "mine",
            content="{zz}",
            placeholders=["name"],
        )
        self.rejected(
            "missing from the placeholder list: name", reg.update_template, "mine", placeholders=[]
        )


class TestComponents(RegistryTestCase):
    def test_create_allocates_after_static(self):
        comp = self.once(
            self.registry.create_component,
            "house_rules",
            "House rules",
            "Rules: {rules}",
            after_static=1000,
            description="d",
            role="system",
        )
        self.assertIsInstance(comp, PromptComponent)
        self.assertEqual(
            (comp.id, comp.after_static, comp.is_static, comp.enabled), (1001, 1000, False, True)
        )
        second = self.registry.create_component(
            "b", "B", "x", after_static=1000, role="user", enabled=False
        )
        self.assertEqual((second.id, second.role, second.enabled), (1002, "user", False))
        self.assertEqual(self.registry.create_component("c", "C", "x", after_static=7000).id, 7001)
        record = self.registry.db.components[1001]
        self.assertEqual(
            set(record),
            {
                "id",
                "key",
                "name",
                "description",
                "content",
                "role",
                "after_static",
                "is_static",
                "enabled",
                "created",
                "updated",
            },
        )
        self.assertIs(record["is_static"], False)

    def test_get_by_id_and_key(self):
        self.registry.create_component("mine", "Mine", "x", after_static=0)
        self.assertEqual(self.registry.get_component(1).key, "mine")
        self.assertEqual(self.registry.get_component("1").key, "mine")  # from a command line
        self.assertEqual(self.registry.get_component_by_key("mine").id, 1)
        static = self.registry.get_component(1000)
        self.assertTrue(static.is_static)
        self.assertEqual(static.key, "character_context")
        self.assertEqual(self.registry.get_component_by_key("goals").id, 4000)
        self.assertIsNone(self.registry.get_component(2))
        self.assertIsNone(self.registry.get_component("x"))
        self.assertIsNone(self.registry.get_component_by_key("nope"))

    def test_update_pluggable(self):
        self.registry.create_component("mine", "Mine", "x", after_static=0)
        comp = self.once(
            self.registry.update_component,
            1,
            key="renamed",
            name="N",
            description="D",
            content="C {v}",
            role="assistant",
            enabled=False,
        )
        self.assertEqual(
            (comp.id, comp.key, comp.name, comp.description, comp.content, comp.role, comp.enabled),
            (1, "renamed", "N", "D", "C {v}", "assistant", False),
        )
        self.assertIsNone(self.registry.get_component_by_key("mine"))

    def test_update_static_stores_overrides(self):
        comp = self.once(self.registry.update_component, 0, content="Be kind. {system_prompt}")
        self.assertEqual(comp.content, "Be kind. {system_prompt}")
        self.assertTrue(comp.enabled)
        comp = self.once(self.registry.update_component, 3000, enabled=False)
        self.assertFalse(comp.enabled)
        self.assertEqual(
            dict(self.registry.db.static_overrides),
            {
                0: {"enabled": True, "content": "Be kind. {system_prompt}"},
                3000: {"enabled": False, "content": "{context_buffer}"},
            },
        )
        self.assertFalse(self.registry.get_component_by_key("context_buffer").enabled)
        reset = self.once(self.registry.reset_static_component, 3000)
        self.assertTrue(reset.enabled)
        self.assertNotIn(3000, self.registry.db.static_overrides)

    def test_delete(self):
        self.registry.create_component("mine", "Mine", "x", after_static=0)
        self.once(self.registry.delete_component, 1)
        self.assertIsNone(self.registry.get_component(1))
        # the slot is free again
        self.assertEqual(self.registry.create_component("m2", "M", "x", after_static=0).id, 1)

    def test_lists(self):
        self.registry.create_component("late", "Late", "x", after_static=7000)
        self.registry.create_component("a", "A", "x", after_static=1000)
        self.registry.create_component("b", "B", "x", after_static=1000)
        self.registry.create_component("e", "E", "x", after_static=1500)
        self.registry.update_component(2000, enabled=False)
        every = self.registry.list_components()
        self.assertEqual(
            [c.id for c in every],
            [0, 1000, 1001, 1002, 1500, 1501, 2000, 3000, 4000, 5000, 6000, 7000, 7001],
        )
        self.assertFalse(next(c for c in every if c.id == 2000).enabled)
        self.assertEqual(
            [c.id for c in self.registry.list_components(include_static=False)],
            [1001, 1002, 1501, 7001],
        )
        self.assertEqual(
            [c.key for c in self.registry.list_pluggable_components()], ["a", "b", "e", "late"]
        )
        self.assertEqual([c.id for c in self.registry.list_components_after(1000)], [1001, 1002])
        self.assertEqual([c.id for c in self.registry.list_components_after(1500)], [1501])
        self.assertEqual(self.registry.list_components_after(3000), [])
        self.assertEqual(
            [c.id for c in self.registry.get_all_prompt_components()], [c.id for c in every]
        )

    def test_move(self):
        self.registry.create_component("a", "A", "x", after_static=1000)
        self.registry.create_component("b", "B", "x", after_static=2000)
        moved = self.once(self.registry.move_component, 1001, 2000)
        self.assertEqual((moved.id, moved.after_static, moved.key), (2002, 2000, "a"))
        self.assertIsNone(self.registry.get_component(1001))
        self.assertEqual(self.registry.get_component_by_key("a").id, 2002)
        # Moving after the static component it already follows changes nothing.
        with CaptureQueriesContext(connection) as ctx:
            same = self.registry.move_component(2002, 2000)
        self.assertEqual((same.id, _writes(ctx.captured_queries)), (2002, []))
        self.assertEqual(self.registry.move_component("2002", "0").id, 1)

    def test_component_to_prompt_component_and_assembly_list(self):
        self.registry.create_component("mine", "Mine", "M {x}", after_static=5000, role="user")
        self.registry.update_component(0, content="Custom {system_prompt}")
        self.registry.update_component(3000, enabled=False)  # 6000 carries the event: refused
        comp = self.registry.component_to_prompt_component(5001)
        self.assertEqual(
            (comp.key, comp.role, comp.after_static, comp.is_static), ("mine", "user", 5000, False)
        )
        static = self.registry.component_to_prompt_component(0)
        self.assertEqual(static.content, "Custom {system_prompt}")
        every = self.registry.get_all_prompt_components()
        self.assertTrue(all(isinstance(c, PromptComponent) for c in every))
        self.assertEqual(len(every), 10)
        by_id = {c.id: c for c in every}
        self.assertEqual(by_id[0].content, "Custom {system_prompt}")
        self.assertFalse(by_id[3000].enabled)
        self.assertEqual(by_id[5001].content, "M {x}")
        self.assertEqual(sorted(by_id), [c.id for c in every])
        # Static defaults are untouched by the registry's overrides.
        self.assertEqual(get_static_components()[0].content, "{system_prompt}")

    def test_invalid_component_input(self):
        reg = self.registry
        reg.create_component("mine", "Mine", "x", after_static=0)
        self.rejected("already exists", reg.create_component, "mine", "M", "x", after_static=1000)
        self.rejected(
            "taken by a static component",
            reg.create_component,
            "goals",
            "G",
            "x",
            after_static=1000,
        )
        self.rejected("invalid", reg.create_component, "bad key!", "B", "x", after_static=0)
        self.rejected(
            "unknown role 'narrator'",
            reg.create_component,
            "new",
            "N",
            "x",
            after_static=0,
            role="narrator",
        )
        for bad in (1, 999, 8000, -1, None, "x", True):
            self.rejected(
                "after_static must be a static component ID",
                reg.create_component,
                "new",
                "N",
                "x",
                after_static=bad,
            )
        self.rejected(
            "'enabled' must be true or false",
            reg.create_component,
            "new",
            "N",
            "x",
            after_static=0,
            enabled="yes",
        )
        self.rejected(
            "'name' must not be empty", reg.create_component, "new", "", "x", after_static=0
        )
        # unknown IDs
        for func, args in (
            (reg.update_component, (5,)),
            (reg.delete_component, (5,)),
            (reg.move_component, (5, 1000)),
            (reg.component_to_prompt_component, (5,)),
            (reg.apply_template_to_component, ("default", 5)),
            (reg.save_component_as_template, (5, "tpl")),
            (reg.export_component_json, (5,)),
            (reg.delete_component, ("abc",)),
        ):
            self.rejected("No component with ID", func, *args)
        self.rejected("No component with ID", reg.update_component, 5, content="x")
        # static components: fixed fields, no delete, no move
        for field, value in (
            ("key", "sp"),
            ("name", "N"),
            ("role", "user"),
            ("id", 3),
            ("is_static", False),
            ("description", "d"),
            ("after_static", 0),
        ):
            msg = self.rejected(f"cannot set '{field}'", reg.update_component, 0, **{field: value})
            self.assertIn("fixed", msg)
        self.rejected("cannot set 'key'", reg.update_component, 0, key="x", content="ok")
        self.rejected("static and cannot be deleted", reg.delete_component, 0)
        self.rejected("static components cannot move", reg.move_component, 1000, 2000)
        self.rejected("'content' must be text", reg.update_component, 0, content=None)
        self.rejected("nothing to update", reg.update_component, 0)
        self.rejected("is not a static component ID", reg.reset_static_component, 1)
        # pluggable: fixed fields, bad values, duplicate rename
        self.rejected("aiprompt/move 1 = <static id>", reg.update_component, 1, after_static=1000)
        self.rejected("cannot set 'id'", reg.update_component, 1, id=2)
        self.rejected("cannot set 'bogus'", reg.update_component, 1, bogus=1)
        self.rejected("unknown role", reg.update_component, 1, role="x")
        self.rejected("already taken", reg.update_component, 1, key="tool_result")
        reg.create_component("other", "O", "x", after_static=0)
        self.rejected("already taken", reg.update_component, 1, key="other")
        self.rejected("nothing to update", reg.update_component, 1)
        # invalid after_static for move / list
        self.rejected("after_static must be a static component ID", reg.move_component, 1, 1001)
        self.rejected("after_static must be a static component ID", reg.list_components_after, 1001)

    def test_full_ranges(self):
        now = datetime.now()
        full = {
            cid: {
                "id": cid,
                "key": f"c{cid}",
                "name": "C",
                "description": "",
                "content": "x",
                "role": "system",
                "after_static": 1000,
                "is_static": False,
                "enabled": True,
                "created": now,
                "updated": now,
            }
            for cid in range(1001, 1500)
        }
        full[1] = dict(full[1001], id=1, key="first", after_static=0)
        self.registry.db.components = full
        self.assertEqual(len(self.registry.list_components_after(1000)), 499)
        self.rejected(
            "full", self.registry.create_component, "one_more", "X", "x", after_static=1000
        )
        self.rejected("full", self.registry.move_component, 1, 1000)
        data = json.loads(self.registry.export_component_json(1))
        data.update(key="imported", after_static=1000, id=None)
        self.rejected("full", self.registry.import_component_json, data)
        # other ranges are unaffected
        self.assertEqual(
            self.registry.create_component("ok", "OK", "x", after_static=1500).id, 1501
        )


class TestBridge(RegistryTestCase):
    def test_apply_template_to_component(self):
        self.registry.create_component("mine", "Mine", "old", after_static=1000)
        self.registry.create_template("t", "T", "Template text {x}")
        comp = self.once(self.registry.apply_template_to_component, "t", 1001)
        self.assertEqual(comp.content, "Template text {x}")
        static = self.once(self.registry.apply_template_to_component, "default", 0)
        self.assertEqual(static.content, get_default_template().content)
        self.assertEqual(self.registry.get_component(0).content, get_default_template().content)
        self.rejected("No template", self.registry.apply_template_to_component, "nope", 1001)

    def test_save_component_as_template(self):
        self.registry.create_component(
            "mine", "Mine", "Know {who} and {what}", after_static=1000, description="desc"
        )
        tpl = self.once(self.registry.save_component_as_template, 1001, "from_comp", name="Saved")
        self.assertEqual(
            (tpl.name, tpl.content, tpl.placeholders, tpl.description),
            ("Saved", "Know {who} and {what}", ["who", "what"], "desc"),
        )
        self.assertEqual(self.registry.get_template("from_comp").content, tpl.content)
        default_name = self.registry.save_component_as_template(0, "sp_copy")
        self.assertEqual(
            (default_name.name, default_name.content), ("System Prompt", "{system_prompt}")
        )
        self.rejected("already exists", self.registry.save_component_as_template, 1001, "from_comp")
        self.rejected("built-in", self.registry.save_component_as_template, 1001, "default")


class TestFewshots(RegistryTestCase):
    def test_add_list_remove_clear(self):
        reg = self.registry
        self.assertEqual(self.once(reg.add_fewshot_example, "Hi", "Hello there!"), 0)
        self.assertEqual(reg.add_fewshot_example("Bye", "Farewell."), 1)
        self.assertEqual(
            reg.list_fewshot_examples(),
            [
                {"user": "Hi", "assistant": "Hello there!"},
                {"user": "Bye", "assistant": "Farewell."},
            ],
        )
        self.assertEqual(
            self.once(reg.remove_fewshot_example, 0), {"user": "Hi", "assistant": "Hello there!"}
        )
        self.assertEqual(len(reg.list_fewshot_examples()), 1)
        self.assertEqual(self.once(reg.clear_fewshot_examples), 1)
        self.assertEqual(reg.list_fewshot_examples(), [])
        self.assertEqual(reg.clear_fewshot_examples(), 0)

    def test_limits_and_bad_input(self):
        reg = self.registry
        for i in range(MAX_FEWSHOT_EXAMPLES):
            reg.add_fewshot_example(f"q{i}", f"a{i}")
        self.rejected("already 15", reg.add_fewshot_example, "q", "a")
        reg.clear_fewshot_examples()
        self.rejected("'user' must not be empty", reg.add_fewshot_example, " ", "a")
        self.rejected("'assistant' must be text", reg.add_fewshot_example, "q", None)
        self.rejected("No few-shot example at index 0", reg.remove_fewshot_example, 0)
        reg.add_fewshot_example("q", "a")
        self.rejected("No few-shot example at index -1", reg.remove_fewshot_example, -1)
        self.rejected("No few-shot example at index '0'", reg.remove_fewshot_example, "0")


class TestContextCustomization(RegistryTestCase):
    def test_set_get_clear(self):
        reg = self.registry
        config = self.once(reg.set_context_customization, "tick_event", max_iterations=3)
        self.assertEqual(config.max_iterations, 3)
        config = self.once(reg.set_context_customization, "tick_event", allows_sub_agents=False)
        self.assertEqual((config.max_iterations, config.allows_sub_agents), (3, False))
        self.assertEqual(
            reg.get_context_customization("tick_event"),
            {"max_iterations": 3, "allows_sub_agents": False},
        )
        self.assertEqual(
            reg.list_context_customizations(),
            {"tick_event": {"max_iterations": 3, "allows_sub_agents": False}},
        )
        effective = reg.get_effective_context_config("tick_event")
        self.assertEqual((effective.max_iterations, effective.allows_sub_agents), (3, False))
        self.assertEqual(reg.get_effective_context_config("reflection").max_iterations, 3)
        self.assertTrue(self.once(reg.clear_context_customization, "tick_event", "max_iterations"))
        self.assertEqual(reg.get_effective_context_config("tick_event").max_iterations, 5)
        self.assertFalse(reg.clear_context_customization("tick_event", "max_iterations"))
        self.assertTrue(self.once(reg.clear_context_customization, "tick_event"))
        self.assertTrue(reg.get_effective_context_config("tick_event").allows_sub_agents)
        self.assertFalse(reg.clear_context_customization("tick_event"))
        self.assertEqual(reg.get_context_customization("tick_event"), {})

    def test_invalid_customization(self):
        reg = self.registry
        reg.set_context_customization("reflection", max_iterations=2)
        self.rejected(
            "Unknown context type 'nope'", reg.set_context_customization, "nope", max_iterations=2
        )
        self.rejected("Unknown context type 'nope'", reg.clear_context_customization, "nope")
        self.rejected("Unknown context type 'nope'", reg.get_effective_context_config, "nope")
        self.rejected(
            "max_iterations", reg.set_context_customization, "reflection", max_iterations=11
        )
        self.rejected(
            "max_iterations", reg.set_context_customization, "reflection", max_iterations=0
        )
        self.rejected("bogus", reg.set_context_customization, "reflection", bogus=1)
        self.rejected("nothing to set", reg.set_context_customization, "reflection")
        self.rejected(
            "unknown tools: no_such_tool",
            reg.set_context_customization,
            "reflection",
            tool_filter=["noop", "no_such_tool"],
        )
        self.rejected(
            "unknown component 'mine'",
            reg.set_context_customization,
            "reflection",
            component_overrides={"mine": {"content": "x"}},
        )
        self.rejected(
            "max_iterations",
            reg.import_json,
            {"context_configs": {"reflection": {"max_iterations": 99}}},
        )
        self.assertEqual(reg.get_effective_context_config("reflection").max_iterations, 2)

    def test_tools_and_component_overrides(self):
        from evennia_ai.tools.registry import TOOL_REGISTRY

        reg = self.registry
        self.assertIn("noop", TOOL_REGISTRY.names() or ["noop"])
        config = reg.set_context_customization("reflection", tool_filter=["noop"])
        self.assertEqual(config.tool_filter, ["noop"])
        reg.create_component("mine", "Mine", "x", after_static=0)
        reg.set_context_customization(
            "tick_event", component_overrides={"mine": {"content": "in events"}}
        )
        config = reg.set_context_customization(
            "tick_event", component_overrides={"goals": {"content": "G {goals}"}}
        )
        # overrides merge per component key
        self.assertEqual(config.get_component_content_override("mine"), "in events")
        self.assertEqual(config.get_component_content_override("goals"), "G {goals}")
        # None removes a default override: reflection gets the normal system prompt back
        self.assertIsNotNone(reg.get_effective_context_config("reflection").system_prompt_override)
        reg.set_context_customization("reflection", component_overrides={"system_prompt": None})
        self.assertIsNone(reg.get_effective_context_config("reflection").system_prompt_override)
        # a component deleted later does not break the context at tick time
        reg.delete_component(1)
        self.assertEqual(
            reg.get_effective_context_config("tick_event").get_component_content_override("mine"),
            "in events",
        )
        # a whole-registry import may override components it brings along
        summary = reg.import_json(
            {
                "components": [{"key": "brought", "name": "B", "content": "b", "after_static": 0}],
                "context_configs": {
                    "goal_decompose": {"component_overrides": {"brought": {"content": "x"}}}
                },
            }
        )
        self.assertEqual(summary["context_configs"]["created"], ["goal_decompose"])


class TestJson(RegistryTestCase):
    def _populate(self):
        reg = self.registry
        reg.create_template("pirate", "Pirate", "Arr {name}", description="d", category="fun")
        reg.create_component("house", "House", "Rules {rules}", after_static=1000, role="system")
        reg.create_component("late", "Late", "x", after_static=7000, enabled=False)
        reg.update_component(0, content="Hello. {system_prompt}")
        reg.update_component(3000, enabled=False)
        reg.set_context_customization("tick_event", max_iterations=3)
        reg.add_fewshot_example("Hi", "Ahoy!")

    def _wipe(self):
        reg = self.registry
        for name in ("templates", "components", "static_overrides", "context_configs"):
            reg.attributes.add(name, {})
        reg.attributes.add("fewshot_examples", [])

    def test_template_roundtrip(self):
        self._populate()
        text = self.registry.export_template_json("pirate")
        data = json.loads(text)
        self.assertEqual(
            set(data),
            {
                "key",
                "name",
                "description",
                "content",
                "placeholders",
                "category",
                "is_builtin",
                "created",
                "updated",
            },
        )
        self.assertIsInstance(data["created"], str)
        datetime.fromisoformat(data["created"])
        builtin = json.loads(self.registry.export_template_json("default"))
        self.assertTrue(builtin["is_builtin"])
        self.assertIsNone(builtin["created"])
        self.registry.delete_template("pirate")
        tpl = self.once(self.registry.import_template_json, text)
        self.assertEqual(
            (tpl.key, tpl.content, tpl.category, tpl.placeholders),
            ("pirate", "Arr {name}", "fun", ["name"]),
        )
        self.assertEqual(
            self.registry.db.templates["pirate"]["created"].isoformat(), data["created"]
        )
        # identical re-import is a no-op; a changed one needs overwrite
        self.registry.import_template_json(data)
        data["content"] = "Yo {name}"
        self.rejected("overwrite=True", self.registry.import_template_json, data)
        tpl = self.once(self.registry.import_template_json, data, overwrite=True)
        self.assertEqual(tpl.content, "Yo {name}")
        # minimal dict, placeholders derived
        tpl = self.registry.import_template_json({"key": "mini", "name": "Mini", "content": "{a}"})
        self.assertEqual((tpl.placeholders, tpl.category), (["a"], "system_prompt"))

    def test_component_roundtrip(self):
        self._populate()
        text = self.registry.export_component_json(1001)
        data = json.loads(text)
        self.assertEqual(
            set(data),
            {
                "id",
                "key",
                "name",
                "description",
                "content",
                "role",
                "after_static",
                "is_static",
                "enabled",
                "created",
                "updated",
            },
        )
        self.assertEqual((data["id"], data["after_static"]), (1001, 1000))
        self.registry.delete_component(1001)
        self.registry.create_component("squatter", "S", "x", after_static=1000)  # takes 1001
        comp = self.once(self.registry.import_component_json, text)
        self.assertEqual((comp.id, comp.key, comp.content), (1002, "house", "Rules {rules}"))
        self.registry.delete_component(1001)
        self.registry.delete_component(1002)
        self.assertEqual(self.registry.import_component_json(data).id, 1001)  # keeps its ID
        data["content"] = "Changed"
        self.rejected("overwrite=True", self.registry.import_component_json, data)
        comp = self.once(self.registry.import_component_json, data, overwrite=True)
        self.assertEqual((comp.id, comp.content), (1001, "Changed"))
        data.update(after_static=2000, id=None, content="Moved")
        comp = self.registry.import_component_json(data, overwrite=True)
        self.assertEqual((comp.id, comp.content), (2001, "Moved"))
        self.assertEqual(len(self.registry.list_pluggable_components()), 2)

    def test_static_component_roundtrip(self):
        self._populate()
        data = json.loads(self.registry.export_component_json(0))
        self.assertEqual(
            (data["is_static"], data["content"], data["after_static"]),
            (True, "Hello. {system_prompt}", None),
        )
        self.registry.reset_static_component(0)
        comp = self.once(self.registry.import_component_json, data)  # nothing stored: no conflict
        self.assertEqual(comp.content, "Hello. {system_prompt}")
        self.registry.import_component_json(data)  # identical: nothing to do
        data["enabled"] = False
        self.rejected("overwrite=True", self.registry.import_component_json, data)
        comp = self.once(self.registry.import_component_json, data, overwrite=True)
        self.assertFalse(comp.enabled)
        bad = dict(data, role="user")
        self.rejected("fixed role", self.registry.import_component_json, bad, overwrite=True)
        self.rejected(
            "not a static component key",
            self.registry.import_component_json,
            dict(data, key="house"),
            overwrite=True,
        )

    def test_registry_roundtrip_dry_run_and_summary(self):
        self._populate()
        text = self.registry.export_json()
        data = json.loads(text)
        self.assertEqual(
            set(data),
            {
                "format",
                "version",
                "templates",
                "components",
                "static_overrides",
                "context_configs",
                "fewshot_examples",
            },
        )
        self.assertEqual(
            data["static_overrides"],
            {
                "system_prompt": {"enabled": True, "content": "Hello. {system_prompt}"},
                "context_buffer": {"enabled": False, "content": "{context_buffer}"},
            },
        )
        self._wipe()
        empty = self.registry.export_json()
        summary = self.registry.import_json(text, dry_run=True)
        self.assertTrue(summary["dry_run"] and summary["changed"])
        self.assertEqual(self.registry.export_json(), empty)  # nothing written
        self.assertEqual(summary["templates"]["created"], ["pirate"])
        self.assertEqual(summary["components"]["created"], ["house", "late"])
        self.assertEqual(summary["components"]["ids"], {"house": 1001, "late": 7001})
        self.assertEqual(
            summary["static_overrides"]["created"], ["system_prompt", "context_buffer"]
        )
        self.assertEqual(summary["context_configs"]["created"], ["tick_event"])
        self.assertEqual(summary["fewshot_examples"], {"added": 1, "removed": 0})
        real = self.registry.import_json(text, overwrite=True)
        self.assertFalse(real["dry_run"])
        self.assertEqual(json.loads(self.registry.export_json()), data)
        # Re-importing one's own export changes nothing, even without overwrite.
        again = self.registry.import_json(data)
        self.assertFalse(again["changed"])
        self.assertEqual(again["templates"]["unchanged"], ["pirate"])
        self.assertEqual(again["components"]["unchanged"], ["house", "late"])
        self.assertEqual(json.loads(self.registry.export_json()), data)

    def test_registry_import_writes_each_changed_attribute_once(self):
        self._populate()
        text = self.registry.export_json()
        self._wipe()
        with CaptureQueriesContext(connection) as ctx:
            self.registry.import_json(text, overwrite=True)
        writes = _writes(ctx.captured_queries)
        self.assertEqual(len(writes), 5, writes)
        self.assertTrue(all('"typeclasses_attribute"' in w for w in writes))

    def test_registry_import_conflicts_and_overwrite(self):
        self._populate()
        data = json.loads(self.registry.export_json())
        data["templates"][0]["content"] = "Changed {name}"
        data["components"][0]["content"] = "Changed"
        data["context_configs"]["tick_event"]["max_iterations"] = 4
        data["static_overrides"]["system_prompt"]["content"] = "Other {system_prompt}"
        msg = self.rejected("overwrite=True", self.registry.import_json, data)
        self.assertIn("pirate", msg)
        self.rejected("overwrite=True", self.registry.import_json, data, dry_run=True)
        data["fewshot_examples"] = [{"user": "New", "assistant": "One"}]
        summary = self.registry.import_json(data, overwrite=True)
        self.assertEqual(summary["templates"]["replaced"], ["pirate"])
        self.assertEqual(summary["components"]["replaced"], ["house"])
        self.assertEqual(summary["components"]["unchanged"], ["late"])
        self.assertEqual(summary["context_configs"]["replaced"], ["tick_event"])
        self.assertEqual(summary["static_overrides"]["replaced"], ["system_prompt"])
        self.assertEqual(summary["fewshot_examples"], {"added": 1, "removed": 1})
        self.assertEqual(self.registry.get_template("pirate").content, "Changed {name}")
        self.assertEqual(self.registry.get_component(1001).content, "Changed")
        self.assertEqual(self.registry.get_effective_context_config("tick_event").max_iterations, 4)
        self.assertEqual(
            self.registry.list_fewshot_examples(), [{"user": "New", "assistant": "One"}]
        )
        # Without overwrite, few-shots are appended (duplicates skipped).
        summary = self.registry.import_json(
            {
                "fewshot_examples": [
                    {"user": "New", "assistant": "One"},
                    {"user": "Two", "assistant": "2"},
                ]
            }
        )
        self.assertEqual(summary["fewshot_examples"], {"added": 1, "removed": 0})
        self.assertEqual(len(self.registry.list_fewshot_examples()), 2)

    def test_malformed_and_wrong_shaped_json(self):
        self._populate()
        reg = self.registry
        tpl = json.loads(reg.export_template_json("pirate"))
        comp = json.loads(reg.export_component_json(1001))
        full = json.loads(reg.export_json())
        for func in (reg.import_template_json, reg.import_component_json, reg.import_json):
            self.rejected("Malformed JSON", func, "{not json")
            self.rejected("Malformed JSON", func, "")
            self.rejected("must be an object", func, "[1, 2]")
            self.rejected("must be an object", func, 42)
        # templates
        self.rejected("unknown field(s) extra", reg.import_template_json, dict(tpl, extra=1))
        for field in ("key", "name", "content"):
            bad = dict(tpl)
            del bad[field]
            self.rejected(f"missing required field(s) {field}", reg.import_template_json, bad)
        self.rejected(
            "'content' must be text", reg.import_template_json, dict(tpl, key="n", content=3)
        )
        self.rejected(
            "'is_builtin' must be true or false",
            reg.import_template_json,
            dict(tpl, key="n", is_builtin="no"),
        )
        self.rejected("ISO date-time", reg.import_template_json, dict(tpl, key="n", created="x"))
        self.rejected("ISO date-time", reg.import_template_json, dict(tpl, key="n", updated=5))
        self.rejected(
            "missing from the placeholder list: name",
            reg.import_template_json,
            dict(tpl, key="n", placeholders=[]),
        )
        self.rejected("built in", reg.import_template_json, dict(tpl, key="default"))
        self.rejected("invalid", reg.import_template_json, dict(tpl, key=7))
        # components
        self.rejected(
            "unknown field(s) colour", reg.import_component_json, dict(comp, colour="red")
        )
        for field in ("key", "name", "content", "after_static"):
            bad = dict(comp, key="n")
            del bad[field]
            self.rejected(f"missing required field(s) {field}", reg.import_component_json, bad)
        self.rejected("unknown role", reg.import_component_json, dict(comp, key="n", role="x"))
        self.rejected(
            "after_static must be a static",
            reg.import_component_json,
            dict(comp, key="n", after_static=1001),
        )
        self.rejected(
            "'id' must be a whole number", reg.import_component_json, dict(comp, key="n", id="1001")
        )
        self.rejected(
            "'enabled' must be true or false",
            reg.import_component_json,
            dict(comp, key="n", enabled=1),
        )
        self.rejected(
            "taken by a static component", reg.import_component_json, dict(comp, key="goals")
        )
        # whole registry
        self.rejected("unknown field(s) bogus", reg.import_json, dict(full, bogus=[]))
        self.rejected("'format' must be", reg.import_json, dict(full, format="other"))
        self.rejected("unsupported version", reg.import_json, dict(full, version=2))
        self.rejected("'templates' must be a list", reg.import_json, {"templates": {}})
        self.rejected(
            "'static_overrides' must be a mapping", reg.import_json, {"static_overrides": []}
        )
        self.rejected("templates[0] must be an object", reg.import_json, {"templates": ["x"]})
        self.rejected("components[0] must be an object", reg.import_json, {"components": [1]})
        self.rejected(
            "appears twice",
            reg.import_json,
            {"templates": [dict(tpl, key="n"), dict(tpl, key="n")]},
        )
        self.rejected(
            "appears twice",
            reg.import_json,
            {"components": [dict(comp, key="n"), dict(comp, key="n")]},
        )
        self.rejected(
            "is static", reg.import_json, {"components": [json.loads(reg.export_component_json(0))]}
        )
        self.rejected(
            "not a static component key",
            reg.import_json,
            {"static_overrides": {"house": {"enabled": False}}},
        )
        self.rejected(
            "unknown field(s) role",
            reg.import_json,
            {"static_overrides": {"goals": {"role": "user"}}},
        )
        self.rejected(
            "'enabled' must be true or false",
            reg.import_json,
            {"static_overrides": {"goals": {"enabled": "no"}}},
        )
        self.rejected(
            "Unknown context type",
            reg.import_json,
            {"context_configs": {"nope": {"max_iterations": 2}}},
        )
        self.rejected(
            "max_iterations",
            reg.import_json,
            {"context_configs": {"reflection": {"max_iterations": 99}}},
        )
        self.rejected("must be an object", reg.import_json, {"context_configs": {"reflection": 3}})
        self.rejected(
            "missing required field(s) assistant",
            reg.import_json,
            {"fewshot_examples": [{"user": "x"}]},
        )
        self.rejected(
            "unknown field(s) system",
            reg.import_json,
            {"fewshot_examples": [{"user": "x", "assistant": "y", "system": "z"}]},
        )
        self.rejected(
            "at most 15",
            reg.import_json,
            {"fewshot_examples": [{"user": f"q{i}", "assistant": "a"} for i in range(15)]},
        )
        # One bad entry after good ones: nothing at all is imported.
        self.rejected(
            "unknown role",
            reg.import_json,
            {
                "templates": [dict(tpl, key="fine")],
                "components": [dict(comp, key="fine_c"), dict(comp, key="bad_c", role="x")],
            },
        )
        self.assertIsNone(reg.get_template("fine"))

    def test_export_errors(self):
        self.rejected("No template", self.registry.export_template_json, "nope")
        self.rejected("No component", self.registry.export_component_json, 9)


class TestPersistence(RegistryTestCase):
    def test_everything_survives_a_reload(self):
        reg = self.registry
        reg.create_template("pirate", "Pirate", "Arr {name}")
        reg.create_component("house", "House", "Rules", after_static=1000)
        reg.create_component("tail", "Tail", "t", after_static=7000, role="assistant")
        reg.update_component(0, content="Hi {system_prompt}")
        reg.update_component(3000, enabled=False)  # 4000 carries tick_autonomous's goals
        reg.set_context_customization("reflection", max_iterations=2)
        reg.add_fewshot_example("Hi", "Ahoy!")
        exported = reg.export_json()

        fresh = self.reloaded()
        self.assertIsInstance(fresh, PromptRegistry)
        self.assertEqual(fresh.export_json(), exported)
        self.assertEqual(fresh.get_template("pirate").content, "Arr {name}")
        self.assertEqual(sorted(fresh.db.components), [1001, 7001])  # int keys kept
        self.assertIsInstance(fresh.db.templates["pirate"]["created"], datetime)
        self.assertEqual(fresh.get_component(0).content, "Hi {system_prompt}")
        self.assertFalse(fresh.get_component(3000).enabled)
        self.assertEqual(fresh.get_effective_context_config("reflection").max_iterations, 2)
        self.assertEqual(fresh.list_fewshot_examples(), [{"user": "Hi", "assistant": "Ahoy!"}])
        # and it keeps working on the fresh object
        self.assertEqual(fresh.create_component("more", "M", "x", after_static=1000).id, 1002)
        self.assertEqual(self.reloaded().get_component_by_key("more").id, 1002)

    def test_flush_from_cache(self):
        self.registry.create_template("t", "T", "x")
        pk = self.registry.id
        self.registry.flush_from_cache(force=True)
        fresh = ScriptDB.objects.get(id=pk)
        self.assertEqual(fresh.get_template("t").name, "T")

    def test_reads_are_detached_copies(self):
        self.registry.create_component("house", "House", "Rules", after_static=1000)
        comps = self.registry.list_components()
        comps[0].content = "mutated"
        self.registry.list_fewshot_examples().append({"user": "x", "assistant": "y"})
        self.registry.get_context_customization("tick_event")["max_iterations"] = 1
        with CaptureQueriesContext(connection) as ctx:
            self.registry.get_all_prompt_components()
            self.registry.list_templates()
            self.registry.export_json()
        self.assertEqual(_writes(ctx.captured_queries), [])
        self.assertEqual(self.registry.get_component(0).content, "{system_prompt}")
        self.assertEqual(self.registry.list_fewshot_examples(), [])
        self.assertEqual(self.registry.get_context_customization("tick_event"), {})


# A registry saved by 0.2, before the Script class moved into evennia_ai/prompt/: the row's
# stored typeclass path and its Attributes exactly as that version wrote them.
OLD_PATH = "evennia_ai.prompt_registry.PromptRegistry"
SAVED = datetime(2026, 11, 1, 12, 0)
SAVED_BEFORE_THE_MOVE = {
    "templates": {
        "tavern": {
            "key": "tavern",
            "name": "Tavern voice",
            "description": "How the inn's staff speak",
            "content": "You work at {inn}. Speak plainly.",
            "placeholders": ["inn"],
            "category": "system_prompt",
            "is_builtin": False,
            "created": SAVED,
            "updated": SAVED,
        }
    },
    "components": {
        1: {
            "id": 1,
            "key": "house_rules",
            "name": "House rules",
            "description": "",
            "content": "Never reveal the cellar.",
            "role": "system",
            "after_static": 0,
            "is_static": False,
            "enabled": True,
            "created": SAVED,
            "updated": SAVED,
        }
    },
    "static_overrides": {4000: {"enabled": True, "content": "What you are after:\n{goals}"}},
    "context_configs": {"tick_event": {"max_iterations": 3}},
    "fewshot_examples": [{"user": "Any rooms free?", "assistant": "One, up the stairs."}],
}


class TestRegistrySavedBeforeTheMove(RegistryTestCase):
    """The registry Script moved from ``evennia_ai/prompt_registry.py`` into ``prompt/``: one
    stored under the old typeclass path loads, keeps every customisation, and takes the class's
    path; a new one is created under the class's path."""

    def setUp(self):
        super().setUp()
        self.registry.delete()
        flush_cache()
        old = create_script(DefaultScript, key=REGISTRY_KEY, persistent=True, autostart=False)
        ScriptDB.objects.filter(id=old.id).update(db_typeclass_path=OLD_PATH)
        for name, value in SAVED_BEFORE_THE_MOVE.items():
            old.attributes.add(name, value)
        self.old_id = old.id
        flush_cache()  # from here on, every instance is loaded from the row

    def test_evennia_loads_the_old_path_as_the_registry_class(self):
        loaded = ScriptDB.objects.get(id=self.old_id)
        self.assertEqual(loaded.db_typeclass_path, OLD_PATH)
        self.assertIs(type(loaded), PromptRegistry)  # not Evennia's fallback typeclass
        self.assertEqual(loaded.get_template("tavern").name, "Tavern voice")

    def test_customisations_are_found_through_the_new_code(self):
        with mock.patch.object(registry_storage.logger, "log_info") as logged:
            reg = get_prompt_registry()
        self.assertEqual(reg.id, self.old_id)
        self.assertIsInstance(reg, PromptRegistry)
        template = reg.get_template("tavern")
        self.assertEqual((template.content, template.placeholders), SAVED_CONTENT)
        self.assertEqual(json.loads(reg.export_template_json("tavern"))["key"], "tavern")
        rules = reg.get_component_by_key("house_rules")
        self.assertEqual((rules.id, rules.content, rules.after_static), (1, RULES, 0))
        every = {c.key: c for c in reg.get_all_prompt_components()}
        self.assertEqual(every["house_rules"].content, RULES)
        self.assertEqual(every["goals"].content, "What you are after:\n{goals}")
        self.assertEqual(reg.get_effective_context_config("tick_event").max_iterations, 3)
        self.assertEqual(effective_context_config("tick_event").max_iterations, 3)
        self.assertEqual(reg.list_fewshot_examples(), SAVED_BEFORE_THE_MOVE["fewshot_examples"])
        # the stored path now is the class's own, once; the contents are as they were
        self.assertEqual(reg.db_typeclass_path, PromptRegistry.path)
        self.assertEqual(
            ScriptDB.objects.get(id=self.old_id).db_typeclass_path,
            "evennia_ai.prompt.registry.PromptRegistry",
        )
        self.assertEqual(list(PromptRegistry.objects.all()), [reg])
        self.assertEqual(logged.call_count, 1)
        self.assertIn(OLD_PATH, logged.call_args.args[0])
        flush_cache()
        again = get_prompt_registry()
        self.assertEqual(again.id, self.old_id)
        self.assertEqual(again.get_component_by_key("house_rules").content, RULES)
        self.assertEqual(json.loads(again.export_json())["context_configs"], CONFIGS)

    def test_the_path_update_writes_only_that_column(self):
        with CaptureQueriesContext(connection) as ctx:
            get_prompt_registry()
        writes = _writes(ctx.captured_queries)
        self.assertEqual(len(writes), 1, writes)
        self.assertIn('"db_typeclass_path"', writes[0])
        self.assertNotIn("typeclasses_attribute", writes[0])

    def test_the_effective_config_needs_no_registry_fetched_first(self):
        self.assertEqual(effective_context_config("tick_event").max_iterations, 3)
        self.assertEqual(effective_context_config("reflection").max_iterations, 3)

    def test_a_new_registry_is_created_under_the_class_path(self):
        ScriptDB.objects.get(id=self.old_id).delete()
        flush_cache()
        reg = get_prompt_registry()
        self.assertNotEqual(reg.id, self.old_id)
        self.assertEqual(reg.db_typeclass_path, "evennia_ai.prompt.registry.PromptRegistry")
        self.assertEqual(reg.list_templates(include_builtin=False), [])

    def test_the_old_import_path_is_the_same_class_and_functions(self):
        self.assertIs(PromptRegistry, registry_storage.PromptRegistry)
        self.assertEqual(OLD_PATH, prompt_registry.LEGACY_TYPECLASS_PATH)
        self.assertIs(class_from_module(OLD_PATH), registry_storage.PromptRegistry)
        for name in ("get_prompt_registry", "effective_context_config"):
            self.assertIs(getattr(prompt_registry, name), getattr(registry_storage, name))
            self.assertIs(getattr(evennia_ai, name), getattr(registry_storage, name))
        self.assertIs(PromptRegistryError, registry_io.PromptRegistryError)
        self.assertEqual(prompt_registry.EXPORT_FORMAT, "evennia_ai.prompt_registry")


SAVED_CONTENT = ("You work at {inn}. Speak plainly.", ["inn"])
RULES = "Never reveal the cellar."
CONFIGS = {"tick_event": {"max_iterations": 3}}
