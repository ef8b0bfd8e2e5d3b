"""Command output: capped capture on the host side, head+tail text on the model side.

Two limits, two places. ``CappedCapture`` bounds what the host *keeps* of a stream (bytes), so a
flood of output cannot exhaust memory: it keeps the first and the last part and counts what it
dropped in between; ``capture_share`` shrinks that cap when several commands of one step flood
at once, so a step as a whole stays bounded. ``truncate_middle``/``format_result`` bound what the
*model reads* (characters, a cap per command): head and tail with an explicit marker of how
much was left out. Both are deterministic: the same output always gives the same text.

Control characters other than newline, tab and carriage return become their Unicode control
pictures (NUL → ␀, ESC → ␛, DEL → ␡) when the bytes become text: raw, each would be a six-byte
``\u0000`` escape in every JSON that carries it (transcript, request to the model), and they
mean nothing to a model anyway.
"""

from __future__ import annotations

from collections import deque

from skillctl.protocols import ExecResult

DEFAULT_CAPTURE_BYTES = 10 * 1024 * 1024  # per stream
DEFAULT_STEP_CAPTURE_BYTES = 32 * 1024 * 1024  # all streams of the commands run together
MIN_CAPTURE_BYTES = 1024

# C0 controls and DEL, except \t \n \r, to the "Control Pictures" block (U+2400 + code, U+2421).
CONTROL_PICTURES = {code: 0x2400 + code for code in range(32) if code not in (9, 10, 13)} | {0x7F: 0x2421}


def printable(text: str) -> str:
    """``text`` with control characters replaced by their pictures (see the module docstring)."""
    return text.translate(CONTROL_PICTURES)


def capture_share(per_stream: int, per_step: int, commands: int) -> int:
    """The capture cap of each stream when ``commands`` run together: their two streams each
    get an equal part of ``per_step``, never more than ``per_stream``, never less than 1 KiB."""
    return max(MIN_CAPTURE_BYTES, min(per_stream, per_step // (2 * max(1, commands))))


class CappedCapture:
    """Keeps at most ``cap`` bytes of a stream: the first ``cap // 2`` and the last rest.

    The tail matters as much as the head: errors and summaries come last.

    Chunks are kept as they arrive (lists of small ``bytes``), never appended to one growing
    buffer: growing megabyte buffers by reallocation, in one reader thread per stream, left
    glibc's per-thread arenas holding several times the captured size (a step of 16 flooding
    streams peaked at 644 MiB of resident memory for 32 MiB captured). Small chunks are freed and
    reused in place, so resident memory stays near what is kept.
    """

    def __init__(self, cap: int = DEFAULT_CAPTURE_BYTES) -> None:
        if cap < 2:
            raise ValueError("capture cap must be at least 2 bytes")
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head: list[bytes] = []
        self._head_len = 0
        # Whole chunks covering at least the last ``_tail_cap`` bytes (once that many arrived),
        # at most one chunk more.
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - self._head_len
        if room > 0:
            part = bytes(data[:room]) if len(data) > room else bytes(data)
            self._head.append(part)
            self._head_len += len(part)
            data = data[len(part):]
        if not data:
            return
        if len(data) >= self._tail_cap:
            self._tail.clear()
            self._tail.append(bytes(data[-self._tail_cap :]))
            self._tail_len = self._tail_cap
            return
        self._tail.append(bytes(data))
        self._tail_len += len(data)
        while self._tail_len - len(self._tail[0]) >= self._tail_cap:
            self._tail_len -= len(self._tail.popleft())

    @property
    def kept(self) -> int:
        """Bytes held in memory now: at most ``cap`` plus one chunk."""
        return self._head_len + self._tail_len

    @property
    def dropped(self) -> int:
        return max(0, self.total - self._head_len - min(self._tail_len, self._tail_cap))

    def text(self) -> str:
        """Decoded, printable capture; a marker stands where bytes were dropped."""
        kept = b"".join(self._head)
        if not self.dropped:
            # Head and tail are contiguous: decoded together, a character split between them stays whole.
            return printable((kept + b"".join(self._tail)).decode("utf-8", errors="replace"))
        tail = b"".join(self._tail)[-self._tail_cap :]
        return (
            printable(kept.decode("utf-8", errors="replace"))
            + f"\n[… {self.dropped} bytes not captured (capture cap {self.cap} bytes) …]\n"
            + printable(tail.decode("utf-8", errors="replace"))
        )


TRUNCATED = "\n[… {n} characters truncated …]\n"


def truncate_middle(text: str, limit: int, marker: str = TRUNCATED) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around ``marker``
    (``{n}`` in it becomes the count left out; by default ``[… N characters truncated …]``)
    such that the whole result is at most ``limit`` long.

    N is exactly the number of characters left out. The head gets the extra character when
    the kept length is odd. ``ValueError`` if ``limit`` cannot even hold the marker.
    """
    return cut_middle(text, limit, marker)[0]


def cut_middle(text: str, limit: int, marker: str = TRUNCATED) -> tuple[str, int]:
    """``truncate_middle``, and the number of characters it left out."""
    if limit < 0:
        raise ValueError("limit must not be negative")
    if len(text) <= limit:
        return text, 0
    # The marker's length depends on N's digits, and N on the marker: iterate to the fixpoint
    # (at most a couple of rounds, since N only moves by the change in digits).
    omitted = len(text) - limit
    while True:
        kept = limit - len(marker.format(n=omitted))
        if kept < 0:
            raise ValueError(f"limit {limit} is too small to hold the truncation marker")
        needed = len(text) - kept
        if needed == omitted:
            break
        omitted = needed
    head = (kept + 1) // 2
    tail = kept - head
    return text[:head] + marker.format(n=omitted) + (text[len(text) - tail :] if tail else ""), omitted


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
