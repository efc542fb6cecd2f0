"""Fuzzing the PromptRegistry JSON import with hostile and malformed input.

Whatever is imported (random JSON values, JSON text that is not JSON, mutated valid exports,
wrong types in every field, huge strings, unknown keys, deep nesting), the import either
succeeds or raises :class:`PromptRegistryError` with a message; after a failed import, and
after any dry run, the registry exports exactly as it did before. No other exception type may
escape: an operator pasting a broken file must get a clear error, never a traceback.
"""

import copy
import json
import os

from evennia.utils.test_resources import BaseEvenniaTestCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evennia_ai.prompt_registry import (
    COMPONENT_FIELDS,
    REGISTRY_SECTIONS,
    TEMPLATE_FIELDS,
    PromptRegistryError,
    get_prompt_registry,
)

EXAMPLES = int(os.environ.get("EVENNIA_AI_FUZZ_EXAMPLES", "80"))  # more: a deeper local run
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=15,
)
field_names = st.sampled_from(
    sorted(
        set(REGISTRY_SECTIONS)
        | set(TEMPLATE_FIELDS)
        | set(COMPONENT_FIELDS)
        | {
            "user",
            "assistant",
            "enabled",
            "content",
            "tool_filter",
            "max_iterations",
            "execution_mode",
            "component_overrides",
            "unknown_key",
            "__proto__",
        }
    )
)
shaped_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(field_names | st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)
WRONG_TYPES = [None, True, 0, -1, 2.5, float("nan"), "", "x" * 70, [], [1], {}, {"a": 1}]
HUGE = "\U0001f480" * 100_000 + "{huge}"


class FuzzBase(BaseEvenniaTestCase):
    """A registry holding one of everything, so imports have something to collide with."""

    def setUp(self):
        super().setUp()
        self.registry = get_prompt_registry()
        reg = self.registry
        if not reg.list_templates(include_builtin=False):
            reg.create_template(
                "house_style", "House style", "Speak like {npc_name}.", description="d"
            )
            reg.create_component("house_rules", "House rules", "No fighting.", after_static=0)
            reg.update_component(0, content="Custom identity.")
            reg.set_context_customization("tick_event", max_iterations=3)
            reg.add_fewshot_example("Hello", "Well met.")
        self.valid = json.loads(reg.export_json())

    def check_import(self, data, overwrite=False, dry_run=False, method="import_json"):
        """Import ``data``; a failure must be a PromptRegistryError that changed nothing."""
        before = self.registry.export_json()
        importer = getattr(self.registry, method)
        kwargs = {"overwrite": overwrite}
        if method == "import_json":
            kwargs["dry_run"] = dry_run
        try:
            result = importer(data, **kwargs)
        except PromptRegistryError as err:
            message = str(err)
            assert message and "Traceback" not in message and len(message) <= 1000, message[:300]
            assert self.registry.export_json() == before, "a failed import changed the registry"
            return err
        except Exception as err:  # anything else is a bug: name the input in the failure
            raise AssertionError(
                f"{method} raised {type(err).__name__}: {err!s:.300} for input {str(data)[:300]!r}"
            ) from None
        if dry_run:
            assert self.registry.export_json() == before, "a dry run changed the registry"
        # a successful import must leave an exportable, re-importable registry
        exported = self.registry.export_json()
        self.registry.import_json(exported, dry_run=True)
        return result


# Hypothesis refuses @given on methods of Django test cases (it wants its own per-example
# transactions); each property below is a local function run inside one test's transaction.
class TestRandomInput(FuzzBase):
    def test_random_json_values(self):
        @FUZZ
        @given(value=json_values, overwrite=st.booleans(), dry_run=st.booleans())
        def prop(value, overwrite, dry_run):
            self.check_import(value, overwrite=overwrite, dry_run=dry_run)

        prop()

    def test_random_json_text(self):
        @FUZZ
        @given(value=json_values, overwrite=st.booleans())
        def prop(value, overwrite):
            self.check_import(json.dumps(value), overwrite=overwrite)

        prop()

    def test_text_and_bytes_that_are_not_json(self):
        @FUZZ
        @given(text=st.text(max_size=200) | st.binary(max_size=200))
        def prop(text):
            self.check_import(text)

        prop()

    def test_registry_shaped_objects(self):
        @FUZZ
        @given(
            value=st.dictionaries(field_names, shaped_values, max_size=7), overwrite=st.booleans()
        )
        def prop(value, overwrite):
            self.check_import(value, overwrite=overwrite)

        prop()

    def test_single_template_and_component_imports(self):
        @FUZZ
        @given(
            value=st.dictionaries(field_names, shaped_values, max_size=7),
            overwrite=st.booleans(),
            method=st.sampled_from(["import_template_json", "import_component_json"]),
        )
        def prop(value, overwrite, method):
            self.check_import(value, overwrite=overwrite, method=method)

        prop()

    def test_deeply_nested_json_text(self):
        for depth in (1_000, 100_000):
            for text in ("[" * depth + "]" * depth, '{"templates":' * depth + "1" + "}" * depth):
                with self.subTest(depth=depth, start=text[:12]):
                    assert isinstance(self.check_import(text), PromptRegistryError)

    def test_deeply_nested_dict(self):
        value = {}
        for _ in range(5000):
            value = {"templates": [value]}
        self.check_import(value)


keys = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_-]{0,10}\Z") | st.text(max_size=10)
texts = st.text(max_size=60) | st.sampled_from(["{npc_name}", "{", "}", "{{x}}", "{a}{b}", ""])
maybe_times = (
    st.none()
    | st.text(max_size=30)
    | st.sampled_from(
        ["2026-01-01T00:00:00", "2026-01-01T00:00:00+00:00", "9999-12-31", "0001-01-01T00:00"]
    )
)
templates = st.fixed_dictionaries(
    {"key": keys, "name": texts, "content": texts},
    optional={
        "description": texts,
        "placeholders": st.none() | st.lists(keys, max_size=3),
        "category": texts,
        "is_builtin": st.booleans(),
        "created": maybe_times,
        "updated": maybe_times,
    },
)
components = st.fixed_dictionaries(
    {
        "key": keys,
        "name": texts,
        "content": texts,
        "after_static": st.integers(-2, 8000)
        | st.none()
        | st.sampled_from([0, 1000, 1500, 2000, 3000, 7000, 7000.0, "0"]),
    },
    optional={
        "id": st.none() | st.integers(-5, 10_000) | st.sampled_from([1, 2, 999, 1001, 1000]),
        "description": texts,
        "role": st.sampled_from(["system", "user", "assistant", "x"]),
        "enabled": st.booleans() | st.none(),
        "is_static": st.booleans(),
        "created": maybe_times,
        "updated": maybe_times,
    },
)
fewshots = st.fixed_dictionaries({"user": texts, "assistant": texts})
registries = st.fixed_dictionaries(
    {},
    optional={
        "format": st.just("evennia_ai.prompt_registry"),
        "version": st.just(1),
        "templates": st.lists(templates, max_size=3),
        "components": st.lists(components, max_size=3),
        "static_overrides": st.dictionaries(
            keys | st.sampled_from(["system_prompt", "goals", "tool_result"]),
            st.fixed_dictionaries(
                {}, optional={"enabled": st.booleans() | st.none(), "content": texts | st.none()}
            ),
            max_size=2,
        ),
        "context_configs": st.dictionaries(
            st.sampled_from(["tick_event", "reflection", "nope"]),
            st.dictionaries(
                st.sampled_from(
                    ["max_iterations", "tool_filter", "execution_mode", "token_budget", "junk"]
                ),
                scalars | st.lists(st.text(max_size=8), max_size=2),
                max_size=2,
            ),
            max_size=2,
        ),
        "fewshot_examples": st.lists(fewshots, max_size=4),
    },
)


class TestAlmostValidInput(FuzzBase):
    """Records with the right shape and random values: deep into each field's validation."""

    def test_almost_valid_registries(self):
        @FUZZ
        @given(value=registries, overwrite=st.booleans(), dry_run=st.booleans())
        def prop(value, overwrite, dry_run):
            self.check_import(value, overwrite=overwrite, dry_run=dry_run)

        prop()

    def test_almost_valid_templates_and_components(self):
        @FUZZ
        @given(template=templates, component=components, overwrite=st.booleans())
        def prop(template, component, overwrite):
            self.check_import(template, overwrite=overwrite, method="import_template_json")
            self.check_import(component, overwrite=overwrite, method="import_component_json")

        prop()


def _paths(value, path=()):
    """Every path into a JSON value (the root included)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, path + (index,))


def _set(root, path, value):
    if not path:
        return value
    target = root
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return root


def _delete(root, path):
    target = root
    for step in path[:-1]:
        target = target[step]
    if isinstance(target, dict):
        target.pop(path[-1], None)
    else:
        del target[path[-1]]
    return root


class TestMutatedExports(FuzzBase):
    def test_mutated_valid_export(self):
        @FUZZ
        @given(data=st.data())
        def prop(data):
            self.mutate_and_import(data)

        prop()

    def mutate_and_import(self, data):
        export = copy.deepcopy(self.valid)
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            paths = list(_paths(export)) if isinstance(export, (dict, list)) else [()]
            path = data.draw(st.sampled_from(paths), label="path")
            kind = data.draw(
                st.sampled_from(
                    ["replace", "wrong_type", "delete", "unknown_key", "huge", "duplicate"]
                ),
                label="mutation",
            )
            if kind == "replace":
                export = _set(export, path, data.draw(json_values, label="value"))
            elif kind == "wrong_type":
                export = _set(export, path, copy.deepcopy(data.draw(st.sampled_from(WRONG_TYPES))))
            elif kind == "delete" and path:
                export = _delete(export, path)
            elif kind == "unknown_key":
                parent = export
                for step in path:
                    parent = parent[step] if isinstance(parent, (dict, list)) else parent
                if isinstance(parent, dict):
                    parent[data.draw(st.text(min_size=1, max_size=10), label="key")] = 1
            elif kind == "huge":
                export = _set(export, path, HUGE)
            elif kind == "duplicate":
                for section in ("templates", "components", "fewshot_examples"):
                    if (
                        isinstance(export, dict)
                        and isinstance(export.get(section), list)
                        and export[section]
                    ):
                        export[section].append(copy.deepcopy(export[section][0]))
        overwrite = data.draw(st.booleans(), label="overwrite")
        as_text = data.draw(st.booleans(), label="as_text")
        self.check_import(json.dumps(export) if as_text else export, overwrite=overwrite)

    def test_wrong_type_in_every_field(self):
        """Every leaf and container of a valid export, replaced by every wrong type in turn."""
        failures = 0
        for path in _paths(self.valid):
            if not path:
                continue
            for wrong in WRONG_TYPES:
                export = _set(copy.deepcopy(self.valid), path, copy.deepcopy(wrong))
                for overwrite in (False, True):
                    if isinstance(
                        self.check_import(export, overwrite=overwrite), PromptRegistryError
                    ):
                        failures += 1
        assert failures  # most of these are invalid; the check is that none escaped

    def test_huge_strings_everywhere(self):
        for path in _paths(self.valid):
            if path:
                export = _set(copy.deepcopy(self.valid), path, HUGE)
                self.check_import(export, overwrite=True)
                self.check_import(export, overwrite=False, dry_run=True)

    def test_valid_export_round_trips_unchanged(self):
        before = self.registry.export_json()
        summary = self.check_import(self.valid)
        assert summary["changed"] is False
        assert self.registry.export_json() == before
