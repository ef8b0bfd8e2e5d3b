"""The egress proxy process: mitmproxy with ``EgressAddon``, driven over stdin/stdout.

Protocol (one JSON object per line):

- stdin, first line: the configuration (listen address, confdir for the per-run CA, allowed
  domains, secrets with their placeholders *and real values*, resolve map, upstream CA file).
  Secrets travel only this way: never on the command line, in the environment or on disk.
- stdin, later lines: ``{"sync": N}`` — answered by ``{"type": "synced", "n": N}`` once every
  record of a request open or finished before it has been written (open ones waited for at most
  ``SYNC_WAIT_S``).
- stdin at end of file: the run is gone (ended, or killed with SIGKILL): shut down at once.
  This is what keeps the proxy from outliving its run; the reaper is the second line.
- stdout: ``{"type": "ready", ...}`` once listening, then the addon's records.

Runs under an interpreter that has mitmproxy (see ``skillctl.egress.launch``), which may lack
skillctl's own dependencies: this module imports only the standard library, mitmproxy, and
``skillctl.egress.rules``/``addon``/``trailers``.
"""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from skillctl.egress.addon import EgressAddon

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
    """Reports the listening address once mitmproxy runs (addons' ``running`` hook)."""

    def __init__(self, confdir: str) -> None:
        self.confdir = confdir

    def running(self) -> None:
        from mitmproxy import ctx

        addrs = ctx.master.addons.get("proxyserver").listen_addrs()
        _emit({"type": "ready", "listen": list(addrs[0]) if addrs else None, "ca_cert": str(Path(self.confdir) / CA_CERT_FILE)})


# How long a sync waits for requests still open when it arrives. The command that made them has
# ended, so they finish at once (their client is gone); only a request of a background process
# kept alive on purpose can stay open, and then the sync answers without its record.
SYNC_WAIT_S = 5.0


async def _answer_sync(n: int, addon: EgressAddon) -> None:
    waiting = set(addon.open_flows)
    deadline = asyncio.get_running_loop().time() + SYNC_WAIT_S
    while waiting & addon.open_flows and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.005)
    _emit({"type": "synced", "n": n})


def _read_control(loop: asyncio.AbstractEventLoop, master: Any, addon: EgressAddon) -> None:
    for line in sys.stdin:
        try:
            n = json.loads(line)["sync"]
        except (ValueError, KeyError, TypeError):
            continue
        asyncio.run_coroutine_threadsafe(_answer_sync(n, addon), loop)
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

    from skillctl.egress import trailers

    trailers.install()  # HTTP/1 trailers pass (scrubbed) instead of cutting the body short
    opts = options.Options(listen_host=config["listen_host"], listen_port=int(config["listen_port"]), confdir=config["confdir"])
    proxy = master.Master(opts)
    # Only the addons a policy proxy needs: every event goes to every addon, and mitmdump's
    # thirty-odd (replay, onboarding at mitm.it, scripts…) cost time per request and would
    # answer or act on requests the policy never saw.
    proxy.addons.add(core.Core(), disable_h2c.DisableH2C(), proxyserver.Proxyserver(), next_layer.NextLayer(),
                     tlsconfig.TlsConfig(), errorcheck.ErrorCheck())
    proxy.options.update(
        connection_strategy="lazy",  # connect upstream only for a request that passed the policy
        upstream_cert=False,  # certificates from the client's SNI: no upstream contact before the checks
        http2=False,  # HTTP/1.1 both ways: streamed bodies can be re-framed when scrubbing changes their length
        http3=False,
        ssl_insecure=False,
        ssl_verify_upstream_trusted_ca=upstream_trust(config["confdir"], config.get("extra_ca", [])),
    )
    addon = EgressAddon(config, _emit)
    proxy.addons.add(addon, _Ready(config["confdir"]))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, proxy.shutdown)
    threading.Thread(target=_read_control, args=(loop, proxy, addon), name="control", daemon=True).start()
    writer = threading.Thread(target=_write_out, name="output")
    writer.start()
    try:
        await proxy.run()
    finally:
        _outbox.put(None)  # every record queued so far is written before the process ends
        writer.join()


def main() -> None:
    config = json.loads(sys.stdin.readline())
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
