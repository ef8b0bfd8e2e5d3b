"""Remove skillctl containers, networks and host leftovers that nobody will clean up any more.

A container is an orphan when its expiry label has passed, or when the process that started it
is gone. The owner label is ``host/boot-id/pid/start-time``: the boot id tells a reboot apart
(every old owner is then gone) and the process start time tells a reused pid apart. Owners on
another host (a shared remote daemon) cannot be checked; their containers go only on expiry.

``reap`` runs at every sandbox start, so a host process killed with SIGKILL leaves its
container behind only until the next start (and at most until its TTL, when the entrypoint's
sleep ends and the auto-removed container disappears by itself). The same rule applies to the
Docker networks a run creates (same labels; removed after the containers, which may still be
attached) and to what it recorded in ``leftovers`` (its proxy process, CA folder, firewall rules).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from skillctl.sandbox.settings import LABEL_EXPIRES, LABEL_MANAGED, LABEL_OWNER


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may contain spaces and parentheses; fields after the last ')' are fixed.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True)
class Owner:
    host: str
    boot_id: str
    pid: int
    start_time: str

    @classmethod
    def current(cls) -> "Owner":
        pid = os.getpid()
        return cls(socket.gethostname(), _boot_id(), pid, process_start_time(pid) or "0")

    def label(self) -> str:
        return f"{self.host}/{self.boot_id}/{self.pid}/{self.start_time}"

    @classmethod
    def parse(cls, label: str) -> "Owner | None":
        parts = label.split("/")
        if len(parts) != 4 or not parts[2].isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), parts[3])

    def is_gone(self) -> bool | None:
        """True if this owner certainly no longer runs; None if that cannot be told from here."""
        if self.host != socket.gethostname():
            return None
        if self.boot_id != _boot_id():
            return True
        return process_start_time(self.pid) != self.start_time


def orphan_reason(labels: dict[str, str], now: float) -> str | None:
    """Why a container with these labels should be removed, or None to keep it."""
    try:
        expires = float(labels.get(LABEL_EXPIRES, ""))
    except ValueError:
        expires = None
    if expires is not None and expires <= now:
        return "expired"
    owner = Owner.parse(labels.get(LABEL_OWNER, ""))
    if owner is None:
        return "no valid owner label" if expires is None else None
    if owner.is_gone():
        return f"owner process {owner.pid} is gone"
    return None


def reap(
    client: Any,
    *,
    now: float | None = None,
    labels: Mapping[str, str] | None = None,
    leftovers_dir: Path | None = None,
) -> list[str]:
    """Remove every skillctl container, then network, then recorded host leftover that is
    expired or orphaned; return the ids removed (container and network ids, run ids).

    ``labels`` narrows the sweep to those that also carry these labels (tests use it so as not
    to touch other runs' sandboxes). Removal is forced and takes a container's anonymous volumes
    with it. A container already being removed (auto-remove after its TTL) is not an error.
    """
    import docker.errors

    from skillctl.sandbox.leftovers import reap_leftovers

    now = time.time() if now is None else now
    removed: list[str] = []
    selector = [f"{LABEL_MANAGED}=1", *(f"{k}={v}" for k, v in sorted((labels or {}).items()))]
    try:
        # The low-level list: the high-level one inspects every container, and one removed in
        # between (another run ending) made the whole sweep fail with NotFound.
        containers = client.api.containers(all=True, filters={"label": selector})
    except docker.errors.APIError:
        containers = []  # reaping is housekeeping; the start that follows reports daemon errors
    for container in containers:
        if orphan_reason(container.get("Labels") or {}, now) is None:
            continue
        try:
            client.api.remove_container(container["Id"], force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                continue
        removed.append(container["Id"])
    removed += _reap_networks(client, now, selector)
    removed += reap_leftovers(now, labels=labels, directory=leftovers_dir)
    return removed


def _reap_networks(client: Any, now: float, selector: list[str]) -> list[str]:
    import docker.errors

    removed: list[str] = []
    try:
        networks = client.api.networks(filters={"label": selector})
    except docker.errors.APIError:
        return removed
    for network in networks:
        if orphan_reason(network.get("Labels") or {}, now) is None:
            continue
        try:
            # The list does not say which containers are attached; inspect says.
            attached = client.api.inspect_network(network["Id"]).get("Containers") or {}
            for container_id in attached:
                client.api.disconnect_container_from_network(container_id, network["Id"], force=True)
            client.api.remove_network(network["Id"])
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            continue  # still in use by something we may not touch; the next sweep tries again
        removed.append(network["Id"])
    return removed
