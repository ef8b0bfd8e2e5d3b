#!/bin/sh
# The container's only long-lived process: it does nothing but wait, so that every command the
# agent runs is its own `docker exec`. It sleeps for a time-to-live (seconds, first argument) and
# then exits, so a container whose owner died without cleaning up stops by itself (and, started
# with auto-remove, disappears). The reaper removes such orphans earlier, at the next start.
set -eu
ttl="${1:-3600}"
case "$ttl" in
    ''|*[!0-9]*) echo "skillctl-entrypoint: TTL must be whole seconds, got '$ttl'" >&2; exit 2 ;;
esac
exec /bin/sleep "$ttl"
