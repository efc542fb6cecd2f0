"""The ambient context buffer (pure)."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from evennia_ai.memory import context_buffer
from evennia_ai.memory.context_buffer import add, relative_time, render

NOW = datetime(2026, 11, 2, 12, 0, 0, tzinfo=timezone.utc)


def ago(**delta):
    return (NOW - timedelta(**delta)).isoformat()


def test_add_is_a_bounded_ring_and_leaves_its_input_alone():
    buffer = []
    for n in range(30):
        buffer = add(buffer, f"line {n}", source="#5", max_size=20)
    assert len(buffer) == 20
    assert buffer[0]["text"] == "line 10" and buffer[-1]["text"] == "line 29"
    assert buffer[-1]["source"] == "#5" and buffer[-1]["ts"]
    before = json.loads(json.dumps(buffer))
    add(buffer, "more", max_size=20)
    assert buffer == before


def test_add_ignores_blank_text_and_flattens_lines():
    buffer = add(None, "  \n ", max_size=5)
    assert buffer == []
    buffer = add(buffer, "Bob lights\n  the fire.", max_size=5, ts=ago(seconds=3))
    assert buffer[0]["text"] == "Bob lights the fire."
    long = add([], "x" * 5000, max_size=5)
    assert len(long[0]["text"]) == context_buffer.MAX_LINE


def test_add_rejects_a_bad_size():
    with pytest.raises(ValueError, match="at least 1"):
        add([], "hi", max_size=0)


def test_relative_time():
    assert relative_time(ago(seconds=2), NOW) == "just now"
    assert relative_time(ago(seconds=40), NOW) == "40s ago"
    assert relative_time(ago(minutes=5, seconds=10), NOW) == "5m ago"
    assert relative_time(ago(hours=2), NOW) == "2h ago"
    assert relative_time(ago(days=3), NOW) == "3d ago"
    assert relative_time("not a time", NOW) == "earlier"
    assert relative_time(None, NOW) == "earlier"
    assert relative_time("2026-11-02T11:59:00", NOW) == "1m ago"  # naive means UTC


def test_render_newest_last_with_limit():
    buffer = []
    for n, seconds in enumerate((600, 120, 30, 1)):
        buffer = add(buffer, f"line {n}", ts=ago(seconds=seconds), max_size=10)
    assert render(buffer, 3, now=NOW) == "\n".join(
        [
            "- (2m ago) line 1",
            "- (30s ago) line 2",
            "- (just now) line 3",
        ]
    )
    assert render(buffer, 0, now=NOW) == ""
    assert render([], 5) == ""
    assert render(None, 5) == ""
    assert (
        render([{"text": "old entry without time"}, "junk"], 5, now=NOW)
        == "- (earlier) old entry without time"
    )
