"""Lines fitted to a player's screen: wrapped between words, hanging indents, markup kept."""

from types import SimpleNamespace

from django.test import override_settings
from evennia.utils.ansi import strip_ansi

from evennia_ai.screen import fit_lines, hanging_indent, plain_words, session_width, wrap_line

LONG = "the quick brown fox jumps over the lazy dog " * 4


def widths(text: str) -> list[int]:
    return [len(line) for line in strip_ansi(text).split("\n")]


def test_a_line_that_fits_is_left_alone():
    text = "  model: openai/x\n\n+---+---+\n| a | b |"
    assert fit_lines(text, 40) == text
    assert fit_lines("", 40) == ""


def test_long_lines_wrap_between_words_and_keep_every_word():
    out = fit_lines("Nothing copied: " + LONG, 40)
    assert max(widths(out)) <= 40 and len(widths(out)) > 1
    assert " ".join(out.split()) == " ".join(("Nothing copied: " + LONG).split())
    # a sentence at the start of a line: its continuations indent by 2, not under "copied: "
    assert all(line.startswith("  ") and line[2] != " " for line in out.split("\n")[1:])


def test_continuations_hang_under_a_label_tag_or_bullet():
    for line, hang in (
        ("  budget: " + LONG, 10),
        ("    tokens a day (this NPC): " + LONG, 29),
        ("[AI] Marta(#9) wants to run " + LONG, 5),
        ("- goal_1 " + LONG, 2),
        ("#3 2026-01-01 " + LONG, 3),
        ("  tool look(target: " + LONG, 4),  # inside a call's parentheses: no label
    ):
        assert hanging_indent(line, 80) == hang, line
        rest = wrap_line(line, 60)[1:]
        assert rest and all(text[:hang].isspace() and text[hang] != " " for text in rest), line


def test_a_hang_past_half_the_width_falls_back():
    line = "    " + "x" * 40 + ": " + LONG
    assert hanging_indent(line, 60) == 6


def test_markup_is_kept_and_not_counted():
    line = "|wLong-term memory|n of Marta: " + "|rred|n word ||bar " * 12
    out = fit_lines(line, 50)
    assert max(widths(out)) <= 50
    assert out.replace("\n", " ").split() == line.split()  # every markup code where it was
    assert "||bar" in out


def test_a_word_longer_than_the_line_is_cut_unless_it_holds_markup():
    url = "https://example.com/" + "a" * 100
    out = fit_lines("see " + url + " now", 40)
    assert max(widths(out)) <= 40 and "".join(out.split()).replace("see", "", 1).startswith(url)
    marked = "|w" + "b" * 60 + "|n"
    assert "  " + marked in fit_lines("see " + marked, 40).split("\n")


def test_session_width():
    assert session_width(SimpleNamespace(protocol_flags={"SCREENWIDTH": {0: 120}})) == 120
    with override_settings(CLIENT_DEFAULT_WIDTH=78):
        assert session_width(None) == 78
        assert session_width(SimpleNamespace(protocol_flags={"SCREENWIDTH": {0: 0}})) == 78
        assert session_width(SimpleNamespace(protocol_flags={"SCREENWIDTH": "junk"})) == 78


def test_plain_words():
    assert plain_words("Call `look` at most 2 times") == "Call look at most 2 times"
    assert plain_words("# Tool Execution Rules\n- **never** `say` it") == (
        "Tool Execution Rules\n- never say it"
    )
    assert plain_words("a ``literal`` and #hashtag") == "a ``literal`` and #hashtag"
