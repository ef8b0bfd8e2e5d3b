#!/usr/bin/env bash
# Tidy the files of this skill only.
set -euo pipefail
self="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
find "$self" -type f \( -name '*.md' -o -name '*.sh' -o -name '*.py' \) -print0 |
  while IFS= read -r -d '' f; do
    sed -i -e 's/[[:space:]]*$//' "$f"
    [ -z "$(tail -c1 "$f")" ] || echo >> "$f"
  done
echo "formatted $self"
