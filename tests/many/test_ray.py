"""The Ray engine on a real cluster: a node killed in the middle of a run (at a known point,
by rendezvous with the run's container) costs a retry on the other node, and the results say
so; and ``--engine ray`` without an address starts Ray on this machine and stops it again."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.many.batch import run_batch
from skillctl.many.job import RunSettings
from skillctl.many.engines import LABEL_BATCH, open_engine
from skillctl.sandbox.reaper import Owner
from skillctl.sandbox.settings import LABEL_OWNER

from .conftest import NODE_ARGS, alive, descendants, is_ray, require_ray, write_yaml

pytestmark = pytest.mark.requires_docker

# The run's first command announces itself, then waits until the test lets it go.
HOLD = "touch /workspace/started && while [ ! -f /workspace/go ]; do sleep 0.1; done"


def containers(docker_client, group: str) -> list[dict]:
    return docker_client.api.containers(all=True, filters={"label": [f"{LABEL_BATCH}={group}"]})


def in_container(docker_client, cid: str, command: str) -> int | None:
    try:
        exec_id = docker_client.api.exec_create(cid, command, user="1000:1000")
        docker_client.api.exec_start(exec_id)
        return docker_client.api.exec_inspect(exec_id)["ExitCode"]
    except Exception:  # not started yet, or already going
        return None


def wait_held(docker_client, group: str, count: int, exclude: set[str], worker: threading.Thread) -> list[dict]:
    """The containers of ``group`` (not in ``exclude``) whose run is inside its held command."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        held = [c for c in containers(docker_client, group)
                if c["Id"] not in exclude and in_container(docker_client, c["Id"], "test -f /workspace/started") == 0]
        if len(held) >= count:
            return held
        assert worker.is_alive(), "the batch ended before its runs were held"
        time.sleep(0.2)
    raise AssertionError(f"{count} held run(s) never showed up")


def raylet_of(container: dict) -> int:
    """The raylet whose worker process started this container (a task's worker is its child)."""
    owner = Owner.parse(container["Labels"][LABEL_OWNER])
    stat = Path(f"/proc/{owner.pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[1])


def test_a_node_lost_mid_run_is_retried_on_the_other_node_and_reported(tmp_path, ray_cluster, agent_image, docker_client):
    cluster = ray_cluster
    model = write_yaml(tmp_path / "m.yaml", [{"shell": [HOLD], "timeout_ms": 600000}, {"answer": "released"}])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "task": "Wait for the signal."}) + "\n" for i in range(2)))
    group = f"nodeloss{os.getpid()}"
    lines: list[str] = []
    box: dict = {}
    engine = open_engine("ray", address=cluster.address, jobs=2, retries=2, progress=lines.append)

    settings = RunSettings(image=agent_image, limits={"timeout_ms": 600000})  # HOLD may wait long

    def batch() -> None:
        try:
            box["summary"] = run_batch(tasks, engine, model=f"script:{model}", settings=settings,
                                       progress=lines.append, batch_id=group)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=batch)
    worker.start()
    try:
        first = wait_held(docker_client, group, 2, set(), worker)
        victim_raylet = cluster.worker.all_processes["raylet"][0].process.pid
        on_worker = [c for c in first if raylet_of(c) == victim_raylet]
        survivors = [c for c in first if raylet_of(c) != victim_raylet]
        assert len(on_worker) == 1 and len(survivors) == 1, "one run per node"  # each node has one CPU
        cluster.remove_node(cluster.worker, allow_graceful=False)  # the node dies while its run is held
        assert in_container(docker_client, survivors[0]["Id"], "touch /workspace/go") == 0
        again = wait_held(docker_client, group, 1, {c["Id"] for c in first}, worker)  # the lost run, elsewhere
        assert raylet_of(again[0]) != victim_raylet
        assert in_container(docker_client, again[0]["Id"], "touch /workspace/go") == 0
        worker.join(timeout=300)
        assert not worker.is_alive() and "error" not in box, box.get("error")
    finally:
        engine.close()
        for c in containers(docker_client, group):  # the killed node's container: its owner died with it
            assert not alive(Owner.parse(c["Labels"][LABEL_OWNER]).pid)
            docker_client.api.remove_container(c["Id"], force=True)
        cluster.worker = cluster.add_node(**NODE_ARGS)  # two nodes again for the tests after this one
        cluster.wait_for_nodes()
    summary = box["summary"]
    assert dict(summary.outcomes) == {"answered": 2} and summary.exit_code == 0
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "tasks.results.jsonl").read_text().splitlines())}
    retried = [r for r in records.values() if r["attempts"] == 2]
    assert len(retried) == 1 and retried[0]["answer"] == "released"
    assert retried[0]["retries"][0].startswith("attempt 1 lost: NodeDiedError: ")
    assert any(f"{retried[0]['id']}: attempt 1 lost: NodeDiedError" in line and "running it again elsewhere" in line
               for line in lines)
    assert any("retried after 1 lost attempt(s)" in line for line in lines)


def test_engine_ray_without_an_address_starts_ray_here_and_stops_it(tmp_path, agent_image):
    require_ray()
    import ray

    assert not ray.is_initialized()
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["echo hi"]}, {"answer": "hi"}])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "one", "task": "Say hi."}\n{"id": "two", "task": "Say hi again."}\n')
    before = {p for p in descendants(os.getpid()) if is_ray(p)}
    result = CliRunner().invoke(cli, ["batch", str(tasks), "--engine", "ray", "-j", "2", "--model", f"script:{model}",
                                      "--image", agent_image, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcomes"] == {"answered": 2}
    assert "starting Ray on this machine" in result.stderr and "engine ray, up to 2 at once" in result.stderr
    assert not ray.is_initialized()
    deadline = time.monotonic() + 60
    started = lambda: {p for p in descendants(os.getpid()) if is_ray(p) and alive(p)} - before  # noqa: E731
    while started() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not started(), "Ray processes were left running"
