"""Property tests of ``fit`` over random histories.

Each test states one rule of context fitting and checks it on random turns, tool rounds, sizes,
scripts and budgets; the oracles in ``histories`` restate the rule independently of the code.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillctl.context import DEFAULT_POLICY, FitPolicy, PrefixReuse, fit
from skillctl.errors import ContextTooLong
from skillctl.messages import Message

from .histories import (
    clearable,
    cleared_indices,
    head_end,
    history_and_budget,
    histories,
    note_tokens,
    origins,
    rounds,
)

PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
P = DEFAULT_POLICY


def fit_or_none(h, budget, policy=P):
    try:
        return fit(h, budget, policy=policy)
    except ContextTooLong:
        return None


def upper_bound_of_minimal_request(h, policy=P) -> int:
    """Tokens of a request that certainly satisfies pass 3: head, the longer cut note, the user
    message opening the last turn, and the newest block unchanged."""
    he = head_end(h)
    head = sum(m.tokens for m in h[:he])
    note = max(Message("user", policy.turns_cut_note).tokens, Message("user", policy.rounds_cut_note).tokens)
    body = range(he, len(h))
    if not body:
        return head
    last_block = max(i for i in body if h[i].role != "tool" or i == he)
    last_user_or_head = max((i for i in body if h[i].role == "user"), default=he - 1)
    newest_round = [i for i in body if i > last_user_or_head and h[i].tool_calls]
    if newest_round:
        last_block = newest_round[-1]
    last_user = max((i for i in body if h[i].role == "user"), default=None)
    opener = 0
    if last_user is not None and last_user != last_block:
        end = next((i for i in range(last_user + 1, len(h)) if h[i].role != "tool"), len(h))
        opener = sum(m.tokens for m in h[last_user:end])
    return head + note + opener + sum(m.tokens for m in h[last_block:])


@PROPS
@given(history_and_budget())
def test_history_is_never_changed(hb):
    h, budget = hb
    before = [(id(m), m.role, m.content, m.tool_calls, m.tool_call_id, m.name, dict(m.meta)) for m in h]
    fit_or_none(h, budget)
    assert [(id(m), m.role, m.content, m.tool_calls, m.tool_call_id, m.name, dict(m.meta)) for m in h] == before


@PROPS
@given(history_and_budget())
def test_request_never_exceeds_budget_when_fitting_is_possible(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if budget >= upper_bound_of_minimal_request(h):
        assert r is not None, "a request within the budget exists but fit raised"
    if r is not None:
        assert r.tokens == sum(m.tokens for m in r.messages)
        assert r.tokens <= budget


@PROPS
@given(history_and_budget())
def test_a_tool_call_is_never_separated_from_its_result(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if r is None:
        return
    sent = r.messages
    results_of = {m.tool_call_id: m for m in h if m.role == "tool"}
    for k, m in enumerate(sent):
        if m.role == "tool":
            opener = next(x for x in reversed(sent[:k]) if x.role != "tool")
            assert m.tool_call_id in {c.id for c in opener.tool_calls}, "result sent without its call"
        for c in m.tool_calls:
            following = list(itertools.takewhile(lambda x: x.role == "tool", sent[k + 1 :]))
            if c.id in results_of:
                assert c.id in {x.tool_call_id for x in following}, "call sent without its result"


@PROPS
@given(history_and_budget())
def test_system_head_and_first_message_are_always_sent_unchanged(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if r is None:
        return
    he = head_end(h)
    assert all(a is b for a, b in zip(r.messages[:he], h[:he]))
    assert len(r.messages) >= he


@PROPS
@given(history_and_budget())
def test_newest_tool_result_is_always_intact(hb):
    """Never cleared; and always sent when it belongs to the turn being worked on (pass 2 may
    cut an earlier turn whole, results included, once a new user turn has begun)."""
    h, budget = hb
    r = fit_or_none(h, budget)
    tools = [i for i in range(head_end(h), len(h)) if h[i].role == "tool"]
    if r is None or not tools:
        return
    newest = tools[-1]
    assert newest not in cleared_indices(r.messages, h, P)
    in_last_turn = not any(h[i].role == "user" for i in range(newest, len(h)))
    if in_last_turn:
        assert any(m is h[newest] for m in r.messages)


@PROPS
@given(history_and_budget())
def test_clearing_is_oldest_first_in_batches_of_four(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if r is None:
        return
    got = cleared_indices(r.messages, h, P)
    cands = clearable(h, budget, P)
    assert r.cleared == len(got)
    if r.pass_used <= 1:
        # A prefix of the oldest-first candidates, in whole batches unless candidates ran out.
        assert got == cands[: len(got)]
        assert len(got) % 4 == 0 or len(got) == len(cands)
    else:
        # Later passes start from pass 1 at its fullest: every kept candidate is cleared.
        kept = set(i for i in origins(r.messages, h, P) if i is not None)
        assert got == [i for i in cands if i in kept]


@PROPS
@given(history_and_budget())
def test_results_close_to_the_note_size_are_never_cleared(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if r is None:
        return
    for i in cleared_indices(r.messages, h, P):
        assert h[i].tokens > P.small_result_factor * note_tokens(P)


@PROPS
@given(history_and_budget())
def test_each_pass_only_when_the_previous_did_not_suffice(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    total = sum(m.tokens for m in h)
    if r is None:
        assert total > budget
        return
    assert (r.pass_used == 0) == (total <= budget)
    if r.pass_used == 0:
        assert r.messages == tuple(h)
    cands = clearable(h, budget, P)
    note = note_tokens(P)
    all_cleared = total - sum(h[i].tokens - note for i in cands)
    if r.pass_used == 1:
        assert r.dropped == 0
        # the fewest batches: without the last one the request would not fit
        got = cleared_indices(r.messages, h, P)
        last_batch = got[(len(got) - 1) // 4 * 4 :]
        assert r.tokens + sum(h[i].tokens - note for i in last_batch) > budget
    if r.pass_used >= 2:
        assert all_cleared > budget, "turns were cut although clearing was enough"


@PROPS
@given(history_and_budget())
def test_pass_two_keeps_whole_recent_turns_and_pass_three_whole_recent_rounds(hb):
    h, budget = hb
    r = fit_or_none(h, budget)
    if r is None or r.pass_used < 2:
        return
    he = head_end(h)
    orig = origins(r.messages, h, P)
    note = r.messages[he]
    assert orig[he] is None and note.role == "user"
    kept = orig[he + 1 :]
    assert None not in kept
    assert kept == sorted(kept) and kept[-1] == len(h) - 1
    assert r.dropped == len(h) - he - len(kept)
    if r.pass_used == 2:
        assert note.content == P.turns_cut_note
        assert h[kept[0]].role == "user" and kept == list(range(kept[0], len(h)))
        # most recent turns *that fit*: one more turn would not
        earlier = [i for i in range(he, kept[0]) if h[i].role == "user"]
        if earlier:
            extra = _sent_tokens(h, budget, earlier[-1], kept[0])
            assert r.tokens + extra > budget
    else:
        assert note.content == P.rounds_cut_note
        # pass 2 could not fit even the last turn alone
        users = [i for i in range(he, len(h)) if h[i].role == "user"]
        if users:
            last_turn = _sent_tokens(h, budget, users[-1], len(h))
            head = sum(m.tokens for m in h[:he])
            assert head + Message("user", P.turns_cut_note).tokens + last_turn > budget
        # the request being worked on — the user message opening the last turn — is kept
        if users:
            assert r.messages[he + 1] is h[users[-1]]
        # the kept rounds start on a block boundary and run to the end
        rounds_start = next(k for k in kept if h[k].role != "user")
        assert h[rounds_start].role == "assistant"
        assert kept[kept.index(rounds_start) :] == list(range(rounds_start, len(h)))


def _sent_tokens(h, budget, start, end):
    """Tokens of h[start:end] with every pass-1 candidate cleared."""
    cands = set(clearable(h, budget, P))
    note = note_tokens(P)
    return sum(note if i in cands else h[i].tokens for i in range(start, end))


# ---------------------------------------------------------------- stability (prompt caching)


@st.composite
def growing_history(draw):
    ids = itertools.count(10_000)
    h = draw(histories(max_turns=2, max_rounds=8))
    steps = [draw(rounds(ids, 2, min_rounds=1)) for _ in range(draw(st.integers(1, 6)))]
    total = sum(m.tokens for m in h) + sum(m.tokens for s in steps for m in s)
    budget = max(1, int(total * draw(st.floats(0.1, 1.0))))
    return h, steps, budget


@PROPS
@given(growing_history())
def test_cleared_set_only_grows_and_requests_extend_each_other_between_batches(g):
    h, steps, budget = g
    prev = fit_or_none(h, budget)
    for step in steps:
        h = h + step
        cur = fit_or_none(h, budget)
        if prev is None or cur is None or prev.pass_used > 1 or cur.pass_used > 1:
            prev = cur
            continue
        before = [h[i].tool_call_id for i in cleared_indices(prev.messages, h, P)]
        after = [h[i].tool_call_id for i in cleared_indices(cur.messages, h, P)]
        assert after[: len(before)] == before, "a result cleared before is sent intact again"
        if len(after) == len(before):
            tracker = PrefixReuse()
            tracker.observe(prev.messages)
            assert tracker.observe(cur.messages), "no new batch, yet the previous request is not a prefix"
        prev = cur


@settings(max_examples=60, deadline=None)
@given(history_and_budget(), st.integers(1, 6), st.floats(0.05, 0.9), st.floats(1.0, 6.0))
def test_policy_knobs_are_honoured(hb, batch, keep, factor):
    h, budget = hb
    policy = FitPolicy(batch_size=batch, keep_recent_fraction=keep, small_result_factor=factor)
    r = fit_or_none(h, budget, policy)
    if r is None:
        return
    assert r.tokens <= budget
    got = cleared_indices(r.messages, h, policy)
    cands = clearable(h, budget, policy)
    if r.pass_used == 1:
        assert got == cands[: len(got)]
        assert len(got) % batch == 0 or len(got) == len(cands)


@pytest.mark.parametrize("as_tuple", [False, True])
def test_history_may_be_list_or_tuple(as_tuple):
    from .histories import sub_agent

    h = sub_agent([500] * 6)
    r = fit(tuple(h) if as_tuple else h, 1200)
    assert r.tokens <= 1200
