"""Hostile option values on every command: never a traceback.

The commands and their options come from the click command tree itself (``skillctl.cli``
walked group by group), so a new command or option is fuzzed without editing this file. Each
example picks a command, gives some of its options (and its arguments) values a hostile or
careless user would type — huge, infinite, NaN and negative numbers, empty strings, NUL bytes,
``[::1``, very long strings, undecodable bytes as ``surrogateescape`` hands them over, paths
that do not exist, are folders, FIFOs or link loops — and runs it in-process with click's
``CliRunner``. Whatever happens, the command must end in a ``SystemExit`` (one line on
stderr), never an exception escaping click.

Nothing can leave the test's folders: HOME and the XDG folders are temporary, the default
registry is a folder that does not exist, Docker is a socket that does not exist, every proxy
variable points at a closed loopback port, and ``serve`` itself (which listens) is not run;
its key commands are. Paths are only ever inside the test's folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Iterator

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillctl.cli import cli

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there, a connection fails at once
# Commands that would block: the servers themselves (their siblings and subcommands are fuzzed).
NOT_RUN = {("serve",), ("mcp", "serve")}
# Valid choices the fuzz never picks: Ray would start a cluster on this machine.
NOT_CHOSEN = {("engine", "ray")}

NUMBERS = ["1e300", "-1e300", "inf", "-inf", "nan", "-1", "0", "-0", "1e-300", "99999999999999999999999",
           "-99999999999999999999999", "0x10", "1_000", "١٢", "1.5", "", " ", "\x00", "1\x00", "9" * 5000]
TEXT = ["", " ", "\x00", "a\x00b", "[::1", "oci://[::1", "oci://[::1]/ns", "oci://", "oci:///ns", "https://[::1",
        "http://", "https://", "https://user:pw@", "file:///etc/passwd", "x" * 20_000, "\udcff\udcfe",
        "caf\udce9", "😀", "%s%n", "${HOME}", "$(id)", "../../x", "demo", "demo@", "@", "demo@^99999999999999999999",
        "demo@1.0.0", "skill_" + "0" * 24, "-", "--", "1e300", "nan", "a=b", "=", ":", "a:b", "script:", "script:nope.yaml",
        "openai:", "\n", "a\nb", "\r\n", "\t"]


def make_area(root: Path) -> Path:
    """Files of every awkward kind, and a few valid ones (a scripted model that answers, a skill),
    so that a command gets past its first check and meets the hostile value that follows."""
    (root / "file.txt").write_text("not what anything expects\n")
    (root / "folder").mkdir()
    (root / "folder" / "inner.txt").write_text("x")
    os.mkfifo(root / "fifo")
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(root / "nowhere")
    (root / "empty.yaml").write_text("")
    (root / os.fsdecode(b"bad-\xff-name")).write_text("x")
    (root / "answer.yaml").write_text("steps:\n  - answer: done\n")
    (root / "tasks.jsonl").write_text('{"id": "one", "task": "Say done."}\n')
    (root / "skills" / "demo").mkdir(parents=True)
    (root / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: A demo; use it when fuzzing.\n"
                                                      "metadata:\n  version: \"1.0.0\"\n---\n\n# Demo\n")
    return root


@pytest.fixture
def area(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_area(tmp_path_factory.mktemp("fuzz-area"))


def path_values(area: Path) -> list[str]:
    return [str(area / "file.txt"), str(area / "folder"), str(area / "fifo"), str(area / "loop"), str(area / "dangling"),
            str(area / "nope"), str(area / "nope" / "deeper"), str(area / "empty.yaml"), str(area / os.fsdecode(b"bad-\xff-name")),
            str(area / ("n" * 300)), str(area / "a\x00b"), "", "-", "file.txt", str(area / "answer.yaml"),
            str(area / "skills" / "demo"), str(area / "skills")]


def text_values(area: Path) -> list[str]:
    return TEXT + NUMBERS + path_values(area) + [f"script:{area / 'answer.yaml'}", f"script:{area / 'fifo'}",
                                                 f"script:{area / 'folder'}"]


def commands() -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(cli)

    def walk(cmd: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), path + (name,))
        elif path not in NOT_RUN:
            yield path, cmd

    return walk(cli, ())


COMMANDS = sorted(commands(), key=lambda c: c[0])


def benign(param: click.Parameter, area: Path) -> str | None:
    """A valid value for a parameter most commands require, so the fuzz gets past it."""
    skill = str(area / "skills" / "demo")
    return {"task": "Say done.", "model_spec": f"script:{area / 'answer.yaml'}", "skill": skill, "paths": skill,
            "targets": skill, "ref": "demo", "refs": "demo", "name": "demo", "tasks": str(area / "tasks.jsonl")}.get(param.name or "")


def value_for(param: click.Parameter, area: Path) -> st.SearchStrategy[str]:
    valid = benign(param, area)
    hostile = hostile_value_for(param, area)
    return hostile if valid is None else st.just(valid) | hostile


def hostile_value_for(param: click.Parameter, area: Path) -> st.SearchStrategy[str]:
    kind = param.type
    if isinstance(kind, (click.IntRange, click.FloatRange)) or kind in (click.INT, click.FLOAT):
        return st.sampled_from(NUMBERS)
    if isinstance(kind, click.Choice):
        valid = [c for c in kind.choices if (param.name, c) not in NOT_CHOSEN]
        return st.sampled_from(valid + ["", "\x00", "x" * 500, "\udcff", valid[0].upper() + "!"])
    if isinstance(kind, click.Path) or isinstance(kind, click.File):
        return st.sampled_from(path_values(area))
    return st.sampled_from(text_values(area))


@st.composite
def invocation(draw, area: Path) -> list[str]:
    """A command with its required parameters and up to three more options, each with a value
    for its type; options as ``--name=value`` and arguments after ``--``, so that values that
    start with a dash reach the option instead of being read as one."""
    path, cmd = draw(st.sampled_from(COMMANDS))
    options = [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden and "--help" not in p.opts]
    chosen = [p for p in options if p.required] + draw(st.lists(st.sampled_from([p for p in options if not p.required] or [None]),
                                                                 max_size=3, unique_by=id))
    args: list[str] = list(path)
    for param in filter(None, chosen):
        name = max(param.opts, key=len)
        if param.is_flag:
            args.append(name)
            continue
        for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
            args.append(f"{name}={draw(value_for(param, area))}")
    positional: list[str] = []
    for param in cmd.params:
        if isinstance(param, click.Argument):
            count = draw(st.integers(0 if not param.required else 1, 2)) if param.nargs == -1 else param.nargs
            positional += [draw(value_for(param, area)) for _ in range(count)]
    return args + ["--", *positional] if positional else args


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var, sub in (("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache"),
                     ("XDG_CONFIG_HOME", "config"), ("SKILLCTL_CACHE_DIR", "skillctl-cache")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "no-registry-here"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, CLOSED)
    for var in ("NO_PROXY", "no_proxy", "SKILLCTL_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAY_ADDRESS",
                "SKILLCTL_SERVE_KEYS", "SKILLCTL_SITE_TOKEN", "SKILLCTL_INSECURE", "SKILLCTL_REGISTRY_PASSWORD", "PIP_INDEX_URL",
                "SKILLCTL_INDEX_URL", "UV_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_option_value_ends_in_a_traceback(isolated: Path, area: Path, data: st.DataObject) -> None:
    args = data.draw(invocation(area))
    result = CliRunner().invoke(cli, args, input="not-a-secret\n", catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        shown = "".join(traceback.format_exception(result.exception))
        pytest.fail(f"skillctl {args!r} raised {type(result.exception).__name__}:\n{shown}")
    assert "Traceback" not in result.output, (args, result.output)


# ------------------------------------------------------------------------------ what it found


def one_line(args: list[str], code: int) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert isinstance(result.exception, SystemExit) and result.exit_code == code, (args, result.exception, result.output)
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    return line


@pytest.mark.parametrize("value, message", [("1e300", "1e+300 is not in the range 0.01<=x<=4096.0"),
                                            ("inf", "inf is not in the range"), ("nan", "'nan' is not a finite number")])
def test_a_cpu_limit_past_what_docker_takes_is_a_usage_error(isolated: Path, area: Path, value: str, message: str) -> None:
    for command in (["run", "--model", f"script:{area / 'answer.yaml'}", "hi"], ["batch", str(area / "tasks.jsonl"), "--model", "x"]):
        assert f"Invalid value for '--cpus': {message}" in one_line([*command, "--cpus", value], 2)
    assert "'nan' is not a finite number" in one_line(["run", "--model", "x", "--max-seconds", "nan", "hi"], 2)
    assert "is not in the range 100<=x<=3600000" in one_line(["run", "--model", "x", "--timeout-ms", "9" * 23, "hi"], 2)


@pytest.mark.parametrize("url", ["oci://[::1", "oci://[::1]:99999/ns", "https://[::1", "http://", "oci://host", "ftp://x"])
def test_a_registry_url_no_backend_can_open_is_a_usage_error(isolated: Path, url: str) -> None:
    for command in (["list"], ["show", "demo"], ["copy", "demo", "--from", url, "--to", "x"], ["copy", "demo", "--from", "x", "--to", url]):
        args = command if command[0] == "copy" else [*command, "--registry", url]
        assert "Invalid value for '--" in one_line(args, 2), args
    assert not (isolated / "work" / "x").exists()


def test_words_that_are_not_text_are_usage_errors(isolated: Path) -> None:
    assert "'a\\0b' holds a NUL byte" in one_line(["show", "a\x00b"], 2)
    assert "'--registry=x\\0' holds a NUL byte" in one_line(["list", "--registry=x\x00"], 2)
    assert "'caf\\udce9' is not valid UTF-8" in one_line(["validate", "caf\udce9"], 2)


def test_errors_from_the_operating_system_are_one_line(isolated: Path, area: Path) -> None:
    long = str(area / ("n" * 300))
    assert "File name too long" in one_line(["memory", "show", long], 1)
    assert "File name too long" in one_line(["list", "--registry", long], 1)
    assert "'' names no key" in one_line(["key", "generate", ""], 1)
    assert "--base-url 'oci://[::1' must be an http(s) URL" in one_line(["site", "build", str(isolated / "site"), "--base-url",
                                                                        "oci://[::1", str(area / "skills")], 1)


@pytest.mark.parametrize("args", [["lock", "--requirements", "{fifo}"], ["install", "--frozen", "--lock", "{fifo}"],
                                  ["run", "--policy", "{fifo}", "--model", "script:{area}/answer.yaml", "hi"],
                                  ["run", "--network-policy", "{fifo}", "--model", "script:{area}/answer.yaml", "hi"],
                                  ["run", "--model", "script:{fifo}", "hi"], ["batch", "{fifo}", "--model", "x"],
                                  ["audit", "--rules", "{fifo}", "{area}/skills/demo"], ["serve", "key", "list", "--keys", "{fifo}"]])
def test_a_fifo_where_a_file_is_named_is_refused_at_once(isolated: Path, area: Path, args: list[str]) -> None:
    # In a child with a deadline: before the fix the open() waited for a writer forever.
    argv = [a.format(fifo=area / "fifo", area=area) for a in args]
    done = subprocess.run([sys.executable, "-c", "from skillctl.cli import main; main()", *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.strip()]
    assert "fifo" in line and ("not a regular file" in line or "is not a file" in line), line
