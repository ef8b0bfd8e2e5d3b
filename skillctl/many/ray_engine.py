"""The Ray engine: each run is a Ray task on some node of a cluster (``pip install 'skillctl[ray]'``).

Only the job and its result cross the cluster (``skillctl.many.job``): a node runs the
container on its own Docker Engine (building the agent image the first time, as ``skillctl
run`` would), fetches the skills from the registry the job names — a folder every node mounts,
or ``oci://`` — and sends back the transcript and the files as bytes. Every node needs skillctl
installed in the Python that runs its Ray workers.

Lost nodes: tasks are submitted with Ray's own retries off, and the engine resubmits a task
whose worker or node died (any Ray system error; a bug in the run is not retried), at most
``retries`` times, recording each loss in ``JobResult.retries`` — so reports can say which run
was retried and why. Ray schedules the new attempt on a live node.

Without ``address`` a private Ray instance starts on this machine (no dashboard, a small object
store) and is shut down by ``close()``; with one the engine connects to that cluster and only
disconnects. ``jobs`` defaults to the cluster's CPUs (each task asks for one).
"""

from __future__ import annotations

import socket
from typing import Any, Callable, Iterable

from .engines import DEFAULT_RETRIES, usable_cpus
from .job import ERROR, LOST, Job, JobResult
from .worker import execute

# Results are a few transcripts and output folders: the object store needs little (Ray's minimum is 75 MiB).
OBJECT_STORE_BYTES = 128 * 1024 * 1024
CANCEL_GRACE_S = 60.0


def execute_on_node(job: Job) -> JobResult:
    """The task body: the job on this node, labelled with where it ran."""
    import ray

    result = execute(job)
    result.node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:12]}"
    return result


class RayEngine:
    name = "ray"

    def __init__(self, *, address: str | None = None, jobs: int | None = None, retries: int = DEFAULT_RETRIES,
                 progress: Callable[[str], None] | None = None, init_options: dict[str, Any] | None = None) -> None:
        import ray

        self.progress = progress or (lambda _line: None)
        self.retries = retries
        self._owned = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False, **(init_options or {})}
            if address:
                ray.init(address=address, **options)
            else:
                # "local": a new instance of our own, never one that happens to run on this machine.
                ray.init(address="local", num_cpus=jobs or usable_cpus(), include_dashboard=False,
                         object_store_memory=OBJECT_STORE_BYTES, **options)
                self._owned = True
        self.address = address or "local"
        self.jobs = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(num_cpus=1, max_retries=0)(execute_on_node)

    def __enter__(self) -> "RayEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()  # stops the instance this engine started; only disconnects from a cluster

    def run(self, jobs: Iterable[Job], on_done: Callable[[JobResult], None]) -> None:
        import ray
        from ray.exceptions import RayError, RayTaskError, TaskCancelledError

        source = iter(jobs)
        inflight: dict[Any, tuple[Job, int, list[str]]] = {}

        def submit(job: Job, attempt: int, lost: list[str]) -> None:
            inflight[self._task.remote(job.packed())] = (job, attempt, lost)

        def fill() -> None:
            while len(inflight) < self.jobs:
                job = next(source, None)
                if job is None:
                    return
                submit(job, 1, [])

        def collect(ref: Any, *, retry: bool = True) -> JobResult | None:
            job, attempt, lost = inflight.pop(ref)
            try:
                result: JobResult = ray.get(ref)
            except TaskCancelledError:
                result = JobResult(job.id, "cancelled", 130, message="cancelled")
            except RayTaskError as exc:  # the task itself raised: a bug, not a lost node
                result = JobResult.not_run(job.id, ERROR, _first_line(exc))
            except RayError as exc:  # the worker or its node is gone
                lost.append(f"attempt {attempt} lost: {type(exc).__name__}: {_first_line(exc)}")
                if retry and attempt <= self.retries:
                    self.progress(f"{job.id}: {lost[-1]}; running it again elsewhere")
                    submit(job, attempt + 1, lost)
                    return None
                result = JobResult.not_run(job.id, LOST, f"lost {attempt} times; giving up: {_first_line(exc)}")
            result.attempts, result.retries = attempt, lost
            return result

        try:
            fill()
            while inflight:
                ready, _ = ray.wait(list(inflight), num_returns=1)
                result = collect(ready[0])
                if result is not None:
                    on_done(result)
                fill()
        except KeyboardInterrupt:
            self.progress(f"interrupted: cancelling {len(inflight)} Ray task(s); their containers are removed")
            self._cancel(inflight, collect, on_done)
            raise

    def _cancel(self, inflight: dict[Any, Any], collect: Callable[..., JobResult | None],
                on_done: Callable[[JobResult], None]) -> None:
        import ray

        for ref in list(inflight):
            ray.cancel(ref)  # KeyboardInterrupt inside the task: the run stops and removes its container
        try:
            ready, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=CANCEL_GRACE_S)
            for ref in ready:
                result = collect(ref, retry=False)
                if result is not None:
                    on_done(result)
        finally:
            for ref in list(inflight):
                ray.cancel(ref, force=True)  # the reaper and the containers' TTL cover what this leaves


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
