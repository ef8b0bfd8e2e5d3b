"""Histories for the context-fitting tests: hypothesis strategies and small builders.

The oracles here restate the three passes of context fitting directly from their words,
independently of ``skillctl.context.fitting``, so a property test checks the rule rather than
the code.
"""

from __future__ import annotations

import itertools
import json
from typing import Sequence

from hypothesis import strategies as st

from skillctl.context import FitPolicy
from skillctl.messages import Message, ToolCall, assistant, system, tool_result, user

# Repeating alphabets per script, so long texts are cheap to build and cover every class
# of the token estimate.
ALPHABETS = {
    "ascii": "the quick brown fox jumps over the lazy dog 0123456789; ",
    "latin": "Příliš žluťoučký kůň úpěl ďábelské ódy. Größe, élève. ",
    "cyrillic": "Съешь же ещё этих мягких французских булок, да выпей чаю. ",
    "greek": "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ",
    "cjk": "我能吞下玻璃而不伤身体。いろはにほへとちりぬるを。다람쥐 헌 쳇바퀴에 타고파。",
    "emoji": "🚀 done ✅ 👩‍💻 🎉 ",
    "mixed": "ls -la → Привет, 世界! café 😀 ",
}


def text_of(script: str, length: int, offset: int = 0) -> str:
    a = ALPHABETS[script]
    start = offset % len(a)
    return (a * (length // len(a) + 2))[start : start + length]


def texts(max_len: int) -> st.SearchStrategy[str]:
    return st.builds(text_of, st.sampled_from(sorted(ALPHABETS)), st.integers(0, max_len), st.integers(0, 97))


# Tool outputs: some close to the cleared note's size, some far bigger.
result_texts = st.one_of(texts(260), st.builds(text_of, st.sampled_from(sorted(ALPHABETS)), st.integers(260, 5000)))


@st.composite
def histories(draw, max_turns: int = 4, max_rounds: int = 6) -> list[Message]:
    """System head (0–2 messages), a first user message, then turns of tool rounds."""
    ids = itertools.count()
    msgs: list[Message] = [system(draw(texts(400))) for _ in range(draw(st.integers(0, 2)))]
    msgs.append(user(draw(texts(600))))
    for turn in range(draw(st.integers(1, max_turns))):
        if turn:
            msgs.append(user(draw(texts(300))))
        msgs.extend(draw(rounds(ids, max_rounds)))
        if draw(st.booleans()):
            msgs.append(assistant(draw(texts(200))))
    return msgs


def rounds(ids: "itertools.count[int]", max_rounds: int, min_rounds: int = 0) -> st.SearchStrategy[list[Message]]:
    @st.composite
    def build(draw) -> list[Message]:
        out: list[Message] = []
        for _ in range(draw(st.integers(min_rounds, max_rounds))):
            calls = tuple(
                ToolCall(f"call_{next(ids)}", "shell", json.dumps({"command": f"cat part{draw(st.integers(0, 99))}.txt"}))
                for _ in range(draw(st.integers(1, 3)))
            )
            out.append(assistant(draw(texts(80)), calls))
            out.extend(tool_result(c, draw(result_texts)) for c in calls)
        return out

    return build()


@st.composite
def history_and_budget(draw, **kw) -> tuple[list[Message], int]:
    h = draw(histories(**kw))
    total = sum(m.tokens for m in h)
    frac = draw(st.floats(0.02, 1.1))
    return h, max(1, int(total * frac))


# ------------------------------------------------------------------ builders for unit tests


def chars_for(tokens: int) -> int:
    """ASCII characters whose estimate is ``tokens`` (4 per token)."""
    return 4 * tokens


def ascii_text(tokens: int, seed: int = 0) -> str:
    return text_of("ascii", chars_for(tokens), seed)


def sub_agent(result_tokens: Sequence[int], task: str = "read every chapter and summarise") -> list[Message]:
    """One user message, then one round per result: a call and a result of the given size."""
    msgs = [system("You are a careful reader."), user(task)]
    for k, t in enumerate(result_tokens):
        call = ToolCall(f"call_{k}", "shell", json.dumps({"command": f"cat ch{k:02}.txt"}))
        msgs += [assistant(tool_calls=(call,)), tool_result(call, ascii_text(t, k))]
    return msgs


# ------------------------------------------------------------------ oracles (passes as tests)


def head_end(h: Sequence[Message]) -> int:
    """System messages plus the first non-system message."""
    first = next((i for i, m in enumerate(h) if m.role != "system"), len(h))
    return min(first + 1, len(h))


def note_tokens(policy: FitPolicy) -> int:
    return Message("tool", policy.cleared_note).tokens


def kept_window(h: Sequence[Message], budget: int, policy: FitPolicy) -> set[int]:
    """Newest tool results within a quarter of the budget; always the newest one."""
    tools = [i for i in range(head_end(h), len(h)) if h[i].role == "tool"]
    kept: set[int] = set()
    acc = 0
    for i in reversed(tools):
        acc += h[i].tokens
        if kept and acc > policy.keep_recent_fraction * budget:
            break
        kept.add(i)
    return kept


def clearable(h: Sequence[Message], budget: int, policy: FitPolicy) -> list[int]:
    """Tool results outside the kept window that are much bigger than the note, oldest first."""
    kept = kept_window(h, budget, policy)
    limit = policy.small_result_factor * note_tokens(policy)
    return [
        i for i in range(head_end(h), len(h)) if h[i].role == "tool" and i not in kept and h[i].tokens > limit
    ]


def origins(sent: Sequence[Message], h: Sequence[Message], policy: FitPolicy) -> list[int | None]:
    """History index of each sent message (None for the notes fitting adds)."""
    by_id = {id(m): i for i, m in enumerate(h)}
    by_call = {m.tool_call_id: i for i, m in enumerate(h) if m.role == "tool"}
    out: list[int | None] = []
    for m in sent:
        if id(m) in by_id:
            out.append(by_id[id(m)])
        elif m.role == "tool" and m.content == policy.cleared_note and m.tool_call_id in by_call:
            out.append(by_call[m.tool_call_id])
        else:
            out.append(None)
    return out


def cleared_indices(sent: Sequence[Message], h: Sequence[Message], policy: FitPolicy) -> list[int]:
    return [
        i
        for m, i in zip(sent, origins(sent, h, policy))
        if i is not None and m is not h[i] and m.content == policy.cleared_note and h[i].content != m.content
    ]
