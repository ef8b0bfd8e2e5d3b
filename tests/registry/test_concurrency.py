"""Several processes publishing at once, and publishers killed with SIGKILL at random points.

Real processes (multiprocessing), one real registry folder: nothing may be lost, every
contested version has exactly one winner, and ``verify`` stays free of errors.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import signal
import time
from collections import Counter
from pathlib import Path

from skillctl.bundle import read_bundle
from skillctl.registry.local import LocalRegistry

from .workers import open_new, publish_forever, publish_many

WORKERS = 4


def _collect(results: "multiprocessing.Queue", procs: list, expected: int, deadline_s: float = 120) -> list:
    """``expected`` results, failing fast (not at the deadline) when a worker died."""
    out: list = []
    end = time.monotonic() + deadline_s
    while len(out) < expected:
        try:
            out.append(results.get(timeout=0.5))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not dead, f"a publisher crashed (exit codes {dead}); see its traceback above"
            assert time.monotonic() < end, f"only {len(out)} of {expected} results before the deadline"
    return out
PER_WORKER = 10


def test_concurrent_publishers_lose_nothing_and_contested_versions_have_one_winner(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no state shared with the test
    reg_path = tmp_path / "registry"  # not created yet: the workers race to create it too
    jobs = {
        w: [("demo", f"{w}.{i}.0", f"worker {w} item {i}") for i in range(PER_WORKER)]
        + [("demo", "99.0.0", f"contested by worker {w}")]  # same version, different content
        + [("shared", "1.0.0", "identical everywhere")]  # same version, same content
        + [(f"own-{w}", "0.1.0", "a skill only this worker publishes")]
        for w in range(WORKERS)
    }
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=publish_many, args=(str(reg_path), w, jobs[w], barrier, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    outcomes = _collect(results, procs, WORKERS * (PER_WORKER + 3))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    by_version = {}
    for worker, name, version, outcome, digest in outcomes:
        by_version.setdefault((name, version), []).append((worker, outcome, digest))

    reg = LocalRegistry(reg_path)
    try:
        # every distinct version is there exactly once, with the bytes its publisher sent
        for w in range(WORKERS):
            for i in range(PER_WORKER):
                ((_, outcome, digest),) = by_version[("demo", f"{w}.{i}.0")]
                assert outcome == "published"
                rec = reg.resolve(f"demo@{w}.{i}.0")
                assert rec.digest == digest
        versions = [r.version for r in reg.versions("demo")]
        assert len(versions) == len(set(versions)) == WORKERS * PER_WORKER + 1

        contested = by_version[("demo", "99.0.0")]
        assert Counter(o for _, o, _ in contested) == {"published": 1, "immutable": WORKERS - 1}
        (winner,) = [d for _, o, d in contested if o == "published"]
        assert reg.resolve("demo@99.0.0").digest == winner

        shared = by_version[("shared", "1.0.0")]
        assert Counter(o for _, o, _ in shared) == {"published": 1, "unchanged": WORKERS - 1}
        assert len({d for _, _, d in shared}) == 1

        assert sorted(s.name for s in reg.list_skills()) == sorted(["demo", "shared"] + [f"own-{w}" for w in range(WORKERS)])
        assert len({s.id for s in reg.list_skills()}) == WORKERS + 2
        problems = reg.verify()
        # the losers' blobs of the contested version are garbage, never errors
        assert [p for p in problems if p.severity == "error"] == []
        assert Counter(p.kind for p in problems) == {"orphan": WORKERS - 1}
    finally:
        reg.close()


KILLS = 20


def test_publishers_killed_at_random_points_leave_a_consistent_registry(tmp_path: Path) -> None:
    # fork: the child starts publishing at once (no interpreter start-up), so the random
    # delays below land inside publishes: in the blob write, the fsyncs, the transaction.
    ctx = multiprocessing.get_context("fork")
    reg_path = tmp_path / "registry"
    log = tmp_path / "committed.log"
    rng = random.Random(1234)
    for _ in range(KILLS):
        ready = ctx.Event()
        proc = ctx.Process(target=publish_forever, args=(str(reg_path), ready, str(log)))
        proc.start()
        assert ready.wait(30)
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode == -signal.SIGKILL

    reg = LocalRegistry(reg_path)
    try:
        problems = reg.verify()
        assert [p for p in problems if p.severity == "error"] == [], problems
        assert {p.kind for p in problems} <= {"orphan", "temp"}
        indexed = reg.versions("crashy")
        committed = log.read_text().split() if log.exists() else []
        # everything a publisher saw committed is there (a kill between commit and log line
        # may add one more per iteration, never fewer)
        assert set(committed) <= {r.version for r in indexed}
        assert len(indexed) >= len(committed)
        assert len(indexed) > 0, "no publish ever completed: the delays are too short to test anything"
        for rec in indexed:
            data = reg.read_blob(rec.digest)  # raises IntegrityError on any mismatch
            assert read_bundle(data).name == "crashy"
        # and it keeps working: leftovers are collectable and the registry takes new versions
        reg.gc(grace_s=0)
        assert reg.verify() == []
    finally:
        reg.close()


CREATORS = 16
ROUNDS = 20


def test_sixteen_processes_creating_one_new_registry_all_succeed(tmp_path: Path) -> None:
    # fork: no interpreter start-up, so the sixteen opens really overlap once the barrier opens
    ctx = multiprocessing.get_context("fork")
    failures = []
    for round_ in range(ROUNDS):
        reg_path = tmp_path / f"registry-{round_}"
        barrier = ctx.Barrier(CREATORS)
        results = ctx.Queue()
        procs = [ctx.Process(target=open_new, args=(str(reg_path), w, barrier, results)) for w in range(CREATORS)]
        for p in procs:
            p.start()
        outcomes = _collect(results, procs, CREATORS)
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        failures += [f"round {round_}, worker {w}: {outcome}" for w, outcome in outcomes if outcome != "ok"]
        with LocalRegistry(reg_path) as reg:
            assert reg.verify() == []
    assert failures == [], f"{len(failures)} of {CREATORS * ROUNDS} opens failed: {failures[:3]}"
