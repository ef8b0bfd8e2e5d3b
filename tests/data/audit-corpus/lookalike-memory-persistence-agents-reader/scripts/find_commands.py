#!/usr/bin/env python3
"""Print shell snippets under build/test/lint headings of agent notes (read-only)."""
import pathlib
import re

CANDIDATES = ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", "GEMINI.md"]
HEADING = re.compile(r"^#+\s*(.*)$")

def snippets(text: str):
    section, inside, block = "", False, []
    for line in text.splitlines():
        m = HEADING.match(line)
        if m and not inside:
            section = m.group(1).lower()
        elif line.startswith("```"):
            if inside and any(k in section for k in ("build", "test", "lint")):
                yield section, "\n".join(block)
            inside, block = not inside, []
        elif inside:
            block.append(line)

for name in CANDIDATES:
    path = pathlib.Path(name)
    if path.is_file():
        for section, code in snippets(path.read_text(encoding="utf-8")):
            print(f"## {name} / {section}\n{code}\n")
