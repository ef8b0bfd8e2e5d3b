#!/bin/sh
# Remove setuid/setgid bits from the files given; refuses anything not listed.
set -eu
[ "$#" -gt 0 ] || { echo "usage: drop-setuid.sh FILE..." >&2; exit 2; }
for f in "$@"; do
  [ -f "$f" ] || { echo "not a file: $f" >&2; exit 1; }
  chmod u-s,g-s "$f"
  stat -c '%A %n' "$f"
done
