"""Nothing is left behind: network, firewall rules, proxy process and CA folder go with the run —
when it ends, and when it is killed with SIGKILL (the proxy exits on its own when its stdin
closes; the reaper removes the rest at the next start)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from skillctl.sandbox.firewall import Rule, insert_rules
from skillctl.sandbox.leftovers import LEFTOVERS_DIR_ENV, Leftovers, reap_leftovers
from skillctl.sandbox.reaper import Owner, process_start_time, reap
from skillctl.sandbox.settings import LABEL_EXPIRES, LABEL_MANAGED, LABEL_OWNER, LABEL_RUN_ID

from .conftest import SECRET

pytestmark = [pytest.mark.requires_docker]


def firewall_lines(run_id: str) -> list[str]:
    lines = []
    for chain in ("INPUT", "FORWARD"):
        out = subprocess.run(["iptables", "-w", "30", "-S", chain], capture_output=True, text=True, check=True).stdout
        lines += [line for line in out.splitlines() if f"skillctl-egress {run_id}" in line]
    return lines


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]


def network_ids(docker_client, run_id: str) -> list[str]:
    return [n["Id"] for n in docker_client.api.networks(filters={"label": [f"{LABEL_RUN_ID}={run_id}"]})]


def wait_for(condition, what: str, deadline_s: float = 120.0):
    give_up = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


def test_stop_removes_network_rules_proxy_folder_and_record(policy, resolve_specs, test_ca, docker_client, tmp_path, monkeypatch):
    from skillctl.egress.session import EgressSession

    monkeypatch.setenv(LEFTOVERS_DIR_ENV, str(tmp_path / "leftovers"))
    session = EgressSession(policy, resolve=resolve_specs, extra_ca=[test_ca[0]], environ={"MY_TOKEN": SECRET}, client=docker_client)
    with session:
        record = tmp_path / "leftovers" / f"{session.run_id}.json"
        entry = json.loads(record.read_text())
        pid, folder = entry["processes"][0][0], Path(entry["folders"][0])
        assert alive(pid) and folder.is_dir() and network_ids(docker_client, session.run_id)
        assert len(firewall_lines(session.run_id)) == 5  # accept, log, drop, drop in INPUT; log in FORWARD
        assert SECRET not in record.read_text()
    assert not alive(pid) and not folder.exists() and not record.exists()
    assert network_ids(docker_client, session.run_id) == [] and firewall_lines(session.run_id) == []
    assert session.problems == []


def test_sigkill_of_a_run_then_the_reaper_leaves_nothing(tmp_path, docker_client, agent_image, resolve_specs, test_ca):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"shell": ["sleep 50"]}, {"answer": "done"}]}))
    leftovers = tmp_path / "leftovers"
    env = {**os.environ, LEFTOVERS_DIR_ENV: str(leftovers), "MY_TOKEN": SECRET, "XDG_STATE_HOME": str(tmp_path / "state"),
           "SKILLCTL_MODEL": "", "OPENAI_API_KEY": ""}
    args = [sys.executable, "-c", "from skillctl.cli import main; main()", "run", "--model", f"script:{script}", "--image", agent_image,
            "--allow-domain", "*.example.test", "--domain-secret", "MY_TOKEN@api.example.test",
            *[f"--egress-resolve={spec}" for spec in resolve_specs], "--egress-ca", str(test_ca[0]),
            "--transcript", str(tmp_path / "t.jsonl"), "wait"]
    stderr = open(tmp_path / "stderr.txt", "w")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        def running():
            transcript, records = tmp_path / "t.jsonl", list(leftovers.glob("*.json"))
            if not records or not transcript.exists() or "sleep 50" not in transcript.read_text():
                return None  # not yet at the first command
            entry = json.loads(records[0].read_text())
            return entry if entry["processes"] else None

        entry = wait_for(running, "the run to reach its first command")
        run_id, pid, folder = entry["run_id"], entry["processes"][0][0], Path(entry["folders"][0])
        assert alive(pid) and network_ids(docker_client, run_id) and firewall_lines(run_id)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr.close()
    # The proxy notices its run is gone (stdin closed) and exits by itself.
    wait_for(lambda: not alive(pid), "the proxy to exit after its run was killed")
    assert folder.exists() and firewall_lines(run_id)  # the rest waits for the reaper
    removed = reap(docker_client, leftovers_dir=leftovers)
    assert run_id in removed and set(network_ids(docker_client, run_id)) == set()
    assert not folder.exists() and firewall_lines(run_id) == [] and list(leftovers.glob("*.json")) == []
    assert docker_client.api.containers(all=True, filters={"label": [f"{LABEL_RUN_ID}={run_id}"]}) == []


def _dead_owner() -> str:
    """An owner label of this host and boot whose process does not exist (pid beyond pid_max)."""
    me = Owner.current()
    return Owner(me.host, me.boot_id, 2**22 + 1, "1").label()


def test_reaper_kills_recorded_processes_removes_folders_and_rules_of_a_dead_owner(tmp_path):
    sleeper = subprocess.Popen(["sleep", "300"])
    folder = Path(tempfile.mkdtemp(prefix="skillctl-test-"))
    rule = Rule("iptables", "INPUT", ("-i", "skctest0", "-m", "comment", "--comment", "skillctl-egress reaper-test", "-j", "DROP"))
    insert_rules([rule])
    try:
        labels = {LABEL_MANAGED: "1", LABEL_OWNER: _dead_owner(), LABEL_EXPIRES: str(int(time.time()) + 3600)}
        Leftovers("reaper-test", labels, processes=[(sleeper.pid, process_start_time(sleeper.pid))], folders=[str(folder)],
                  firewall=[rule.to_list()]).save(tmp_path)
        mine = {**labels, LABEL_OWNER: Owner.current().label()}
        Leftovers("still-running", mine, folders=[str(folder)]).save(tmp_path)
        assert reap_leftovers(time.time(), directory=tmp_path) == ["reaper-test"]
        assert sleeper.wait(timeout=60) == -signal.SIGKILL
        assert not folder.exists() and firewall_lines("reaper-test") == []
        assert (tmp_path / "still-running.json").exists()  # a live owner's record is left alone
    finally:
        sleeper.kill()


def test_reaper_leaves_a_reused_pid_alone(tmp_path):
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        labels = {LABEL_MANAGED: "1", LABEL_OWNER: _dead_owner()}
        Leftovers("reused", labels, processes=[(sleeper.pid, "1")]).save(tmp_path)  # another start time
        assert reap_leftovers(time.time(), directory=tmp_path) == ["reused"]
        assert sleeper.poll() is None
    finally:
        sleeper.kill()


def test_reaper_ignores_folders_it_did_not_make_and_rules_that_are_not_rules(tmp_path):
    keep = tmp_path / "precious"
    keep.mkdir()
    labels = {LABEL_MANAGED: "1", LABEL_OWNER: _dead_owner()}
    Leftovers("hostile", labels, folders=[str(keep), "relative/skillctl-x"], firewall=[["sh", "-c", "touch /tmp/pwned"]]).save(tmp_path)
    reap_leftovers(time.time(), directory=tmp_path)
    assert keep.is_dir()
    assert not Path("/tmp/pwned").exists()
