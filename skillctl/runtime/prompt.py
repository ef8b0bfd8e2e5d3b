"""The system prompt of c₁: role, how to use the shell, the skills catalog, long-term memory (when
the run has one), the clearing notice.

Deterministic: the same catalog gives the same bytes (prefix caching starts here)."""

from __future__ import annotations

from skillctl.context import CLEARING_NOTICE

ROLE = """You are an agent working in a Linux sandbox through a shell tool. You cannot run anything yourself: call the `shell` tool with commands and read their results. The harness may refuse a command (the result then says "rejected by the user"); choose another way.

How to work:
- Your working folder is {workspace}; input files for the task are staged there. Write results there too.
- Explore with small commands (ls, head, grep, wc) and read only what you need; every result you read is paid for again on every later step.
- Check your work with commands whose exit code and output prove it (run the script, run the tests) before you answer.
- When you are done, reply with the final answer as plain text and no tool call. That ends the run."""

SKILLS_INTRO = "Skills are installed under {skills}. Each has a SKILL.md with instructions; the available ones are:"
ISOLATED_NOTICE = ("Python environments: {names} {have} Python packages of {their} own. Run {its} scripts with `python3` "
                   "(or `python`, or directly when they start with `#!/usr/bin/env python3`) and they get them; "
                   "`/usr/bin/python3` bypasses every skill environment.")

MEMORY_NOTICE = """Long-term memory: {memory} is a folder that outlives this run. What you write there is there again in the next run with the same memory; everything else is gone when this run ends. Its index is {memory}/MEMORY.md: one short line per thing worth keeping, pointing to other files in {memory} for the details. Read what the index points to when it matters for the task, and update the memory as you go rather than at the end: a run can stop at any step. Never write secrets there."""
MEMORY_INDEX = "The first lines of {memory}/MEMORY.md:\n<memory_index>\n{index}\n</memory_index>"
MEMORY_EMPTY = "{memory}/MEMORY.md does not exist yet: create it when you learn something worth keeping."


def memory_section(memory: str, index: str | None) -> str:
    """What c₁ says about long-term memory at ``memory`` (the path as commands see it), with the
    first lines of its index. The index was written by earlier runs: it cannot close its block."""
    if index is None:
        return MEMORY_NOTICE.format(memory=memory) + "\n" + MEMORY_EMPTY.format(memory=memory)
    safe = index.replace("</memory_index", "&lt;/memory_index")
    return MEMORY_NOTICE.format(memory=memory) + "\n" + MEMORY_INDEX.format(memory=memory, index=safe)


def system_prompt(catalog_text: str, *, workspace: str = "/workspace", skills_root: str = "/skills",
                  memory: str = "", isolated: tuple[str, ...] = ()) -> str:
    """c₁'s system text. ``workspace``/``skills_root`` are the sandbox's own paths (a container
    uses /workspace and /skills; the local backend uses folders on this machine); ``memory`` is
    a ``memory_section``, after the skills catalog; ``isolated``: skills whose scripts run with
    a venv of their own (said after the catalog, so the agent does not bypass it)."""
    parts = [ROLE.format(workspace=workspace)]
    if catalog_text:
        parts.append(SKILLS_INTRO.format(skills=skills_root) + "\n" + catalog_text.rstrip("\n"))
    if isolated:
        many = len(isolated) > 1
        parts.append(ISOLATED_NOTICE.format(names=", ".join(sorted(isolated)), have="have" if many else "has",
                                            their="their" if many else "its", its="their" if many else "its"))
    if memory:
        parts.append(memory)
    parts.append(CLEARING_NOTICE.strip())
    return "\n\n".join(parts) + "\n"
