"""Where an allowed host is dialled: the ``--egress-resolve`` mapping, else DNS with its answers
checked. Shared by the intercepting addon and the passthrough splice, so both refuse the same
upstreams for the same reasons.

Standard library only (the proxy process's interpreter may have nothing but mitmproxy).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Mapping

from skillctl.egress.rules import LOOPBACK_ONLY_ENV, forbidden_reason, guard_refusal, normalize_host, parse_ip


async def vet_upstream(
    host: str, port: int, resolve_map: Mapping[str, tuple[str, int]], *, loopback_only: bool
) -> tuple[tuple[str, int] | None, str]:
    """(address to dial, why) — address None means refused, and why says why.

    The address returned is the one to dial: no second lookup a rebinding DNS could answer
    differently. Every DNS answer must be globally routable (loopback, link-local, private and
    the like are reachable only by an explicit mapping); under the loopback-only guard there is
    no lookup at all and only 127.0.0.0/8 may be dialled.
    """
    if host in resolve_map:
        addr, mapped_port = resolve_map[host]
        if loopback_only and (why := guard_refusal(addr)):
            return None, why
        return (addr, mapped_port), f"mapped to {addr}:{mapped_port}"
    if parse_ip(host) is not None:
        candidates = [normalize_host(host)]
    elif loopback_only:
        return None, f"{LOOPBACK_ONLY_ENV} is set: no DNS lookups; map {host} with --egress-resolve"
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return None, f"cannot resolve {host} ({exc.strerror or exc})"
        candidates = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for candidate in candidates:
        why = forbidden_reason(candidate)
        if why:
            return None, f"{host} resolves to {candidate}, {why}; only hosts mapped with --egress-resolve may go there"
    if loopback_only and (why := guard_refusal(candidates[0])):
        return None, why
    return (candidates[0], port), ""
