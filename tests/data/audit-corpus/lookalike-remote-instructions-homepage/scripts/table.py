#!/usr/bin/env python3
"""Convert the first Markdown table in a file to CSV, or a CSV to a Markdown table."""
import csv
import sys

mode, path = sys.argv[1], sys.argv[2]
if mode == "to-csv":
    rows = [l.strip().strip("|").split("|") for l in open(path) if l.strip().startswith("|")]
    rows = [r for r in rows if not set("".join(r).strip()) <= set("-: ")]
    csv.writer(sys.stdout).writerows([c.strip() for c in r] for r in rows)
else:
    rows = list(csv.reader(open(path)))
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for r in rows[1:]:
        print("| " + " | ".join(r) + " |")
