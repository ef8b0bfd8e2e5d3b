"""The egress proxy process: mitmproxy with ``EgressAddon``, driven over stdin/stdout.

Protocol (one JSON object per line):

- stdin, first line: the configuration (listen address, confdir for the per-run CA, allowed
  and passthrough domains, secrets with their placeholders *and real values*, resolve map, upstream CA file).
  Secrets travel only this way: never on the command line, in the environment or on disk.
- stdin, later lines: ``{"sync": N}`` — answered by ``{"type": "synced", "n": N}`` once every
  record of a request open or finished before it has been written (open ones waited for at most
  ``SYNC_WAIT_S``).
- stdin at end of file: the run is gone (ended, or killed with SIGKILL): shut down at once.
  This is what keeps the proxy from outliving its run; the reaper is the second line.
- stdout: ``{"type": "ready", ...}`` once listening, then the records of the addon and of
  the front door (``splice``), which owns the listening socket and splices passthrough tunnels.

Runs under an interpreter that has mitmproxy (see ``skillctl.egress.launch``), which may lack
skillctl's own dependencies: this module imports only the standard library, mitmproxy, and
``skillctl.egress.rules``/``dial``/``addon``/``splice``/``trailers``.
"""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from skillctl.egress.addon import EgressAddon
from skillctl.egress.rules import first_match, normalize_host
from skillctl.egress.splice import Front

CA_CERT_FILE = "mitmproxy-ca-cert.pem"  # what mitmproxy writes into its confdir


_outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()


def _emit(record: dict[str, Any]) -> None:
    """Queue a line for stdout. A thread writes them, so the event loop never waits on the pipe
    (a write and flush per request cost as much as the proxying itself on a loaded machine);
    one queue keeps the order, so a ``synced`` line still follows every record before it."""
    _outbox.put(json.dumps(record, ensure_ascii=False) + "\n")


def _write_out() -> None:
    """Until ``None`` arrives: write what is queued, flush once per batch."""
    while True:
        batch = [_outbox.get()]
        while not _outbox.empty():
            batch.append(_outbox.get())
        sys.stdout.write("".join(line for line in batch if line is not None))
        sys.stdout.flush()
        if None in batch:
            return


class _Ready:
    """Starts the front door once mitmproxy runs (addons' ``running`` hook) and reports its address."""

    def __init__(self, config: dict[str, Any], front: Front) -> None:
        self.config = config
        self.front = front
        self.task: asyncio.Task[None] | None = None

    def running(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.front.serve())
        _emit({"type": "ready", "listen": list(self.front.address), "ca_cert": container_trust(self.config)})


def container_trust(config: dict[str, Any]) -> str:
    """The CA file the container trusts: the proxy's CA; with passthrough domains also the roots
    the proxy trusts upstream (public ones and ``extra_ca``), since there the container meets
    the upstream's own certificate and verifies it itself."""
    ca = Path(config["confdir"]) / CA_CERT_FILE
    if not config.get("passthrough_domains"):
        return str(ca)
    import certifi  # a dependency of mitmproxy; its default roots

    bundle = Path(config["confdir"]) / "container-ca.pem"
    parts = [ca.read_text("ascii"), Path(certifi.where()).read_text("ascii")]
    parts += [Path(p).read_text("ascii") for p in config.get("extra_ca", [])]
    bundle.write_text("\n".join(parts), "ascii")
    return str(bundle)


def passes_through(config: dict[str, Any]) -> Any:
    """Whether a host's TLS is spliced, from the configuration: allowed, a passthrough domain,
    and no secret bound to it (``NetworkPolicy.passes_through``, on this side of the pipe)."""
    allowed, passthrough = list(config["allowed_domains"]), list(config.get("passthrough_domains", []))
    secret_domains = [d for s in config.get("secrets", []) for d in s["domains"]]

    def passes(host: str) -> bool:
        host = normalize_host(host)
        return (first_match(passthrough, host) is not None and first_match(allowed, host) is not None
                and first_match(secret_domains, host) is None)

    return passes


# How long a sync waits for requests still open when it arrives. The command that made them has
# ended, so they finish at once (their client is gone); only a request of a background process
# kept alive on purpose can stay open, and then the sync answers without its record.
SYNC_WAIT_S = 5.0
# The same for passthrough tunnels, shorter: a tunnel is open for as long as its client keeps the
# connection (idle in a pool too), so one still open a second after its command ended belongs to
# a process that outlived the command; its record comes when it closes.
SPLICE_SYNC_WAIT_S = 1.0


async def _answer_sync(n: int, addon: EgressAddon, front: Front) -> None:
    loop = asyncio.get_running_loop()
    flows, tunnels = set(addon.open_flows), front.open_ids()
    deadline = loop.time() + SYNC_WAIT_S
    splice_deadline = loop.time() + SPLICE_SYNC_WAIT_S
    while loop.time() < deadline:
        if not flows & addon.open_flows and not (tunnels & front.open_ids() and loop.time() < splice_deadline):
            break
        await asyncio.sleep(0.005)
    _emit({"type": "synced", "n": n})


def _read_control(loop: asyncio.AbstractEventLoop, master: Any, addon: EgressAddon, front: Front) -> None:
    for line in sys.stdin:
        try:
            n = json.loads(line)["sync"]
        except (ValueError, KeyError, TypeError):
            continue
        asyncio.run_coroutine_threadsafe(_answer_sync(n, addon, front), loop)
    loop.call_soon_threadsafe(master.shutdown)


def upstream_trust(confdir: str, extra_ca: list[str]) -> str | None:
    """A CA bundle for upstream TLS: the usual public roots plus ``extra_ca`` (None: the roots)."""
    if not extra_ca:
        return None
    import certifi  # a dependency of mitmproxy; its default roots

    bundle = Path(confdir) / "upstream-ca.pem"
    parts = [Path(certifi.where()).read_text("ascii")] + [Path(p).read_text("ascii") for p in extra_ca]
    bundle.write_text("\n".join(parts), "ascii")
    return str(bundle)


async def serve(config: dict[str, Any]) -> None:
    from mitmproxy import master, options
    from mitmproxy.addons import core, disable_h2c, errorcheck, next_layer, proxyserver, tlsconfig
    from mitmproxy.proxy.mode_servers import ServerInstance

    from skillctl.egress import trailers

    trailers.install()  # HTTP/1 trailers pass (scrubbed) instead of cutting the body short
    # The listening socket is the front door's (``splice``); mitmproxy itself listens nowhere
    # (server=False) and is handed every connection that is not a passthrough tunnel.
    listener = socket.create_server((config["listen_host"], int(config["listen_port"])), backlog=128)
    opts = options.Options(confdir=config["confdir"])
    proxy = master.Master(opts)
    servers = proxyserver.Proxyserver()
    # Only the addons a policy proxy needs: every event goes to every addon, and mitmdump's
    # thirty-odd (replay, onboarding at mitm.it, scripts…) cost time per request and would
    # answer or act on requests the policy never saw.
    proxy.addons.add(core.Core(), disable_h2c.DisableH2C(), servers, next_layer.NextLayer(),
                     tlsconfig.TlsConfig(), errorcheck.ErrorCheck())
    proxy.options.update(
        server=False,
        connection_strategy="lazy",  # connect upstream only for a request that passed the policy
        upstream_cert=False,  # certificates from the client's SNI: no upstream contact before the checks
        http2=False,  # HTTP/1.1 both ways: streamed bodies can be re-framed when scrubbing changes their length
        http3=False,
        ssl_insecure=False,
        ssl_verify_upstream_trusted_ca=upstream_trust(config["confdir"], config.get("extra_ca", [])),
    )
    addon = EgressAddon(config, _emit)
    # What mitmproxy's own listener would do with a connection it accepted.
    regular = ServerInstance.make("regular", servers)

    async def hand_off(conn: socket.socket) -> None:
        # asyncio's own server would have set this; without it every response waits ~40 ms for
        # the client's delayed ACK (Nagle's algorithm), measured.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError:
            conn.close()
            return
        await regular.handle_stream(reader, writer)

    front = Front(listener, passes=passes_through(config), allowed=addon.allowed,
                  passthrough=list(config.get("passthrough_domains", [])), resolve_map=addon.resolve_map,
                  loopback_only=addon.loopback_only, policy_text=addon.policy_text, hand_off=hand_off, emit=addon.emit)
    proxy.addons.add(addon, _Ready(config, front))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, proxy.shutdown)
    threading.Thread(target=_read_control, args=(loop, proxy, addon, front), name="control", daemon=True).start()
    writer = threading.Thread(target=_write_out, name="output")
    writer.start()
    try:
        await proxy.run()
    finally:
        front.close()  # spliced connections still open are cut, and their records queued
        _outbox.put(None)  # every record queued so far is written before the process ends
        writer.join()


def main() -> None:
    config = json.loads(sys.stdin.readline())
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
