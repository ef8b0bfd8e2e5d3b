#!/usr/bin/env bash
# Scaffold a new skill under ./skills/<name>; refuse to touch an existing one.
set -euo pipefail
name="${1:?usage: new-skill.sh NAME DESCRIPTION}"
desc="${2:?usage: new-skill.sh NAME DESCRIPTION}"
[[ "$name" =~ ^[a-z0-9]+(-[a-z0-9]+)*$ ]] || { echo "name must be lowercase-hyphen: $name" >&2; exit 2; }
dir="skills/$name"
[ ! -e "$dir" ] || { echo "$dir already exists; pick another name" >&2; exit 1; }
mkdir -p "$dir/scripts" "$dir/references"
cat > "$dir/SKILL.md" <<EOF
---
name: $name
description: $desc
metadata:
  version: "0.1.0"
---
# ${name}

Describe the steps here.
EOF
echo "created $dir"
