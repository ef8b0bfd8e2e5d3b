"""``Compactor``: optional summarising compaction.

The summariser here is a deterministic function standing in for the model call the loop will
pass (a paid model cannot run here); it records what it was given.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillctl.context import DEFAULT_POLICY, Compactor, fit
from skillctl.errors import ConfigError, ContextTooLong
from skillctl.messages import Message, ToolCall, assistant, tool_result

from .histories import ascii_text, history_and_budget, sub_agent


class RecordingSummarizer:
    def __init__(self, reply: str | None = None) -> None:
        self.inputs: list[tuple[Message, ...]] = []
        self.reply = reply

    def __call__(self, messages):
        self.inputs.append(tuple(messages))
        if self.reply is not None:
            return self.reply
        return f"summary #{len(self.inputs)} of {len(messages)} messages"


def small_rounds(n, start=0, size=40):
    """Rounds whose results are too small to clear: only cutting or summarising helps."""
    out = []
    for k in range(start, start + n):
        c = ToolCall(f"c{k}", "shell", json.dumps({"command": f"grep -c x f{k}"}))
        out += [assistant(tool_calls=(c,)), tool_result(c, ascii_text(size, k))]
    return out


def test_no_model_call_while_clearing_is_enough():
    s = RecordingSummarizer()
    comp = Compactor(s)
    h = sub_agent([1000] * 12)
    budget = sum(m.tokens for m in h) // 2
    assert comp.fit(h, budget) == fit(h, budget)
    assert s.inputs == [] and comp.calls == 0


def test_summary_replaces_the_oldest_part_instead_of_cutting_turns():
    s = RecordingSummarizer()
    comp = Compactor(s)
    h = sub_agent([]) + small_rounds(100)
    budget = 2000
    assert fit(h, budget).pass_used == 3  # without compaction, rounds would be cut
    r = comp.fit(h, budget)
    assert r.tokens <= budget and r.pass_used <= 1
    assert r.messages[:2] == tuple(h[:2])
    summary = r.messages[2]
    assert summary.role == "user" and summary.content.startswith(DEFAULT_POLICY.summary_header)
    assert "summary #1" in summary.content
    assert r.summarized > 0 and r.dropped == r.summarized
    # summarised: the oldest blocks, whole; kept: everything after them, unchanged
    assert list(s.inputs[0]) == h[2 : 2 + r.summarized]
    assert list(r.messages[3:]) == h[2 + r.summarized :]
    # the rest fits in half the budget, so the next calls have room
    assert sum(m.tokens for m in r.messages[3:]) <= budget / 2


def test_summary_is_reused_while_the_history_grows_and_chains_when_renewed():
    s = RecordingSummarizer()
    comp = Compactor(s)
    h = sub_agent([]) + small_rounds(100)
    budget = 2000
    requests = []
    for step in range(60):
        r = comp.fit(h, budget)
        assert r.tokens <= budget
        requests.append(r.messages)
        h = h + small_rounds(1, start=100 + step)
    assert 1 < comp.calls <= 10  # one summary serves many calls
    # from the second summary on, the previous summary is summarised along with what follows it
    for earlier, later in zip(s.inputs, s.inputs[1:]):
        assert later[0].content.startswith(DEFAULT_POLICY.summary_header)
    # between renewals every request extends the previous one (prefix cache hits)
    extends = sum(1 for a, b in zip(requests, requests[1:]) if b[: len(a)] == a)
    assert extends >= len(requests) - 1 - comp.calls


def test_summariser_input_never_separates_a_call_from_its_result():
    s = RecordingSummarizer()
    comp = Compactor(s)
    h = sub_agent([]) + small_rounds(100)
    comp.fit(h, 2000)
    span = s.inputs[0]
    for k, m in enumerate(span):
        if m.tool_calls:
            ids = {x.tool_call_id for x in span[k + 1 :] if x.role == "tool"}
            assert {c.id for c in m.tool_calls} <= ids
    assert span[-1].role == "tool"


def test_empty_summary_falls_back_to_cutting():
    comp = Compactor(RecordingSummarizer(reply="   "))
    h = sub_agent([]) + small_rounds(100)
    r = comp.fit(h, 2000)
    assert r == fit(h, 2000) and r.pass_used == 3 and r.summarized == 0
    assert comp.summary is None


def test_a_history_that_does_not_extend_the_summarised_one_starts_over():
    s = RecordingSummarizer()
    comp = Compactor(s)
    comp.fit(sub_agent([]) + small_rounds(100), 2000)
    other = sub_agent([], task="a different task") + small_rounds(100, start=500)
    r = comp.fit(other, 2000)
    assert comp.calls == 2
    assert s.inputs[1][0] is other[2]  # not the old summary
    assert r.messages[1] is other[1]


def test_compaction_still_raises_when_the_newest_round_cannot_fit():
    comp = Compactor(RecordingSummarizer())
    with pytest.raises(ContextTooLong):
        comp.fit(sub_agent([]) + small_rounds(10) + small_rounds(1, start=99, size=3000), 1000)


def test_bad_compactor_settings_are_one_clear_line():
    with pytest.raises(ConfigError, match="summarize must be callable"):
        Compactor("not a function")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="target_fraction"):
        Compactor(RecordingSummarizer(), target_fraction=0)
    with pytest.raises(ConfigError, match="budget"):
        Compactor(RecordingSummarizer()).fit(sub_agent([10]), 0)


@settings(max_examples=100, deadline=None)
@given(history_and_budget(), st.integers(0, 4))
def test_compacted_requests_fit_keep_head_and_pairs_and_leave_history_alone(hb, extra_steps):
    h, budget = hb
    comp = Compactor(RecordingSummarizer())
    ids = itertools.count(90_000)
    for _ in range(extra_steps + 1):
        before = [(id(m), m.content) for m in h]
        try:
            r = comp.fit(h, budget)
        except ContextTooLong:
            return
        assert [(id(m), m.content) for m in h] == before
        assert r.tokens <= budget and r.tokens == sum(m.tokens for m in r.messages)
        he = next(i for i, m in enumerate(h) if m.role != "system") + 1
        assert all(a is b for a, b in zip(r.messages[:he], h[:he]))
        for k, m in enumerate(r.messages):
            if m.role == "tool":
                opener = next(x for x in reversed(r.messages[:k]) if x.role != "tool")
                assert m.tool_call_id in {c.id for c in opener.tool_calls}
        c = ToolCall(f"c{next(ids)}", "shell", "{}")
        h = h + [assistant(tool_calls=(c,)), tool_result(c, ascii_text(50))]
