#!/usr/bin/env bash
# Install a shared skill registry on this Debian machine: Debian's docker-registry (distribution
# 2.8) with skillctl's configuration, a systemd unit, htpasswd users and optional TLS.
#
#   sudo registry/install.sh                    # install + enable + start (systemd)
#   sudo registry/install.sh --user alice       # also add a user (asks for the password)
#   registry/install.sh --root /tmp/stage --no-start   # stage the files under a folder (tests)
#
# Idempotent: existing settings (env file, htpasswd, storage) are kept; config and unit are
# refreshed. Needs root unless --root points somewhere writable.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

root=""
start=1
users=()
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="${2:?--root needs a folder}"; shift 2 ;;
        --no-start) start=0; shift ;;
        --user) users+=("${2:?--user needs a name}"); shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

log() { printf '[registry] %s\n' "$*" >&2; }
etc="$root/etc/skillctl-registry"
unit_dir="$root/etc/systemd/system"
data="$root/var/lib/skillctl-registry"

if [ -z "$root" ]; then
    missing=()
    [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
    command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing Debian packages: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # Debian's own service would listen on :5000 with its own config; this one replaces it.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled docker-registry >/dev/null 2>&1; then
        log "disabling Debian's default docker-registry service (skillctl-registry replaces it)"
        systemctl disable --now docker-registry >/dev/null 2>&1 || true
    fi
fi

install -d -m 0755 "$etc" "$unit_dir"
install -m 0644 "$here/config.yml" "$etc/config.yml"
install -m 0644 "$here/skillctl-registry.service" "$unit_dir/skillctl-registry.service"
if [ ! -e "$etc/env" ]; then
    secret="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    sed "s/^REGISTRY_HTTP_SECRET=.*/REGISTRY_HTTP_SECRET=$secret/" "$here/env.example" >"$etc/env"
    chmod 0640 "$etc/env"
    log "wrote $etc/env (edit the address and TLS there)"
fi
[ -e "$etc/htpasswd" ] || { : >"$etc/htpasswd"; chmod 0640 "$etc/htpasswd"; }
install -d -m 0750 "$data"
if [ -z "$root" ] && getent passwd docker-registry >/dev/null; then
    chown docker-registry:docker-registry "$data"
    chgrp docker-registry "$etc/env" "$etc/htpasswd"
fi
for user in "${users[@]}"; do
    log "adding user $user"
    htpasswd -B "$etc/htpasswd" "$user"
done

if [ "$start" = 1 ] && [ -z "$root" ]; then
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl daemon-reload
        systemctl enable --now skillctl-registry
        log "started: systemctl status skillctl-registry"
    else
        log "no systemd here; start it with: set -a; . $etc/env; set +a; /usr/bin/docker-registry serve $etc/config.yml"
    fi
fi
[ -s "$etc/htpasswd" ] || log "no users yet: htpasswd -B $etc/htpasswd NAME"
log "clients: skillctl publish skills/ --registry oci://HOST:5000/NAMESPACE --username NAME --password-stdin"
