"""The nesting bound (skillctl.nesting) and every reader that relies on it.

The pre-scans are checked against real parses: on generated documents (every JSON and YAML
style the dumpers write, strings full of brackets, quotes and escapes, shared subtrees written
as YAML aliases) the depth they count is the depth the parser builds, so they never refuse
what is within the bound. Then each reader of a file a person or a server supplies is given a
document nested 200,000 deep: one line, exit 1, no traceback — where the parsers recursed into
a RecursionError before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillctl.cli import cli
from skillctl.nesting import MAX_NESTING, NestingError, check_json, check_yaml, json_depth, loads_json

DEEP = 200_000  # a few hundred KB: under every size cap, far past every parser's recursion limit
DEEP_JSON = "[" * DEEP + "]" * DEEP


def depth(value: Any) -> int:
    """Nesting depth of parsed data (a scalar is 0, ``[]`` is 1), following shared subtrees."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def node_depth(node: yaml.Node) -> int:
    """The same for composed YAML, whose mapping keys may be collections too."""
    if isinstance(node, yaml.MappingNode):
        return 1 + max((node_depth(n) for pair in node.value for n in pair), default=0)
    if isinstance(node, yaml.SequenceNode):
        return 1 + max((node_depth(n) for n in node.value), default=0)
    return 0


# Strings that would fool a scan that did not know where strings end.
tricky_text = st.text(alphabet=st.sampled_from(list("[]{}\"'\\#:-,&*!|>% \n\tab1é")), max_size=12)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | tricky_text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4),
                      max_leaves=30)


@st.composite
def nested(draw) -> Any:
    """A value, wrapped in up to 80 more lists and mappings (so depths pass small bounds)."""
    value = draw(values)
    for kind in draw(st.lists(st.sampled_from(["list", "dict"]), max_size=80)):
        value = [value] if kind == "list" else {draw(tricky_text): value}
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=nested(), indent=st.none() | st.integers(0, 4), ascii_only=st.booleans(), limit=st.integers(0, 90))
def test_the_json_pre_scan_counts_exactly_what_the_parser_builds(value: Any, indent: int | None, ascii_only: bool,
                                                                 limit: int) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert json_depth(text, limit=0) == depth(json.loads(text)) == depth(value)
    if depth(value) > limit:
        with pytest.raises(NestingError, match=f"nested too deeply: over {limit} levels"):
            check_json(text, limit=limit)
    else:
        assert loads_json(text, limit=limit) == json.loads(text)  # never refuses what is within the bound


class PurePythonLoader(yaml.SafeLoader):
    """SafeLoader by another name: check_yaml reads its events with PyYAML's own parser."""


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=nested(), flow=st.sampled_from([None, True, False]), indent=st.integers(2, 9), width=st.integers(20, 200),
       style=st.sampled_from([None, '"', "'"]), unicode=st.booleans(), share=st.booleans(), limit=st.integers(0, 90),
       loader=st.sampled_from([yaml.SafeLoader, PurePythonLoader]))
def test_the_yaml_pre_scan_counts_exactly_what_the_loader_builds(value: Any, flow: bool | None, indent: int, width: int,
                                                                 style: str | None, unicode: bool, share: bool, limit: int,
                                                                 loader: type) -> None:
    if share:  # the same object twice: written once with an anchor, then as an alias
        value = {"first": value, "again": [value]}
    text = yaml.safe_dump(value, default_flow_style=flow, indent=indent, width=width, default_style=style,
                          allow_unicode=unicode, sort_keys=False)
    built = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    assert depth(built) == depth(value)
    if depth(value) > limit:
        with pytest.raises(NestingError, match=f"nested too deeply: over {limit} levels"):
            check_yaml(text, loader=loader, limit=limit)
    else:
        check_yaml(text, loader=loader, limit=limit)


@pytest.mark.parametrize("text", [
    "- - - - x\n",  # compact nested sequences: four levels on one line
    "a:\n- b:\n  - c:\n    - d: [e, {f: [g]}]\n",  # sequences at their mapping's indentation
    "? - a\n  - [b, [c]]\n: v\n",  # a complex key
    "a: |\n  [[[[ not a flow ]]]]\n  - - - not a sequence\nb: '[[[ quoted'\nc: \"{{{ \\\" quoted\"\n# [[[[ a comment\n",
    "a: &x [[1], {b: [2]}]\nb: [[*x]]\nc: {d: *x}\n",  # an alias is as deep as its anchor, where it is used
    "a: &s scalar\nb: [[*s]]\n",
    "a: [b,\n[c,\n[d]]]\n",  # a flow collection over lines at any indentation
    "--- [1]\n",
])
def test_tricky_yaml_is_counted_as_deep_as_it_composes(text: str) -> None:
    d = node_depth(yaml.compose(text, Loader=yaml.SafeLoader))
    for loader in (yaml.SafeLoader, PurePythonLoader):
        check_yaml(text, loader=loader, limit=d)
        with pytest.raises(NestingError):
            check_yaml(text, loader=loader, limit=d - 1)


@pytest.mark.parametrize("text, message", [
    ("a: " + "[" * DEEP + "]" * DEEP, "nested too deeply: over 64 levels, at line 1, column 67"),
    ("".join(" " * i + "a:\n" for i in range(3000)), "nested too deeply: over 64 levels, at line 65, column 65"),
    ("- " * DEEP + "x\n", "nested too deeply: over 64 levels, at line 1, column 129"),
    ("a: &a [1, *a]\n", "recursive: the alias *a is inside the node it names"),
    ("a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*a" + "]" * 30 + "\n", "over 64 levels through the alias *a"),
    ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
     + "".join(f"{k}: &{k} [{', '.join([f'*{p}'] * 10)}]\n" for p, k in zip("abcdefgh", "bcdefghi")),
     "too big: its aliases expand to more than 100000 nodes"),  # "billion laughs": 10^9 nodes once expanded
])
def test_hostile_yaml_is_refused_before_it_is_loaded(text: str, message: str) -> None:
    for loader in (yaml.SafeLoader, PurePythonLoader):
        with pytest.raises(NestingError, match=message.replace("*", r"\*")):
            check_yaml(text, loader=loader)


def test_hostile_json_is_refused_where_it_goes_too_deep() -> None:
    with pytest.raises(NestingError, match="over 64 levels, at line 1, column 65"):
        loads_json(DEEP_JSON)
    with pytest.raises(NestingError, match="at line 3, column 64"):  # the 65th level: the 64th bracket after the brace
        loads_json('{"a": "[[[[[[",\n "b": "\\"]]]",\n' + "[" * DEEP)  # brackets in strings do not count
    with pytest.raises(ValueError):  # an error is a ValueError whatever it is: what every reader catches
        loads_json(b"\xff")
    assert MAX_NESTING == 64


# ------------------------------------------------------------------------------ every reader


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for var, sub in (("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "registry"))
    for var in ("SKILLCTL_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SKILLCTL_SERVE_KEYS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "deep.yaml").write_text("a: " + DEEP_JSON + "\n")
    (tmp_path / "deep.json").write_text(DEEP_JSON)
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"steps": [{"answer": "never asked"}]}))
    return tmp_path


def one_line_failure(*args: str) -> str:
    result: Result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    return line


@pytest.mark.parametrize("args, where", [
    (["run", "--network-policy", "deep.yaml", "--model", "script:m.yaml", "hi"], "deep.yaml:1:67: nested too deeply"),
    (["run", "--network-policy", "deep.json", "--model", "script:m.yaml", "hi"], "deep.json:1:65: nested too deeply"),
    (["run", "--policy", "deep.yaml", "--model", "script:m.yaml", "hi"], "deep.yaml:1:67: nested too deeply"),
    (["run", "--model", "script:deep.yaml", "hi"], "deep.yaml:1:67: nested too deeply"),
    (["batch", "deep.jsonl", "--model", "script:m.yaml"], "line 1: nested too deeply: over 64 levels (at column 73)"),
    (["serve", "key", "list", "--keys", "deep.json"], "keys file deep.json is not valid JSON (nested too deeply"),
])
def test_a_deep_file_given_on_the_command_line_is_one_line(isolated: Path, args: list[str], where: str) -> None:
    (isolated / "deep.jsonl").write_text('{"task": ' + DEEP_JSON + "}\n")
    assert where in one_line_failure(*args)
    assert not (isolated / "deep.results.jsonl").exists()


def test_a_deep_project_file_is_one_line(isolated: Path) -> None:
    (isolated / "skills.yaml").write_text("skills:\n  tally: " + DEEP_JSON + "\n")
    assert "skills.yaml:2:72: nested too deeply: over 64 levels" in one_line_failure("lock")
    assert "skills.yaml:2:72: nested too deeply" in one_line_failure("run", "--model", "script:m.yaml", "hi")
    (isolated / "skills.yaml").write_text("skills: {}\nnetwork:\n  allowed_domains: " + DEEP_JSON + "\n")
    assert "skills.yaml:3:82: nested too deeply" in one_line_failure("run", "--model", "script:m.yaml", "hi")
    (isolated / "skills.yaml").write_text("skills: {}\n")
    (isolated / "skills.lock").write_text('{"lockfile_version": ' + DEEP_JSON + "}")
    assert "skills.lock is unreadable or not JSON (nested too deeply" in one_line_failure("install", "--frozen", "-o", "v")


def test_deep_front_matter_is_a_located_diagnostic(isolated: Path) -> None:
    skill = isolated / "deep"
    skill.mkdir()
    deep = "[" * 20_000 + "]" * 20_000  # under the 64 KiB front matter cap
    (skill / "SKILL.md").write_text(f"---\nname: deep\ndescription: Deep; use it when testing.\nx: {deep}\n---\n# Deep\n")
    result = CliRunner().invoke(cli, ["validate", str(skill)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "deep/SKILL.md:4:67: SK005 error front matter is nested too deeply: over 64 levels" in result.output


def test_a_deep_allowlist_in_a_skill_is_reported_not_applied(isolated: Path) -> None:
    from skillctl.audit.allowlist import parse

    entries, [problem] = parse(("accept: " + "[" * 60_000 + "]" * 60_000).encode())  # under its 256 KiB cap
    assert entries == [] and (problem.line, problem.column) == (1, 72)
    assert "nested too deeply: over 64 levels; nothing in it is applied" in problem.detail


def test_documents_from_registries_models_and_judges_are_one_line() -> None:
    from skillctl.errors import RegistryError, TrustError
    from skillctl.many.grading import parse_verdict
    from skillctl.messages import ToolCall
    from skillctl.protocols import ModelReply
    from skillctl.registry.signatures import check_envelope
    from skillctl.trust.dsse import parse_envelope
    from skillctl.trust.statement import parse_statement

    envelope = ("[" * 30_000 + "]" * 30_000).encode()  # under the 64 KiB envelope cap
    with pytest.raises(TrustError, match="envelope is not JSON"):
        parse_envelope(envelope)
    with pytest.raises(RegistryError, match="signature envelope is not JSON"):
        check_envelope(envelope, "sig")
    with pytest.raises(TrustError, match="signed payload is not JSON"):
        parse_statement(DEEP_JSON.encode())
    with pytest.raises(ValueError, match="nested too deeply"):  # the tool loop answers the model with it
        ToolCall("c1", "shell", DEEP_JSON).parsed_arguments()
    passed, why = parse_verdict(ModelReply(content=DEEP_JSON))
    assert not passed and why.startswith("malformed judge answer: not JSON")
