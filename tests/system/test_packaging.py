"""The package as published: what the wheel holds, its description, and docs that agree.

The wheel is built from a copy of the checkout (``support.wheel``). Its description is what a
package index shows: it must stand alone, so no relative link and no ``make`` target of the
checkout. README.md and docs/installing.md give the same settings lines and the same torch
pin as the Makefile, and neither tells anyone to ``pip install evennia-ai`` from an index that
does not have it.
"""

import ast
import email
import re
import zipfile

import pytest
from support.wheel import INSTALLING, ROOT, build_wheel, documented_settings, fenced_block

README = ROOT / "README.md"
DESCRIPTION = ROOT / "DESCRIPTION.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK_TARGETS = re.compile(r"\]\(([^)\s]+)[^)]*\)|<([^<>\s]+://[^<>\s]+|[^<>\s]+\.md)>")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    with zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel"))) as archive:
        yield archive


def metadata(archive: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(archive.read(name))


def test_the_wheel_holds_py_typed_the_license_and_the_web_files(wheel):
    names = wheel.namelist()
    assert "evennia_ai/py.typed" in names
    licenses = [n for n in names if ".dist-info/" in n and n.rsplit("/", 1)[-1] == "LICENSE"]
    assert licenses, names
    assert "BSD 3-Clause License" in wheel.read(licenses[0]).decode()
    assert any(n.startswith("evennia_ai/web/templates/") for n in names)
    assert any(n.startswith("evennia_ai/web/static/") for n in names)


def test_the_metadata_declares_license_and_project_urls(wheel):
    meta = metadata(wheel)
    assert meta["License-Expression"] == "BSD-3-Clause"
    urls = dict(value.split(", ", 1) for value in meta.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values()), urls


def test_the_description_stands_alone(wheel):
    description = metadata(wheel).get_payload()
    assert "evennia-ai" in description
    targets = [a or b for a, b in LINK_TARGETS.findall(description)]
    assert targets, "the description links to the documentation"
    relative = [t for t in targets if not re.match(r"https?://", t)]
    assert not relative, f"relative links in the package description: {relative}"
    without_urls = re.sub(r"https?://\S+", "", description)
    assert "make " not in without_urls, "the description names a make target of the checkout"
    assert not re.search(r"\bdocs/", without_urls), "the description names a docs/ file"


def statements(source: str) -> str:
    """``source`` without comments or layout, for comparing two settings blocks."""
    return ast.dump(ast.parse(source))


def test_readme_the_description_and_the_guide_give_the_same_settings_lines():
    guide = statements(documented_settings())
    assert statements(fenced_block(README.read_text(), "## Installation")) == guide
    assert statements(fenced_block(DESCRIPTION.read_text(), "# evennia-ai")) == guide


def test_the_wheel_named_in_the_docs_is_this_version():
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    for doc in DOCS:
        for named in re.findall(r"evennia_ai-([^-\s]+)-py3-none-any\.whl", doc.read_text()):
            assert named == version, f"{doc.name} names evennia_ai-{named}, not {version}"


def test_readme_keeps_the_two_commands_of_a_fresh_machine():
    text = README.read_text()
    assert "make demo" in text and "make test" in text


def code_lines(text: str) -> list[str]:
    """The lines of markdown ``text`` that are code: fenced, or indented by four spaces."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            lines.append(line.split("#", 1)[0].strip())
    return lines


def test_every_doc_pins_the_torch_the_makefile_installs():
    (pin,) = set(re.findall(r"torch==[\d.]+", (ROOT / "Makefile").read_text()))
    cpu = f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu"
    for doc in (README, INSTALLING):
        assert cpu in doc.read_text(), f"{doc.name} lacks {cpu!r}"
    for doc in DOCS:
        text = doc.read_text()
        assert set(re.findall(r"torch==[\d.]+", text)) <= {pin}, doc.name
        for line in code_lines(text):
            assert not line.startswith("pip install torch") or line == cpu, f"{doc.name}: {line}"


def test_no_install_command_asks_an_index_for_the_unpublished_package():
    for doc in DOCS:
        for line in code_lines(doc.read_text()):
            assert not re.fullmatch(
                r"pip install \"?evennia-ai(\[[\w,-]+\])?\"?", line
            ), f"{doc.name}: {line}"


# -- docstrings point at the docs the package ships ---------------------------------------------
PACKAGE_SOURCES = sorted((ROOT / "evennia_ai").rglob("*.py"))
DOC_REFERENCE = re.compile(r'docs/(\w+)\.md(?:,\s+"([^"]+)")?')


def doc_headings(name: str) -> set[str]:
    text = (ROOT / "docs" / f"{name}.md").read_text()
    return {line.lstrip("#").strip().lower() for line in text.splitlines() if line.startswith("#")}


def test_no_docstring_or_comment_cites_a_spec_the_repository_lacks():
    cites = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in PACKAGE_SOURCES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bthe spec\b|\bspec's\b", line)
    ]
    assert not cites, "cite docs/ or say it plainly:\n" + "\n".join(cites)


def test_every_docs_reference_in_the_package_names_a_page_and_section_that_exist():
    broken = []
    for path in PACKAGE_SOURCES:
        for match in DOC_REFERENCE.finditer(path.read_text()):
            page, section = match.group(1), match.group(2)
            where = f"{path.relative_to(ROOT)}: {match.group(0)!r}"
            if not (ROOT / "docs" / f"{page}.md").exists():
                broken.append(f"{where} (no such page)")
            elif section and " ".join(section.split()).lower() not in doc_headings(page):
                broken.append(f"{where} (no such section)")
    assert not broken, "\n".join(broken)
