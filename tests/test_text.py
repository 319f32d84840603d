"""Bounded text: clipped visibly to its limit, never silently, and references that cannot be guessed."""

from __future__ import annotations

import re

import pytest

from mycelium._text import clip, new_reference, printed


@pytest.mark.parametrize("length", [0, 9, 10, 11, 1_000])
def test_clip_keeps_text_that_fits_and_marks_what_it_cuts(length: int) -> None:
    text = "x" * length
    clipped = clip(text, 10)
    assert len(clipped) <= 10
    assert clipped == text if length <= 10 else clipped.endswith("...")


def test_printed_output_within_the_limit_is_shown_whole_one_line_each() -> None:
    assert printed(["one", "two"], limit=7) == "one\ntwo"


def test_printed_output_over_the_limit_is_cut_and_says_how_much_was_cut() -> None:
    shown = printed(["a" * 10, "b" * 10], limit=12)
    assert shown == "a" * 10 + "\nb" + "\n... (9 more characters cut)"


def test_references_are_short_random_and_distinct() -> None:
    references = {new_reference() for _ in range(1_000)}
    assert len(references) == 1_000
    assert all(re.fullmatch(r"ref-[0-9a-f]{12}", reference) for reference in references)
