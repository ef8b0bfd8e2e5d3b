"""Dependencies that try to take over the harness: scripts named like the image's commands
(``timeout``, ``ls``…), which would come first on every command's PATH, and ``.pth`` files,
which Python runs at every interpreter start — at build time, as root, before the fix.

The check itself (``skillctl.env.shadow``) is tested here on folders made to look like a venv
and an image; the builds use tiny wheels made by the tests (``wheels.py``), served by the
loopback index, in the real engine."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import docker.errors
import pytest
import yaml

from skillctl.env import shadow

from .runs import invoke, make_skill, publish
from .wheels import make_wheel

# ---------------------------------------------------------------------- the check, on folders


def fake_venv(root: Path, record: dict[str, list[str]]) -> Path:
    """A venv whose bin holds the names listed in each package's RECORD ("name==version"),
    plus uv's own files: the interpreter links and the activate scripts."""
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(sys.executable, venv / "bin" / "python")
    os.symlink("python", venv / "bin" / "python3")
    (venv / "bin" / "activate").write_text("# uv's\n")
    site = venv / "lib" / "python3.11" / "site-packages"
    for pin, names in record.items():
        name, version = pin.split("==")
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody: x\n")
        lines = []
        for script in names:
            (venv / "bin" / script).write_text("#!/bin/sh\n")
            lines.append(f"../../../bin/{script},sha256=x,9")
        (info / "RECORD").write_text("\n".join(lines + [f"{info.name}/RECORD,,"]) + "\n")
    return venv


def fake_image_path(root: Path, commands: dict[str, list[str]]) -> str:
    """Folders named like the image's PATH, holding ``commands``; the PATH string for them."""
    folders = []
    for folder, names in commands.items():
        path = root / folder.strip("/")
        path.mkdir(parents=True, exist_ok=True)
        for name in names:
            (path / name).write_text("")
        folders.append(str(path))
    return ":".join(folders)


def test_scripts_named_like_a_command_of_the_image_are_found_with_their_package(tmp_path):
    venv = fake_venv(tmp_path, {"shadow-pkg==1.0": ["timeout", "ls", "own-tool"], "other==2": ["skl-tool"]})
    path = fake_image_path(tmp_path, {"/usr/local/bin": ["skillctl-supervise"], "/usr/bin": ["ls", "timeout", "python3"],
                                      "/opt/debs/bin": ["skl-tool"]})
    found = shadow.shadowing(venv, path)
    assert found == [
        {"command": "ls", "shadows": f"{tmp_path}/usr/bin/ls", "package": "shadow-pkg", "version": "1.0"},
        {"command": "skl-tool", "shadows": f"{tmp_path}/opt/debs/bin/skl-tool", "package": "other", "version": "2"},
        {"command": "timeout", "shadows": f"{tmp_path}/usr/bin/timeout", "package": "shadow-pkg", "version": "1.0"},
    ]  # python3, the venv's own link to the interpreter, is what makes the environment's packages importable


def test_a_python3_that_is_not_the_venvs_interpreter_link_is_refused(tmp_path):
    venv = fake_venv(tmp_path, {})
    (venv / "bin" / "python3").unlink()
    (venv / "bin" / "python3").write_text("#!/bin/sh\necho not python\n")
    path = fake_image_path(tmp_path, {"/usr/bin": ["python3"]})
    assert [f["command"] for f in shadow.shadowing(venv, path)] == ["python3"]


def test_the_check_prints_one_marked_line_per_entry_and_fails(tmp_path, capsys):
    venv = fake_venv(tmp_path, {"shadow-pkg==1.0": ["ls"]})
    path = fake_image_path(tmp_path, {"/usr/bin": ["ls"]})
    assert shadow.main([str(venv), path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [shadow.parse("Step 9/14 : " + line) for line in lines] == shadow.shadowing(venv, path)
    assert shadow.main([str(fake_venv(tmp_path / "clean", {"ok==1": ["own-tool"]})), path]) == 0
    assert capsys.readouterr().out == ""


def test_the_refusal_is_one_line_naming_each_wheel_script_and_command():
    found = [{"command": "ls", "shadows": "/usr/bin/ls", "package": "Shadow_Pkg", "version": "1.0"},
             {"command": "timeout", "shadows": "/usr/bin/timeout", "package": "Shadow_Pkg", "version": "1.0"},
             {"command": "jq", "shadows": "/usr/bin/jq", "package": "", "version": ""}]
    text = shadow.refusal(found, {"shadow-pkg==1.0": "shadow_pkg-1.0-py3-none-any.whl", "six==1.16.0": "six.whl"})
    assert "\n" not in text
    assert text.startswith("refusing the environment: shadow_pkg-1.0-py3-none-any.whl installs 'ls' (would shadow "
                           "/usr/bin/ls), 'timeout' (would shadow /usr/bin/timeout); a package installs 'jq' "
                           "(would shadow /usr/bin/jq). ")


# ---------------------------------------------------------------------- builds, in the engine

SHADOW_SCRIPTS = {  # every way a wheel puts a file into the venv's bin
    "entry_points": {"console_scripts": {"timeout": "shadowpkg:main"}, "gui_scripts": {"head": "shadowpkg:main"}},
    "data": {"scripts/ls": "#!/bin/sh\necho 'a package ls'\n", "data/bin/cat": "#!/bin/sh\necho 'a package cat'\n"},
}
# Run at every interpreter start: leaves a file named for the uid it ran as, in the venv when it
# can write there (only while the image is built), else in /tmp.
PTH = ("import os, sys; exec(\"name = 'pth-ran-as-%d' % os.getuid()\\ntry:\\n    open(os.path.join(sys.prefix, name), "
       "'w').close()\\nexcept OSError:\\n    open(os.path.join('/tmp', name), 'w').close()\")\n")


@pytest.fixture(scope="module")
def hostile_index(index, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-wheels")
    made = [
        make_wheel(folder, "shadowpkg", files={"shadowpkg/__init__.py": "def main():\n    print('a package script')\n"},
                   **SHADOW_SCRIPTS),
        make_wheel(folder, "pthmarker", files={"pthmarker/__init__.py": "VALUE = 'imported'\n", "pthmarker.pth": PTH,
                                               "pthmarker/cli.py": "def main():\n    print('pthmarker-hello ran')\n"},
                   entry_points={"console_scripts": {"pthmarker-hello": "pthmarker.cli:main"}}),
    ]
    for path in made:
        index.files[path.name] = path
    yield index
    for path in made:
        del index.files[path.name]


def run_steps(env, tmp_path, *args, steps):
    """``skillctl run`` with a scripted model of these steps; (result, the shell calls' outputs)."""
    model = tmp_path / "model.yaml"
    model.write_text(yaml.safe_dump({"steps": [*steps, {"answer": "done"}]}), "utf-8")
    transcript = tmp_path / "t.jsonl"
    result = invoke(env, "run", *args, "--model", f"script:{model}", "--transcript", str(transcript), "--format",
                    "json", "task")
    calls = [(r.get("details") or {}).get("output", []) for r in
             (json.loads(line) for line in transcript.read_text().splitlines())] if transcript.exists() else []
    return result, [c for c in calls if c]


def parent_ids(client) -> set[str]:
    """The ids (hex) of the images other images are built on (the list API leaves them out)."""
    out = set()
    for image in client.images.list(all=True):
        try:
            out.add(str(client.api.inspect_image(image.id).get("Parent", "")).removeprefix("sha256:"))
        except docker.errors.NotFound:
            pass  # removed meanwhile, by another session
    return out


@pytest.mark.requires_docker
@pytest.mark.slow
def test_a_wheel_shipping_timeout_and_ls_is_refused_naming_the_wheel_scripts_and_commands(project, hostile_index,
                                                                                          tmp_path, docker_client,
                                                                                          own_env_images):
    skill = make_skill(tmp_path, "shadowy", "#!/usr/bin/env python3\nimport shadowpkg\n",
                       {"scripts/requirements.txt": "shadowpkg==1.0\n"})
    publish(project, skill)
    result, calls = run_steps(project, tmp_path, "--skill", "shadowy",
                              steps=[{"shell": ["ls /; timeout 1 sleep 5; echo after"], "timeout_ms": 20000}])
    assert result.exit_code == 1 and calls == [], result.output
    errors = [line for line in result.stderr.splitlines() if "refusing the environment" in line]
    assert errors == [
        "Error: refusing the environment: shadowpkg-1.0-py3-none-any.whl installs 'cat' (would shadow /usr/bin/cat), "
        "'head' (would shadow /usr/bin/head), 'ls' (would shadow /usr/bin/ls), 'timeout' (would shadow "
        "/usr/bin/timeout). A package's script named like one of the image's commands would run instead of it for "
        "every command (its folder comes first on PATH); drop the requirement that brings it, or pin a version "
        "without that script"
    ], result.stderr[-3000:]
    assert "Traceback" not in result.output
    assert not [i for i in docker_client.images.list(filters={"label": "org.skillctl.env"})
                if "shadowpkg==1.0" in (i.labels or {}).get("org.skillctl.env.packages", "")]
    # Nothing of the refused build stays on the engine: each of its steps' images is gone, unless
    # tagged (the agent image it starts from) or a layer other images are built on (the first
    # steps of any environment on this agent image).
    steps = re.findall(r"^\s+---> ([0-9a-f]{12,64})$", result.stderr, re.M)
    assert len(steps) > 5, result.stderr[-3000:]
    parents = parent_ids(docker_client)
    for step in steps:
        try:
            image = docker_client.images.get(step)
        except docker.errors.ImageNotFound:
            continue
        assert image.tags or any(p.startswith(step) for p in parents), f"{step} of the refused build is still there"


@pytest.mark.requires_docker
@pytest.mark.slow
def test_no_pth_file_runs_during_the_build_and_the_harness_still_holds_in_the_image(project, hostile_index, tmp_path,
                                                                                  own_env_images):
    skill = make_skill(tmp_path, "marked", "#!/usr/bin/env python3\nimport pthmarker\nprint(pthmarker.VALUE)\n",
                       {"scripts/requirements.txt": "pthmarker==1.0\n"})
    publish(project, skill)
    result, calls = run_steps(project, tmp_path, "--skill", "marked", steps=[
        {"shell": ["ls -a /opt/skills-env; echo ---; ls /tmp"]},
        {"shell": ["python3 /skills/marked/scripts/run.py && pthmarker-hello && ls /tmp && command -v python3"]},
        {"shell": ["sleep 30; echo finished"], "timeout_ms": 1500},
    ])
    assert result.exit_code == 0, result.output
    [[listing], [ran], [slept]] = calls
    built, _, tmp_before = listing["stdout"].partition("---\n")
    assert "pth-ran-as" not in built and "pth-ran-as" not in tmp_before, listing  # not as root, not at all
    # At run time a dependency's .pth is the skill's own code, run as the agent: never root.
    assert ran["stdout"] == "imported\npthmarker-hello ran\npth-ran-as-1000\n/opt/skills-env/bin/python3\n", ran
    assert slept["outcome"] == {"type": "timeout"} and "finished" not in slept["stdout"], slept
