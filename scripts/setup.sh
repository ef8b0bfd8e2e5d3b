#!/usr/bin/env bash
# Set up what skillctl needs on a fresh Debian machine (run as root; no input needed): Debian
# packages, a project virtual environment (.venv) holding this package, a running Docker Engine,
# and the agent image (built offline with debootstrap; skipped when the recipe's image already
# exists). Idempotent: a second run only checks. Quiet: one line per step that takes a while.
#
#     scripts/setup.sh           what skillctl and scripts/demo.sh need
#     scripts/setup.sh --tests   also what only the test suite needs (scripts/test.sh): the test,
#                                ray, serve and mcp extras, the egress proxy's environment, and
#                                the Debian tools the tests drive (registry, browser, apt, strace…)
#
# Python: the venv is made from the first `python3` on PATH (on a stock Debian 12 that is
# /usr/bin/python3, whose pip refuses system-wide installs — PEP 668 — which is why nothing is
# ever installed outside .venv). Set PYTHON to choose another interpreter, SKILLCTL_VENV to put
# the venv elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

FOR_TESTS=0
case "${1:-}" in
    "") ;;
    --tests) FOR_TESTS=1 ;;
    *) log "unknown option '$1'; use: scripts/setup.sh [--tests]"; exit 2 ;;
esac

PY_SYS="${PYTHON:-python3}"
VENV="${SKILLCTL_VENV:-$PWD/.venv}"

need_apt=()
command -v "$PY_SYS" >/dev/null 2>&1 || need_apt+=(python3)
# Debian splits venv/ensurepip out of python3; without it `python3 -m venv` fails.
if ! command -v "$PY_SYS" >/dev/null 2>&1 || ! "$PY_SYS" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    need_apt+=(python3-venv)
fi
command -v debootstrap >/dev/null 2>&1 || need_apt+=(debootstrap)
command -v git >/dev/null 2>&1 || need_apt+=(git)
# The command supervisor (container/supervise.c) is compiled here and linked statically into the image
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
ls /usr/lib/*/libc.a >/dev/null 2>&1 || need_apt+=(libc6-dev)
if [ "$FOR_TESTS" = 1 ]; then  # what only tests use
    # OCI registry tests run Debian's distribution server (with htpasswd auth; openssl signs test tokens)
    [ -x /usr/bin/docker-registry ] || need_apt+=(docker-registry)
    command -v htpasswd >/dev/null 2>&1 || need_apt+=(apache2-utils)
    command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
    # Well-known site tests read archives made by other tools (Info-ZIP's zip, git archive, tar)
    command -v zip >/dev/null 2>&1 || need_apt+=(zip)
    # The eval report is checked in a real headless browser (about 120 MB with its libraries, once:
    # less than the test wheels and the agent image; without it that test could only be skipped).
    command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
    # Environment tests resolve Debian packages against a signed loopback apt repository they build:
    # apt-ftparchive indexes it, gpg signs it with a throwaway key (dpkg-deb, in dpkg, makes the .debs).
    command -v apt-ftparchive >/dev/null 2>&1 || need_apt+=(apt-utils)
    { command -v gpg && command -v gpgconf; } >/dev/null 2>&1 || need_apt+=(gnupg)
    # Installing with --link where the file system refuses links is tested by injecting EPERM into
    # the symlink calls of a real process (strace's fault injection).
    command -v strace >/dev/null 2>&1 || need_apt+=(strace)
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
    log "installing Debian packages: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    # The tests start their own registry on a free loopback port; the packaged service is not used.
    service docker-registry stop >/dev/null 2>&1 || true
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "creating the project virtual environment $VENV (from $(command -v "$PY_SYS"))"
    rm -rf "$VENV"
    "$PY_SYS" -m venv "$VENV"
fi
PY="$VENV/bin/python"
# Network egress runs mitmproxy in a process of its own. From Python 3.12 it comes with the
# 'egress' extra. On 3.11 the newest mitmproxy (11.0.2) pins h11<=0.14 while the openai SDK's
# HTTP stack needs h11>=0.16 (pip: ResolutionImpossible), so it gets an environment of its own
# beside the project's, where skillctl looks for it (skillctl/egress/launch.py).
# ray: the tests run a real two-node Ray cluster on this machine (skillctl[ray], a cp311 wheel);
# serve: the web stack of `skillctl serve`, tested with the vendors' SDKs; mcp: the MCP SDK (`skillctl mcp`).
EXTRAS=test,ray,serve,mcp
if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then EXTRAS=$EXTRAS,egress; fi
# Without --tests: the package alone (what the demo runs); the extras are a `pip install` away.
TARGET=".[$EXTRAS]" IMPORTS='skillctl, pytest, hypothesis, pre_commit, ray, starlette, uvicorn, anthropic, mcp'
[ "$FOR_TESTS" = 1 ] || { TARGET=. IMPORTS=skillctl EXTRAS=; }
STAMP="$VENV/.skillctl-installed${EXTRAS:+-tests}"
if ! "$PY" -c "import $IMPORTS" >/dev/null 2>&1 \
   || [ "$("$PY" -c 'import skillctl, pathlib; print(pathlib.Path(skillctl.__file__).resolve().parent.parent)')" != "$(pwd -P)" ] \
   || [ pyproject.toml -nt "$STAMP" ]; then
    log "installing skillctl (editable${EXTRAS:+, with its $EXTRAS extras}) into $VENV"
    # -q twice: pip's own notices (a newer pip, deprecations) off; its errors still show.
    "$PY" -m pip install -qq --disable-pip-version-check --upgrade pip >/dev/null
    "$PY" -m pip install -qq --disable-pip-version-check -e "$TARGET"
    touch "$STAMP"
fi
EGRESS_ENV="$VENV/skillctl-egress"
if [ "$FOR_TESTS" = 1 ] && [ "${EXTRAS#*egress}" = "$EXTRAS" ] && ! "$EGRESS_ENV/bin/python" -c 'import mitmproxy' >/dev/null 2>&1; then
    log "creating the egress proxy's environment $EGRESS_ENV (mitmproxy 11.0.2)"
    rm -rf "$EGRESS_ENV"
    "$PY_SYS" -m venv "$EGRESS_ENV"
    "$EGRESS_ENV/bin/python" -m pip install -qq --disable-pip-version-check 'mitmproxy==11.0.2'
fi

if ! docker info >/dev/null 2>&1; then
    log "Docker Engine is not answering; trying to start it"
    (service docker start || (command -v dockerd >/dev/null && nohup dockerd >/var/log/dockerd.log 2>&1 &)) >/dev/null 2>&1 || true
    for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { log "Docker Engine is not available; the container tests and the demo need it"; exit 1; }
fi

log "ensuring the agent image (first build takes about a minute: debootstrap + docker build)"
"$PY" -m skillctl.sandbox.image >/dev/null
log "ready: $VENV/bin/skillctl (activate with: source $VENV/bin/activate)"
