"""Which daemon failures are retried: only transient ones, and only for repeatable calls."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from skillctl.sandbox.client import daemon_error, is_transient, retry


def _api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(f"{status} error", response=response, explanation=explanation)


def test_connection_errors_and_gateway_errors_are_transient():
    assert is_transient(requests.exceptions.ConnectionError("reset"))
    assert is_transient(_api_error(503, "daemon busy"))
    assert is_transient(_api_error(500, "i/o timeout talking to containerd"))


def test_client_errors_and_permanent_500s_are_not():
    assert not is_transient(_api_error(404, "No such container"))
    assert not is_transient(_api_error(409, "container is not running"))
    assert not is_transient(_api_error(500, "container rootfs is marked read-only"))
    assert not is_transient(ValueError("bug"))


def test_retry_recovers_from_transient_failures():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise requests.exceptions.ConnectionError("daemon restarting")
        return "ok"

    assert retry(flaky, backoff_s=0) == "ok" and len(calls) == 3


def test_retry_gives_up_at_once_on_a_permanent_failure():
    calls = []

    def missing():
        calls.append(1)
        raise _api_error(404, "No such container: x")

    with pytest.raises(docker.errors.APIError):
        retry(missing, backoff_s=0)
    assert len(calls) == 1


def test_retry_stops_after_its_attempts():
    calls = []

    def down():
        calls.append(1)
        raise requests.exceptions.ConnectionError("refused")

    with pytest.raises(requests.exceptions.ConnectionError):
        retry(down, attempts=3, backoff_s=0)
    assert len(calls) == 3


def test_daemon_error_is_one_line_with_the_daemons_reason():
    err = daemon_error("starting x", _api_error(500, "oci runtime error\nlong detail"))
    assert str(err) == "starting x failed: oci runtime error"
