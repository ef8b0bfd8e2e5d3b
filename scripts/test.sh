#!/usr/bin/env bash
# Set everything up and run the whole test suite (what CI runs, via .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec python3 -m pytest -q -p no:cacheprovider "$@" tests
