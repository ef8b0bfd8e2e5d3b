"""Keep the host process's resident memory near what it actually holds while commands flood.

Each command's output is read by its own thread, and the text made of it is a few megabytes. With
glibc's default, the threshold above which ``malloc`` maps a block of its own (and returns it to
the system on ``free``) rises to the largest block freed so far; after the first few megabyte
strings are freed, later ones come from per-thread arenas instead, which keep the freed space.
Eight commands flooding at once, twice, then peaked at 240–644 MiB of resident memory for about
100 MiB ever alive (varying with thread scheduling). A fixed threshold keeps big blocks mapped
and returned on ``free``: about 140 MiB on the same run.
"""

from __future__ import annotations

import ctypes
import functools

# From glibc's <malloc.h>.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 1024 * 1024


@functools.cache
def keep_big_blocks_mapped() -> bool:
    """Fix glibc's mmap threshold for this process (tried once); False where there is no glibc."""
    try:
        # The process's own symbols: glibc's mallopt where the interpreter runs on glibc (no
        # library search, which would start ldconfig).
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl, macOS: no mallopt, nothing to fix
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
