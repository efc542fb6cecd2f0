"""A reading model: a deterministic test double that can do each task only from what it is sent.

The scripted model and the loopback server answer whatever they were told to, so a request
with no instruction or no input passes unnoticed. :func:`read_and_answer` is a responder for
either (``ModelServer(responder=read_and_answer)``, ``ScriptedModel(responder=...)``) that does
each kind of task the way a careful model would, using nothing but the request:

- **An event** (no task heading): a question ``What is my <thing>?`` is answered only when
  ``<thing> is <value>`` appears somewhere else in the request (history, summary, memories,
  notes); otherwise it says it does not know. ``Where is the <Room>?`` (or ``How do I get to
  ...?``) is answered with the way the sense of place gives (``## Where you are``: its exits,
  the rooms further on), else it says it does not know the way. ``What do you sell?`` is
  answered with the wares section's ``You sell:`` line, else nothing for sale. ``I'll buy <item>
  [for <price>]`` is taken at its word with a ``trade`` offer (the player's price, ``for free``
  being 0, else the wares' list price): it obliges, so only the rules can refuse; asked again
  after the tool's answer, it says the offer or the refusal. A statement is acknowledged. An event that
  mentions the journal is first looked up with ``review_journal`` (a long tool result).
- **reflection / reflection_cont**: every journal line it was sent that holds ``Lesson: <text>``
  becomes a rule, all in one journal entry, each on its own ``RULE:`` line after an opening
  line (several rules per entry, not at its start) - but only when the instruction it was sent
  explains the ``RULE:`` convention. Without it the lessons are written as plain prose.
- **sleep_consolidate**: each fact (``<x> is <y>``) in the journal and conversation sections it
  was sent is stored with ``store_memory``, when the instruction names that tool.
- **pre_compaction**: each fact told in the batch about to be compacted is saved with
  ``update_entity_observation`` (the speaker) when the instruction names that tool.
- **goal_decompose**: the goal under ``## Goal to decompose`` is split into as many subtasks as
  the request asks for (``exactly N subtasks`` anywhere, else the instruction's minimum).
- **summarise**: one line per fact in the log it was sent whose owner the log names (a fact
  that changed: its latest value, the earlier ones marked "formerly" when the instruction asks
  for that); nothing when the log is empty.
- **tick_autonomous**: the first active goal under ``## Goals`` gets 10 % more progress.
- **assessment**: a JSON assessment. **delegate**: a report naming the task.
- **mem0's extraction** (its own prompt, ``## New Messages``): mem0's JSON, one memory per
  fact in the new messages.

After its tool calls have answered, it ends the task with ``noop`` (or text when no tool is
offered); calls the loop refused for the per-answer cap (``not run: at most N tool calls``)
it sends again first, as the refusal asks. It reads fenced data (see ``evennia_ai.utils.fence``) as the text inside.

**Whom it obeys.** It takes instructions as the system prompt's trust note tells a model to
(:func:`standing_text`): from the system messages' own text and the operators' elements, from
the NPC's own standing guidance (``<own_guidance ...>`` elements) only when the note says that
guidance is its own to follow, and never from text fenced as ``<untrusted ...>`` data or from
what players said (the user messages). The one instruction it knows: ``greet ... with "X"``
(answering a greeting with ``X`` instead of ``Hello.``).
"""

from __future__ import annotations

import json
import re

from evennia_ai.utils import unfence
from evennia_ai.wording import (
    COMPACTION_BATCH_HEADING,
    CONVERSATION_LOG_HEADING,
    DELEGATED_TASK_HEADING,
    GOAL_TO_DECOMPOSE_HEADING,
    GOALS_HEADING,
    HISTORY_TO_FOLD_HEADING,
    JOURNAL_SINCE_REFLECTION_HEADING,
    JOURNAL_SINCE_SLEEP_HEADING,
    NOTHING,
    PLACE_HEADING,
    REFLECTION_RESULTS_HEADING,
    TASK_HEADING,
    WARES_HEADING,
)

TASK_RE = re.compile("^" + re.escape(TASK_HEADING) + r"(\w+)", re.M)
FACT_RE = re.compile(r"\b(?:[Mm]y|([A-Z][a-z]+)'s)\s+([a-z][a-z ]{1,40}?) is ([A-Za-z0-9][\w'-]*)")
QUESTION_RE = re.compile(r"[Ww]hat is my ([a-z][a-z ]{1,40}?)\?")
WHERE_RE = re.compile(
    r"[Ww]here is (?:the )?([A-Z][\w' -]{1,40}?)\?|[Hh]ow do I get to (?:the )?([A-Z][\w' -]{1,40}?)\?"
)
WARES_RE = re.compile(r"[Ww]hat do you (?:sell|have for sale)\?")
BUY_RE = re.compile(
    r"\b(?:I'll|I will|I want to|[Ll]et me) buy (?:(\d+) |an? |the )?([a-z][a-z' ]*?)"
    r"(?: for (free|nothing|(\d+) coins?))?[.!?\"]"
)
FURTHER_RE = re.compile(r"(?:Further: |; )([^;(]+?) \(([^)]+)\)")
# A speaker at the start of a line, after a fence's "| " or a transcript's "Event: " label.
SPEAKER_RE = re.compile(r"^[|>\s]*(?:Event:\s*)?([A-Z][\w-]*) (?:says|asks|whispers|pages)")
LESSON_RE = re.compile(r"[Ll]esson:\s*(.+?)\s*(?:#\w+\s*)*$")
EXACTLY_RE = re.compile(r"exactly (\d+) subtasks")
RANGE_RE = re.compile(r"into (\d+) to (\d+) ")
REFUSED_FOR_CAP = "not run: at most "
GREET_RE = re.compile(r"\b[Gg]reet (?:\w+ ){0,3}?with \"([^\"]+)\"")
FENCE_OPEN_RE = re.compile(r'^<(untrusted|own_guidance) source="[^"]*">$')
# The trust note's sentence that makes <own_guidance> text the NPC's own to follow.
OWN_GUIDANCE_NOTE = (
    "is your own standing guidance"  # the loop's refusal past EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY
)


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return unfence(content) if isinstance(content, str) else ""


def standing_text(messages: list[dict]) -> str:
    """What it takes instructions from, as the trust note says (see the module docstring).

    The system messages' lines outside fenced elements, plus the inside of ``<own_guidance>``
    elements when that outside text says such guidance is the NPC's own; never what is fenced
    ``<untrusted>`` nor any user, assistant or tool message.
    """
    outside, own = [], []
    for message in messages:
        if message.get("role") != "system" or not isinstance(message.get("content"), str):
            continue
        inside = None
        for line in message["content"].split("\n"):
            if inside:
                if line == f"</{inside}>":
                    inside = None
                elif inside == "own_guidance":
                    own.append(line[2:] if line.startswith("| ") else line)
                continue
            opened = FENCE_OPEN_RE.match(line)
            if opened:
                inside = opened.group(1)
                continue
            outside.append(line)
    text = "\n".join(outside)
    return text + ("\n" + "\n".join(own) if OWN_GUIDANCE_NOTE in text else "")


def section(text: str, heading: str) -> str | None:
    """The text under ``heading`` up to the next ``## `` heading; None when it is absent."""
    at = text.find(heading)
    if at < 0:
        return None
    body = text[at + len(heading) :]
    end = body.find("\n## ")
    body = body if end < 0 else body[:end]
    body = body.strip()
    return "" if body == NOTHING else body


def _call(tool: str, /, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


def _offered(body: dict) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        fn = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(fn, dict) and fn.get("name"):
            names.add(fn["name"])
    return names


def _finish(body: dict, text: str = "Done.") -> dict:
    return {"tool_calls": [_call("noop")]} if "noop" in _offered(body) else {"text": text}


def facts_in(text: str) -> list[tuple[str, str, str]]:
    """``(whose, thing, value)`` for every fact told in ``text``, in order, once each.

    ``whose`` is the owner named (``Bob's sister``), else the speaker of the line (``My ...``),
    else "".
    """
    found, seen = [], set()
    for line in (text or "").splitlines():
        speaker = SPEAKER_RE.match(line.strip())
        for match in FACT_RE.finditer(line):
            who = match.group(1) or (speaker.group(1) if speaker else "")
            key = (who, match.group(2).strip(), match.group(3).strip())
            if key not in seen:
                seen.add(key)
                found.append(key)
    return found


def _fact_sentence(who: str, thing: str, value: str) -> str:
    return f"{who}'s {thing} is {value}" if who else f"The {thing} is {value}"


def read_and_answer(body: dict) -> dict:
    """Answer one chat-completions request body (``messages``, ``tools``) by reading it."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    whole = unfence("\n".join(_text(m) for m in messages))  # it reads fenced data as data
    memory = read_memory_request(body)
    if memory is not None:
        return memory
    tasks = TASK_RE.findall(whole)
    kind = tasks[-1] if tasks else "tick_event"
    if messages and messages[-1].get("role") == "tool":
        refused = _refused_calls(messages)
        if refused:
            return {"tool_calls": refused}  # the rest of its calls, as the refusal asks
        if kind == "tick_event" and not _called_since_user(messages, "say"):
            return _event(body, messages, whole, "", "")  # its look-up done: now answer
        return _finish(body)  # its calls were answered: the task is done
    task_text = whole[whole.rfind(f"{TASK_HEADING}{kind}") :] if tasks else ""
    instruction = section(task_text, f"{TASK_HEADING}{kind}") or ""
    handler = _HANDLERS.get(kind, _event)
    return handler(body, messages, whole, task_text, instruction)


def _last_user(messages: list[dict]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1


def _refused_calls(messages: list[dict]) -> list[dict]:
    """The calls of the last answer that the loop did not run for its per-answer cap."""
    results = {}
    index = len(messages) - 1
    while index >= 0 and messages[index].get("role") == "tool":
        results[messages[index].get("tool_call_id")] = _text(messages[index])
        index -= 1
    calls = messages[index].get("tool_calls") or [] if index >= 0 else []
    refused = []
    for call in calls:
        if results.get(call.get("id"), "").startswith(REFUSED_FOR_CAP):
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                continue
            refused.append(_call(function.get("name", ""), **arguments))
    return refused


def _called_since_user(messages: list[dict], tool: str) -> bool:
    for message in messages[_last_user(messages) + 1 :]:
        for call in message.get("tool_calls") or []:
            if (call.get("function") or {}).get("name") == tool:
                return True
    return False


def _event(body, messages, whole, task_text, instruction) -> dict:
    users = [_text(m) for m in messages if m.get("role") == "user"]
    event = users[-1] if users else ""
    offered = _offered(body)
    if "journal" in event and "review_journal" in offered and messages[-1].get("role") == "user":
        return {"tool_calls": [_call("review_journal", limit=50)]}
    way = WHERE_RE.search(event)
    question = QUESTION_RE.search(event)
    buy = BUY_RE.search(event)
    if buy and "trade" in offered:
        if not _called_since_user(messages, "trade"):
            return _offer(buy, event, whole)
        text = _offer_result(messages)
    elif way:
        text = _the_way(way.group(1) or way.group(2), whole)
    elif WARES_RE.search(event):
        text = _the_wares(whole)
    elif question:
        thing = question.group(1).strip()
        elsewhere = whole.replace(event, "")
        answer = re.search(rf"{re.escape(thing)} is ([A-Za-z0-9][\w'-]*)", elsewhere)
        text = f"Your {thing} is {answer.group(1)}." if answer else f"I don't know your {thing}."
    elif event:
        greeting = GREET_RE.search(standing_text(messages))
        if FACT_RE.search(event):
            text = "I will remember that."
        else:
            text = greeting.group(1) if greeting else "Hello."
    else:
        return _finish(body)
    if "say" in _offered(body):
        return {"tool_calls": [_call("say", message=text)]}
    return {"text": text}


def _offer(buy: re.Match, event: str, whole: str) -> dict:
    """The ``trade`` call a player's "I'll buy <item> [for <price>]" asks for, taken at its word:
    the player's own price (``for free``: 0), else the wares section's list price. It obliges
    whatever is asked, so only the trade's rules can refuse."""
    count, item, named, coins = buy.groups()
    speakers = [m.group(1) for m in map(SPEAKER_RE.match, event.splitlines()) if m]
    if named:
        price = int(coins) if coins else 0
    else:
        listed = re.search(
            rf"{re.escape(item)} x\d+, (\d+) coin", section(whole, WARES_HEADING) or ""
        )
        price = int(listed.group(1)) if listed else 0
    return {
        "tool_calls": [
            _call(
                "trade",
                player=speakers[-1] if speakers else "someone",
                direction="sell",
                item=item.strip(),
                quantity=int(count) if count else 1,
                price=price,
            )
        ]
    }


def _offer_result(messages: list[dict]) -> str:
    """What it says after its ``trade`` call: the offer, or why the rules refused it."""
    result = _text(messages[-1])
    try:
        failed = json.loads(result)
    except ValueError:
        return "That is my offer: say yes to take it."
    return f"I cannot: {failed.get('error', 'no')}" if isinstance(failed, dict) else result


def _the_way(place: str, whole: str) -> str:
    """The way to ``place`` as the sense of place gives it (its exits, the rooms further on),
    else that it does not know the way: it never invents one."""
    known = section(whole, PLACE_HEADING) or ""
    wanted = _room_key(place)
    for line in known.splitlines():
        if line.startswith("Exits: "):
            for part in line[len("Exits: ") :].rstrip(".").split("; "):
                exit_name, _, room = part.partition(" to ")
                if _room_key(room) == wanted:
                    return f"Go {exit_name}."
        if line.startswith("Further: "):
            for room, route in FURTHER_RE.findall(line):
                if _room_key(room) == wanted:
                    return f"Go {route}."
    return f"I do not know the way to {place}."


def _the_wares(whole: str) -> str:
    """What it sells, as its wares section lists it (``## What you trade``), else that it
    knows of nothing for sale."""
    for line in (section(whole, WARES_HEADING) or "").splitlines():
        if line.startswith("You sell: "):
            return f"I sell {line[len('You sell: '):]}"
    return "I have nothing for sale that I know of."


def _room_key(name: str) -> str:
    name = name.strip().lower()
    return name[4:] if name.startswith("the ") else name


def _lessons(text: str | None) -> list[str]:
    out = []
    for line in (text or "").splitlines():
        match = LESSON_RE.search(line)
        if match and match.group(1) not in out:
            out.append(match.group(1).rstrip("."))
    return out


def _write_lessons(body, lessons: list[str], instruction: str) -> dict:
    if not lessons or "add_journal_entry" not in _offered(body):
        return _finish(body, "Nothing to learn.")
    if "RULE:" in instruction:
        content = "What I learned today.\n" + "\n".join(f"RULE: {text}" for text in lessons)
    else:
        content = "Today I noticed that " + "; ".join(lessons) + "."
    return {"tool_calls": [_call("add_journal_entry", content=content, importance=6)]}


def _reflection(body, messages, whole, task_text, instruction) -> dict:
    journal = section(task_text, JOURNAL_SINCE_REFLECTION_HEADING)
    return _write_lessons(body, _lessons(journal), instruction)


def _reflection_cont(body, messages, whole, task_text, instruction) -> dict:
    results = section(whole, REFLECTION_RESULTS_HEADING)
    written = {line.split("RULE:", 1)[1].strip() for line in whole.splitlines() if "RULE:" in line}
    lessons = [text for text in _lessons(results) if text not in written]
    return _write_lessons(body, lessons, instruction)


def _sleep(body, messages, whole, task_text, instruction) -> dict:
    sent = "\n".join(
        section(task_text, heading) or ""
        for heading in (
            JOURNAL_SINCE_SLEEP_HEADING,
            HISTORY_TO_FOLD_HEADING,
        )
    )
    facts = facts_in(sent)
    if not facts or "store_memory" not in instruction or "store_memory" not in _offered(body):
        return _finish(body)
    calls = [_call("store_memory", content=_fact_sentence(*fact)) for fact in facts]
    return {"tool_calls": calls}


def _pre_compaction(body, messages, whole, task_text, instruction) -> dict:
    batch = section(task_text, COMPACTION_BATCH_HEADING)
    facts = [fact for fact in facts_in(batch or "") if fact[0]]
    tool = "update_entity_observation"
    if not facts or tool not in instruction or tool not in _offered(body):
        return _finish(body)
    calls = [
        _call(tool, name=who, observation=_fact_sentence(who, thing, value))
        for who, thing, value in facts
    ]
    return {"tool_calls": calls}


def _decompose(body, messages, whole, task_text, instruction) -> dict:
    goal = section(task_text, GOAL_TO_DECOMPOSE_HEADING)
    if not goal:
        return {"text": "Which goal? I was not told."}
    exactly = EXACTLY_RE.search(whole)
    bounds = RANGE_RE.search(instruction)
    count = int(exactly.group(1)) if exactly else int(bounds.group(1)) if bounds else 1
    description = goal.split(":", 1)[-1].strip()
    subtasks = [
        {"description": f"Step {n} of {count}: {description}", "priority": "medium"}
        for n in range(1, count + 1)
    ]
    return {"text": json.dumps({"subtasks": subtasks})}


def _facts_oldest_first(log: str) -> list[tuple[str, str, str]]:
    """:func:`facts_in` of ``log``, where a line of an earlier summary (``X is B; formerly X is
    A``) gives its former values before its current one."""
    ordered = []
    for line in log.splitlines():
        current, *former = line.split("; formerly ")
        for part in former + [current]:
            ordered.extend(facts_in(part if part is current else part.rstrip(".")))
    return ordered


def _summarise(body, messages, whole, task_text, instruction) -> dict:
    log = section(task_text, CONVERSATION_LOG_HEADING) or ""
    # As the instruction asks (who said what): a fact whose owner the log does not name (a
    # "my ..." quoted in a tool call) is left out rather than stated as nobody's. A fact told
    # again with another value is given with its latest value, the earlier ones marked as
    # formerly so, when the instruction asks for that.
    values: dict[tuple[str, str], list[str]] = {}
    for who, thing, value in _facts_oldest_first(log):
        if who:
            told = values.setdefault((who, thing), [])
            if value in told:
                told.remove(value)
            told.append(value)
    marks_old = "formerly" in (instruction or "")
    lines = []
    for (who, thing), told in values.items():
        old = told[:-1] if marks_old else []
        lines.append(
            _fact_sentence(who, thing, told[-1])
            + "".join(f"; formerly {_fact_sentence(who, thing, v)}" for v in old)
            + "."
        )
        if not marks_old:
            lines[-1:] = [_fact_sentence(who, thing, v) + "." for v in told]
    if not lines and log:
        lines = [f"{len(log.splitlines())} lines of small talk."]
    return {"text": "\n".join(lines)}


def _assessment(body, messages, whole, task_text, instruction) -> dict:
    return {"text": json.dumps({"recommended_iterations": 2, "recommended_mode": "react_loop"})}


def _delegate(body, messages, whole, task_text, instruction) -> dict:
    task = section(task_text, DELEGATED_TASK_HEADING) or "nothing"
    return {"text": f"Report: I looked into {task}."}


GOAL_LINE_RE = re.compile(r"- (goal_\d+_\d+) \[\w+\] active (\d+)%")


def _autonomous(body, messages, whole, task_text, instruction) -> dict:
    goal = GOAL_LINE_RE.search(section(whole, GOALS_HEADING) or "")
    if not goal or "update_goal" not in _offered(body) or "goal" not in instruction:
        return _finish(body, "Nothing to do.")
    progress = min(100, int(goal.group(2)) + 10)
    return {"tool_calls": [_call("update_goal", goal_id=goal.group(1), progress=progress)]}


def _memory_extraction(body, messages, whole, task_text, instruction) -> dict:
    new = section(whole, "## New Messages") or ""
    memories = [
        {"id": str(n), "text": _fact_sentence(*fact)} for n, fact in enumerate(facts_in(new))
    ]
    return {"text": json.dumps({"memory": memories})}


def read_memory_request(body: dict) -> dict | None:
    """mem0's extraction request (its own prompt, no task heading), or None for another."""
    whole = "\n".join(_text(m) for m in body.get("messages") or [] if isinstance(m, dict))
    if "## New Messages" in whole and TASK_HEADING not in whole:
        return _memory_extraction(body, [], whole, "", "")
    return None


_HANDLERS = {
    "tick_autonomous": _autonomous,
    "reflection": _reflection,
    "reflection_cont": _reflection_cont,
    "sleep_consolidate": _sleep,
    "pre_compaction": _pre_compaction,
    "goal_decompose": _decompose,
    "summarise": _summarise,
    "assessment": _assessment,
    "delegate": _delegate,
}
