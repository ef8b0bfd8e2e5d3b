#!/usr/bin/env bash
# Set everything up, with what only the tests need, and run the whole test suite (what CI runs, via .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
VENV="${SKILLCTL_VENV:-$PWD/.venv}"
# The skill-environment tests serve real wheels (numpy, pandas, PyYAML…, for the agent image's
# Python) from a loopback package index; they are downloaded from PyPI here, once, never by a
# test — and never by the demo, which needs none of them.
printf '[test] %s\n' "ensuring the test wheels in .cache/test-wheels (about 75 MB, first time only) and, in its metadata/, the file lists of the wheels the import-name map is checked against" >&2
"$VENV/bin/python" scripts/fetch_test_wheels.py .cache/test-wheels
# Tests start `skillctl` and `python3` as subprocesses: the venv's come first.
export PATH="$VENV/bin:$PATH"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" tests
