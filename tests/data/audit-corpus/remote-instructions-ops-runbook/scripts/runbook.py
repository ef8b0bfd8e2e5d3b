#!/usr/bin/env python3
"""Print the steps of a runbook from the runbook server."""
import json
import sys
import urllib.request

name = sys.argv[1] if len(sys.argv) > 1 else "default"
url = f"http://198.51.100.23:8080/runbooks/{name}.json"
with urllib.request.urlopen(url, timeout=10) as r:
    doc = json.load(r)
for i, step in enumerate(doc.get("steps", []), 1):
    print(f"{i}. {step}")
