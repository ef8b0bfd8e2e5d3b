"""The local engine: runs on a bounded pool of threads in this process, each in its own
container on this machine's Docker Engine (``skillctl.runtime.run`` is safe on worker threads).

Cancellation follows the engine contract (``skillctl.many.engines``): one ``threading.Event``
shared by every run is set on Ctrl-C, each run stops at its next step or command and removes
its container on its way out; a second Ctrl-C removes every live container at once
(``skillctl.sandbox.cleanup.stop_all``) for the impatient.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from .engines import DEFAULT_RETRIES, default_jobs
from .job import ERROR, Job, JobResult
from .worker import execute


class LocalEngine:
    name = "local"

    def __init__(self, *, jobs: int | None = None, retries: int = DEFAULT_RETRIES,
                 progress: Callable[[str], None] | None = None) -> None:
        self.jobs = jobs or default_jobs()
        self.retries = retries  # a thread is never lost on its own; kept for one signature across engines
        self.progress = progress or (lambda _line: None)

    def __enter__(self) -> "LocalEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass

    def run(self, jobs: Iterable[Job], on_done: Callable[[JobResult], None]) -> None:
        source = iter(jobs)
        cancel = threading.Event()
        inflight: dict[Future[JobResult], Job] = {}
        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="skillctl-run") as pool:

            def fill() -> None:
                while len(inflight) < self.jobs and not cancel.is_set():
                    job = next(source, None)
                    if job is None:
                        return
                    inflight[pool.submit(execute, job, cancel=cancel)] = job

            with _sigterm_as_interrupt():
                try:
                    fill()
                    while inflight:
                        done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                        for future in done:
                            on_done(_result(future, inflight.pop(future)))
                        fill()
                except KeyboardInterrupt:
                    cancel.set()
                    self.progress(f"interrupted: stopping {len(inflight)} running run(s) and removing their containers "
                                  "(Ctrl-C again removes them at once)")
                    self._drain(inflight, on_done)
                    raise
                except BaseException:
                    cancel.set()  # on_done failed (a full disk…): stop the rest, then report it
                    wait(list(inflight))
                    raise

    def _drain(self, inflight: dict[Future[JobResult], Job], on_done: Callable[[JobResult], None]) -> None:
        try:
            while inflight:
                done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                for future in done:
                    on_done(_result(future, inflight.pop(future)))
        except KeyboardInterrupt:
            from skillctl.sandbox.cleanup import stop_all

            stop_all()
            raise


def _result(future: Future[JobResult], job: Job) -> JobResult:
    try:
        return future.result()
    except BaseException as exc:  # execute() catches what a run raises; this is a last resort
        return JobResult.not_run(job.id, ERROR, f"{type(exc).__name__}: {exc}")


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the batch) cancels like Ctrl-C, so containers are removed.
    Only the main thread can install handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
