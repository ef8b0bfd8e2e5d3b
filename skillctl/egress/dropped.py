"""Direct connection attempts the firewall dropped, read back from the kernel log.

The run's firewall rules log (rate-limited) every packet the container sends anywhere but the
proxy, with a per-run prefix (``skillctl.sandbox.firewall.log_prefix``). This watcher follows
``/dev/kmsg`` from the moment it starts and turns each attempt — one per source port, however
often the SYN is retried — into a denied egress record. Reading the kernel log needs root, as
the firewall rules do; where it cannot be read, the attempts are still dropped, only not logged.
"""

from __future__ import annotations

import os
import re
import select
import threading
from typing import Any, Callable

from skillctl.egress.rules import egress_record
from skillctl.sandbox.firewall import log_prefix

KMSG = "/dev/kmsg"
_FIELD = re.compile(r"\b([A-Z]+)=(\S*)")
REASON = "direct connection that bypassed the proxy; dropped by the firewall"


def parse_line(line: str, prefix: str) -> dict[str, str] | None:
    """The ``KEY=value`` fields of a kernel log record carrying ``prefix``; None for others."""
    _, sep, message = line.partition(";")
    if not sep or not message.startswith(prefix):
        return None
    return dict(_FIELD.findall(message))


class DropWatcher:
    def __init__(self, run_id: str, on_record: Callable[[dict[str, Any]], None]) -> None:
        self.prefix = log_prefix(run_id)
        self.on_record = on_record
        self._seen: set[tuple[str, ...]] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None

    def start(self) -> bool:
        """Follow the kernel log from now on; False when it cannot be read."""
        try:
            self._fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            return False
        self._thread = threading.Thread(target=self._run, name="egress-drops", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _run(self) -> None:
        assert self._fd is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(200):
                continue
            while True:
                try:
                    raw = os.read(self._fd, 8192)  # one record per read
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    continue  # records were overwritten before we read them; go on with the next
                fields = parse_line(raw.decode("utf-8", "replace"), self.prefix)
                if fields is not None:
                    self._report(fields)

    def _report(self, fields: dict[str, str]) -> None:
        key = tuple(fields.get(k, "") for k in ("PROTO", "SRC", "SPT", "DST", "DPT"))
        if key in self._seen:
            return
        self._seen.add(key)
        port = fields.get("DPT", "")
        self.on_record(
            egress_record(method=fields.get("PROTO", "?"), scheme="", host=fields.get("DST", "?"),
                          port=int(port) if port.isdigit() else 0, decision="denied", reason=REASON)
        )
