"""Events and the persistent event queue (pure: no database)."""

import json
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai import conf
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import (
    EVENT_CLASSES,
    MAX_ATTEMPTS,
    TO_EVERYONE,
    Event,
    ack,
    classify,
    empty_queue,
    event_signal,
    pending_events,
    push,
    recover,
    release,
    render_events,
    take_batch,
)


def say(text, name="Alice", source="#12", location="#2", addressed=False, **kw):
    return Event.create(
        kind="say",
        text=text,
        source=source,
        source_name=name,
        location=location,
        addressed=addressed,
        **kw,
    )


def reload(queue):
    """Simulate a server reload: the Attribute is serialised and read back."""
    return json.loads(json.dumps(queue))


# -- the event ---------------------------------------------------------------------------------


def test_classify_kinds():
    assert classify("say") == "communication"
    assert classify("Whisper") == "communication"
    assert classify("give") == "communication"
    assert classify("arrive") == "movement"
    assert classify("depart") == "movement"
    assert classify("dig") == "building"
    assert classify("attack") == "combat"
    assert classify("system") == "system"
    assert classify("something-new") == "system"
    assert classify(None) == "system"


def test_derived_priority_and_trust_follow_the_table():
    whisper = Event.create(kind="whisper", text="psst", addressed=True)
    addressed = say("Mira, hi", addressed=True)
    open_say = say("nice weather")
    fight = Event.create(kind="attack", text="Bob attacks the rat.")
    build = Event.create(kind="dig", text="A new exit appears.")
    arrive = Event.create(kind="arrive", text="Bob arrives.")
    system = Event.create(kind="system", text="Approved.")
    order = [whisper, addressed, open_say, fight, build, arrive, system]
    assert [e.priority for e in order] == sorted((e.priority for e in order), reverse=True)
    assert len({e.priority for e in order}) == len(order)
    assert whisper.trust_source == "told_directly" and addressed.trust_source == "told_directly"
    assert open_say.trust_source == "said_in_room"
    assert arrive.trust_source == "observed"
    assert system.trust_source == "system"
    assert whisper.trust > open_say.trust
    assert {e.event_class for e in order} == set(EVENT_CLASSES)


def test_explicit_values_win_and_bad_class_is_a_clear_error():
    event = Event.create(kind="say", text="hi", priority=5, trust_source="overheard")
    assert event.priority == 5 and event.trust_source == "overheard"
    with pytest.raises(ValueError, match="Unknown event class 'gossip'"):
        Event.create(kind="say", text="hi", event_class="gossip")
    with pytest.raises(ValueError, match="whole number"):
        Event.create(kind="say", text="hi", priority="urgent")


def test_event_round_trips_through_json():
    event = say("Hello", addressed=True, data={"raw": 'Alice says, "Hello"'})
    back = Event.from_dict(json.loads(json.dumps(event.to_dict())))
    assert back == event


def test_from_dict_tolerates_old_and_damaged_dicts():
    old = {
        "id": "abc",
        "type": "whisper",
        "text": "psst",
        "source": "#3",
        "ts": "2020-01-01T00:00:00+00:00",
        "priority": "high",
        "data": None,
        "removed_field": 1,
        "event_class": "chitchat",
    }
    event = Event.from_dict(old)
    assert event.kind == "whisper" and event.event_class == "communication"
    assert event.priority == ev.PRIORITY_DIRECT
    assert event.timestamp.startswith("2020-01-01")
    assert event.data == {} and event.attempts == 0
    minimal = Event.from_dict({})
    assert minimal.kind == "system" and minimal.id and minimal.text == ""


def test_long_text_is_clipped_once():
    event = say("x" * 10_000)
    assert len(event.text) == conf.get("EVENNIA_AI_MAX_EVENT_CHARS") == 2000
    assert Event.from_dict(event.to_dict()).text == event.text


# -- push ----------------------------------------------------------------------------------------


def test_push_accepts_events_and_dicts_and_ignores_repeats():
    event = say("hi")
    queue, dropped = push(None, event, 5)
    assert dropped is None and len(queue["events"]) == 1
    queue, dropped = push(queue, event.to_dict(), 5)
    assert dropped is None and len(queue["events"]) == 1


def test_push_does_not_change_its_input():
    queue = empty_queue()
    push(queue, say("hi"), 5)
    assert queue == empty_queue()


def test_push_into_a_queue_as_left_rebuilds_no_event():
    """A queue this module wrote is taken as it is: pushing one line costs no rebuild of
    every queued event (what a line heard by an NPC with a full queue cost)."""
    queue = empty_queue()
    for n in range(20):
        queue, _ = push(queue, say(f"line {n}"), 20)
    queue, _ = take_batch(queue)  # some in flight
    stored = reload(queue)
    before = json.loads(json.dumps(stored))
    event = say("one more")
    with mock.patch.object(Event, "from_dict", wraps=Event.from_dict) as rebuilt:
        fast, dropped = push(stored, event, 20)
    assert rebuilt.call_count == 1  # the event dropped to make room, nothing else
    assert stored == before  # the input is not changed
    with mock.patch.object(ev, "_as_left", return_value=None):
        slow, slow_dropped = push(stored, event, 20)
    assert fast == slow and dropped.to_dict() == slow_dropped.to_dict()


@pytest.mark.parametrize(
    "damage",
    [
        lambda q: q["events"][0].pop("priority"),
        lambda q: q["events"][0].update(priority="90"),
        lambda q: q["events"][1].update(id=q["events"][0]["id"]),
        lambda q: q["events"][0].update(legacy="x"),
        lambda q: q["in_flight"].append("gone"),
        lambda q: q["in_flight"].extend(q["in_flight"][:1]),
        lambda q: q.update(dropped="2"),
        lambda q: q.update(events=tuple(q["events"])),
        lambda q: q["events"].append("junk"),
    ],
)
def test_push_into_a_queue_not_as_left_normalises_it_first(damage):
    queue = empty_queue()
    for n in range(4):
        queue, _ = push(queue, say(f"line {n}"), 20)
    queue, _ = take_batch(queue)
    queue = reload(queue)
    damage(queue)
    event = say("new")
    pushed, _ = push(queue, event, 20)
    expected = ev.normalize_queue(queue)
    expected["events"].append(event.to_dict())
    assert pushed == expected


def test_full_queue_drops_oldest_lowest_priority_first():
    queue = empty_queue()
    first_arrive = Event.create(kind="arrive", text="Bob arrives.")
    second_arrive = Event.create(kind="arrive", text="Carol arrives.")
    for event in (say("one"), first_arrive, say("two"), second_arrive):
        queue, _ = push(queue, event, 4)
    queue, dropped = push(queue, say("three"), 4)
    assert dropped.id == first_arrive.id
    queue, dropped = push(queue, say("four"), 4)
    assert dropped.id == second_arrive.id
    queue, dropped = push(queue, say("five"), 4)
    assert dropped.text == "one"  # all equal now: the oldest goes
    assert queue["dropped"] == 3
    assert [e["text"] for e in queue["events"]] == ["two", "three", "four", "five"]


def test_new_event_is_dropped_when_it_is_the_least_important():
    queue = empty_queue()
    for text in ("a", "b"):
        queue, _ = push(queue, say(text), 2)
    arrival = Event.create(kind="arrive", text="Bob arrives.")
    queue, dropped = push(queue, arrival, 2)
    assert dropped.id == arrival.id
    assert [e["text"] for e in queue["events"]] == ["a", "b"]
    assert queue["dropped"] == 1


def test_push_never_drops_in_flight_events():
    queue = empty_queue()
    queue, _ = push(queue, Event.create(kind="system", text="low"), 2)
    queue, batch = take_batch(queue)
    queue, _ = push(queue, say("hi"), 2)
    queue, dropped = push(queue, say("again"), 2)
    assert dropped.text == "hi"
    assert batch[0].id in [e["id"] for e in queue["events"]]


def test_push_rejects_a_bad_size():
    with pytest.raises(ValueError, match="at least 1"):
        push(empty_queue(), say("hi"), 0)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "say",
                    "whisper",
                    "pose",
                    "arrive",
                    "depart",
                    "give",
                    "dig",
                    "attack",
                    "system",
                    "take",
                    "ack",
                    "release",
                ]
            ),
            st.booleans(),
        ),
        max_size=60,
    ),
    st.integers(min_value=1, max_value=8),
)
def test_queue_stays_bounded_and_consistent(ops, size):
    queue = empty_queue()
    pushed = 0
    acked = 0
    taken: list[str] = []
    for kind, addressed in ops:
        if kind == "take":
            queue, batch = take_batch(queue)
            taken.extend(e.id for e in batch)
        elif kind == "ack":
            before = len(queue["events"])
            queue = ack(queue, taken)
            acked += before - len(queue["events"])
            taken = []
        elif kind == "release":
            queue = release(queue, taken)
            taken = []
        else:
            queue, _ = push(
                queue, Event.create(kind=kind, text="x", addressed=addressed, location="#2"), size
            )
            pushed += 1
        queue = reload(queue)
        assert len(queue["events"]) <= size
        ids = [e["id"] for e in queue["events"]]
        assert len(set(ids)) == len(ids)
        assert set(queue["in_flight"]) <= set(ids)
        # Every event pushed is queued, answered, or counted as dropped or failed.
        assert pushed == len(ids) + acked + queue["dropped"] + queue["failed"]


# -- take_batch, ack, release, recover ----------------------------------------------------------


def test_take_batch_on_empty_queue():
    queue, batch = take_batch(empty_queue())
    assert batch == [] and queue["in_flight"] == []


def test_take_batch_groups_speech_from_the_same_room():
    queue = empty_queue()
    items = [
        Event.create(kind="arrive", text="Bob arrives.", location="#2"),
        say("hello", name="Bob", source="#15"),
        say("Mira, a pint please", addressed=True),
        Event.create(kind="pose", text="Bob waves.", location="#2", source="#15"),
        say("elsewhere", location="#9"),
    ]
    for event in items:
        queue, _ = push(queue, event, 10)
    queue, batch = take_batch(queue)
    assert [e.text for e in batch] == ["hello", "Mira, a pint please", "Bob waves."]
    assert event_signal(batch) == "communication"
    assert ev.main_event(batch).text == "Mira, a pint please"
    assert set(queue["in_flight"]) == {e.id for e in batch}
    assert len(queue["events"]) == 5  # taken events stay queued until acked


def test_lines_arriving_during_a_tick_go_to_the_next_tick():
    queue, _ = push(empty_queue(), say("first"), 10)
    queue, batch = take_batch(queue)
    queue, _ = push(queue, say("second"), 10)
    queue, _ = push(queue, say("third"), 10)
    queue, again = take_batch(queue)
    assert [e.text for e in again] == ["second", "third"]
    queue = ack(queue, [e.id for e in batch])
    queue, none = take_batch(queue)
    assert none == []
    queue = ack(queue, [e.id for e in again])
    assert queue["events"] == [] and queue["in_flight"] == []


def test_highest_priority_goes_first_and_non_speech_groups_by_class():
    queue = empty_queue()
    queue, _ = push(queue, Event.create(kind="arrive", text="Bob arrives.", location="#2"), 10)
    queue, _ = push(queue, Event.create(kind="system", text="Approved."), 10)
    queue, _ = push(queue, Event.create(kind="depart", text="Ann leaves.", location="#2"), 10)
    queue, _ = push(
        queue, Event.create(kind="whisper", text="psst", location="#2", addressed=True), 10
    )
    queue, batch = take_batch(queue)
    assert [e.kind for e in batch] == ["whisper"]
    queue, batch = take_batch(queue)
    assert [e.kind for e in batch] == ["arrive", "depart"]
    assert event_signal(batch) == "movement"
    queue, batch = take_batch(queue)
    assert [e.kind for e in batch] == ["system"]


def test_ack_ignores_unknown_ids_and_accepts_one_id():
    queue, _ = push(empty_queue(), say("hi"), 5)
    queue, batch = take_batch(queue)
    queue = ack(queue, ["nope"])
    assert len(queue["events"]) == 1
    queue = ack(queue, batch[0].id)
    assert queue["events"] == []


def test_release_retries_then_gives_up():
    queue, _ = push(empty_queue(), say("hi"), 5)
    for attempt in range(1, MAX_ATTEMPTS):
        queue, batch = take_batch(queue)
        assert [e.text for e in batch] == ["hi"]
        queue = release(queue, [e.id for e in batch])
        assert queue["in_flight"] == []
        assert queue["events"][0]["attempts"] == attempt
    queue, batch = take_batch(queue)
    queue = release(queue, [e.id for e in batch])
    assert queue["events"] == [] and queue["failed"] == 1
    assert queue["dropped"] == 0


def test_release_without_counting_keeps_the_attempts():
    queue, _ = push(empty_queue(), say("hi"), 5)
    for _ in range(MAX_ATTEMPTS + 2):
        queue, batch = take_batch(queue)
        queue = release(queue, [e.id for e in batch], count_attempt=False)
    assert queue["events"][0]["attempts"] == 0 and queue["failed"] == 0
    assert queue["in_flight"] == []


def test_in_flight_events_survive_a_reload_and_are_replayed():
    queue = empty_queue()
    queue, _ = push(queue, say("hello", addressed=True), 10)
    queue, _ = push(queue, say("anyone?"), 10)
    queue, batch = take_batch(queue)
    stored = reload(queue)  # the server reloads mid-tick; the Attribute is what survives
    assert set(stored["in_flight"]) == {e.id for e in batch}
    stored = recover(stored)
    assert stored["in_flight"] == []
    assert [e.text for e in pending_events(stored)] == ["hello", "anyone?"]
    stored, replay = take_batch(stored)
    assert [e.id for e in replay] == [e.id for e in batch]
    assert all(e["attempts"] == 0 for e in stored["events"])  # a reload is not a failure


def test_normalize_repairs_a_damaged_queue():
    event = say("hi").to_dict()
    damaged = {
        "events": [event, dict(event), "junk"],
        "in_flight": ["gone", event["id"]],
        "dropped": "3",
    }
    queue = ev.normalize_queue(damaged)
    assert len(queue["events"]) == 1
    assert queue["in_flight"] == [event["id"]]
    assert queue["dropped"] == 3 and queue["failed"] == 0
    assert ev.normalize_queue(None) == empty_queue()


# -- rendering -----------------------------------------------------------------------------------


def test_render_events_is_stable():
    batch = [
        say("Hello there.", addressed=True),
        say("Nice place.", name="Bob", source="#15"),
        Event.create(kind="whisper", text="psst", source_name="Carol", addressed=True),
        Event.create(kind="page", text="are you there?", source_name="Dan"),
        Event.create(kind="pose", text="Bob waves.", source_name="Bob"),
        Event.create(kind="arrive", text="Bob arrives from the north.", source_name="Bob"),
        Event.create(kind="depart", text="", source_name="Eve"),
        Event.create(kind="give", text="Ann gives you a rose.", source_name="Ann", addressed=True),
        Event.create(kind="system", text="Your request was approved."),
    ]
    assert render_events(batch) == "\n".join(
        [
            'Alice says to you: "Hello there."',
            'Bob says: "Nice place."',
            'Carol whispers to you: "psst"',
            'Dan pages you: "are you there?"',
            "Bob waves.",
            "Bob arrives from the north.",
            "Eve leaves.",
            "Ann gives you a rose.",
            "[System] Your request was approved.",
        ]
    )
    assert render_events([e.to_dict() for e in batch]) == render_events(batch)
    assert render_events([]) == ""
    assert event_signal([]) is None


def test_a_line_to_everyone_reads_as_said_to_everyone_not_to_you():
    """The room's floor woke the NPC for "Hello all": it was not spoken to it alone."""
    line = Event.create(
        kind="say",
        text="Good evening, everyone!",
        source_name="Alice",
        addressed=True,
        data={"floor": TO_EVERYONE},
    )
    assert render_events([line]) == 'Alice says to everyone: "Good evening, everyone!"'
    named = Event.create(kind="say", text="Tom, hi", source_name="Alice", addressed=True)
    assert render_events([named]) == 'Alice says to you: "Tom, hi"'


# -- lines held back during an outage ------------------------------------------------------------
def test_hold_back_counts_a_wait_not_an_attempt():
    queue, _ = push(empty_queue(), say("hi", addressed=True), 5)
    for wait in range(1, MAX_ATTEMPTS + 3):
        queue, batch = take_batch(queue)
        assert batch[0].first_try is (wait == 1)
        queue = ev.hold_back(queue, [e.id for e in batch])
        assert queue["in_flight"] == []
    event = queue["events"][0]
    assert event["attempts"] == 0 and event["deferred"] == MAX_ATTEMPTS + 2
    assert queue["failed"] == 0 and ev.has_deferred(queue)
    assert not ev.has_deferred(push(empty_queue(), say("new"), 5)[0])


def test_give_up_stale_drops_old_lines_and_lines_whose_speaker_left():
    from datetime import timedelta

    from evennia_ai.utils import iso_utc, utcnow

    now = utcnow().replace(microsecond=0)  # the stamp keeps whole seconds
    old = say("old line", source="#1", timestamp=iso_utc(now - timedelta(seconds=400)))
    left = say("bob's line", name="Bob", source="#2")
    fresh = say("fresh line", source="#1")
    never = say("not waited for", source="#2")  # never held back: not for this rule
    queue = empty_queue()
    for event in (old, left, fresh, never):
        queue, _ = push(queue, event, 10)
    queue = ev.hold_back(queue, [old.id, left.id, fresh.id])
    queue, given_up = ev.give_up_stale(queue, now, 300, lambda e: e.source != "#2")
    assert [(e.text, why) for e, why in given_up] == [
        ("old line", "said 400 s ago, older than 300 s"),
        ("bob's line", "its speaker is gone"),
    ]
    assert [e["text"] for e in queue["events"]] == ["fresh line", "not waited for"]
    assert queue["failed"] == 2


def test_deferred_survives_the_attribute_round_trip():
    event = Event.from_dict({**say("hi").to_dict(), "deferred": "2"})
    assert event.deferred == 2 and not event.first_try
    assert Event.from_dict({"kind": "say", "deferred": "x"}).deferred == 0


def test_to_dict_is_asdict():
    """``Event.to_dict`` spells its fields out (for speed): it must stay equal to ``asdict``,
    with a private copy of ``data``, nested values included, and name every field."""
    from dataclasses import asdict, fields

    nested = Event.create("give", "a gift", data={"items": [{"key": "cup"}], "n": 2, "x": None})
    flat = Event.create("say", "hello", source="#2", source_name="Bob", location="#1")
    for event in (nested, flat):
        plain = event.to_dict()
        assert plain == asdict(event) and list(plain) == [f.name for f in fields(Event)]
        assert plain["data"] is not event.data
    nested.to_dict()["data"]["items"][0]["key"] = "changed"
    assert nested.data["items"][0]["key"] == "cup"
