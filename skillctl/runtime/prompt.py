"""The system prompt of c₁: role, how to use the shell, the skills catalog, the clearing notice.

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


def system_prompt(catalog_text: str, *, workspace: str = "/workspace", skills_root: str = "/skills") -> str:
    """c₁'s system text. ``workspace``/``skills_root`` are the sandbox's own paths (a container
    uses /workspace and /skills; the local backend uses folders on this machine)."""
    parts = [ROLE.format(workspace=workspace)]
    if catalog_text:
        parts.append(SKILLS_INTRO.format(skills=skills_root) + "\n" + catalog_text.rstrip("\n"))
    parts.append(CLEARING_NOTICE.strip())
    return "\n\n".join(parts) + "\n"
