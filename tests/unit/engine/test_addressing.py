"""Who a line is spoken to, from its words: a name set off as a call addresses; a name inside
a sentence only mentions."""

import pytest

from evennia_ai.engine.addressing import (
    is_question,
    mentioned,
    to_everyone,
    vocative,
    vocative_groups,
)

NAMES = {"tom": ["Tom"], "marta": ["Marta", "innkeeper"], "bard": ["Bard"]}
EVERYONE = ["everyone", "everybody", "all", "all of you", "you all", "y'all", "folks"]


@pytest.mark.parametrize(
    "line, called",
    [
        ("Tom, hello", ["tom"]),
        ("Hey Tom, what's new?", ["tom"]),
        ("Hello Tom", ["tom"]),
        ("Good evening, Tom.", ["tom"]),
        ("What's the news, Tom?", ["tom"]),
        ("Lovely evening, Innkeeper, the stew smells fine", ["marta"]),
        ("@Tom ale", ["tom"]),
        ('"Tom!"', ["tom"]),
        ("tom: the usual", ["tom"]),
        # the rule: a name at the start or the end of a say, punctuated or not
        ("Tom how are you?", ["tom"]),
        ("Hey Tom what's new", ["tom"]),
        ("Thanks Tom.", ["tom"]),
        ("Is the forge hot today Bard?", ["bard"]),
    ],
)
def test_a_name_set_off_at_start_middle_or_end_addresses(line, called):
    assert vocative(line, NAMES) == called


@pytest.mark.parametrize(
    "line",
    [
        "I saw Tom at the mill",
        "Tell Tom he's late",
        "Give this to Marta and go",
        "Some Bard songs are the best",
        "Tomas, hi",  # another name
        "Tom's ale is flat",
    ],
)
def test_a_name_inside_a_sentence_does_not(line):
    assert vocative(line, NAMES) == []


def test_names_are_whole_words_any_case_longest_first():
    names = {"tom": ["Tom"], "old": ["Old Tom"], "sam": ["Sam"]}
    assert vocative("OLD TOM, a pint", names) == ["old"]
    assert vocative("old   tom, a pint", names) == ["old"]  # spaces in a name as typed
    assert vocative("tOm, a pint", names) == ["tom"]
    assert vocative("Samwise, hi", names) == []
    assert vocative("Hi, Tomtom!", names) == []


def test_several_leading_names_come_in_order():
    assert vocative("Tom, Marta and Bard, hello", NAMES) == ["tom", "marta", "bard"]
    assert vocative("Bard & Tom: a song!", NAMES) == ["bard", "tom"]
    assert vocative("Innkeeper, Marta, Tom, hi", NAMES) == ["marta", "tom"]  # each once
    # a name that fits two candidates is one call, of both (the floor picks one)
    guards = {1: ["Guard", "Hob"], 2: ["Guard", "Jem"]}
    assert vocative_groups("Guard, open the gate!", guards) == [[1, 2]]
    assert vocative_groups("Hob, Guard, hello", guards) == [[1], [2]]


def test_everyone_words_only_as_a_phrase():
    for line in ("Hello all", "Everyone, listen!", "Evening, folks.", "Good day to you all"):
        assert to_everyone(line, EVERYONE) is (line != "Good day to you all"), line
    assert to_everyone("Hello all of you!", EVERYONE)
    assert not to_everyone("I ate it all", EVERYONE)
    assert not to_everyone("Is everyone here from the mill", EVERYONE)
    assert not to_everyone("Hello all", [])


def test_a_pose_names_anyone_anywhere_but_its_actor():
    assert mentioned("Alice waves at Tom.", NAMES, actor="Alice") == ["tom"]
    assert mentioned("Bard bows to Marta and Tom.", NAMES, actor="Bard") == ["marta", "tom"]
    assert mentioned("Alice sighs.", NAMES, actor="Alice") == []


def test_a_question_is_a_question_mark_in_speech_or_quoted_pose_speech():
    assert is_question("Is the forge hot today, Smith?")
    assert not is_question("What a lovely evening.")
    assert is_question('Alice leans in. "Any news?"', "pose")
    assert not is_question("Alice looks puzzled?", "pose")  # no speech in it
    assert not is_question("")
