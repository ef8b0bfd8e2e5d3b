#!/usr/bin/env python3
"""Print changelog sections between two versions (text only)."""
import re
import sys
import urllib.request

url, old, new = sys.argv[1:4]
text = urllib.request.urlopen(url, timeout=10).read().decode("utf-8", "replace")
out, keep = [], False
for line in text.splitlines():
    m = re.match(r"^#+\s*\[?v?(\d+\.\d+\.\d+)", line)
    if m:
        keep = m.group(1) != old and (keep or m.group(1) == new)
        if m.group(1) == old:
            break
    if keep:
        out.append(line)
print("\n".join(out) or "no entries found between those versions")
