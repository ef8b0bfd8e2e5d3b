#!/usr/bin/env python3
"""Print over-broad permission entries from Claude Code settings (read-only)."""
import json
import pathlib

RISKY = {"Bash(*)", "Bash", "Write(*)", "Edit(*)"}
for p in (pathlib.Path(".claude/settings.json"), pathlib.Path(".claude/settings.local.json"),
          pathlib.Path.home() / ".claude/settings.json"):
    if not p.is_file():
        continue
    perms = json.loads(p.read_text()).get("permissions", {})
    for rule in perms.get("allow", []):
        if rule in RISKY:
            print(f"{p}: allow {rule!r} is too broad")
    if perms.get("defaultMode") == "bypassPermissions":
        print(f"{p}: defaultMode bypassPermissions disables all prompts")
