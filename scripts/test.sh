#!/usr/bin/env bash
# Set everything up and run the whole test suite (what CI runs, via .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
VENV="${SKILLCTL_VENV:-$PWD/.venv}"
# Tests start `skillctl` and `python3` as subprocesses: the venv's come first.
export PATH="$VENV/bin:$PATH"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" tests
