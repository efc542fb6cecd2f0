"""Projects: pageable context slots for long-running work (pure logic).

An assistant's projects are one plain dict (kept on the character as ``projects``)::

    {"active": "build_tavern",
     "slots": {"build_tavern": {"summary": "...", "context": "...", "status": "active",
                                "created_at": "2025-12-06T10:00:00Z",
                                "last_active": "2025-12-06T14:30:00Z"}}}

Only the active project's context is shown in the prompt; the others are "paged out" and come
back with :func:`swap_project`, which can first save a fresh summary of where the current
project stands (``current_project_update``) as that project's context.

Functions that change projects take the current dict and return ``(new_projects, OpResult)``
without modifying what they were given (on failure the dict passed in comes back).

Keys are short slugs: the key given is lowercased and runs of spaces or dashes become ``_``
("Build Tavern" -> ``build_tavern``), then it must match ``[a-z0-9][a-z0-9_]{0,39}``.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from typing import Any

from evennia_ai.utils import iso_utc
from evennia_ai.workspace.results import OpResult, clean_text

STATUSES = ("active", "paused", "completed")
MAX_KEY = 40  # characters of a project key
MAX_SUMMARY = 300  # characters of a summary
MAX_CONTEXT = 4000  # characters of a project's context (about 1000 tokens)
MAX_PROJECTS = 20  # slots kept; creating one more drops the oldest completed project

_KEY = re.compile(r"^[a-z0-9][a-z0-9_]{0,%d}$" % (MAX_KEY - 1))


def empty_projects() -> dict:
    """A new, empty projects dict."""
    return {"active": None, "slots": {}}


def _normalised(projects: dict | None) -> dict:
    data = copy.deepcopy(projects) if projects else empty_projects()
    data.setdefault("active", None)
    data.setdefault("slots", {})
    if data["active"] not in data["slots"]:
        data["active"] = None
    return data


def normalise_key(key: Any) -> str:
    """The slug form of a project key ("Build Tavern" -> "build_tavern")."""
    if not isinstance(key, str):
        return ""
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def _check_key(key: Any) -> tuple[str | None, str | None]:
    slug = normalise_key(key)
    if not _KEY.match(slug):
        return None, (
            f"Project key {key!r} is not valid: use a short slug of letters, digits and "
            f"underscores (at most {MAX_KEY} characters), e.g. 'build_tavern'."
        )
    return slug, None


def _check_text(
    value: Any, what: str, limit: int, *, required: bool
) -> tuple[str | None, str | None]:
    if value is not None and not isinstance(value, str):
        return None, f"The {what} must be text."
    text = (value or "").strip()
    if what == "summary":
        text = clean_text(text)
    if required and not text:
        return None, f"The {what} must not be empty."
    if len(text) > limit:
        return (
            None,
            f"The {what} is too long ({len(text)} characters, at most {limit}); shorten it.",
        )
    return text, None


def _unknown(key: Any, projects: dict) -> OpResult:
    keys = sorted(projects["slots"])
    known = f" Projects: {', '.join(keys)}." if keys else " There are no projects yet."
    return OpResult.fail(f"No project {key!r}.{known}")


def _pause_active(data: dict, stamp: str) -> str | None:
    key = data.get("active")
    if key and key in data["slots"]:
        slot = data["slots"][key]
        if slot.get("status") == "active":
            slot["status"] = "paused"
        slot["last_active"] = stamp
    data["active"] = None
    return key


def create_project(
    projects: dict | None,
    key: Any,
    summary: Any,
    context: Any = "",
    *,
    activate: bool = False,
    now: datetime | None = None,
) -> tuple[dict, OpResult]:
    """Create a project slot (paused, or active with ``activate`` which pauses the current one).

    When :data:`MAX_PROJECTS` slots exist, the oldest completed one is dropped to make room;
    if none is completed, creation is refused.

    Returns:
        ``(new_projects, result)``; ``result.data["key"]`` is the normalised key.
    """
    data = _normalised(projects)
    slug, error = _check_key(key)
    if error:
        return projects or empty_projects(), OpResult.fail(error)
    if slug in data["slots"]:
        return projects or empty_projects(), OpResult.fail(
            f"A project {slug!r} already exists; use swap_project or update_project, or pick another key."
        )
    text, error = _check_text(summary, "summary", MAX_SUMMARY, required=True)
    if error:
        return projects or empty_projects(), OpResult.fail(error)
    ctx, error = _check_text(context, "context", MAX_CONTEXT, required=False)
    if error:
        return projects or empty_projects(), OpResult.fail(error)
    dropped = None
    if len(data["slots"]) >= MAX_PROJECTS:
        completed = [k for k, s in data["slots"].items() if s.get("status") == "completed"]
        if not completed:
            return projects or empty_projects(), OpResult.fail(
                f"There are already {MAX_PROJECTS} unfinished projects; complete one first."
            )
        dropped = min(completed, key=lambda k: data["slots"][k].get("last_active") or "")
        del data["slots"][dropped]
    stamp = iso_utc(now)
    paused = _pause_active(data, stamp) if activate else None
    data["slots"][slug] = {
        "summary": text,
        "context": ctx,
        "status": "active" if activate else "paused",
        "created_at": stamp,
        "last_active": stamp,
    }
    if activate:
        data["active"] = slug
    message = f"Created project {slug!r}" + (" and made it active" if activate else " (paused)")
    if paused:
        message += f"; {paused!r} is paused"
    if dropped:
        message += f"; dropped the old completed project {dropped!r}"
    return data, OpResult.ok(message + ".", key=slug)


def list_projects(projects: dict | None) -> list[dict]:
    """Every project as ``{"key", "summary", "status", "active", "last_active"}``.

    The active project comes first, then the others by most recent activity.
    """
    data = _normalised(projects)
    rows = [
        {
            "key": key,
            "summary": slot.get("summary", ""),
            "status": slot.get("status", "paused"),
            "active": key == data["active"],
            "last_active": slot.get("last_active"),
        }
        for key, slot in data["slots"].items()
    ]
    rows.sort(key=lambda r: r["last_active"] or "", reverse=True)
    rows.sort(key=lambda r: not r["active"])
    return rows


def active_project(projects: dict | None) -> dict | None:
    """A copy of the active project's slot plus its ``"key"``, or None."""
    data = _normalised(projects)
    key = data["active"]
    return {"key": key, **data["slots"][key]} if key else None


def swap_project(
    projects: dict | None,
    key: Any,
    current_project_update: Any = None,
    *,
    now: datetime | None = None,
) -> tuple[dict, OpResult]:
    """Page the active project out and ``key`` in.

    The active project (if any) becomes paused, its context replaced by
    ``current_project_update`` when one is given. The target becomes active (a completed project
    is reopened). Swapping to the project already active only saves the update.

    Returns:
        ``(new_projects, result)``; ``result.data`` holds the target's ``key``, ``summary``
        and restored ``context``.
    """
    data = _normalised(projects)
    slug, error = _check_key(key)
    if error:
        return projects or empty_projects(), OpResult.fail(error)
    if slug not in data["slots"]:
        return projects or empty_projects(), _unknown(key, data)
    update = None
    if current_project_update is not None:
        update, error = _check_text(
            current_project_update, "current project update", MAX_CONTEXT, required=False
        )
        if error:
            return projects or empty_projects(), OpResult.fail(error)
    stamp = iso_utc(now)
    current = data["active"]
    if update and current:
        data["slots"][current]["context"] = update
    target = data["slots"][slug]
    if current == slug:
        target["last_active"] = stamp
        note = " (its context was updated)" if update and current else ""
        return data, OpResult.ok(
            f"Project {slug!r} is already active{note}.",
            key=slug,
            summary=target.get("summary", ""),
            context=target.get("context", ""),
        )
    _pause_active(data, stamp)
    reopened = target.get("status") == "completed"
    target["status"] = "active"
    target["last_active"] = stamp
    data["active"] = slug
    message = f"Now working on {slug!r}" + (" (reopened)" if reopened else "")
    if current:
        message += f"; {current!r} is paused" + (" with its progress saved" if update else "")
    elif update:
        message += "; no project was active, so the update was not saved"
    return data, OpResult.ok(
        message + ".",
        key=slug,
        summary=target.get("summary", ""),
        context=target.get("context", ""),
        previous=current,
    )


def update_project(
    projects: dict | None,
    *,
    context: Any = None,
    summary: Any = None,
    status: Any = None,
    now: datetime | None = None,
) -> tuple[dict, OpResult]:
    """Change the active project's context (replaced), summary or status.

    A status of "paused" or "completed" pages the project out: no project is active after.

    Returns:
        ``(new_projects, result)``; ``result.data["key"]`` is the project changed.
    """
    data = _normalised(projects)
    key = data["active"]
    if not key:
        return projects or empty_projects(), OpResult.fail(
            "No project is active; use swap_project to pick one or create_project to start one."
        )
    if context is None and summary is None and status is None:
        return projects or empty_projects(), OpResult.fail(
            "Nothing to update: give a context, summary or status."
        )
    slot = data["slots"][key]
    changed = []
    if context is not None:
        ctx, error = _check_text(context, "context", MAX_CONTEXT, required=False)
        if error:
            return projects or empty_projects(), OpResult.fail(error)
        slot["context"] = ctx
        changed.append("context")
    if summary is not None:
        text, error = _check_text(summary, "summary", MAX_SUMMARY, required=True)
        if error:
            return projects or empty_projects(), OpResult.fail(error)
        slot["summary"] = text
        changed.append("summary")
    if status is not None:
        value = status.strip().lower() if isinstance(status, str) else None
        if value not in STATUSES:
            return projects or empty_projects(), OpResult.fail(
                f"Status must be one of {', '.join(STATUSES)} (got {status!r})."
            )
        slot["status"] = value
        changed.append("status")
        if value != "active":
            data["active"] = None
    slot["last_active"] = iso_utc(now)
    message = f"Updated the {' and '.join(changed)} of project {key!r}"
    if data["active"] is None:
        message += f"; it is {slot['status']} and no project is active now"
    return data, OpResult.ok(message + ".", key=key)


def render_active_project(projects: dict | None) -> str:
    """The active project for the character context.

    Without an active project, the paused ones are listed; "" when there are none.
    """
    data = _normalised(projects)
    project = active_project(data)
    paused = sorted(
        k for k, s in data["slots"].items() if k != data["active"] and s.get("status") == "paused"
    )
    if project is None:
        if not paused:
            return ""
        return f"## Projects\nNo project is active. Paused (swap_project to resume): {', '.join(paused)}"
    lines = [f"## Current project: {project['key']}", f"Summary: {project.get('summary', '')}"]
    if project.get("context"):
        lines.append(f"Where it stands:\n{project['context']}")
    if paused:
        lines.append(f"Paused projects (swap_project to resume): {', '.join(paused)}")
    return "\n".join(lines)
