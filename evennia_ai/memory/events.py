"""What an assistant perceives, as events in a persistent, bounded queue.

Pure: no Django, Evennia or Twisted. An :class:`Event` converts to and from a plain dict, and the
queue is a plain dict, so the glue keeps it in one Attribute and writes it once per change
(``npc_state(npc).update(EVENT_QUEUE, lambda q: push(q, event, 50))``).

The queue dict::

    {"events": [event dicts, oldest first], "in_flight": [ids], "dropped": int, "failed": int}

Life of an event:

1. :func:`push` appends it. When the queue is full, the oldest event of the lowest priority goes
   first (never an in-flight one; the new event itself when it is the lowest) and ``dropped``
   counts it.
2. :func:`take_batch` picks the highest-priority pending event and takes it together with the
   other pending events of its class from the same place (for speech: every line said since the
   last tick, answered together). They are marked in flight but stay in the queue.
3. :func:`ack` removes them once the tick has finished. :func:`release` un-marks them when the
   tick failed; after :data:`MAX_ATTEMPTS` failed ticks an event is dropped and ``failed``
   counts it.
4. While its model cannot be reached (an outage, see :mod:`evennia_ai.engine.outages`) a tick
   puts its batch back with :func:`hold_back` instead: no attempt is counted, ``deferred``
   counts the wait, and the event is answered once the model is back, unless
   :func:`give_up_stale` finds it too old or its speaker gone first (``failed`` counts it).
5. After a reload, :func:`recover` clears the in-flight marks, so a tick cut short is replayed.

Priorities (higher is answered first, lower is dropped first when full):

==========  ===========================================================================
priority    events
==========  ===========================================================================
100         whispers and pages to the assistant (``whisper``, ``page``)
90          other communication addressed to it: speech naming it, things given to it
70          speech of another AI NPC addressed to it (a player's line is answered first)
60          open communication in its room (speech and poses not meant for it)
50          combat
40          building (the world changed around it)
30          movement (arrivals and departures)
10          system notices (operator decisions, late tool outcomes)
==========  ===========================================================================

Example:
    event = Event.create(kind="say", text="Hello, Mira!", source="#12", source_name="Alice",
                         location="#2", addressed=True)
    queue, dropped = push(empty_queue(), event, max_size=50)
    queue, batch = take_batch(queue)
    render_events(batch)   # 'Alice says to you: "Hello, Mira!"'
    queue = ack(queue, [e.id for e in batch])
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Callable, Iterable

from evennia_ai import conf
from evennia_ai.utils import clean_name, clean_text, iso_utc, parse_iso

EVENT_CLASSES = ("communication", "movement", "building", "combat", "system")

# kind -> event class. Unknown kinds are "system": they are kept but answered last.
KIND_CLASSES: dict[str, str] = {
    **dict.fromkeys(
        ("say", "pose", "emote", "whisper", "page", "tell", "ooc", "shout", "give"), "communication"
    ),
    **dict.fromkeys(
        ("arrive", "depart", "move", "enter", "leave", "traverse", "teleport", "follow"), "movement"
    ),
    **dict.fromkeys(
        ("build", "create", "dig", "destroy", "describe", "desc", "spawn", "modify"), "building"
    ),
    **dict.fromkeys(
        ("attack", "hit", "miss", "damage", "defeat", "death", "flee", "combat"), "combat"
    ),
    **dict.fromkeys(("system", "notice", "confirmation", "timer"), "system"),
}

PRIORITY_DIRECT = 100  # whispers and pages: only the assistant hears them
PRIORITY_ADDRESSED = 90
PRIORITY_ADDRESSED_BY_NPC = 70  # another AI NPC's addressed line: after any player's
#: Why the room's floor woke an NPC for a line to everyone ("Hello all"): kept in the event's
#: ``data["floor"]`` (:mod:`evennia_ai.engine.floor`), read as "says to everyone".
TO_EVERYONE = "to everyone"

CLASS_PRIORITIES: dict[str, int] = {
    "communication": 60,
    "combat": 50,
    "building": 40,
    "movement": 30,
    "system": 10,
}
DIRECT_KINDS = frozenset({"whisper", "page", "tell"})

# How far the assistant should trust what an event says (the journal's source trust).
TRUST_LEVELS: dict[str, float] = {
    "system": 1.0,  # the game or its operators
    "told_directly": 0.9,  # whispered, paged, given, or said to the assistant by name
    "observed": 0.8,  # seen happen: arrivals, departures, combat, building
    "said_in_room": 0.7,  # open speech in the room, not meant for the assistant
    "overheard": 0.3,  # second hand: another assistant's chatter, distant noise
}

MAX_ATTEMPTS = 3  # failed ticks after which an event is given up ("failed")
MAX_NAME = 200  # characters of a speaker's name kept


def classify(kind: str) -> str:
    """Return the event class of an event ``kind`` ("say" -> "communication").

    Unknown kinds are "system".
    """
    return KIND_CLASSES.get(str(kind or "").strip().lower(), "system")


def default_priority(event_class: str, kind: str = "", addressed: bool = False) -> int:
    """The priority of an event from its class, kind and whether it is addressed (see table)."""
    if event_class == "communication":
        if kind in DIRECT_KINDS:
            return PRIORITY_DIRECT
        if addressed:
            return PRIORITY_ADDRESSED
    return CLASS_PRIORITIES.get(event_class, CLASS_PRIORITIES["system"])


def default_trust(event_class: str, kind: str = "", addressed: bool = False) -> str:
    """How an event's content reached the assistant (a key of :data:`TRUST_LEVELS`)."""
    if event_class == "system":
        return "system"
    if event_class == "communication":
        if kind in DIRECT_KINDS or addressed:
            return "told_directly"
        return "said_in_room"
    return "observed"


def _clip(text: str) -> str:
    """``text`` cut to ``EVENNIA_AI_MAX_EVENT_CHARS`` in all (clipping again changes nothing)."""
    limit = conf.get_int("EVENNIA_AI_MAX_EVENT_CHARS")
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def new_event_id() -> str:
    """A short unique id for an event."""
    return uuid.uuid4().hex[:12]


@dataclass
class Event:
    """One thing the assistant perceived.

    Fields left empty (``event_class``, ``priority``, ``trust_source``) are derived from
    ``kind`` and ``addressed``; see the module docstring for the priority table.

    Attributes:
        kind: What happened: say, pose, whisper, page, arrive, depart, give, system, ...
        text: What the assistant perceived (speech without its quotes, or the message line).
        source: Dbref of who caused it (``"#12"``), or None for the system.
        source_name: Display name of the source.
        location: Dbref of the room it happened in.
        addressed: Whether it was meant for the assistant (named it, whisper, page, gift).
        event_class: One of :data:`EVENT_CLASSES`.
        priority: Higher is answered first and dropped last.
        trust_source: A key of :data:`TRUST_LEVELS` (anything else is derived again).
        data: Extra plain data (the raw message line, the given object's dbref, ...).
        id: Unique id (12 hex characters).
        timestamp: When it was perceived, ISO-8601 UTC.
        attempts: Ticks that failed while answering it.
        deferred: Ticks that put it back because its model could not be reached (an outage:
            no attempt is counted; see :func:`hold_back`).
    """

    kind: str = "system"
    text: str = ""
    source: str | None = None
    source_name: str = ""
    location: str | None = None
    addressed: bool = False
    event_class: str = ""
    priority: int | None = None
    trust_source: str = ""
    data: dict = field(default_factory=dict)
    id: str = field(default_factory=new_event_id)
    timestamp: str = field(default_factory=lambda: iso_utc(precise=True))
    attempts: int = 0
    deferred: int = 0

    def __post_init__(self):
        self.kind = str(self.kind or "system").strip().lower()
        self.text = _clip("" if self.text is None else str(self.text).strip())
        self.source = str(self.source) if self.source not in (None, "") else None
        self.source_name = str(self.source_name or self.source or "")
        self.location = str(self.location) if self.location not in (None, "") else None
        self.addressed = bool(self.addressed)
        if self.event_class not in EVENT_CLASSES:
            if self.event_class:
                raise ValueError(
                    f"Unknown event class {self.event_class!r}; use one of "
                    + ", ".join(EVENT_CLASSES)
                    + "."
                )
            self.event_class = classify(self.kind)
        if self.priority is None:
            self.priority = default_priority(self.event_class, self.kind, self.addressed)
        try:
            self.priority = int(self.priority)
        except (TypeError, ValueError):
            raise ValueError(
                f"An event priority must be a whole number, not {self.priority!r}."
            ) from None
        if self.trust_source not in TRUST_LEVELS:
            self.trust_source = default_trust(self.event_class, self.kind, self.addressed)
        self.data = {k: _clip(v) if isinstance(v, str) else v for k, v in (self.data or {}).items()}
        self.source_name = self.source_name[:MAX_NAME]
        self.id = str(self.id or new_event_id())
        self.attempts = int(self.attempts or 0)
        self.deferred = int(self.deferred or 0)

    @classmethod
    def create(cls, kind: str, text: str, **values: Any) -> "Event":
        """Make a new event now (the perception hooks' entry point); same fields as the class."""
        return cls(kind=kind, text=text, **values)

    @property
    def first_try(self) -> bool:
        """Whether no tick has failed on it or put it back yet (its speaker was told nothing)."""
        return not self.attempts and not self.deferred

    def age(self, now: datetime) -> float:
        """Seconds since it was perceived, at ``now`` (0 when its time cannot be read)."""
        moment = parse_iso(self.timestamp)
        return max(0.0, (now - moment).total_seconds()) if moment is not None else 0.0

    @property
    def trust(self) -> float:
        """The numeric trust of the event's content (see :data:`TRUST_LEVELS`)."""
        return TRUST_LEVELS.get(self.trust_source, TRUST_LEVELS["overheard"])

    def to_dict(self) -> dict:
        """A JSON-able plain dict (equal to ``dataclasses.asdict``, which is several times
        slower: every queue operation rebuilds each queued event's dict)."""
        data = self.data
        if any(not isinstance(v, _SCALARS) for v in data.values()):
            data = copy.deepcopy(data)  # nested values: a private copy, as asdict makes
        else:
            data = dict(data)
        return {
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "source_name": self.source_name,
            "location": self.location,
            "addressed": self.addressed,
            "event_class": self.event_class,
            "priority": self.priority,
            "trust_source": self.trust_source,
            "data": data,
            "id": self.id,
            "timestamp": self.timestamp,
            "attempts": self.attempts,
            "deferred": self.deferred,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Event":
        """Rebuild an event from :meth:`to_dict` output, tolerating older or damaged dicts.

        Unknown keys are ignored, missing ones take their defaults (class, priority and trust
        are derived again), an unknown class is re-derived from the kind, and a few older key
        names (``type``/``event_type`` for kind, ``ts``/``time`` for timestamp) are read.
        """
        data = dict(data or {})
        data.setdefault("kind", data.get("event_type") or data.get("type") or "system")
        data.setdefault("timestamp", data.get("ts") or data.get("time") or iso_utc(precise=True))
        values = {k: v for k, v in data.items() if k in _FIELD_NAMES}
        if values.get("event_class") not in EVENT_CLASSES:
            values["event_class"] = ""
        try:
            values["priority"] = (
                int(values["priority"]) if values.get("priority") is not None else None
            )
        except (TypeError, ValueError):
            values["priority"] = None
        for counter in ("attempts", "deferred"):
            try:
                values[counter] = int(values.get(counter) or 0)
            except (TypeError, ValueError):
                values[counter] = 0
        if not isinstance(values.get("data"), dict):
            values["data"] = {}
        return cls(**values)


#: The names of an event's fields (what :meth:`Event.from_dict` reads).
_FIELD_NAMES = frozenset(f.name for f in fields(Event))
#: Values an event's ``data`` may hold that need no copy of their own.
_SCALARS = (str, int, float, bool, type(None))


def _as_event(event: Event | dict) -> Event:
    if isinstance(event, Event):
        return event
    if isinstance(event, dict):
        return Event.from_dict(event)
    raise TypeError(f"Expected an Event or an event dict, not {type(event).__name__}.")


# -- the queue ---------------------------------------------------------------------------------


def empty_queue() -> dict:
    """A new, empty queue dict."""
    return {"events": [], "in_flight": [], "dropped": 0, "failed": 0}


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def normalize_queue(queue: dict | None) -> dict:
    """Return a fresh, well-formed copy of ``queue``.

    Every event is upgraded through :meth:`Event.from_dict`, events with a repeated id are
    dropped, and in-flight ids that no longer match an event are forgotten. The input is not
    changed.
    """
    queue = queue if isinstance(queue, dict) else {}
    events: list[dict] = []
    seen: set[str] = set()
    for raw in queue.get("events") or []:
        if not isinstance(raw, (dict, Event)):
            continue
        event = _as_event(raw)
        if event.id in seen:
            continue
        seen.add(event.id)
        events.append(event.to_dict())
    in_flight = []
    for event_id in queue.get("in_flight") or []:
        if event_id in seen and event_id not in in_flight:
            in_flight.append(event_id)
    return {
        "events": events,
        "in_flight": in_flight,
        "dropped": _count(queue.get("dropped")),
        "failed": _count(queue.get("failed")),
    }


def _as_left(queue: dict) -> dict | None:
    """A copy of ``queue`` if it looks as :func:`normalize_queue` leaves one, else None.

    The check is cheap (no event is rebuilt): every event a dict with exactly the fields of an
    :class:`Event`, a whole-number priority and a unique text id; the in-flight ids among them,
    once each; the counters whole numbers. What :func:`push` relies on holds then; every
    other operation normalises the queue it reads in any case. The copy's lists are new, its
    events the input's own dicts (neither is changed by :func:`push`).
    """
    events, in_flight = queue.get("events"), queue.get("in_flight")
    if type(events) is not list or type(in_flight) is not list:
        return None
    ids = set()
    for event in events:
        if (
            type(event) is not dict
            or event.keys() != _FIELD_NAMES
            or type(event["priority"]) is not int
            or type(event["id"]) is not str
            or not event["id"]
            or event["id"] in ids
        ):
            return None
        ids.add(event["id"])
    if len(set(in_flight)) != len(in_flight) or not ids.issuperset(in_flight):
        return None
    counters = (queue.get("dropped"), queue.get("failed"))
    if any(type(count) is not int or count < 0 for count in counters):
        return None
    return {
        "events": list(events),
        "in_flight": list(in_flight),
        "dropped": counters[0],
        "failed": counters[1],
    }


def pending_events(queue: dict | None) -> list[Event]:
    """The queued events not in flight, oldest first."""
    queue = normalize_queue(queue)
    in_flight = set(queue["in_flight"])
    return [Event.from_dict(e) for e in queue["events"] if e["id"] not in in_flight]


def in_flight_events(queue: dict | None) -> list[Event]:
    """The events taken by the running tick, oldest first."""
    queue = normalize_queue(queue)
    in_flight = set(queue["in_flight"])
    return [Event.from_dict(e) for e in queue["events"] if e["id"] in in_flight]


def push(queue: dict | None, event: Event | dict, max_size: int) -> tuple[dict, Event | None]:
    """Append ``event``; when the queue is over ``max_size``, drop the least important.

    The event dropped is the oldest of the lowest priority among those not in flight, which is
    the new event itself when it ranks below everything queued. An event whose id is already
    queued is ignored. A queue as this module leaves one is not rebuilt event by event (a line
    heard by an NPC with a full queue costs a fraction of it): the new queue may share its
    event dicts with ``queue``.

    Args:
        queue: The queue dict (not changed).
        event: An :class:`Event` or its dict.
        max_size: Most events kept (at least 1).

    Returns:
        ``(new_queue, dropped)``: ``dropped`` is the event dropped to make room (the last one
        when a smaller ``max_size`` dropped several; all are counted in ``dropped``), or None.

    Raises:
        ValueError: If ``max_size`` is below 1.
    """
    max_size = int(max_size)
    if max_size < 1:
        raise ValueError(f"The event queue size must be at least 1, not {max_size}.")
    event = _as_event(event)
    left = _as_left(queue) if isinstance(queue, dict) else None
    queue = left if left is not None else normalize_queue(queue)
    if any(e["id"] == event.id for e in queue["events"]):
        return queue, None
    queue["events"].append(event.to_dict())
    dropped = None
    in_flight = set(queue["in_flight"])
    while len(queue["events"]) > max_size:
        candidates = [
            (e["priority"], position)
            for position, e in enumerate(queue["events"])
            if e["id"] not in in_flight
        ]
        if not candidates:  # only in-flight events left: they are acked or released soon
            break
        _, position = min(candidates)  # lowest priority, then oldest
        dropped = Event.from_dict(queue["events"].pop(position))
        queue["dropped"] += 1
    return queue, dropped


def _main_position(events: list[dict]) -> int:
    """Position of the highest-priority event (the oldest on a tie)."""
    best = 0
    for position, event in enumerate(events):
        if event["priority"] > events[best]["priority"]:
            best = position
    return best


def take_batch(queue: dict | None) -> tuple[dict, list[Event]]:
    """Take the next batch of pending events for a tick and mark it in flight.

    The batch is the highest-priority pending event (the oldest on a tie) together with every
    other pending event of the same class from the same location, oldest first: all the speech
    heard since the last tick is answered together, and lines arriving while that tick runs are
    left for the next one. The events stay queued until :func:`ack` or :func:`release`.

    Args:
        queue: The queue dict (not changed).

    Returns:
        ``(new_queue, batch)``; ``batch`` is empty when nothing is pending.
    """
    queue = normalize_queue(queue)
    in_flight = set(queue["in_flight"])
    pending = [e for e in queue["events"] if e["id"] not in in_flight]
    if not pending:
        return queue, []
    main = pending[_main_position(pending)]
    batch = [
        e
        for e in pending
        if e is main
        or (e["event_class"] == main["event_class"] and e["location"] == main["location"])
    ]
    queue["in_flight"].extend(e["id"] for e in batch)
    return queue, [Event.from_dict(e) for e in batch]


def _ids(ids: Iterable[str] | str) -> set[str]:
    if isinstance(ids, str):
        return {ids}
    return {str(i) for i in ids or []}


def ack(queue: dict | None, ids: Iterable[str]) -> dict:
    """Remove the events ``ids`` after their tick finished; unknown ids are ignored."""
    done = _ids(ids)
    queue = normalize_queue(queue)
    queue["events"] = [e for e in queue["events"] if e["id"] not in done]
    queue["in_flight"] = [i for i in queue["in_flight"] if i not in done]
    return queue


def release(
    queue: dict | None,
    ids: Iterable[str],
    max_attempts: int = MAX_ATTEMPTS,
    count_attempt: bool = True,
) -> dict:
    """Put the events ``ids`` back in the queue so the next tick takes them again.

    Args:
        queue: The queue dict (not changed).
        ids: The events' ids; unknown ids are ignored.
        max_attempts: Failed attempts after which an event is removed and counted in
            ``failed``.
        count_attempt: Whether this release is a failure of the event (the model call failed).
            Pass False when the tick was merely cut short (the NPC was paused or moved), so
            the event is retried without using up its attempts.
    """
    back = _ids(ids)
    queue = normalize_queue(queue)
    kept = []
    for event in queue["events"]:
        if event["id"] in back and count_attempt:
            event["attempts"] += 1
            if event["attempts"] >= max_attempts:
                queue["failed"] += 1
                continue
        kept.append(event)
    queue["events"] = kept
    queue["in_flight"] = [i for i in queue["in_flight"] if i not in back]
    return queue


def hold_back(queue: dict | None, ids: Iterable[str]) -> dict:
    """Put the events ``ids`` back because their model could not be reached (an outage).

    Unlike :func:`release` no attempt is counted: the events wait for the model to come back,
    and :func:`give_up_stale` gives them up when they grow too old. Each counts one more
    ``deferred``; unknown ids are ignored.
    """
    back = _ids(ids)
    queue = normalize_queue(queue)
    for event in queue["events"]:
        if event["id"] in back:
            event["deferred"] += 1
    queue["in_flight"] = [i for i in queue["in_flight"] if i not in back]
    return queue


def has_deferred(queue: dict | None) -> bool:
    """Whether any queued event was put back during an outage (cheap: no copy is made)."""
    if not isinstance(queue, dict):
        return False
    return any(isinstance(e, dict) and e.get("deferred") for e in queue.get("events") or ())


def give_up_stale(
    queue: dict | None,
    now: datetime,
    max_age: float,
    present: Callable[[Event], bool],
) -> tuple[dict, list[tuple[Event, str]]]:
    """Give up the events put back during an outage that can no longer be answered well.

    An event that waited for its model (``deferred``, not in flight) is given up when it is
    older than ``max_age`` seconds at ``now``, or when ``present(event)`` says its speaker is no
    longer there to hear the answer. Each one given up is counted in ``failed``.

    Returns:
        ``(new_queue, given_up)``: ``given_up`` holds ``(event, why)`` with why in words
        (``"said 412 s ago, older than 300 s"``, ``"its speaker is gone"``).
    """
    queue = normalize_queue(queue)
    in_flight = set(queue["in_flight"])
    kept, given_up = [], []
    for data in queue["events"]:
        event = Event.from_dict(data) if data["deferred"] and data["id"] not in in_flight else None
        why = ""
        if event is not None:
            age = event.age(now)
            if age > max_age:
                why = f"said {age:.0f} s ago, older than {max_age:g} s"
            elif not present(event):
                why = "its speaker is gone"
        if why and event is not None:
            given_up.append((event, why))
            queue["failed"] += 1
        else:
            kept.append(data)
    queue["events"] = kept
    return queue, given_up


def recover(queue: dict | None) -> dict:
    """After a reload: clear the in-flight marks so interrupted ticks are replayed.

    An interrupted tick is not the event's fault, so no attempt is counted.
    """
    queue = normalize_queue(queue)
    queue["in_flight"] = []
    return queue


# -- reading a batch ---------------------------------------------------------------------------


def main_event(batch: Iterable[Event | dict]) -> Event | None:
    """The event a batch answers first: its highest priority, the oldest on a tie."""
    events = [_as_event(e) for e in batch or []]
    if not events:
        return None
    best = events[0]
    for event in events[1:]:
        if event.priority > best.priority:
            best = event
    return best


def event_signal(batch: Iterable[Event | dict]) -> str | None:
    """The event class of a batch's main event (the execution pattern's ``event_class``)."""
    main = main_event(batch)
    return main.event_class if main else None


def _quoted(text: str) -> str:
    return f'"{text}"'


def render_event(event: Event | dict) -> str:
    """One event as the line the assistant reads, e.g. ``Alice says to you: "Hi."``.

    What players and objects wrote cannot shape the prompt: names are cleaned
    (:func:`~evennia_ai.utils.clean_name`: one line, no escape or control characters, starting
    with a letter or digit), text is cleaned and kept on one line, and a room line that would
    start with anything but a letter or digit (``## Operator ...``) is marked as the room's.
    """
    line = _render_event(_as_event(event))
    return line if line[:1].isalnum() or line.startswith("[") else f"(in the room) {line}"


def _render_event(event: Event) -> str:
    name = clean_name(event.source_name) if event.source_name else "Someone"
    text = " ".join(clean_text(event.text).split())
    kind = event.kind
    if kind == "say":
        if (event.data or {}).get("floor") == TO_EVERYONE:
            return f"{name} says to everyone: {_quoted(text)}"
        return (
            f"{name} says to you: {_quoted(text)}"
            if event.addressed
            else f"{name} says: {_quoted(text)}"
        )
    if kind == "whisper":
        return f"{name} whispers to you: {_quoted(text)}"
    if kind in ("page", "tell"):
        return f"{name} pages you: {_quoted(text)}"
    if kind == "arrive":
        return text or f"{name} arrives."
    if kind == "depart":
        return text or f"{name} leaves."
    if kind == "give":
        return text or f"{name} gives you something."
    if event.event_class == "system":
        return f"[System] {text}" if text else "[System notice]"
    # Poses and the rest are already the line the room saw ("Bob waves.").
    return text or f"{name} does something ({kind})."


def render_events(batch: Iterable[Event | dict]) -> str:
    """A batch as text for the ``pending_event`` component: one line per event, oldest first."""
    return "\n".join(render_event(e) for e in batch or [])
