"""One contract, one suite: the local engine and the Ray engine (on a real two-node Ray cluster
on this machine) run the same checks — results on the calling thread, at most ``jobs`` runs in
flight and really at once (a rendezvous, not a stopwatch), jobs taken lazily, and one job's
failure never ends the others. Runs use the unisolated local sandbox: the checks are about the
engines, and its commands can meet on this machine's files."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import pytest

from skillctl.errors import ConfigError
from skillctl.many.engines import open_engine
from skillctl.many.job import Job, JobResult, RunSettings, model_fields
from skillctl.registry import open_registry

from .conftest import write_yaml


@pytest.fixture(params=["local", "ray"])
def engine(request):
    if request.param == "local":
        eng = open_engine("local", jobs=2)
    else:
        cluster = request.getfixturevalue("ray_cluster")
        eng = open_engine("ray", address=cluster.address, jobs=2)
    with eng:
        yield eng


def job(tmp_path: Path, ident: str, commands: list[str], skills: tuple[str, ...] = (), registry: str | None = None) -> Job:
    model = write_yaml(tmp_path / f"{ident}.yaml", [{"shell": commands, "timeout_ms": 120000}, {"answer": f"done {ident}"}])
    # The run's --timeout-ms is the most a command may ask for: let the script's 120 s through.
    settings = RunSettings(sandbox="local", allow_unsafe_local=True, registry=registry, limits={"timeout_ms": 120000})
    return Job(id=ident, task="Do it.", skills=skills, settings=settings, **model_fields(f"script:{model}"))


def run_all(engine, jobs) -> tuple[list[JobResult], set[str]]:
    results: list[JobResult] = []
    threads: set[str] = set()

    def on_done(result: JobResult) -> None:
        threads.add(threading.current_thread().name)
        results.append(result)

    engine.run(jobs, on_done)
    return results, threads


def test_every_result_comes_back_on_the_calling_thread(engine, tmp_path):
    results, threads = run_all(engine, [job(tmp_path, f"j{i}", ["true"]) for i in range(3)])
    assert sorted((r.id, r.outcome, r.answer) for r in results) == [(f"j{i}", "answered", f"done j{i}") for i in range(3)]
    assert threads == {threading.current_thread().name}
    assert all(r.transcript and b'"run_end"' in r.transcript for r in results)


def test_runs_go_at_once_but_never_more_than_jobs(engine, tmp_path):
    meet = tmp_path / "meet"
    meet.mkdir()
    # Each run enters, waits until two are inside (proof they overlap), records how many it saw, leaves.
    body = (f'touch {meet}/$ID; n=0; for i in $(seq 1 1200); do n=$(ls {meet} | wc -l); [ "$n" -ge 2 ] && break; '
            f'sleep 0.05; done; echo "$n" >> {tmp_path}/seen; sleep 0.2; rm {meet}/$ID')
    jobs = [job(tmp_path, f"r{i}", [body.replace("$ID", f"r{i}")]) for i in range(4)]
    results, _ = run_all(engine, jobs)
    assert {r.outcome for r in results} == {"answered"}
    seen = [int(x) for x in (tmp_path / "seen").read_text().split()]
    assert len(seen) == 4 and max(seen) == 2  # the rendezvous was met, and never by three


def test_jobs_are_taken_only_as_slots_free_up(engine, tmp_path):
    taken: list[str] = []
    first_done_after: list[int] = []

    def source() -> Iterator[Job]:
        for i in range(6):
            taken.append(f"l{i}")
            yield job(tmp_path, f"l{i}", ["true"])

    def on_done(_result: JobResult) -> None:
        if not first_done_after:
            first_done_after.append(len(taken))

    engine.run(source(), on_done)
    assert len(taken) == 6 and first_done_after[0] <= engine.jobs


def test_a_job_that_cannot_start_is_failed_and_the_others_go_on(engine, tmp_path):
    open_registry(str(tmp_path / "empty-reg"), create=True).close()  # a registry without the skill
    bad = job(tmp_path, "bad", ["true"], skills=("no-such-skill",), registry=str(tmp_path / "empty-reg"))
    results, _ = run_all(engine, [bad, job(tmp_path, "good", ["true"])])
    by_id = {r.id: r for r in results}
    assert by_id["good"].outcome == "answered"
    assert (by_id["bad"].outcome, by_id["bad"].exit_code, by_id["bad"].started) == ("failed", 1, False)
    assert "no-such-skill" in by_id["bad"].message


def test_an_unknown_engine_names_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown engine 'spark'; use one of: local, ray"):
        open_engine("spark")
