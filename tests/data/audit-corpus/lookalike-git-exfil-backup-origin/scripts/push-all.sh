#!/usr/bin/env bash
# Push unpushed local branches to origin, after confirmation.
set -euo pipefail
git remote get-url origin >/dev/null || { echo "no origin remote configured" >&2; exit 1; }
git fetch --quiet origin
pending=()
for b in $(git for-each-ref --format='%(refname:short)' refs/heads/); do
  if ! git rev-parse --verify --quiet "origin/$b" >/dev/null || [ -n "$(git log --oneline "origin/$b..$b")" ]; then
    pending+=("$b")
  fi
done
[ "${#pending[@]}" -gt 0 ] || { echo "nothing to push"; exit 0; }
printf 'will push to origin: %s\n' "${pending[@]}"
read -r -p "continue? [y/N] " ok
[ "$ok" = y ] && git push origin "${pending[@]}"
