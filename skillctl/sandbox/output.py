"""Command output: capped capture on the host side, head+tail text on the model side.

Two limits, two places. ``CappedCapture`` bounds what the host *keeps* of a stream (bytes), so a
flood of output cannot exhaust memory: it keeps the first and the last part and counts what it
dropped in between. ``truncate_middle``/``format_result`` bound what the *model reads*
(characters, MISSION D3): head and tail with an explicit marker of how much was left out.
Both are deterministic: the same output always gives the same text.
"""

from __future__ import annotations

from skillctl.protocols import ExecResult

DEFAULT_CAPTURE_BYTES = 10 * 1024 * 1024  # per stream


class CappedCapture:
    """Keeps at most ``cap`` bytes of a stream: the first ``cap // 2`` and the last rest.

    The tail matters as much as the head: errors and summaries come last.
    """

    def __init__(self, cap: int = DEFAULT_CAPTURE_BYTES) -> None:
        if cap < 2:
            raise ValueError("capture cap must be at least 2 bytes")
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data[-self._tail_cap :]
            # Trim lazily (at twice the cap) so a stream of small chunks is not quadratic.
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    @property
    def dropped(self) -> int:
        return max(0, self.total - len(self._head) - min(len(self._tail), self._tail_cap))

    def text(self) -> str:
        """Decoded capture; a marker stands where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_cap :]) if self._tail else b""
        head = bytes(self._head).decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail.decode("utf-8", errors="replace")
        return (
            head
            + f"\n[… {self.dropped} bytes not captured (capture cap {self.cap} bytes) …]\n"
            + tail.decode("utf-8", errors="replace")
        )


def _marker(n: int) -> str:
    return f"\n[… {n} characters truncated …]\n"


def truncate_middle(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around a marker
    ``[… N characters truncated …]`` such that the whole result is at most ``limit`` long.

    N is exactly the number of characters left out. The head gets the extra character when
    the kept length is odd. ``ValueError`` if ``limit`` cannot even hold the marker.
    """
    if limit < 0:
        raise ValueError("limit must not be negative")
    if len(text) <= limit:
        return text
    # The marker's length depends on N's digits, and N on the marker: iterate to the fixpoint
    # (at most a couple of rounds, since N only moves by the change in digits).
    omitted = len(text) - limit
    while True:
        kept = limit - len(_marker(omitted))
        if kept < 0:
            raise ValueError(f"limit {limit} is too small to hold the truncation marker")
        needed = len(text) - kept
        if needed == omitted:
            break
        omitted = needed
    head = (kept + 1) // 2
    tail = kept - head
    return text[:head] + _marker(omitted) + (text[len(text) - tail :] if tail else "")


MIN_FORMAT_LIMIT = 256


def _split_budget(out: int, err: int, budget: int) -> tuple[int, int]:
    """Share ``budget`` between two streams: a short one keeps everything, the long one gets
    the rest; two long ones split it evenly. Each truncated stream gets at least half."""
    if out + err <= budget:
        return out, err
    half = budget // 2
    if err <= half:
        return budget - err, err
    if out <= half:
        return out, budget - out
    return budget - half, half


def format_result(result: ExecResult, limit: int) -> str:
    """The text the model reads for one command, at most ``limit`` characters.

    First line: ``exit_code: N`` or the timeout notice; then ``stdout:`` and ``stderr:``
    sections (left out when empty), each head+tail truncated. Deterministic.
    """
    if limit < MIN_FORMAT_LIMIT:
        raise ValueError(f"max_output_length must be at least {MIN_FORMAT_LIMIT} characters, got {limit}")
    if result.outcome_type == "timeout":
        header = "timeout: the command did not finish in time and was killed"
    else:
        header = f"exit_code: {result.exit_code}"
    notes = []
    if result.stdout_dropped:
        notes.append(f"note: {result.stdout_dropped} bytes of stdout exceeded the capture cap and were dropped")
    if result.stderr_dropped:
        notes.append(f"note: {result.stderr_dropped} bytes of stderr exceeded the capture cap and were dropped")
    head = "\n".join([header, *notes])
    out_label, err_label = "\nstdout:\n", "\nstderr:\n"
    overhead = len(head) + (len(out_label) if result.stdout else 0) + (len(err_label) if result.stderr else 0)
    budget = limit - overhead
    if budget < 2 * 64:
        # Only the notes can eat the budget this far; keep the header, drop the notes.
        head, budget = header, limit - (overhead - len(head) + len(header))
    out_budget, err_budget = _split_budget(len(result.stdout), len(result.stderr), budget)
    text = head
    if result.stdout:
        text += out_label + truncate_middle(result.stdout, out_budget)
    if result.stderr:
        text += err_label + truncate_middle(result.stderr, err_budget)
    return text
