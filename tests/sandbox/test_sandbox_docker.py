"""The Docker sandbox against the real engine: hardening, limits, users, what only Docker
promises. The behaviour every backend shares is in ``test_conformance.py``."""

from __future__ import annotations

import resource
import socket
import time

import pytest
from bundle.archives import files_tar
from sandbox.processes import leftovers, marker

from skillctl.errors import ConfigError, SandboxError, SandboxTimeout
from skillctl.sandbox import open_sandbox
from skillctl.sandbox.docker_backend import DockerSandbox
from skillctl.sandbox.output import format_result

pytestmark = [pytest.mark.requires_docker]

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def sandbox(agent_image, docker_client):
    # kill_after_s short so the SIGTERM-ignoring test does not wait the default 5 s.
    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=1.0) as sb:
        yield sb


def test_python_and_sqlite_are_there(sandbox):
    result = sandbox.exec(
        "python3 -c 'import sqlite3; print(sqlite3.sqlite_version)' && "
        "sqlite3 /workspace/t.db 'create table t(x); insert into t values (41+1); select x from t;'"
    )
    assert result.ok, result
    assert result.stdout.splitlines()[-1] == "42"


def test_runs_as_non_root_without_capabilities(sandbox):
    result = sandbox.exec("id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status")
    lines = result.stdout.split("\n")
    assert lines[0] == "1000" and lines[1] == "1000"
    assert "CapEff:\t0000000000000000" in result.stdout
    assert "CapBnd:\t0000000000000000" in result.stdout
    assert "NoNewPrivs:\t1" in result.stdout


def test_root_filesystem_is_read_only(sandbox):
    for path in ("/usr/local/bin/evil", "/etc/evil"):
        result = sandbox.exec(f"touch {path}", user="0:0")  # not even root may write there
        assert result.exit_code == 1 and "Read-only file system" in result.stderr


def test_skills_are_read_only_for_the_agent_and_workspace_is_its_own(sandbox):
    sandbox.put_archive("/skills", files_tar({"ro/file.txt": b"original\n"}))
    denied = sandbox.exec("echo changed > /skills/ro/file.txt; touch /skills/new")
    assert denied.exit_code != 0 and denied.stderr.count("Permission denied") == 2
    assert sandbox.exec("cat /skills/ro/file.txt").stdout == "original\n"
    assert sandbox.exec("echo mine > /workspace/own.txt && cat own.txt").stdout == "mine\n"


def test_hardening_is_in_the_container_config(sandbox, docker_client):
    attrs = docker_client.api.inspect_container(sandbox.container_id)
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["ReadonlyRootfs"] is True and host["Init"] is True and host["AutoRemove"] is True
    assert host["PidsLimit"] == 256 and host["Memory"] == 2 * 1024 * MiB and host["NanoCpus"] == 10**9
    assert host["MemorySwap"] == host["Memory"]
    assert host["ShmSize"] == 64 * MiB and host["Ulimits"] == [{"Name": "msgqueue", "Soft": 0, "Hard": 0}]
    # The container's own processes run as nobody; commands run as the agent (see exec above).
    assert attrs["Config"]["User"] == "65534:65534"
    labels = attrs["Config"]["Labels"]
    assert labels["org.skillctl.managed"] == "1" and labels["org.skillctl.run-id"] == sandbox.run_id
    assert int(labels["org.skillctl.expires"]) > time.time()
    assert labels["org.skillctl.owner"].split("/")[2].isdigit()


def test_no_setuid_or_setgid_file_anywhere(sandbox):
    found = sandbox.exec(r"find / \( -path /proc -o -path /sys \) -prune -o -perm /6000 -print 2>/dev/null; echo end")
    assert found.stdout == "end\n", found.stdout


def test_shared_memory_is_capped_and_message_queues_are_closed(sandbox):
    shm = sandbox.exec("head -c 100000000 /dev/zero > /dev/shm/big; echo $?; du -m /dev/shm/big; rm -f /dev/shm/big")
    assert shm.stdout.split() == ["1", "64", "/dev/shm/big"] and "No space left" in shm.stderr, shm
    queue = sandbox.exec("touch /dev/mqueue/q")
    assert queue.exit_code == 1 and "Too many open files" in queue.stderr, queue


def test_network_is_really_off(sandbox):
    # Only loopback exists and there is no route. The connect is attempted only once the route
    # table is known to be empty, so no packet can leave even if this test fails.
    result = sandbox.exec(
        "ls /sys/class/net; tail -n +2 /proc/net/route | wc -l; python3 - <<'EOF'\n"
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n"
        "    s.connect(('192.0.2.1', 80))\n"  # TEST-NET-1: documentation only
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
        "EOF"
    )
    lines = result.stdout.split()
    assert lines[0] == "lo" and lines[1] == "0", result.stdout
    assert lines[2:4] == ["refused", "101"], result  # ENETUNREACH


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(sandbox):
    result = sandbox.exec("trap '' TERM; sleep 1236; sleep 1236", timeout_s=1)
    assert result.outcome_type == "timeout"
    assert 1.9 <= result.duration_s < 60  # 1 s timeout + 1 s kill_after, far below 2 × 1236 s
    assert "sleep 1236" not in sandbox.exec("ps -eo args").stdout


def test_gigabyte_flood_stays_within_the_capture_cap(sandbox):
    gib = 1024 * MiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = sandbox.exec(f"head -c {gib} /dev/zero; echo tail-marker; head -c {64 * MiB} /dev/zero >&2", timeout_s=120)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.ok
    cap = sandbox.settings.max_capture_bytes
    assert result.stdout_dropped == gib + len("tail-marker\n") - cap
    assert result.stderr_dropped == 64 * MiB - cap
    assert result.stdout.endswith("tail-marker\n")  # the tail survives the flood
    assert f"{result.stdout_dropped} bytes not captured" in result.stdout
    assert grown_mib < 200, f"host memory peak grew by {grown_mib:.0f} MiB"
    model_text = format_result(result, 10_000)
    assert len(model_text) <= 10_000 and "characters truncated" in model_text


BOMB = "bomb() { bomb | bomb & }; bomb"
BOMB_COUNT = "ps -eo args= | grep -c '[b]omb |'"  # the bracket keeps this grep from counting itself


def test_fork_bomb_is_contained_by_the_pids_limit(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client, pids_limit=64, kill_after_s=1) as sb:
        assert sb.exec("cat /sys/fs/cgroup/pids/pids.max").stdout.strip() == "64"
        bomb = sb.exec(f"{BOMB}; sleep 3", timeout_s=3)
        assert "fork" in bomb.stderr.lower(), bomb.stderr[-500:]
        # Gone before exec returned: the next command can fork at once, and nothing is left.
        alive = sb.exec(f"echo alive; {BOMB_COUNT}", timeout_s=20)
        assert alive.stdout.split() == ["alive", "0"], alive


# Every process forks for ever and retries when the table is full: unlike a shell bomb, which
# can die out by itself once forks fail, this one never stops on its own.
STUBBORN_BOMB = (
    "python3 -c 'import os, time\n"
    "while True:\n"
    "    try:\n"
    "        os.fork()\n"
    "    except OSError:\n"
    "        time.sleep(0.01)'"
)
STUBBORN_COUNT = "ps -eo args= | grep -c '^[p]ython3 -c import os'"


@pytest.mark.parametrize("timeout_s", [60, 2], ids=["exit", "timeout"])
def test_a_detached_fork_bomb_is_gone_when_its_command_ends(agent_image, docker_client, timeout_s):
    # setsid takes the bomb out of the command's process group, where `timeout` cannot reach it;
    # it used to run on after its command and make every later command fail (exit 125).
    with DockerSandbox(image=agent_image, client=docker_client, pids_limit=64, kill_after_s=1) as sb:
        # Exit (or time out) only once the bomb has filled most of the process table, counted
        # with shell builtins only: a full table leaves no room for forking `ps`.
        hang = "; while :; do :; done" if timeout_s < 60 else ""
        command = f"setsid {STUBBORN_BOMB} & while set -- /proc/[0-9]*; [ $# -lt 40 ]; do :; done; echo filled{hang}"
        result = sb.exec(command, timeout_s=timeout_s)
        assert result.stdout.startswith("filled"), result
        assert result.outcome_type == ("timeout" if timeout_s < 60 else "exit"), result
        after = [sb.exec(f"echo ok-{i}; {STUBBORN_COUNT}", timeout_s=20) for i in range(5)]
        assert [r.stdout.split() for r in after] == [[f"ok-{i}", "0"] for i in range(5)], after


def test_keep_background_keeps_services_in_the_container(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=1.0, keep_background=True) as sb:
        m, held, timed = marker(), marker(), marker()
        # A service writing to a file, and one still holding the command's output: neither keeps
        # the command from ending, both stay.
        result = sb.exec(f"nohup setsid sleep {m} >/dev/null 2>&1 & (sleep {held}; echo late) & echo done; echo err >&2")
        assert (result.exit_code, result.stdout, result.stderr) == (0, "done\n", "err\n"), result
        assert [line for line in leftovers(sb, m) if line.startswith("sleep")] == [f"sleep {m}"]
        assert [line for line in leftovers(sb, held) if line.startswith("sleep")] == [f"sleep {held}"]
        # A service started by an earlier command is untouched by a later one; a timeout still
        # takes everything the timed-out command started.
        result = sb.exec(f"nohup setsid sleep {timed} >/dev/null 2>&1 & sleep {timed}", timeout_s=0.5)
        assert result.outcome_type == "timeout"
        assert leftovers(sb, timed) == []
        assert [line for line in leftovers(sb, m) if line.startswith("sleep")] == [f"sleep {m}"]


def test_host_deadline_raises_sandbox_timeout(agent_image, docker_client):
    # A supervisor that cannot act (stopped by the command itself) never ends the exec: only the
    # host deadline stops the wait. The host then wakes it, and it cleans up.
    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=0.5, host_grace_s=1) as sb:
        started = time.monotonic()
        with pytest.raises(SandboxTimeout, match="still running"):
            sb.exec("kill -STOP $(ps -o ppid= -p $PPID); sleep 30", timeout_s=0.5)
        assert time.monotonic() - started < 25  # well before the 30 s sleep would end
        assert sb.exec("echo still usable").stdout == "still usable\n"


def test_put_archive_as_the_agent_and_into_a_new_folder(sandbox):
    sandbox.put_archive("/workspace/inputs/deep", files_tar({"data/in.csv": b"a,b\n1,2\n"}), user="agent")
    result = sandbox.exec("stat -c '%U %n' inputs inputs/deep/data inputs/deep/data/in.csv && echo x >> inputs/deep/data/in.csv")
    assert result.ok, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["agent"] * 3


def test_with_no_path_at_all_the_sandbox_still_starts_runs_and_stages_files(agent_image, docker_client):
    """Nothing the harness runs in the container is looked up on PATH: the keep-alive, the
    supervisor, `timeout`, `sh`, and the `id` and `mkdir` it runs as root to stage files for a
    named user. With a PATH where nothing is found, all of it still works."""
    with DockerSandbox(image=agent_image, client=docker_client, env={"PATH": "/nowhere"}) as sb:
        result = sb.exec('echo "$PATH"; exit 3')
        assert (result.exit_code, result.stdout, result.stderr) == (3, "/nowhere\n", ""), result
        sb.put_archive("/workspace/made/here", files_tar({"in.txt": b"x\n"}), user="agent")
        listed = sb.exec("/usr/bin/stat -c '%U %n' made made/here/in.txt")
        assert listed.stdout == "agent made\nagent made/here/in.txt\n", listed
        assert sb.exec("/bin/sleep 30", timeout_s=1).outcome_type == "timeout"


def test_every_program_skillctl_runs_by_path_is_in_the_agent_image(sandbox):
    from skillctl.sandbox import programs

    missing = sandbox.exec(" ; ".join(f"[ -x {p} ] || echo {p}" for p in programs.ALL))
    assert (missing.exit_code, missing.stdout) == (0, ""), missing


def test_put_archive_outside_writable_mounts_is_refused(sandbox):
    with pytest.raises(SandboxError, match="read-only; put files under /skills, /workspace or /tmp"):
        sandbox.put_archive("/etc", files_tar({"evil": b"x"}))
    with pytest.raises(SandboxError, match="absolute"):
        sandbox.put_archive("relative", files_tar({"x": b""}))
    with pytest.raises(SandboxError, match="no user 'nobody-here'"):
        sandbox.put_archive("/workspace", files_tar({"x": b""}), user="nobody-here")
    with pytest.raises(SandboxError, match="invalid user name"):
        sandbox.put_archive("/workspace", files_tar({"x": b""}), user="a;rm -rf /")


def test_get_archive_is_capped(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client, max_archive_bytes=1 * MiB) as sb:
        sb.exec("head -c 3000000 /dev/urandom > big")
        with pytest.raises(SandboxError, match="larger than max_archive_bytes"):
            sb.get_archive("/workspace/big")


def test_a_missing_image_is_a_clear_error(docker_client):
    with pytest.raises(SandboxError, match="image skillctl-agent:does-not-exist is not built"):
        DockerSandbox(image="skillctl-agent:does-not-exist", client=docker_client).start()


def test_exec_after_the_container_is_gone_says_so(agent_image, docker_client):
    sb = DockerSandbox(image=agent_image, client=docker_client)
    sb.start()
    try:
        docker_client.api.remove_container(sb.container_id, force=True, v=True)
        with pytest.raises(SandboxError, match="no longer running.*start a new sandbox"):
            sb.exec("true")
    finally:
        sb.stop()


def test_extra_folders_are_the_agents_and_size_capped(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client, extra_dirs=("/memory",), extra_dir_size="1m") as sb:
        result = sb.exec("stat -c '%u %a' /memory && head -c 300000 /dev/zero > /memory/ok && head -c 2000000 /dev/zero > /memory/big")
        assert result.stdout.splitlines()[0] == "1000 755"
        assert result.exit_code == 1 and "No space left on device" in result.stderr
        with pytest.raises(SandboxError, match="put files under /skills, /workspace, /tmp or /memory"):
            sb.put_archive("/etc", files_tar({"evil": b"x"}))


def test_the_factory_builds_or_reuses_the_agent_image(agent_image, docker_client):
    sb = open_sandbox("docker", client=docker_client)  # no image named: the current recipe's, built if missing
    assert sb.settings.image == agent_image
    with pytest.raises(ConfigError, match="unknown sandbox setting"):
        open_sandbox("docker", client=docker_client, colour="blue")


def test_the_agent_cannot_end_its_own_sandbox(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client) as sb:
        owners = sb.exec("ps -o user= -p 1; ps -o user= -C sleep")
        assert owners.stdout.split() == ["nobody", "nobody"], owners
        # kill -9 -1 takes the command's own timeout and supervisor with it (exit 137): the shell
        # itself survives, as kill(-1) spares the caller.
        attack = sb.exec("pkill -x sleep; kill -TERM 1; kill -9 -1; echo still here")
        assert (attack.exit_code, attack.stdout) == (137, "still here\n"), attack
        assert sb.exec("echo alive").stdout == "alive\n"
        assert docker_client.api.inspect_container(sb.container_id)["State"]["Running"] is True


def test_a_sandbox_killed_from_outside_says_so(agent_image, docker_client):
    sb = DockerSandbox(image=agent_image, client=docker_client)
    sb.start()
    try:
        docker_client.api.kill(sb.container_id)
        with pytest.raises(SandboxError, match=r"killed from outside \(signal 9.*not by its TTL of 3600 s"):
            sb.exec("true")
    finally:
        sb.stop()


def test_a_sandbox_whose_ttl_ran_out_says_so(agent_image, docker_client):
    sb = DockerSandbox(image=agent_image, client=docker_client, ttl_s=10)
    sb.start()
    try:
        deadline = time.monotonic() + 120
        while docker_client.api.containers(all=True, filters={"id": sb.container_id}):
            assert time.monotonic() < deadline, "the container outlived its TTL by far"
            time.sleep(0.5)
        with pytest.raises(SandboxError, match="no longer running: its TTL of 10 s ran out; start a new sandbox"):
            sb.exec("true")
    finally:
        sb.stop()


def test_stop_removes_container_and_volumes(agent_image, docker_client):
    sb = open_sandbox("docker", image=agent_image, client=docker_client)
    with sb:
        cid = sb.container_id
        volumes = [m["Name"] for m in docker_client.api.inspect_container(cid)["Mounts"]]
        assert len(volumes) == 4  # /skills, /workspace, /tmp and the agent's HOME
    assert not docker_client.api.containers(all=True, filters={"id": cid})
    remaining = {v.name for v in docker_client.volumes.list()}
    assert not remaining & set(volumes)


def test_container_removed_under_a_running_command_is_a_sandbox_error(agent_image, docker_client):
    import threading

    sb = DockerSandbox(image=agent_image, client=docker_client)
    sb.start()
    try:
        killer = threading.Timer(1.0, lambda: docker_client.api.remove_container(sb.container_id, force=True, v=True))
        killer.start()
        started = time.monotonic()
        with pytest.raises(SandboxError, match="start a new sandbox"):
            sb.exec("sleep 20", timeout_s=30)
        assert time.monotonic() - started < 18  # noticed before the 20 s command could finish
        killer.join()
    finally:
        sb.stop()


def test_a_daemon_that_does_not_answer_in_time_is_a_one_line_sandbox_error(agent_image, tmp_path):
    # The SDK lets requests' timeouts through as they are; they escaped `exec` as a raw
    # ReadTimeout traceback instead of saying what failed. A socket that accepts and never
    # answers stands for a daemon too busy to answer.
    import docker

    from skillctl.sandbox.client import docker_client as connect

    path = tmp_path / "silent.sock"
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(path))
    silent.listen(16)
    mute = docker.DockerClient(base_url=f"unix://{path}", timeout=1, version="1.41")  # no version query
    client = connect()
    try:
        with DockerSandbox(image=agent_image, client=client) as sb:
            assert sb.exec("echo up").stdout == "up\n"
            sb._client = mute
            try:
                with pytest.raises(SandboxError, match=r"^running a command in \S+ failed: .*[Tt]imed out"):
                    sb.exec("echo never")
            finally:
                sb._client = client
    finally:
        mute.close()
        client.close()
        silent.close()
