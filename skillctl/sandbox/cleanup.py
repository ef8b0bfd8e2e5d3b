"""Remove live containers when the host process is interrupted or exits.

Three layers, because no single one covers every way a process ends:

- the owner's ``try/finally`` or ``with`` block (normal exits, exceptions, Ctrl-C, which Python
  turns into ``KeyboardInterrupt``);
- ``atexit`` for owners that forgot the ``finally``: it runs on any interpreter exit;
- a SIGTERM/SIGHUP handler, installed only where those signals would otherwise kill the process
  outright (default disposition) and only from the main thread: it stops the live sandboxes,
  then lets the signal take its usual course so the exit status stays honest.

SIGKILL cannot be caught; the reaper (at the next start) and the entrypoint's TTL cover it.
Never ``__del__``: it runs at unpredictable times, or not at all.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any, Protocol


class _Stoppable(Protocol):
    def stop(self) -> None: ...


# Reentrant: the signal handler runs on the main thread, possibly while it holds the lock.
_lock = threading.RLock()
_live: dict[int, _Stoppable] = {}
_atexit_registered = False
_signals_installed = False


def register(sandbox: _Stoppable) -> None:
    """Track ``sandbox`` until ``unregister``. Safe from any thread: runs started on worker
    threads (batches, evals) are covered by ``atexit``; the signal handlers are installed the
    first time a sandbox is registered from the main thread."""
    global _atexit_registered, _signals_installed
    with _lock:
        _live[id(sandbox)] = sandbox
        if not _atexit_registered:
            atexit.register(stop_all)
            _atexit_registered = True
        if not _signals_installed and threading.current_thread() is threading.main_thread():
            _install_signal_handlers()
            _signals_installed = True


def unregister(sandbox: _Stoppable) -> None:
    with _lock:
        _live.pop(id(sandbox), None)


def stop_all() -> None:
    """Stop every sandbox still registered; errors are swallowed, this is a last resort."""
    with _lock:
        sandboxes = list(_live.values())
    for sandbox in sandboxes:
        try:
            sandbox.stop()
        except Exception:
            pass


def _install_signal_handlers() -> None:
    # Main thread only (the caller checks): signal.signal raises anywhere else.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _on_fatal_signal)


def _on_fatal_signal(signum: int, _frame: Any) -> None:
    stop_all()
    # Die of the same signal, as the process would have without us.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
