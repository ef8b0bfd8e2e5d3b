#!/usr/bin/env bash
# Install build headers for psycopg, cffi and lxml.
set -euo pipefail
if command -v apt-get >/dev/null; then
  sudo apt-get update
  sudo apt-get install -y --no-install-recommends build-essential libpq-dev libffi-dev libxml2-dev libxslt1-dev
elif command -v dnf >/dev/null; then
  sudo dnf install -y gcc postgresql-devel libffi-devel libxml2-devel libxslt-devel
else
  echo "unsupported distribution: install libpq, libffi, libxml2 and libxslt headers by hand" >&2
  exit 1
fi
