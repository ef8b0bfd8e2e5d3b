"""Settings and orphan rules: plain values, no daemon needed."""

from __future__ import annotations

import os
import socket

import pytest

from skillctl.errors import ConfigError, SandboxError
from skillctl.sandbox.docker_backend import DockerSandbox
from skillctl.sandbox.reaper import Owner, orphan_reason
from skillctl.sandbox.settings import LABEL_EXPIRES, LABEL_OWNER, SandboxSettings


def test_defaults_are_hardened():
    s = SandboxSettings()
    assert (s.network, s.read_only, s.user, s.workdir) == ("none", True, "1000:1000", "/workspace")
    assert s.pids_limit <= 1024 and s.max_capture_bytes == 10 * 1024 * 1024


def test_bad_settings_are_reported_together():
    with pytest.raises(ConfigError, match="cpus must be > 0.*pids_limit must be at least 8.*user must be numeric"):
        DockerSandbox(cpus=0, pids_limit=1, user="agent")
    with pytest.raises(ConfigError, match="ttl_s must be at least 10.*workdir must be an absolute path"):
        SandboxSettings(ttl_s=1, workdir="rel")
    with pytest.raises(ConfigError, match="max_capture_bytes.*max_step_capture_bytes must be at least 2048.*max_concurrency"):
        SandboxSettings(max_capture_bytes=10, max_step_capture_bytes=100, max_concurrency=0)


def test_the_keep_alive_runs_as_another_user_than_the_commands():
    s = SandboxSettings()
    assert s.keepalive_user.split(":")[0] != s.user.split(":")[0]
    with pytest.raises(ConfigError, match="keepalive_user must have another uid than user \\(1000:1000\\)"):
        SandboxSettings(keepalive_user="1000:5")
    with pytest.raises(ConfigError, match="keepalive_user must be numeric uid\\[:gid\\], got 'nobody'"):
        SandboxSettings(keepalive_user="nobody")


def test_from_mapping_accepts_maps_and_rejects_unknown_keys():
    s = SandboxSettings.from_mapping({"memory": "4g", "env": {"B": "2", "A": "1"}, "labels": {"team": "x"}})
    assert s.memory == "4g" and s.env == (("A", "1"), ("B", "2")) and s.labels == (("team", "x"),)
    with pytest.raises(ConfigError, match="unknown sandbox setting\\(s\\): colour, size"):
        SandboxSettings.from_mapping({"colour": "blue", "size": 1})


def test_unreachable_daemon_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match="cannot reach the Docker daemon .*start the Docker Engine") as info:
        DockerSandbox().start()
    assert "\n" not in str(info.value)


def _labels(owner: Owner | None, expires: float | None) -> dict[str, str]:
    labels = {}
    if owner is not None:
        labels[LABEL_OWNER] = owner.label()
    if expires is not None:
        labels[LABEL_EXPIRES] = str(expires)
    return labels


def test_live_owner_before_expiry_is_kept():
    assert orphan_reason(_labels(Owner.current(), 2000.0), now=1000.0) is None


def test_expired_is_removed_even_with_a_live_owner():
    assert orphan_reason(_labels(Owner.current(), 999.0), now=1000.0) == "expired"


def test_dead_owner_is_removed():
    me = Owner.current()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # the child is gone and reaped: its pid names no process now
    dead = Owner(me.host, me.boot_id, pid, me.start_time)
    assert orphan_reason(_labels(dead, 2000.0), now=1000.0) == f"owner process {pid} is gone"


def test_reused_pid_is_told_apart_by_start_time():
    me = Owner.current()
    impostor = Owner(me.host, me.boot_id, me.pid, str(int(me.start_time) + 1))
    assert orphan_reason(_labels(impostor, 2000.0), now=1000.0) is not None


def test_owner_from_an_earlier_boot_is_gone():
    me = Owner.current()
    assert orphan_reason(_labels(Owner(me.host, "other-boot", me.pid, me.start_time), 2000.0), now=1000.0)


def test_owner_on_another_host_waits_for_expiry():
    me = Owner.current()
    remote = Owner(socket.gethostname() + "-elsewhere", me.boot_id, 1, "1")
    assert orphan_reason(_labels(remote, 2000.0), now=1000.0) is None
    assert orphan_reason(_labels(remote, 999.0), now=1000.0) == "expired"


def test_missing_or_garbled_labels():
    assert orphan_reason({}, now=1000.0) == "no valid owner label"
    assert orphan_reason({LABEL_OWNER: "garbage", LABEL_EXPIRES: "2000"}, now=1000.0) is None
    assert orphan_reason({LABEL_OWNER: "garbage", LABEL_EXPIRES: "soon"}, now=1000.0) == "no valid owner label"


def test_memory_limit_is_the_ram_limit_and_memory_its_old_name() -> None:
    assert SandboxSettings.from_mapping({"memory_limit": "4g"}).memory == "4g"
    assert SandboxSettings.from_mapping({"memory": "3g"}).memory == "3g"
    with pytest.raises(ConfigError, match="give the container RAM limit once: memory_limit"):
        SandboxSettings.from_mapping({"memory": "3g", "memory_limit": "4g"})
