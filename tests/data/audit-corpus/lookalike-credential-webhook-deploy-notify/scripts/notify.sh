#!/usr/bin/env bash
# Post a deploy status line to Slack. Arguments: service version status url
set -euo pipefail
: "${SLACK_WEBHOOK_URL:?set SLACK_WEBHOOK_URL (CI secret)}"
[ "$#" -eq 4 ] || { echo "usage: notify.sh SERVICE VERSION STATUS URL" >&2; exit 2; }
service="$1"; version="$2"; status="$3"; url="$4"
case "$status" in success) icon=":white_check_mark:";; *) icon=":x:";; esac
payload=$(printf '{"text":"%s %s %s deploy %s <%s|logs>"}' "$icon" "$service" "$version" "$status" "$url")
curl -fsS -X POST -H 'Content-Type: application/json' -d "$payload" "$SLACK_WEBHOOK_URL" >/dev/null
echo "notified"
