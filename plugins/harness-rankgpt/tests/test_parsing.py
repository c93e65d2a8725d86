"""The permutation parser (notes §2.5) and the sliding-window arithmetic (§2.6)."""

from __future__ import annotations

import pytest

from harness_rankgpt.parsing import parse_permutation, windows


def test_plain_permutation():
    p = parse_permutation("[2] > [3] > [1]", 3)
    assert p.order == [1, 2, 0] and (p.valid, p.duplicates, p.out_of_range, p.missing) == (3, 0, 0, 0)


def test_duplicates_keep_first_out_of_range_dropped_missing_appended_in_incoming_order():
    p = parse_permutation("[4] > [2] > [4] > [0] > [9] > [2]", 5)
    # ids 4,2 kept; second 4 and second 2 are duplicates; [0] -> -1 and [9] -> 8 are out of range
    assert p.order == [3, 1, 0, 2, 4]
    assert (p.valid, p.duplicates, p.out_of_range, p.missing) == (2, 2, 2, 3)


def test_every_digit_counts_like_the_reference():
    # prose digits count: "2019" is id 2019 -> out of range; "3" counts
    p = parse_permutation("In 2019 the best was passage 3, then [1]", 3)
    assert p.order == [2, 0, 1] and p.out_of_range == 1
    assert parse_permutation("[1]>[2]>[3]", 3, parser="brackets").order == [0, 1, 2]
    assert parse_permutation("In 2019 passage 3, then [2]", 3, parser="brackets").order == [1, 0, 2]


def test_refusal_and_empty_are_unparseable_and_keep_the_order():
    for text in ("None of the provided passages is directly relevant.", "", "[] > []"):
        p = parse_permutation(text, 4)
        assert p.unparseable and p.order == [0, 1, 2, 3]


def test_zero_based_and_unicode_digits():
    assert parse_permutation("[0] > [2] > [1]", 3, zero_based=True).order == [0, 2, 1]
    assert parse_permutation("[1] > [2]", 3, zero_based=True).order == [1, 2, 0]
    # '²' is isdigit() but int('²') fails: treated as a separator, not a crash
    assert parse_permutation("[2]² > [1]", 2).order == [1, 0]


@pytest.mark.parametrize("text", ["[5] > [5] > [5]", "banana", "[1] > [1] > [3] > 77 > -2 > [2]", "1 2 3 4 5 6 7"])
def test_always_a_permutation(text):
    assert sorted(parse_permutation(text, 5).order) == list(range(5))


def test_windows_100_20_10_is_nine_calls_back_to_front():
    w = windows(100, 20, 10)
    assert w == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30), (0, 20)]
    assert len(w) == 9


def test_windows_short_and_uneven_lists_cover_every_position():
    assert windows(20, 20, 10) == [(0, 20)]
    assert windows(15, 20, 10) == [(0, 15)]
    assert windows(0, 20, 10) == []
    assert windows(95, 20, 10)[-2:] == [(5, 25), (0, 15)]
    assert windows(30, 30, 10) == [(0, 30)]  # the top-30 cascade call
    for n in range(1, 120):
        covered = set().union(*(range(s, e) for s, e in windows(n, 20, 10)))
        assert covered == set(range(n))
    with pytest.raises(ValueError):
        windows(10, 0, 1)
