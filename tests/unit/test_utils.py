"""Pure helpers of :mod:`evennia_ai.utils` (no database)."""

from __future__ import annotations

import pytest

from evennia_ai import wording
from evennia_ai.utils import truncate

QUESTION = "Marta, is the kitchen still open tonight, or should I try the baker?"


def test_a_text_within_the_limit_is_kept_as_it_is():
    assert truncate(QUESTION, len(QUESTION)) == QUESTION
    assert truncate(None, 10) == "" and truncate(42, 10) == "42"


@pytest.mark.parametrize("over", [1, 2, 10])
def test_a_text_is_not_cut_when_the_marker_is_as_long_as_what_it_saves(over):
    """The issue's ``"Marta, is the kitchen still open... [2 more characters]"``: two characters
    were cut and twenty added. A text a little over the limit is kept whole."""
    assert truncate(QUESTION, len(QUESTION) - over) == QUESTION
    word = "x" * 60
    assert truncate(word, 60 - over) == word
    assert truncate(word, 30) == "x" * 30 + "... [30 characters cut]"


def test_a_long_text_ends_after_a_whole_word_with_how_much_was_cut():
    text = "The innkeeper keeps a ledger of every guest. " * 40
    cut = truncate(text, 200)
    kept, marker = cut.split("...", 1)
    assert text.startswith(kept) and kept == kept.rstrip() and text[len(kept)] == " "
    assert len(kept) > 160 and kept.endswith(("guest.", "of", "ledger", "every", "keeps"))
    assert marker == f" [{len(text) - len(kept):,} characters cut]"
    assert len(cut) <= 200 + len(wording.CUT_MARKER)


def test_a_text_without_spaces_is_cut_at_the_limit_and_counts_with_separators():
    cut = truncate("x" * 5000, 100)
    assert cut == "x" * 100 + "... [4,900 characters cut]"


def test_a_cut_at_a_word_end_keeps_the_whole_word():
    text = "alpha beta gamma delta " * 50
    cut = truncate(text, 10)  # "alpha beta" ends at the limit
    assert cut.startswith("alpha beta...")
