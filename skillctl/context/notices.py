"""Texts the fitting puts in front of the model: the instructions about clearing, the notes that
stand where something was cleared or cut, and the header of a summary.

They live next to the fitting code on purpose: the agent's instructions (``CLEARING_NOTICE``, for
c₁) must describe exactly what ``fit`` does, and the notes must say what happened and what the
agent can do about it. Changing a text changes the bytes of c₁ or of fitted requests, so prompt
caches start over: change them deliberately.
"""

from __future__ import annotations

# Goes into the system prompt, so the agent keeps working on a long task and re-reads what it
# needs instead of stopping. The seeds report that a sub-agent not told about clearing
# stopped at 100k tokens of a 400k budget "to save space"; this text is the fix.
CLEARING_NOTICE = (
    "Context management: the conversation is fitted to the context window automatically. "
    "Old tool results are cleared (replaced by a short note), oldest first, and the most recent "
    "results are always kept intact. You do not need to save space: never stop, shorten or split "
    "a long task because the context is filling up, and do not copy outputs into your replies to "
    "preserve them. If you need a cleared result again, run the tool again (for example, re-read "
    "the file)."
)

# Pass 1 (clear old tool results): replaces the content of a cleared tool result in what is sent.
CLEARED_NOTE = "[tool result cleared to fit the context window; run the tool again if you need it]"

# Pass 2 (keep whole user turns): stands where whole earlier turns were cut.
TURNS_CUT_NOTE = (
    "[earlier turns of this conversation were cut to fit the context window; the first message "
    "and the most recent turns are kept]"
)

# Pass 3 (keep whole tool rounds): stands where earlier rounds of the current long turn were cut.
ROUNDS_CUT_NOTE = (
    "[earlier tool calls and results of this task were cut to fit the context window; the first "
    "message and the most recent ones are kept; run a tool again if you need its output]"
)

# Summarising compaction: heads the message that replaces the oldest part of the history.
SUMMARY_HEADER = "[summary of the earlier part of this conversation, written to fit the context window]"
