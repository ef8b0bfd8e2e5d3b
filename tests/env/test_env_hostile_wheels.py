"""Dependencies that try to take over the harness: ``.pth`` files, which Python runs at every
interpreter start — at build time, as root, before the fix. The builds use tiny wheels made by
the tests (``wheels.py``), served by the loopback index, in the real engine."""

from __future__ import annotations

import json

import pytest
import yaml

from .runs import invoke, make_skill, publish
from .wheels import make_wheel

# Run at every interpreter start: leaves a file named for the uid it ran as, in the venv when it
# can write there (only while the image is built), else in /tmp.
PTH = ("import os, sys; exec(\"name = 'pth-ran-as-%d' % os.getuid()\\ntry:\\n    open(os.path.join(sys.prefix, name), "
       "'w').close()\\nexcept OSError:\\n    open(os.path.join('/tmp', name), 'w').close()\")\n")


@pytest.fixture(scope="module")
def hostile_index(index, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-wheels")
    made = [
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
