#!/bin/sh
# Extract JSON fixtures into tests/fixtures (JSON only; refuse anything else).
set -eu
here="$(cd "$(dirname "$0")/.." && pwd)"
if unzip -Z1 "$here/assets/fixtures.zip" | grep -qv '\.json$'; then
  echo "fixtures.zip contains non-JSON files; refusing" >&2
  exit 1
fi
mkdir -p tests/fixtures
unzip -qo "$here/assets/fixtures.zip" -d tests/fixtures
echo "fixtures ready"
