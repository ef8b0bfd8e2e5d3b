"""No container outlives its owner: Ctrl-C, SIGTERM, SIGKILL (reaper), TTL, expiry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from skillctl.sandbox.docker_backend import DockerSandbox
from skillctl.sandbox.reaper import reap

pytestmark = [pytest.mark.requires_docker]
# How long an owner may take to remove its container and exit. Generous: on a shared machine
# under heavy load (load average in the hundreds was seen) the daemon took over 20 s to remove one.
DEADLINE_S = 120

OWNER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from skillctl.sandbox.docker_backend import DockerSandbox

    sandbox = DockerSandbox(image=sys.argv[1])
    if sys.argv[2] == "with":
        with sandbox:
            print(sandbox.container_id, flush=True)
            time.sleep(120)
    else:  # no with/finally at all: only the library's own handlers can clean up
        sandbox.start()
        print(sandbox.container_id, flush=True)
        time.sleep(120)
    """
)


def _exists(client, cid: str) -> bool:
    # The low-level list does not inspect each container: the high-level one does, and a container
    # removed between the list and the inspect raised NotFound instead of answering "gone".
    return bool(client.api.containers(all=True, filters={"id": cid}))


def _wait_gone(client, cid: str, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _exists(client, cid):
            return True
        time.sleep(0.1)
    return not _exists(client, cid)


@pytest.fixture
def owner(agent_image, tmp_path):
    """Start a separate Python process that owns a sandbox; yield (process, container id)."""
    script = tmp_path / "owner.py"
    script.write_text(OWNER_SCRIPT)
    procs = []

    def spawn(mode: str):
        proc = subprocess.Popen(
            [sys.executable, str(script), agent_image, mode],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )
        procs.append(proc)
        cid = proc.stdout.readline().strip()
        assert cid, proc.stderr.read()
        return proc, cid

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_ctrl_c_removes_the_container(owner, docker_client):
    proc, cid = owner("with")
    assert _exists(docker_client, cid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=DEADLINE_S) != 0  # KeyboardInterrupt
    assert not _exists(docker_client, cid)


def test_sigterm_removes_the_container_without_a_finally(owner, docker_client):
    proc, cid = owner("bare")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=DEADLINE_S) == -signal.SIGTERM  # still dies of SIGTERM, honestly
    assert not _exists(docker_client, cid)


def test_after_sigkill_the_next_start_reaps_the_orphan(owner, agent_image, docker_client):
    proc, cid = owner("bare")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert _exists(docker_client, cid)  # nothing could run in the killed process
    with DockerSandbox(image=agent_image, client=docker_client) as sb:
        assert cid in sb.reaped
        assert sb.container_id not in sb.reaped
    assert not _exists(docker_client, cid)


def test_reaper_keeps_live_owners_and_removes_expired(agent_image, docker_client):
    # The extra label keeps the future-dated sweep away from other runs' sandboxes.
    mine = {"org.skillctl.test": uuid.uuid4().hex}
    with DockerSandbox(image=agent_image, client=docker_client, ttl_s=60, labels=tuple(mine.items())) as sb:
        assert sb.container_id not in reap(docker_client)  # our own, alive, not expired
        assert _exists(docker_client, sb.container_id)
        removed = reap(docker_client, now=time.time() + 61, labels=mine)
        assert removed == [sb.container_id]
        assert not _exists(docker_client, sb.container_id)


def test_reaper_ignores_containers_it_did_not_start(agent_image, docker_client):
    # No owner label at all: were it considered, it would be removed as an orphan.
    foreign = docker_client.containers.create(agent_image, command=["30"], labels={"team": "other"})
    try:
        reap(docker_client)
        assert _exists(docker_client, foreign.id)
    finally:
        foreign.remove(force=True, v=True)


@pytest.mark.slow
def test_an_orphan_dies_by_itself_when_its_ttl_ends(agent_image, docker_client):
    sb = DockerSandbox(image=agent_image, client=docker_client, ttl_s=10)
    sb.start()
    cid = sb.container_id
    from skillctl.sandbox import cleanup

    cleanup.unregister(sb)  # behave like an owner that vanished without cleaning up
    try:
        assert _wait_gone(docker_client, cid, within_s=25), "container outlived its TTL"
    finally:
        sb.stop()


def test_owner_label_names_this_process(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client) as sb:
        labels = docker_client.api.inspect_container(sb.container_id)["Config"]["Labels"]
        assert labels["org.skillctl.owner"].split("/")[2] == str(os.getpid())
