"""Texts the fitting puts in front of the model (MISSION E2, E4, D7).

They live next to the fitting code on purpose: the agent's instructions (``CLEARING_NOTICE``, for
c₁) must describe exactly what ``fit`` does, and the notes must say what happened and what the
agent can do about it. Changing a text changes the bytes of c₁ or of fitted requests, so prompt
caches start over: change them deliberately.
"""

from __future__ import annotations

# E4: goes into the system prompt. The seeds report that a sub-agent not told about clearing
# stopped at 100k tokens of a 400k budget "to save space"; this text is the fix.
CLEARING_NOTICE = (
    "Context management: the conversation is fitted to the context window automatically. "
    "Old tool results are cleared (replaced by a short note), oldest first, and the most recent "
    "results are always kept intact. You do not need to save space: never stop, shorten or split "
    "a long task because the context is filling up, and do not copy outputs into your replies to "
    "preserve them. If you need a cleared result again, run the tool again (for example, re-read "
    "the file)."
)

# E2 pass 1: replaces the content of a cleared tool result in what is sent.
CLEARED_NOTE = "[tool result cleared to fit the context window; run the tool again if you need it]"

# E2 pass 2: stands where whole earlier turns were cut.
TURNS_CUT_NOTE = (
    "[earlier turns of this conversation were cut to fit the context window; the first message "
    "and the most recent turns are kept]"
)

# E2 pass 3: stands where earlier tool rounds of the current (long) turn were cut.
ROUNDS_CUT_NOTE = (
    "[earlier tool calls and results of this task were cut to fit the context window; the first "
    "message and the most recent ones are kept; run a tool again if you need its output]"
)

# D7: heads the message that replaces the oldest part of the history when compaction is on.
SUMMARY_HEADER = "[summary of the earlier part of this conversation, written to fit the context window]"
