"""Projects: creation, listing, context paging with swap, updates, rendering."""

import copy
from datetime import datetime, timedelta, timezone

import pytest

from evennia_ai.workspace import projects as P

T0 = datetime(2025, 12, 6, 10, 0, tzinfo=timezone.utc)
T1 = T0 + timedelta(hours=4, minutes=30)


def _ok(out):
    data, result = out
    assert result.success, result.message
    return data


def _two():
    data = _ok(
        P.create_project(
            None, "build_tavern", "Construct a tavern", "Foundation done", activate=True, now=T0
        )
    )
    return _ok(
        P.create_project(data, "quest_design", "Design a quest", "Three acts drafted", now=T0)
    )


def test_empty_projects():
    assert P.empty_projects() == {"active": None, "slots": {}}
    assert P.empty_projects() is not P.empty_projects()


def test_create_project_layout():
    data, result = P.create_project(
        P.empty_projects(),
        "build_tavern",
        "Construct a tavern",
        "Foundation done",
        activate=True,
        now=T0,
    )
    assert result.success and result.data["key"] == "build_tavern"
    assert data == {
        "active": "build_tavern",
        "slots": {
            "build_tavern": {
                "summary": "Construct a tavern",
                "context": "Foundation done",
                "status": "active",
                "created_at": "2025-12-06T10:00:00Z",
                "last_active": "2025-12-06T10:00:00Z",
            }
        },
    }


def test_create_project_not_activated_is_paused_and_keeps_active():
    data = _two()
    assert data["active"] == "build_tavern"
    assert data["slots"]["quest_design"]["status"] == "paused"


def test_create_and_activate_pauses_current():
    data = _two()
    data, result = P.create_project(data, "Market Stall", "Run a stall", activate=True, now=T1)
    assert result.success and "'build_tavern' is paused" in result.message
    assert data["active"] == "market_stall"
    assert data["slots"]["build_tavern"]["status"] == "paused"
    assert data["slots"]["build_tavern"]["context"] == "Foundation done"


def test_create_project_normalises_key():
    data = _ok(P.create_project(None, "  Build-The Tavern ", "x", now=T0))
    assert "build_the_tavern" in data["slots"]
    assert P.normalise_key(None) == ""


@pytest.mark.parametrize(
    "key, summary, context, fragment",
    [
        ("", "s", "", "not valid"),
        ("bad/key!", "s", "", "not valid"),
        ("x" * 41, "s", "", "not valid"),
        (None, "s", "", "not valid"),
        ("_hidden", "s", "", "not valid"),
        ("build_tavern", "s", "", "already exists"),
        ("new_one", "", "", "summary must not be empty"),
        ("new_one", 5, "", "summary must be text"),
        ("new_one", "x" * 301, "", "summary is too long"),
        ("new_one", "s", "x" * 4001, "context is too long"),
        ("new_one", "s", ["list"], "context must be text"),
    ],
)
def test_create_project_errors(key, summary, context, fragment):
    data = _two()
    before = copy.deepcopy(data)
    new, result = P.create_project(data, key, summary, context, now=T1)
    assert not result.success and fragment in result.message
    assert new == before and data == before


def test_create_project_cap_drops_oldest_completed(monkeypatch):
    monkeypatch.setattr(P, "MAX_PROJECTS", 2)
    data = _two()
    _, result = P.create_project(data, "third", "s", now=T1)
    assert not result.success and "2 unfinished projects" in result.message
    data = _ok(P.swap_project(data, "quest_design", now=T1))
    data = _ok(P.update_project(data, status="completed", now=T1))
    data, result = P.create_project(data, "third", "s", now=T1)
    assert result.success and "dropped the old completed project 'quest_design'" in result.message
    assert set(data["slots"]) == {"build_tavern", "third"}


def test_list_projects_active_first_then_recent():
    data = _two()
    data = _ok(P.create_project(data, "later", "Later one", now=T1))
    rows = P.list_projects(data)
    assert [r["key"] for r in rows] == ["build_tavern", "later", "quest_design"]
    assert rows[0] == {
        "key": "build_tavern",
        "summary": "Construct a tavern",
        "status": "active",
        "active": True,
        "last_active": "2025-12-06T10:00:00Z",
    }
    assert P.list_projects(None) == []


def test_swap_project_pages_context_out_and_in():
    data = _two()
    before = copy.deepcopy(data)
    new, result = P.swap_project(
        data, "quest_design", current_project_update="Walls 60% done", now=T1
    )
    assert data == before  # input untouched
    assert result.success and result.data["context"] == "Three acts drafted"
    assert result.data["previous"] == "build_tavern"
    assert "with its progress saved" in result.message
    assert new["active"] == "quest_design"
    tavern, quest = new["slots"]["build_tavern"], new["slots"]["quest_design"]
    assert tavern["status"] == "paused" and tavern["context"] == "Walls 60% done"
    assert quest["status"] == "active"
    assert tavern["last_active"] == quest["last_active"] == "2025-12-06T14:30:00Z"


def test_swap_without_update_keeps_context():
    data = _ok(P.swap_project(_two(), "quest_design", now=T1))
    assert data["slots"]["build_tavern"]["context"] == "Foundation done"


def test_swap_to_active_project_saves_update_only():
    data, result = P.swap_project(_two(), "build_tavern", "Walls up", now=T1)
    assert result.success and "already active" in result.message and "updated" in result.message
    assert data["slots"]["build_tavern"]["context"] == "Walls up"
    assert data["slots"]["build_tavern"]["status"] == "active"


def test_swap_reopens_completed_and_without_active():
    data = _two()
    data = _ok(P.update_project(data, status="completed", now=T1))
    assert data["active"] is None
    data, result = P.swap_project(data, "build_tavern", "ignored", now=T1)
    assert result.success and "(reopened)" in result.message and "not saved" in result.message
    assert data["active"] == "build_tavern" and data["slots"]["build_tavern"]["status"] == "active"


@pytest.mark.parametrize(
    "key, update, fragment",
    [
        ("nope", None, "No project 'nope'. Projects: build_tavern, quest_design."),
        ("", None, "not valid"),
        ("quest_design", "x" * 4001, "too long"),
        ("quest_design", 12, "must be text"),
    ],
)
def test_swap_project_errors(key, update, fragment):
    data = _two()
    new, result = P.swap_project(data, key, update, now=T1)
    assert not result.success and fragment in result.message and new == data


def test_swap_unknown_with_no_projects():
    _, result = P.swap_project(None, "x")
    assert "There are no projects yet" in result.message


def test_update_project_context_summary_status():
    data = _two()
    new, result = P.update_project(data, context="Walls 70%", summary="Build the tavern", now=T1)
    assert result.success and "context and summary" in result.message
    slot = new["slots"]["build_tavern"]
    assert slot["context"] == "Walls 70%" and slot["summary"] == "Build the tavern"
    assert slot["last_active"] == "2025-12-06T14:30:00Z"
    assert data["slots"]["build_tavern"]["context"] == "Foundation done"
    new, result = P.update_project(new, status="Paused", now=T1)
    assert result.success and new["active"] is None and "no project is active" in result.message
    assert new["slots"]["build_tavern"]["status"] == "paused"


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({}, "Nothing to update"),
        ({"status": "done"}, "Status must be one of"),
        ({"status": None, "summary": ""}, "summary must not be empty"),
        ({"context": "x" * 4001}, "too long"),
    ],
)
def test_update_project_errors(kwargs, fragment):
    data = _two()
    new, result = P.update_project(data, now=T1, **kwargs)
    assert not result.success and fragment in result.message and new == data


def test_update_project_requires_active():
    _, result = P.update_project(P.empty_projects(), context="x")
    assert not result.success and "No project is active" in result.message


def test_active_project_and_dangling_active_key():
    data = _two()
    assert P.active_project(data)["key"] == "build_tavern"
    assert P.active_project(data)["context"] == "Foundation done"
    assert P.active_project(None) is None
    assert P.active_project({"active": "ghost", "slots": {}}) is None


def test_render_active_project():
    data = _two()
    text = P.render_active_project(data)
    assert text == (
        "## Current project: build_tavern\nSummary: Construct a tavern\n"
        "Where it stands:\nFoundation done\n"
        "Paused projects (swap_project to resume): quest_design"
    )
    paused = _ok(P.update_project(data, status="paused", now=T1))
    assert P.render_active_project(paused) == (
        "## Projects\nNo project is active. Paused (swap_project to resume): build_tavern, quest_design"
    )
    assert P.render_active_project(None) == ""
    lone = _ok(P.create_project(None, "solo", "Alone", activate=True, now=T0))
    assert P.render_active_project(lone) == "## Current project: solo\nSummary: Alone"
