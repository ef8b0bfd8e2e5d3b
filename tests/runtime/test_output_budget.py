"""How much command output a run keeps in its transcript, per shell call and per run."""

from __future__ import annotations

import re

import pytest

from skillctl.runtime.output_budget import OutputBudget

MARKER = re.compile(r"\n\[… (\d+) characters of this output are not in the transcript \(([^)]*)\)")


def _kept(text: str) -> int:
    match = MARKER.search(text)
    return len(text) if match is None else len(text) - (text.index("…]\n", match.start()) + 3 - match.start())


def test_everything_is_kept_under_the_caps():
    budget = OutputBudget(per_call=100, per_run=1000)
    assert budget.fit(["abc", "", "x" * 97]) == [("abc", 0), ("", 0), ("x" * 97, 0)]
    assert budget.used == 100


def test_short_streams_keep_everything_and_long_ones_share_the_rest():
    budget = OutputBudget(per_call=2000, per_run=10**6)
    short, long_a, long_b = "s" * 100, "a" * 5000 + "END-A", "b" * 9000 + "END-B"
    (s, s_cut), (a, a_cut), (b, b_cut) = budget.fit([short, long_a, long_b])
    assert (s, s_cut) == (short, 0)
    for original, kept, cut in ((long_a, a, a_cut), (long_b, b, b_cut)):
        assert len(kept) == 950  # (2000 - 100) / 2
        match = MARKER.search(kept)
        assert match and int(match.group(1)) == cut == len(original) - _kept(kept)
        assert match.group(2) == "over the cap of 2000 characters per shell call"
        assert original.startswith(kept[: match.start()]) and kept.endswith(original[-5:])  # head and tail
    assert "nothing else kept them: write output that matters to a file in the workspace" in a
    assert budget.used == 100 + 950 + 950


def test_the_run_cap_bounds_all_calls_together():
    budget = OutputBudget(per_call=3000, per_run=5000)
    first = budget.fit(["x" * 3000])
    assert first == [("x" * 3000, 0)]
    (second, cut), = budget.fit(["y" * 4000])
    assert len(second) == 2000 and "over what is left of the run's cap of 5000 characters" in second
    (third, cut), = budget.fit(["z" * 4000])
    # Used up: only the marker is left, saying why, with the full count.
    assert "the run's cap of 5000 characters of command output is used up" in third
    assert cut == 4000 and int(MARKER.search(third).group(1)) == 4000 and "zz" not in third
    assert budget.fit([""]) == [("", 0)]


def test_negative_caps_are_refused():
    with pytest.raises(ValueError, match="must not be negative"):
        OutputBudget(per_call=-1)
