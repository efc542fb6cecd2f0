"""The tests' folders mirror the package: unit tests by subpackage, system tests apart.

``tests/unit/<subpackage>/`` holds the tests of ``evennia_ai.<subpackage>``, ``tests/unit/`` itself
those of the package's root modules (``conf``, ``startstop``, ``formatting``...), and
``tests/system/`` the tests of the whole game or checkout (real servers, the browser, the install,
the layers, the packaging, the harness). ``tests/`` itself keeps only what the suite shares: the
conftest, the settings modules and the URL conf they name, ``support/``.

Every test folder is a package (an ``__init__.py``): with pytest's default import mode a test
module is then imported by its dotted name (``unit.engine.test_assistant_tick``), so two modules
of the same name in different folders cannot collide, and a test module that builds on another
imports it by that name. ``tests/`` itself is not a package: a dependency of Evennia installs a
top-level package named ``tests``.
"""

import ast
import fnmatch
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "evennia_ai"

#: What the suite shares, kept at ``tests/``'s root (the settings modules are found through
#: ``pythonpath = ["tests"]`` and ``DJANGO_SETTINGS_MODULE``).
SHARED = {
    "conftest.py",
    "evennia_ai_test_settings.py",
    "evennia_ai_pg_test_settings.py",
    "web_test_urls.py",
}

WHERE = (
    "tests/unit/<subpackage>/ for a test of evennia_ai.<subpackage> (tests/unit/ itself for a "
    "root module such as evennia_ai.conf or evennia_ai.startstop), tests/system/ for a test "
    "that starts a real game server or browser or checks the checkout as a whole"
)


def _is_test_file(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _test_folders() -> list[Path]:
    return sorted(
        {path.parent for top in ("unit", "system") for path in (TESTS / top).rglob("*.py")}
        | {TESTS / "unit", TESTS / "system"}
    )


def test_no_test_file_at_the_root_of_tests_nor_outside_unit_and_system(pytestconfig):
    patterns = pytestconfig.getini("python_files")
    stray = sorted(
        str(path.relative_to(TESTS.parent))
        for path in TESTS.rglob("*.py")
        if path.relative_to(TESTS).parts[0] not in ("unit", "system")
        and path.name not in SHARED
        and _is_test_file(path.name, patterns)
    )
    assert not stray, (
        f"test files outside tests/unit/ and tests/system/: {', '.join(stray)}. "
        f"Move each (git mv) to {WHERE}; "
        "fix its imports of other test modules to their dotted names "
        "(from unit.engine.test_assistant_tick import AssistantTestBase)."
    )


def test_every_test_folder_is_a_package():
    missing = [
        str(folder.relative_to(TESTS.parent))
        for folder in _test_folders()
        if not (folder / "__init__.py").exists()
    ]
    assert not missing, (
        f"test folders without an __init__.py: {', '.join(missing)}. Add one (a docstring saying "
        "what the folder tests): without it pytest imports the folder's modules by their bare "
        "names, which collide with same-named modules elsewhere in tests/."
    )


def test_unit_folders_mirror_the_package():
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    strays = sorted(
        folder.name
        for folder in (TESTS / "unit").iterdir()
        if folder.is_dir() and folder.name != "__pycache__" and folder.name not in subpackages
    )
    assert not strays, (
        f"tests/unit/ folders that mirror no subpackage of evennia_ai: {', '.join(strays)}. "
        f"Put those tests in {WHERE}."
    )


def test_test_modules_import_each_other_by_dotted_name():
    dotted = {
        path.stem: ".".join(path.relative_to(TESTS).with_suffix("").parts)
        for top in ("unit", "system")
        for path in (TESTS / top).rglob("test_*.py")
    }
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0].startswith("test_"):
                    hint = dotted.get(name, "its dotted name under tests/")
                    where = f"{path.relative_to(TESTS.parent)}:{node.lineno}"
                    wrong.append(f"{where} imports {name} (import it as {hint})")
    assert not wrong, "test modules imported by their bare names: " + "; ".join(wrong)
