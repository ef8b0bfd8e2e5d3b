"""The run's full record as JSON Lines (one event per line, flushed as it happens).

Events: ``run_start``; ``message`` (every history message, with its index and token estimate,
tool results with full untruncated command output); ``request`` (what was sent at step k: a list
of ``{"ref": i}`` for history messages sent unchanged and ``{"inline": message}`` for what fitting
put in their place — cleared results, cut notes, summaries — so the exact request can be rebuilt);
``reply``; ``run_end``; ``egress`` (one per proxied request, when the run has network egress).
No secret ever reaches this file: the model's key lives only in the client, and egress records
name secrets, never their values. Events may come from several threads (the egress proxy's
records arrive on their own), so writing one is serialised.

The file is created readable by its owner only (0600), and folders it needs are created 0700:
it holds everything the agent saw, inputs and skill files included. How much command output it
keeps is bounded per shell call and per run (``output_budget``).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO, Any, Sequence

from skillctl.fsutil import open_private
from skillctl.messages import Message


class Transcript:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fh: IO[str] | None = None
        if path is not None:
            self._fh = open_private(path)
        self._ids: dict[int, int] = {}
        self._count = 0
        self._lock = threading.Lock()

    def event(self, kind: str, /, **data: Any) -> None:
        # Positional-only: an event may carry its own "kind" field (the loop's error events do);
        # as a keyword it collided with this parameter and crashed the run's error path.
        line = json.dumps({"type": kind, "time": round(time.time(), 3), **data}, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._fh is None:
                return
            self._fh.write(line)
            self._fh.flush()

    def message(self, m: Message, **extra: Any) -> int:
        index = self._count
        self._count += 1
        self._ids[id(m)] = index
        self.event("message", index=index, tokens=m.tokens, message=m.to_dict(), **extra)
        return index

    def request(self, step: int, sent: Sequence[Message], **extra: Any) -> None:
        items: list[dict[str, Any]] = []
        for m in sent:
            i = self._ids.get(id(m))
            items.append({"ref": i} if i is not None else {"inline": m.to_dict()})
        self.event("request", step=step, messages=items, **extra)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def rebuild_requests(path: Path) -> list[list[dict[str, Any]]]:
    """Every request as the list of message dicts that was sent (for audits and tests)."""
    messages: dict[int, dict[str, Any]] = {}
    requests: list[list[dict[str, Any]]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            ev = json.loads(line)
            if ev["type"] == "message":
                messages[ev["index"]] = ev["message"]
            elif ev["type"] == "request":
                requests.append([messages[item["ref"]] if "ref" in item else item["inline"] for item in ev["messages"]])
    return requests
