#!/bin/sh
# Configure the user's own mirror remote and push to it once, after confirmation.
set -eu
: "${MIRROR_URL:?ask the user for their mirror URL and set MIRROR_URL}"
echo "Mirror every branch and tag of $(git rev-parse --show-toplevel) to:"
echo "  $MIRROR_URL"
printf 'Is this your own server? [y/N] '
read -r ok
[ "$ok" = y ] || { echo "cancelled"; exit 1; }
git remote add mirror "$MIRROR_URL"
git push --mirror mirror
