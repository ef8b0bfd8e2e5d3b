"""Credentials for an OCI registry, found where Docker users already keep them.

Order (the first that has something wins):

1. explicit ``username``/``password`` (CLI ``--username`` + ``--password-stdin``);
2. ``SKILLCTL_REGISTRY_USERNAME`` / ``SKILLCTL_REGISTRY_PASSWORD``;
3. the Docker config (``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``):
   ``credHelpers[HOST]``, then ``auths[HOST]`` (``auth`` = base64 ``user:password``, or
   ``username``/``password``), then ``credsStore``. Helpers are the standard
   ``docker-credential-NAME get`` programs (host on stdin, JSON on stdout).

Credentials are looked up only when the registry asks (a 401), so anonymous registries never
run a helper. Secrets never appear in ``repr`` or in error messages.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from skillctl.errors import RegistryError
from skillctl.nesting import loads_json

ENV_USERNAME = "SKILLCTL_REGISTRY_USERNAME"
ENV_PASSWORD = "SKILLCTL_REGISTRY_PASSWORD"
HELPER_TIMEOUT_S = 30


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str  # where they came from, for error messages

    def basic_header(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")


def docker_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("DOCKER_CONFIG")
    return (Path(base) if base else Path(env.get("HOME") or Path.home()) / ".docker") / "config.json"


def _normalise_host(key: str) -> str:
    """'https://host:5000/v1/' and 'host:5000' name the same registry in Docker configs."""
    key = re.sub(r"^[a-z]+://", "", key.strip())
    return key.split("/", 1)[0]


def _run_helper(suffix: str, host: str, origin: str) -> Credentials | None:
    program = f"docker-credential-{suffix}"
    try:
        proc = subprocess.run([program, "get"], input=host, capture_output=True, text=True, timeout=HELPER_TIMEOUT_S)
    except FileNotFoundError:
        raise RegistryError(f"credential helper {program} (from {origin}) is not installed; install it or remove it from the Docker config") from None
    except subprocess.TimeoutExpired:
        raise RegistryError(f"credential helper {program} did not answer within {HELPER_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        out = (proc.stdout or proc.stderr).strip()
        if "credentials not found" in out.lower():
            return None
        raise RegistryError(f"credential helper {program} failed for {host}: {out.splitlines()[0][:200] if out else f'exit {proc.returncode}'}")
    try:
        doc = loads_json(proc.stdout)
        user, secret = doc["Username"], doc["Secret"]
    except (ValueError, KeyError, TypeError):
        raise RegistryError(f"credential helper {program} answered something other than the JSON Username/Secret object") from None
    if not isinstance(user, str) or not isinstance(secret, str):
        raise RegistryError(f"credential helper {program} answered a non-string Username/Secret")
    if user == "<token>":
        raise RegistryError(f"{program} holds an identity token for {host}; skillctl supports username/password only — log in with a password")
    return Credentials(user, secret, program)


def _from_docker_config(host: str, path: Path) -> Credentials | None:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RegistryError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        cfg = loads_json(text)
    except ValueError as exc:
        raise RegistryError(f"{path} is not valid JSON ({exc}); fix it or set DOCKER_CONFIG to another folder") from None
    if not isinstance(cfg, dict):
        raise RegistryError(f"{path} is not a JSON object; fix it or set DOCKER_CONFIG to another folder")
    helpers = cfg.get("credHelpers") or {}
    if isinstance(helpers, dict):
        for key, suffix in helpers.items():
            if _normalise_host(key) == host and isinstance(suffix, str) and suffix:
                return _run_helper(suffix, host, f"{path} credHelpers")
    auths = cfg.get("auths") or {}
    if isinstance(auths, dict):
        for key, entry in auths.items():
            if _normalise_host(key) != host or not isinstance(entry, dict):
                continue
            if entry.get("identitytoken"):
                raise RegistryError(f"{path} holds an identity token for {host}; skillctl supports username/password only")
            if isinstance(entry.get("auth"), str) and entry["auth"]:
                try:
                    user, sep, secret = base64.b64decode(entry["auth"], validate=True).decode("utf-8").partition(":")
                except (binascii.Error, UnicodeDecodeError):
                    raise RegistryError(f"{path}: auths.{key}.auth is not base64 of 'user:password'; run docker login {host} again") from None
                if not sep:
                    raise RegistryError(f"{path}: auths.{key}.auth is not base64 of 'user:password'; run docker login {host} again")
                return Credentials(user, secret, str(path))
            if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
                return Credentials(entry["username"], entry["password"], str(path))
    store = cfg.get("credsStore")
    if isinstance(store, str) and store:
        return _run_helper(store, host, f"{path} credsStore")
    return None


def find_credentials(
    host: str,
    *,
    username: str | None = None,
    password: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Credentials | None:
    """Credentials for ``host`` (``host[:port]``), or None for anonymous access."""
    env = os.environ if env is None else env
    if username or password:
        if not (username and password):
            raise RegistryError(
                "--username needs a password: pipe it to --password-stdin or set " + ENV_PASSWORD
                if username else "a password was given without --username (or " + ENV_USERNAME + ")"
            )
        return Credentials(username, password, "--username/--password-stdin")
    user, secret = env.get(ENV_USERNAME), env.get(ENV_PASSWORD)
    if user or secret:
        if not (user and secret):
            missing = ENV_PASSWORD if user else ENV_USERNAME
            raise RegistryError(f"{missing} is not set; set both {ENV_USERNAME} and {ENV_PASSWORD}, or neither")
        return Credentials(user, secret, f"{ENV_USERNAME}/{ENV_PASSWORD}")
    return _from_docker_config(host, docker_config_path(env))


@dataclass(frozen=True)
class Challenge:
    scheme: str  # "basic" | "bearer" | other, lowercased
    params: dict[str, str]


_PARAM_RE = re.compile(r'([A-Za-z]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


def parse_challenge(header: str) -> Challenge:
    """``WWW-Authenticate: Bearer realm="…",service="…",scope="…"`` (or ``Basic realm="…"``)."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3)) for m in _PARAM_RE.finditer(rest)}
    return Challenge(scheme.lower(), params)
