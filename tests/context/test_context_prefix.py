"""``PrefixReuse``: the prompt-cache figure of a run."""

from __future__ import annotations

from skillctl.context import PrefixReuse
from skillctl.context.prefix import common_prefix_len
from skillctl.messages import assistant, system, user


def test_requests_that_extend_the_previous_one_count_as_reused():
    a, b, c = system("s"), user("task"), assistant("x")
    t = PrefixReuse()
    assert t.ratio == 1.0 and t.compared == 0  # nothing to compare yet
    assert t.observe([a, b]) is False  # the first request has no previous one
    assert t.observe([a, b, c]) is True
    assert t.observe([a, user("changed"), c]) is False
    assert t.observe([a, user("changed"), c, assistant("y")]) is True
    assert (t.requests, t.compared, t.reused) == (4, 3, 2)
    assert t.ratio == 2 / 3


def test_equal_but_distinct_message_objects_still_match():
    t = PrefixReuse()
    t.observe([user("task"), assistant("a")])
    assert t.observe([user("task"), assistant("a"), assistant("b")])


def test_token_ratio_weighs_the_shared_prefix_by_size():
    big, small = user("x" * 400), assistant("y")
    t = PrefixReuse()
    t.observe([big])
    t.observe([big, small])  # shares 104 of 109 tokens
    assert t.shared_tokens == big.tokens
    assert t.compared_tokens == big.tokens + small.tokens
    t.observe([user("other"), small])  # shares nothing
    assert t.shared_tokens == big.tokens
    assert 0 < t.token_ratio < 1


def test_a_shorter_request_is_not_a_reuse():
    t = PrefixReuse()
    t.observe([user("a"), assistant("b")])
    assert t.observe([user("a")]) is False


def test_summary_dict():
    t = PrefixReuse()
    for n in range(1, 5):
        t.observe([user("t")] + [assistant(str(i)) for i in range(n)])
    assert t.to_dict() == {"requests": 4, "prefix_reused": 3, "prefix_reuse": 1.0, "prefix_token_reuse": 0.75}
    # tokens: 10+15+20 shared of 15+20+25 sent (the new message of each request is never cached)


def test_common_prefix_len():
    a, b = user("a"), user("b")
    assert common_prefix_len([a, b], [a, b, a]) == 2
    assert common_prefix_len([a, b], [b, a]) == 0
    assert common_prefix_len([], [a]) == 0
