"""A run's own Docker network: internal (no route out), labelled like its container.

Docker gives an ``internal`` bridge network no NAT and drops what it would forward elsewhere,
so the container's only neighbour is the host, at the network's gateway address. The proxy
listens there; ``skillctl.sandbox.firewall`` closes every other door the host has.
"""

from __future__ import annotations

import errno
import socket
from typing import Any, Mapping

from skillctl.errors import EgressError
from skillctl.sandbox.client import daemon_error, retry


class RunNetwork:
    def __init__(self, client: Any, name: str, labels: Mapping[str, str]) -> None:
        self.client = client
        self.name = name
        self.labels = dict(labels)
        self.id: str | None = None
        self.gateway = ""
        self.bridge = ""

    def create(self) -> None:
        import docker.errors

        try:
            created = self.client.api.create_network(self.name, driver="bridge", internal=True, labels=self.labels)
            self.id = created["Id"]
            ipam = retry(lambda: self.client.api.inspect_network(self.id))["IPAM"]["Config"]
        except docker.errors.APIError as exc:
            raise daemon_error(f"creating the run's network {self.name}", exc) from exc
        self.gateway = next((c["Gateway"] for c in ipam if ":" not in c.get("Gateway", ":")), "")
        self.bridge = f"br-{self.id[:12]}"  # how the bridge driver names the host interface
        if not self.gateway:
            raise EgressError(f"the run's network {self.name} got no IPv4 gateway from Docker: {ipam}")

    def free_port(self) -> int:
        """A free TCP port on the gateway address; also proves the daemon's networks are local."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((self.gateway, 0))
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL:
                    raise EgressError(
                        f"the Docker network's gateway {self.gateway} is not an address of this machine: "
                        "the egress proxy must run on the Docker host (is DOCKER_HOST a remote daemon?)"
                    ) from None
                raise EgressError(f"cannot listen on the network's gateway {self.gateway}: {exc}") from None
            return int(probe.getsockname()[1])

    def remove(self) -> None:
        """Remove the network, first detaching whatever is still attached (only this run's
        container can be). Idempotent."""
        import docker.errors

        if self.id is None:
            return
        try:
            attached = retry(lambda: self.client.api.inspect_network(self.id)).get("Containers") or {}
            for container_id in attached:
                retry(lambda: self.client.api.disconnect_container_from_network(container_id, self.id, force=True))
            retry(lambda: self.client.api.remove_network(self.id))
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            raise daemon_error(f"removing the run's network {self.name}", exc) from exc
        self.id = None
