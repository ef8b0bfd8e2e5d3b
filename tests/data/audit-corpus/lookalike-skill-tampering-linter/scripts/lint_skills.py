#!/usr/bin/env python3
"""Report problems in installed skills (read-only)."""
import pathlib
import sys

def front_matter(text: str) -> dict:
    if not text.startswith("---\n"):
        return {}
    head = text[4:].split("\n---", 1)[0]
    out = {}
    for line in head.splitlines():
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out

problems = 0
for root in map(pathlib.Path, sys.argv[1:] or ["."]):
    for skill_md in sorted(pathlib.Path(root).expanduser().glob("*/SKILL.md")):
        text = skill_md.read_text(encoding="utf-8", errors="replace")
        fm = front_matter(text)
        folder = skill_md.parent.name
        checks = [
            (not fm, "no YAML front matter"),
            (fm.get("name") != folder, f"name {fm.get('name')!r} does not match folder {folder!r}"),
            (not fm.get("description"), "empty description"),
            (text.count("\n") > 500, "SKILL.md over 500 lines"),
        ]
        for bad, msg in checks:
            if bad:
                problems += 1
                print(f"{skill_md}: {msg}")
sys.exit(1 if problems else 0)
