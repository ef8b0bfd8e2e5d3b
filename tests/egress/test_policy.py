"""Network policies: the hosted shape, the shipped schema, every rejection as one line, the
command-line shorthands, skills.yaml's ``network:``, and reading secret values on the host."""

from __future__ import annotations

import json

import pytest
import yaml

from skillctl.egress.policy import (
    DISABLED,
    choose_policy,
    load_policy,
    parse_domain_secret,
    parse_policy,
    policy_schema,
    project_network_notice,
    project_policy,
    read_secret_values,
    with_shorthands,
)
from skillctl.errors import ConfigError
from skillctl.project.spec import load_project

GOOD = {
    "type": "allowlist",
    "allowed_domains": ["api.github.com", "*.Example.com."],
    "domain_secrets": [{"domain": "api.github.com", "name": "GITHUB_TOKEN", "value": "env:GH"}],
}


def test_disabled_is_the_default_and_has_nothing_to_allow():
    assert not DISABLED.enabled and DISABLED.allows("api.github.com") is None
    assert DISABLED.to_dict() == {"type": "disabled"}
    assert not parse_policy({"type": "disabled"}, origin="x").enabled


def test_allowlist_in_the_hosted_shape_normalised():
    policy = parse_policy(GOOD, origin="x")
    assert policy.allowed_domains == ("api.github.com", "*.example.com")
    assert policy.allows("a.example.com") == "*.example.com" and policy.allows("example.com") is None
    assert policy.to_dict()["domain_secrets"] == [{"domain": "api.github.com", "name": "GITHUB_TOKEN", "value": "env:GH"}]


def test_schema_is_shipped_and_valid_json_schema():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(policy_schema())


@pytest.mark.parametrize(
    "data, message",
    [
        (None, "empty network policy"),
        ([], "must be a mapping"),
        ({}, "missing 'type'"),
        ({"type": "open"}, "is 'open'; use one of disabled, allowlist"),
        ({"type": "allowlist"}, "missing 'allowed_domains'"),
        ({"type": "allowlist", "allowed_domains": []}, "'allowed_domains' must not be empty"),
        ({"type": "disabled", "allowed_domains": ["a.com"]}, "a disabled policy takes no allowed_domains"),
        ({"type": "allowlist", "allowed_domains": ["a.com"], "extra": 1}, "unknown key 'extra'"),
        ({"type": "allowlist", "allowed_domains": ["https://a.com/x"]}, "allowed_domains[0]: must be a host name"),
        ({"type": "allowlist", "allowed_domains": ["*.com"]}, "every host under a top-level domain"),
        ({"type": "allowlist", "allowed_domains": ["a.com"], "domain_secrets": [{"domain": "a.com", "name": "T", "value": "hunter2-literal"}]},
         "must be env:VAR or file:PATH, never the secret itself"),
        ({"type": "allowlist", "allowed_domains": ["a.com"], "domain_secrets": [{"domain": "a.com", "name": "1T", "value": "env:T"}]},
         "must be an environment variable name"),
        ({"type": "allowlist", "allowed_domains": ["a.com"], "domain_secrets": [{"domain": "b.com", "name": "T", "value": "env:T"}]},
         "b.com is not in allowed_domains; allow it too (--allow-domain b.com)"),
        ({"type": "allowlist", "allowed_domains": ["*.a.com"], "domain_secrets": [{"domain": "a.com", "name": "T", "value": "env:T"}]},
         "a.com is not in allowed_domains"),
        ({"type": "allowlist", "allowed_domains": ["a.com"], "domain_secrets": [{"domain": "a.com", "name": "HTTPS_PROXY", "value": "env:T"}]},
         "HTTPS_PROXY is set by skillctl for the run"),
        ({"type": "allowlist", "allowed_domains": ["a.com", "b.com"], "domain_secrets": [
            {"domain": "a.com", "name": "T", "value": "env:T"}, {"domain": "b.com", "name": "T", "value": "env:U"}]},
         "T is read from two places"),
    ],
)
def test_every_bad_policy_is_one_line_naming_place_and_fix(data, message):
    with pytest.raises(ConfigError) as err:
        parse_policy(data, origin="p.yaml")
    text = str(err.value)
    assert message in text and text.startswith("p.yaml") and "\n" not in text


PT = {"type": "allowlist", "allowed_domains": ["*.example.com", "api.github.com", "10.0.0.7"],
      "domain_secrets": [{"domain": "api.github.com", "name": "GITHUB_TOKEN", "value": "env:GH"},
                         {"domain": "*.s.example.com", "name": "S", "value": "env:S"}]}


@pytest.mark.parametrize(
    "passthrough, message",
    [
        (["https://dl.example.com/x"], "passthrough_domains[0]: must be a host name such as downloads.example.com"),
        ("dl.example.com", "'passthrough_domains' must be"),
        (["*.com"], "passthrough_domains[0]: '*.com' would allow every host under a top-level domain"),
        (["10.0.0.7"], "passthrough_domains[0]: 10.0.0.7 is an IP address; passthrough checks the TLS server name"),
        (["dl.other.org"], "passthrough_domains[0]: dl.other.org is not in allowed_domains; allow it too"),
        (["api.github.com"], "passthrough_domains[0]: api.github.com is the domain of GITHUB_TOKEN; a secret's domain is always intercepted"),
        (["*.s.example.com"], "passthrough_domains[0]: *.s.example.com is the domain of S"),
        (["x.s.example.com"], "x.s.example.com is the domain of S"),
    ],
)
def test_every_bad_passthrough_entry_is_one_line(passthrough, message):
    with pytest.raises(ConfigError) as err:
        parse_policy({**PT, "passthrough_domains": passthrough}, origin="p.yaml")
    text = str(err.value)
    assert message in text and text.startswith("p.yaml: invalid network policy") and "\n" not in text


def test_a_disabled_policy_takes_no_passthrough_domains():
    with pytest.raises(ConfigError, match="a disabled policy takes no allowed_domains, domain_secrets or passthrough_domains"):
        parse_policy({"type": "disabled", "passthrough_domains": ["a.com"]}, origin="p")


def test_passthrough_is_per_host_and_never_a_secrets_host():
    policy = parse_policy({**PT, "passthrough_domains": ["*.example.com", "*.Example.com."]}, origin="p")
    assert policy.passthrough_domains == ("*.example.com",)
    assert policy.passes_through("dl.example.com") and policy.passes_through("a.b.example.com")
    assert not policy.passes_through("x.s.example.com")  # a secret is bound to it: intercepted
    assert not policy.passes_through("api.github.com") and not policy.passes_through("example.com")
    assert policy.to_dict()["passthrough_domains"] == ["*.example.com"]
    assert "1 passed through uninspected" in policy.describe()
    assert "passthrough_domains" not in parse_policy(GOOD, origin="p").to_dict()  # the hosted shape, unchanged
    # The shorthands keep it; a project file that asks for it says so before the run.
    assert with_shorthands(policy, ["x.org"], []).passthrough_domains == ("*.example.com",)
    assert "passed through uninspected: *.example.com" in project_network_notice(policy)


def test_all_problems_are_reported_at_once():
    bad = {"type": "allowlist", "allowed_domains": ["-bad.com", "ok.com"],
           "domain_secrets": [{"domain": "x.com", "name": "PATH", "value": "env:P"}]}
    text = str(pytest.raises(ConfigError, parse_policy, bad, origin="p").value)
    assert "allowed_domains[0]" in text and "x.com is not in allowed_domains" in text and "PATH is set by skillctl" in text


def test_one_secret_for_several_domains(tmp_path):
    data = {"type": "allowlist", "allowed_domains": ["a.com", "b.com"], "domain_secrets": [
        {"domain": "a.com", "name": "T", "value": "env:T"}, {"domain": "b.com", "name": "T", "value": "env:T"}]}
    assert read_secret_values(parse_policy(data, origin="p"), {"T": "value-long-enough"}) == {"T": "value-long-enough"}


def test_load_policy_reads_json_and_yaml_and_resolves_files_beside_it(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps(GOOD))
    assert load_policy(tmp_path / "p.json").allowed_domains[0] == "api.github.com"
    data = {**GOOD, "domain_secrets": [{"domain": "api.github.com", "name": "GITHUB_TOKEN", "value": "file:token.txt"}]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "token.txt").write_text("ghp_abcdefghijkl\n")
    policy = load_policy(tmp_path / "p.yaml")
    assert policy.domain_secrets[0].value == f"file:{tmp_path / 'token.txt'}"
    assert read_secret_values(policy, {}) == {"GITHUB_TOKEN": "ghp_abcdefghijkl"}


def test_load_policy_errors_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_policy(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("type: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+:\d+: not valid YAML"):
        load_policy(tmp_path / "bad.yaml")


def test_shorthands_turn_the_network_on_and_extend_a_base():
    policy = with_shorthands(DISABLED, ["api.github.com"], ["GITHUB_TOKEN@api.github.com"])
    assert policy.enabled and policy.origin == "the command line"
    assert policy.domain_secrets[0].value == "env:GITHUB_TOKEN"
    extended = with_shorthands(parse_policy(GOOD, origin="p.yaml"), ["x.org"], [])
    assert extended.allowed_domains == ("api.github.com", "*.example.com", "x.org")
    assert extended.origin == "p.yaml and the command line"
    assert with_shorthands(DISABLED, [], []) is DISABLED


@pytest.mark.parametrize("spec", ["TOKEN", "TOKEN@", "@a.com", "1X@a.com", "A-B@a.com"])
def test_bad_domain_secret_shorthand(spec):
    with pytest.raises(ConfigError, match="write NAME@DOMAIN"):
        parse_domain_secret(spec)


def test_shorthand_secret_for_a_domain_not_allowed():
    with pytest.raises(ConfigError, match="allow it too"):
        with_shorthands(DISABLED, ["a.com"], ["T@b.com"])


def test_project_policy_from_skills_yaml_which_still_locks(tmp_path):
    project = tmp_path / "skills.yaml"
    project.write_text(yaml.safe_dump({"skills": {"tally": "^1"}, "network": {"type": "allowlist", "allowed_domains": ["api.x.com"]}}))
    assert project_policy(project).allowed_domains == ("api.x.com",)
    assert load_project(project).entries["tally"].version == "^1"  # the project reader accepts network:
    assert "(network:)" in project_policy(project).origin
    assert project_policy(tmp_path / "none.yaml") is None
    (tmp_path / "plain.yaml").write_text("skills: {}\n")
    assert project_policy(tmp_path / "plain.yaml") is None


def test_choose_policy_prefers_the_file_over_the_project(tmp_path):
    project = tmp_path / "skills.yaml"
    project.write_text(yaml.safe_dump({"network": {"type": "allowlist", "allowed_domains": ["project.com"]}}))
    (tmp_path / "p.json").write_text(json.dumps({"type": "allowlist", "allowed_domains": ["file.com"]}))
    assert choose_policy(None, project).allowed_domains == ("project.com",)
    assert choose_policy(tmp_path / "p.json", project).allowed_domains == ("file.com",)
    assert choose_policy(None, tmp_path / "absent.yaml", ["x.com"]).allowed_domains == ("x.com",)
    assert not choose_policy(None, None).enabled


@pytest.mark.parametrize(
    "environ, message",
    [
        ({}, "environment variable GH is not set"),
        ({"GH": "tiny7ch"}, "shorter than 8 characters"),
        ({"GH": "line\nbreak-value"}, "contains a line break"),
    ],
)
def test_secret_values_errors_never_show_the_value(environ, message):
    policy = parse_policy(GOOD, origin="p")
    with pytest.raises(ConfigError) as err:
        read_secret_values(policy, environ)
    assert message in str(err.value) and "GITHUB_TOKEN" in str(err.value)
    for value in environ.values():
        assert value not in str(err.value)


def test_secret_file_that_cannot_be_read(tmp_path):
    data = {**GOOD, "domain_secrets": [{"domain": "api.github.com", "name": "GITHUB_TOKEN", "value": f"file:{tmp_path}/nope"}]}
    with pytest.raises(ConfigError, match="cannot read .*nope"):
        read_secret_values(parse_policy(data, origin="p"), {})
