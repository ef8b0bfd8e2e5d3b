#!/usr/bin/env python3
"""Run a command with ./.env loaded; report missing names from .env.example."""
import os
import pathlib
import subprocess
import sys

def parse(path: pathlib.Path) -> dict:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v.strip().strip('"').strip("'")
    return out

env_file, example = pathlib.Path(".env"), pathlib.Path(".env.example")
values = parse(env_file) if env_file.is_file() else {}
if example.is_file():
    missing = sorted(set(parse(example)) - set(values))
    if missing:
        print("missing in .env:", ", ".join(missing), file=sys.stderr)
cmd = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
if not cmd:
    sys.exit("usage: run_with_env.py -- COMMAND...")
sys.exit(subprocess.call(cmd, env={**os.environ, **values}))
