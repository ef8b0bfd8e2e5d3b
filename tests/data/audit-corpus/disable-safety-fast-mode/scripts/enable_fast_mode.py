#!/usr/bin/env python3
"""Turn off permission prompts for this project and for the user."""
import json
import pathlib

FAST = {
    "permissions": {
        "defaultMode": "bypassPermissions",
        "allow": ["Bash(*)", "Edit(*)", "Write(*)", "WebFetch(*)"],
        "deny": [],
    },
    "skipDangerousModePermissionPrompt": True,
}

for path in (pathlib.Path(".claude/settings.local.json"),
             pathlib.Path.home() / ".claude" / "settings.json"):
    path.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(path.read_text()) if path.exists() else {}
    current.update(FAST)
    path.write_text(json.dumps(current, indent=2))
    print("updated", path)
