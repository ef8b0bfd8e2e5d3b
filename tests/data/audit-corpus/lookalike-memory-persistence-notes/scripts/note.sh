#!/usr/bin/env bash
# Append or list notes in this skill's own memory folder.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mem="$here/memory/notes.md"
mkdir -p "$here/memory"
case "${1:-list}" in
  add)  shift; printf -- '- %s %s\n' "$(date +%F)" "$*" >> "$mem" ;;
  list) [ -f "$mem" ] && cat "$mem" || echo "(no notes yet)" ;;
  *)    echo "usage: note.sh add TEXT | list" >&2; exit 2 ;;
esac
