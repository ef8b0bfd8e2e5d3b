"""Egress through the library entry point: ``run(RunSpec(..., network=...))`` — the policy as
plain data, checked when the spec is made; a real run whose result counts the requests."""

from __future__ import annotations

import json

import pytest
import yaml

from skillctl.errors import ConfigError
from skillctl.runtime import RunSpec, run

from .conftest import POLICY, SECRET


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"network": {"type": "allowlist"}}, "missing 'allowed_domains'"),
        ({"network": POLICY, "sandbox": "local", "allow_unsafe_local": True}, "network egress needs the docker sandbox"),
        ({"egress_resolve": ["a.example.test=127.0.0.1:1"]}, "need a network policy that allows domains"),
        ({"network": {"type": "disabled"}, "egress_log": "x.jsonl"}, "need a network policy that allows domains"),
    ],
)
def test_spec_refuses_a_bad_network(fields, message):
    with pytest.raises(ConfigError, match=message):
        RunSpec(task="t", model="script:x.yaml", **fields)


def test_missing_secret_fails_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("MY_TOKEN", raising=False)
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"answer": "x"}]}))
    with pytest.raises(ConfigError, match="environment variable MY_TOKEN is not set"):
        run(RunSpec(task="t", model=f"script:{script}", network=POLICY, transcript=tmp_path / "t.jsonl"))
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.requires_docker
def test_run_with_a_network_counts_its_requests(tmp_path, monkeypatch, agent_image, resolve_specs, test_ca):
    monkeypatch.setenv("MY_TOKEN", SECRET)
    script = tmp_path / "s.yaml"
    fetch = "python3 -c \"import urllib.request; print(urllib.request.urlopen('https://{}/echo').status)\""
    script.write_text(yaml.safe_dump({"steps": [{"shell": [fetch.format("api.example.test"), fetch.format("example.test")]},
                                                {"answer": "done"}]}))
    lines: list[str] = []
    result = run(RunSpec(task="t", model=f"script:{script}", image=agent_image, network=POLICY, egress_resolve=resolve_specs,
                         egress_ca=[test_ca[0]], transcript=tmp_path / "t.jsonl", progress=lines.append))
    assert result.outcome == "answered", result.message
    assert result.egress["allowed"] == 1 and result.egress["denied"] == 1
    assert result.egress["summary"].startswith("egress: 2 request(s): 1 allowed, 1 denied")
    assert any(line.startswith("  egress denied: CONNECT example.test:443") for line in lines)
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert sorted(e["host"] for e in events if e["type"] == "egress") == ["api.example.test", "example.test"]
    assert SECRET not in (tmp_path / "t.jsonl").read_text() and SECRET not in json.dumps(result.to_dict())


@pytest.mark.requires_docker
def test_each_commands_requests_are_recorded_before_its_result(tmp_path, monkeypatch, agent_image, resolve_specs, test_ca):
    # A streamed response's record is written after its last byte reached the client, so the
    # command could end (and the run move on) before its request was recorded: the count said 0.
    monkeypatch.setenv("MY_TOKEN", SECRET)
    script = tmp_path / "s.yaml"
    fetch = "python3 -c \"import urllib.request; print(urllib.request.urlopen('https://api.example.test/echo').status)\""
    steps = 12
    script.write_text(yaml.safe_dump({"steps": [{"shell": [fetch]}] * steps + [{"answer": "done"}]}))
    result = run(RunSpec(task="t", model=f"script:{script}", image=agent_image, network=POLICY, egress_resolve=resolve_specs,
                         egress_ca=[test_ca[0]], transcript=tmp_path / "t.jsonl"))
    assert result.outcome == "answered", result.message
    assert (result.egress["allowed"], result.egress["denied"]) == (steps, 0)
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    seen = 0
    for event in events:
        if event["type"] == "egress":
            seen += 1
        elif event["type"] == "message" and event["message"]["role"] == "tool":
            seen -= 1
            assert seen == 0, "a command's result came before the record of its request"
