"""Unit tests of ``fit``: one per clause of the three passes and of the too-long case, on
histories with known sizes.

Sizes: ``sub_agent([t, ...])`` makes results of ``t`` content tokens (4 ASCII characters each)
plus 4 tokens of message overhead; the cleared note costs about 26 tokens in all.
"""

from __future__ import annotations

import json

import pytest

from skillctl.context import (
    CLEARED_NOTE,
    CLEARING_NOTICE,
    DEFAULT_POLICY,
    FitPolicy,
    MessageSizer,
    PrefixReuse,
    fit,
)
from skillctl.context.structure import layout
from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE, ConfigError, ContextTooLong
from skillctl.messages import Message, ToolCall, assistant, system, tool_result, user

from .histories import ascii_text, cleared_indices, note_tokens, sub_agent

P = DEFAULT_POLICY
NOTE = note_tokens(P)


def total(msgs) -> int:
    return sum(m.tokens for m in msgs)


def tool_positions(h):
    return [i for i, m in enumerate(h) if m.role == "tool"]


# ---------------------------------------------------------------------------- pass 0


def test_history_that_fits_is_sent_as_is():
    h = sub_agent([100] * 5)
    r = fit(h, total(h))
    assert r.pass_used == 0 and r.cleared == 0 and r.dropped == 0
    assert all(a is b for a, b in zip(r.messages, h)) and len(r.messages) == len(h)
    assert r.tokens == total(h)


# ---------------------------------------------------------------------------- pass 1


def test_clears_oldest_results_first_and_four_at_a_time():
    h = sub_agent([1000] * 12)
    budget = total(h) - 1  # one token over: a single result would do, a whole batch is cleared
    r = fit(h, budget)
    assert r.pass_used == 1
    tools = tool_positions(h)
    assert cleared_indices(r.messages, h, P) == tools[:4]
    assert r.cleared == 4 and r.dropped == 0


def test_clears_the_fewest_batches_that_fit():
    h = sub_agent([1000] * 12)
    saved_per_batch = 4 * (1004 - NOTE)
    budget = total(h) - saved_per_batch - 1  # just more than one batch can save
    r = fit(h, budget)
    assert r.cleared == 8
    assert cleared_indices(r.messages, h, P) == tool_positions(h)[:8]
    # and with exactly one batch's worth of room, one batch
    assert fit(h, total(h) - saved_per_batch).cleared == 4


def test_last_batch_may_be_short_only_when_candidates_run_out():
    h = sub_agent([1000] * 7)  # 6 candidates: the newest alone fills a quarter of the budget
    r = fit(h, 1400)  # all six cleared: ≈ 1,320 tokens
    assert r.pass_used == 1
    assert r.cleared == 6


def test_cleared_result_keeps_its_call_id_and_says_run_again():
    h = sub_agent([1000] * 8)
    r = fit(h, total(h) - 1)
    first_tool = tool_positions(h)[0]
    sent = r.messages[first_tool]
    assert sent.role == "tool" and sent.tool_call_id == h[first_tool].tool_call_id
    assert sent.content == CLEARED_NOTE
    assert "cleared to fit the context" in CLEARED_NOTE and "run the tool again" in CLEARED_NOTE
    assert h[first_tool].content != CLEARED_NOTE  # the saved history keeps everything


def test_results_not_much_bigger_than_the_note_are_left_alone():
    small = int(P.small_result_factor * NOTE) - 4  # content tokens; with overhead == the limit
    h = sub_agent([small, 1000, small, 1000, 1000, 1000, 1000, 1000])
    r = fit(h, total(h) - 1)
    got = cleared_indices(r.messages, h, P)
    tools = tool_positions(h)
    assert tools[0] not in got and tools[2] not in got
    assert got == [tools[1], tools[3], tools[4], tools[5]]
    # one token bigger and it is a candidate again
    h2 = sub_agent([small + 1, 1000, 1000, 1000, 1000, 1000])
    assert tool_positions(h2)[0] in cleared_indices(fit(h2, total(h2) - 1).messages, h2, P)


def test_newest_results_within_a_quarter_of_the_budget_stay_intact():
    h = sub_agent([1000] * 142)
    tools = tool_positions(h)
    # The budget is exactly the request with all but the two newest results cleared: a quarter
    # of it (≈ 2,160) holds two results of 1,004 tokens but not three.
    budget = total(h) - sum(h[i].tokens - NOTE for i in tools[:-2])
    assert 2 * 1004 <= budget / 4 < 3 * 1004
    r = fit(h, budget)
    got = cleared_indices(r.messages, h, P)
    assert r.pass_used == 1 and r.tokens == budget
    assert got == tools[:-2]  # everything older had to go...
    assert r.messages[tools[-2]] is h[tools[-2]] and r.messages[tools[-1]] is h[tools[-1]]  # ...not these
    # one token less and clearing is not enough: the kept window is never touched, turns go
    assert fit(h, budget - 1).pass_used == 3


def test_the_newest_result_stays_intact_even_when_bigger_than_a_quarter():
    h = sub_agent([1000] * 6 + [5000])
    budget = 6000  # a quarter is 1500 < 5004
    r = fit(h, budget)
    newest = tool_positions(h)[-1]
    assert r.messages[newest] is h[newest]
    assert newest not in cleared_indices(r.messages, h, P)
    assert r.tokens <= budget


def test_cleared_prefix_is_stable_over_consecutive_calls():
    """A sub-agent reading chapters: the cleared set grows by whole batches, and between two
    batches each request begins with the whole previous one (the prompt cache is hit)."""
    budget = 20_000
    tracker = PrefixReuse()
    h = sub_agent([])
    history_of_cleared = []
    for k in range(60):
        call = ToolCall(f"c{k}", "shell", json.dumps({"command": f"cat ch{k}.txt"}))
        h = h + [assistant(tool_calls=(call,)), tool_result(call, ascii_text(1500, k))]
        r = fit(h, budget)
        assert r.tokens <= budget
        history_of_cleared.append(cleared_indices(r.messages, h, P))
        tracker.observe(r.messages)
    counts = [len(c) for c in history_of_cleared]
    assert counts == sorted(counts) and all(c % 4 == 0 for c in counts)
    for a, b in zip(history_of_cleared, history_of_cleared[1:]):
        assert b[: len(a)] == a
    changes = sum(1 for a, b in zip(counts, counts[1:]) if a != b)
    assert tracker.reused == tracker.compared - changes
    assert tracker.ratio >= 0.7  # ≈ 3 calls of 4 reuse the prefix once clearing starts


def test_batches_of_four_reuse_the_prefix_more_than_batches_of_one():
    budget = 20_000

    def run(policy):
        tracker = PrefixReuse()
        h = sub_agent([])
        for k in range(60):
            call = ToolCall(f"c{k}", "shell", "{}")
            h = h + [assistant(tool_calls=(call,)), tool_result(call, ascii_text(1500, k))]
            tracker.observe(fit(h, budget, policy=policy).messages)
        return tracker.ratio

    four, one = run(P), run(FitPolicy(batch_size=1))
    assert four > one + 0.4


# ---------------------------------------------------------------------------- pass 2


def multi_turn(turn_sizes):
    """Turns, each a user message and rounds with results of the given sizes."""
    h = [system("sys"), user("first request")]
    k = 0
    for t, sizes in enumerate(turn_sizes):
        if t:
            h.append(user(f"request {t}"))
        for s in sizes:
            call = ToolCall(f"c{k}", "shell", "{}")
            k += 1
            h += [assistant(tool_calls=(call,)), tool_result(call, ascii_text(s, k))]
        h.append(assistant(f"done with request {t}"))
    return h


def test_pass_two_keeps_first_message_a_note_and_the_recent_whole_turns():
    # Small results (never cleared) so clearing cannot help: turns must go.
    h = multi_turn([[40] * 30, [40] * 30, [40] * 30, [40] * 5])
    budget = 2 * total(h) // 5
    r = fit(h, budget)
    assert r.pass_used == 2 and r.cleared == 0
    assert r.messages[0] is h[0] and r.messages[1] is h[1]
    assert r.messages[2].role == "user" and r.messages[2].content == P.turns_cut_note
    assert r.messages[3].role == "user" and r.messages[3].content.startswith("request")
    kept_from = h.index(r.messages[3])
    assert list(r.messages[3:]) == h[kept_from:]
    assert r.dropped == kept_from - 2
    # most recent turns that fit: adding the turn before would not fit
    earlier = max(i for i in range(2, kept_from) if h[i].role == "user")
    assert r.tokens + total(h[earlier:kept_from]) > budget
    assert r.tokens <= budget


def test_pass_two_is_not_used_when_clearing_is_enough():
    h = multi_turn([[1000] * 10, [1000] * 10, [100]])
    r = fit(h, total(h) // 2)
    assert r.pass_used == 1 and r.dropped == 0


# ---------------------------------------------------------------------------- pass 3


def test_pass_three_keeps_whole_recent_rounds_of_one_long_turn():
    # A sub-agent has one user message: only rounds can go. Small results: clearing can't help.
    h = sub_agent([40] * 100)
    budget = 2000
    r = fit(h, budget)
    assert r.pass_used == 3 and r.tokens <= budget
    assert r.messages[:2] == tuple(h[:2])
    assert r.messages[2].content == P.rounds_cut_note
    first_kept = h.index(r.messages[3])
    assert h[first_kept].role == "assistant" and h[first_kept].tool_calls
    assert list(r.messages[3:]) == h[first_kept:]
    assert r.tokens + total(h[first_kept - 2 : first_kept]) > budget  # one more round won't fit


def test_pass_three_keeps_the_user_message_that_opened_the_last_turn():
    h = multi_turn([[40] * 5, [40] * 100])
    r = fit(h, 2000)
    assert r.pass_used == 3
    assert r.messages[3].role == "user" and r.messages[3].content == "request 1"
    assert r.messages[4].role == "assistant" and r.messages[4].tool_calls


def test_pass_three_always_keeps_the_newest_round_and_what_follows():
    h = sub_agent([40] * 50) + [assistant("a remark without tool calls " + ascii_text(200))]
    r = fit(h, 600)
    assert r.pass_used == 3
    newest_round = max(i for i, m in enumerate(h) if m.tool_calls)
    assert list(r.messages[-3:]) == h[newest_round:]
    # Room for the trailing remark but not for the newest round with it: no request without the
    # newest round is acceptable, so the conversation is too long.
    head_and_note = sum(m.tokens for m in r.messages[:3])
    with pytest.raises(ContextTooLong):
        fit(h, head_and_note + h[-1].tokens + 10)


# ---------------------------------------------------------------------------- too long


def test_context_too_long_when_first_message_and_newest_round_exceed_budget():
    h = sub_agent([1000] * 3)
    with pytest.raises(ContextTooLong) as err:
        fit(h, 900)
    msg = str(err.value)
    assert msg.startswith(CONTEXT_TOO_LONG_MESSAGE) and "\n" not in msg
    assert "budget is 900" in msg


def test_context_too_long_when_the_head_alone_exceeds_budget():
    h = [system(ascii_text(500)), user(ascii_text(500))]
    with pytest.raises(ContextTooLong):
        fit(h, 800)


# ---------------------------------------------------------------------------- structure


def test_layout_defines_head_blocks_and_turns():
    c1, c2 = ToolCall("a", "shell"), ToolCall("b", "shell")
    h = [
        system("s1"), system("s2"), user("task"),
        assistant(tool_calls=(c1, c2)), tool_result(c1, "x"), tool_result(c2, "y"),
        assistant("thinking"),
        user("next"), assistant(tool_calls=(c1,)), tool_result(c1, "z"),
    ]  # fmt: skip
    lay = layout(h)
    assert lay.head_end == 3
    assert lay.block_starts == (3, 6, 7, 8)
    assert lay.turn_starts == (7,)
    assert lay.block_end(3) == 6 and lay.block_end(8) == 10
    assert layout(h, pinned=1).head_end == 4


def test_empty_history_and_system_only_history():
    assert fit([], 10).messages == ()
    h = [system("only instructions")]
    assert fit(h, 100).messages == tuple(h)
    with pytest.raises(ContextTooLong):
        fit([system(ascii_text(100))], 10)


# ---------------------------------------------------------------------------- tokenizer


class CharTokenizer:
    """A real (if crude) tokenizer: one token per character. Counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text)


def test_a_real_tokenizer_replaces_the_estimate_and_is_memoised():
    h = sub_agent([250] * 8)  # 1000 characters each: 1000 "tokens" for this tokenizer
    tok = CharTokenizer()
    by_chars = sum(MessageSizer(CharTokenizer())(m) for m in h)
    r = fit(h, by_chars - 1, tokenizer=tok)
    assert r.pass_used == 1 and r.cleared == 4  # the estimate would need nothing: 4× smaller
    assert fit(h, by_chars - 1).pass_used == 0
    calls = tok.calls
    fit(h, by_chars - 1, tokenizer=tok)
    assert tok.calls == calls  # every message (and note) is counted once per tokenizer
    assert r.tokens == sum(MessageSizer(CharTokenizer())(m) for m in r.messages)


def test_message_sizer_counts_each_message_once():
    tok = CharTokenizer()
    sizer = MessageSizer(tok)
    m = assistant("hello", (ToolCall("a", "shell", '{"command": "ls"}'),))
    first = sizer(m)
    calls = tok.calls
    assert sizer(m) == first and tok.calls == calls
    assert first == 4 + 5 + 8 + len("shell") + len('{"command": "ls"}')


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("budget", [0, -5, 1.5, True, "1000", None])
def test_bad_budget_is_one_clear_line(budget):
    with pytest.raises(ConfigError) as err:
        fit(sub_agent([10]), budget)
    assert "budget" in str(err.value) and "\n" not in str(err.value)


def test_history_item_that_is_not_a_message_is_named():
    with pytest.raises(ConfigError, match=r"history item 1 is a dict, not a Message"):
        fit([user("hi"), {"role": "user", "content": "x"}], 100)


@pytest.mark.parametrize("history", ["just text", 42, {"role": "user"}])
def test_history_that_is_not_a_sequence_is_refused(history):
    with pytest.raises(ConfigError, match="history must be a sequence of Message"):
        fit(history, 100)


def test_policy_that_is_not_a_fit_policy_is_refused():
    with pytest.raises(ConfigError, match="fit policy must be a FitPolicy"):
        fit([user("hi")], 100, policy={"batch_size": 4})


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"keep_recent_fraction": 1.5}, "keep_recent_fraction"),
        ({"keep_recent_fraction": -0.1}, "keep_recent_fraction"),
        ({"small_result_factor": 0.5}, "small_result_factor"),
        ({"cleared_note": ""}, "cleared_note"),
        ({"turns_cut_note": "  "}, "turns_cut_note"),
        ({"rounds_cut_note": None}, "rounds_cut_note"),
    ],
)
def test_bad_policy_values_are_one_clear_line(kwargs, field):
    with pytest.raises(ConfigError) as err:
        FitPolicy(**kwargs)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_tokenizer_without_count_is_refused():
    with pytest.raises(ConfigError, match="has no count"):
        fit([user("hi")], 100, tokenizer=object())


# ---------------------------------------------------------------------------- clearing notice


def test_clearing_notice_tells_the_agent_what_happens_and_what_not_to_do():
    text = CLEARING_NOTICE.lower()
    assert "cleared" in text and "automatically" in text
    assert "most recent" in text and "intact" in text
    assert "never stop" in text
    assert "run the tool again" in text and "re-read" in text
    assert "\n" not in CLEARING_NOTICE  # one paragraph: c₁ stays byte-identical however it is joined


def test_fit_result_summary_dict():
    r = fit(sub_agent([1000] * 8), 3000)
    d = r.to_dict()
    assert d == {
        "messages": len(r.messages), "tokens": r.tokens, "cleared": r.cleared,
        "dropped": r.dropped, "pass_used": r.pass_used, "summarized": 0,
    }  # fmt: skip


def test_with_content_leaves_original_meta_alone():
    h = sub_agent([1000] * 8)
    r = fit(h, 3000)
    cleared = [m for m in r.messages if m.content == CLEARED_NOTE]
    assert cleared and all(m.meta.get("cleared") for m in cleared)
    assert not any(m.meta for m in h)


def test_system_message_in_the_body_is_an_ordinary_block():
    c = ToolCall("a", "shell")
    h = [system("sys"), user("task"), assistant(tool_calls=(c,)), tool_result(c, ascii_text(2000)),
         system("mid-run reminder"), assistant(tool_calls=(ToolCall("b", "shell"),)),
         Message("tool", ascii_text(10), tool_call_id="b", name="shell")]  # fmt: skip
    r = fit(h, total(h) - 100)
    assert r.pass_used == 1 and r.cleared == 1
