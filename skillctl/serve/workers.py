"""Registry work off the event loop: a few threads, each with a registry client of its own.

Registry calls block (SQLite, files, HTTP to an OCI registry) and some clients must stay in the
thread that made them: a SQLite connection refuses other threads, and an HTTP session is not
meant to be shared. So each worker thread opens its own client with the factory it is given,
uses only that one, and closes it when the pool stops. ``run(fn, *args, **kwargs)`` calls
``fn(registry, *args, **kwargs)`` in some worker and awaits the result.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable, TypeVar

from skillctl.protocols import Registry

T = TypeVar("T")
_STOP = object()


class RegistryWorkers:
    def __init__(self, open_registry: Callable[[], Registry], threads: int = 4) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._open = open_registry
        self._size = threads
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the threads; each opens its client first, one after the other (two clients
        creating a new folder registry at the same moment could each take the other's files
        for foreign ones). The first failure to open is raised here: a bad --registry fails at
        start-up, not on the first request."""
        try:
            for i in range(self._size):
                ready: Future[None] = Future()
                thread = threading.Thread(target=self._work, args=(ready,), name=f"skillctl-registry-{i}", daemon=True)
                thread.start()
                self._threads.append(thread)
                ready.result()
        except BaseException:
            self.stop()
            raise

    def _work(self, ready: Future[None]) -> None:
        try:
            registry = self._open()
        except BaseException as exc:  # reported by start(); this thread has nothing to close
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while True:
                job = self._jobs.get()
                if job is _STOP:
                    return
                fn, args, done = job
                if not done.set_running_or_notify_cancel():
                    continue
                try:
                    done.set_result(fn(registry, *args))
                except BaseException as exc:
                    done.set_exception(exc)
        finally:
            registry.close()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        self._jobs.put((functools.partial(fn, **kwargs) if kwargs else fn, args, done))
        return done

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``run`` for callers outside the event loop (start-up checks, tests)."""
        return self.submit(fn, *args, **kwargs).result()

    def stop(self) -> None:
        """Let queued work finish, then close every client (each in its own thread)."""
        alive = [t for t in self._threads if t.is_alive()]
        for _ in alive:
            self._jobs.put(_STOP)
        for thread in alive:
            thread.join()
        self._threads.clear()
