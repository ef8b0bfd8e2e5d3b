"""The egress proxy process: mitmproxy with ``EgressAddon``, driven over stdin/stdout.

Protocol (one JSON object per line):

- stdin, first line: the configuration (listen address, confdir for the per-run CA, allowed
  domains, secrets with their placeholders *and real values*, resolve map, upstream CA file).
  Secrets travel only this way: never on the command line, in the environment or on disk.
- stdin, later lines: ``{"sync": N}`` — answered by ``{"type": "synced", "n": N}`` once every
  record of a request finished before it has been written.
- stdin at end of file: the run is gone (ended, or killed with SIGKILL): shut down at once.
  This is what keeps the proxy from outliving its run; the reaper is the second line.
- stdout: ``{"type": "ready", ...}`` once listening, then the addon's records.

Runs under an interpreter that has mitmproxy (see ``skillctl.egress.launch``), which may lack
skillctl's own dependencies: this module imports only the standard library, mitmproxy, and
``skillctl.egress.rules``/``addon``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from skillctl.egress.addon import EgressAddon

CA_CERT_FILE = "mitmproxy-ca-cert.pem"  # what mitmproxy writes into its confdir


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class _Ready:
    """Reports the listening address once mitmproxy runs (addons' ``running`` hook)."""

    def __init__(self, confdir: str) -> None:
        self.confdir = confdir

    def running(self) -> None:
        from mitmproxy import ctx

        addrs = ctx.master.addons.get("proxyserver").listen_addrs()
        _emit({"type": "ready", "listen": list(addrs[0]) if addrs else None, "ca_cert": str(Path(self.confdir) / CA_CERT_FILE)})


def _read_control(loop: asyncio.AbstractEventLoop, master: Any) -> None:
    for line in sys.stdin:
        try:
            n = json.loads(line)["sync"]
        except (ValueError, KeyError, TypeError):
            continue
        loop.call_soon_threadsafe(_emit, {"type": "synced", "n": n})
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
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    opts = options.Options(listen_host=config["listen_host"], listen_port=int(config["listen_port"]), confdir=config["confdir"])
    master = DumpMaster(opts, with_termlog=False, with_dumper=False)
    master.options.update(
        connection_strategy="lazy",  # connect upstream only for a request that passed the policy
        upstream_cert=False,  # certificates from the client's SNI: no upstream contact before the checks
        http2=False,  # HTTP/1.1 both ways: streamed bodies can be re-framed when scrubbing changes their length
        http3=False,
        onboarding=False,  # mitm.it would answer inside the container, whatever the policy says
        ssl_insecure=False,
        ssl_verify_upstream_trusted_ca=upstream_trust(config["confdir"], config.get("extra_ca", [])),
    )
    master.addons.add(EgressAddon(config, _emit), _Ready(config["confdir"]))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, master.shutdown)
    threading.Thread(target=_read_control, args=(loop, master), name="control", daemon=True).start()
    await master.run()


def main() -> None:
    config = json.loads(sys.stdin.readline())
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
