"""Merged environments: what the merge holds back, skills with an environment of their own, and
the messages of resolutions that fail. Real uv against a loopback index of wheels these tests
make (``wheels.make_wheel``): mergex 1.0 and 2.0; mergey, which needs mergex<2; winonly, tagged
for Windows only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from package_index import PackageIndex

from skillctl.env.build import launcher
from skillctl.env.declare import PROJECT, Declarations, Declared, Isolation, project_declarations, project_isolation
from skillctl.env.lock import environment_from_section, environment_section
from skillctl.env.prepare import resolve_environment
from skillctl.env.resolve import MAX_FAILURE_ROUNDS, Downgrade, _reason, resolve
from skillctl.errors import EnvError, EnvIntegrityError
from skillctl.runtime.prompt import system_prompt

from .conftest import TARGET
from .wheels import make_wheel


def decl(*items: tuple[str, str]) -> Declarations:
    return Declarations(tuple(Declared(req, owner, f"{owner}/scripts/requirements.txt:1") for req, owner in items),
                        scripts={owner: () for _, owner in items})


def made_wheels(folder: Path) -> list[Path]:
    return [
        make_wheel(folder, "mergex", "1.0", files={"mergex/__init__.py": "VERSION = '1.0'\n"}),
        make_wheel(folder, "mergex", "2.0", files={"mergex/__init__.py": "VERSION = '2.0'\n"}),
        make_wheel(folder, "mergey", "1.0", requires=("mergex<2",)),
        make_wheel(folder, "winonly", "1.0", tag="cp311-cp311-win_amd64"),
        make_wheel(folder, "macwin", "1.0", tag="cp311-cp311-macosx_11_0_arm64"),
        make_wheel(folder, "macwin", "1.0", tag="cp311-cp311-win32"),
        make_wheel(folder, "needswin", "1.0", requires=("winonly",)),
    ]


@pytest.fixture(scope="module")
def merge_index(tmp_path_factory):
    with PackageIndex() as served:
        for path in made_wheels(tmp_path_factory.mktemp("merge-wheels")):
            served.files[path.name] = path
        yield served


def versions(res) -> dict[str, str]:
    return {f.name: f.version for f in res.files}


DOWNGRADED = decl(("mergex", "skill-a"), ("mergey", "skill-b"))


def test_a_package_the_merge_holds_back_is_reported_with_both_versions_and_who_holds_it(merge_index, cache):
    said: list[str] = []
    env = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, progress=said.append)
    assert versions(env.python) == {"mergex": "1.0", "mergey": "1.0"}
    assert env.downgrades == (Downgrade("skill-a", "mergex", "2.0", "1.0", ("skill-b",)),)
    assert "warning: skill skill-a: mergex 2.0 alone → 1.0 with the others (held back by skill-b)" in said
    assert any("--isolate-env SKILL" in line for line in said)
    assert env.to_dict()["downgrades"] == [{"skill": "skill-a", "package": "mergex", "alone": "2.0", "merged": "1.0",
                                            "held_by": ["skill-b"]}]
    before = len(merge_index.requests)
    again = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url)
    assert again.downgrades == env.downgrades and len(merge_index.requests) == before  # all from the cache


def test_one_owner_is_never_resolved_alone(merge_index, cache):
    said: list[str] = []
    env = resolve_environment(decl(("mergex", "skill-a"), ("mergey", "skill-a")), TARGET, index=merge_index.url,
                              progress=said.append)
    assert env.downgrades == () and not [line for line in said if "alone" in line]


def test_the_project_can_hold_a_skill_back_but_is_not_checked_alone(merge_index, cache):
    env = resolve_environment(decl(("mergex", "skill-a"), ("mergey", PROJECT)), TARGET, index=merge_index.url)
    assert env.downgrades == (Downgrade("skill-a", "mergex", "2.0", "1.0", (PROJECT,)),)


@pytest.mark.parametrize("isolation", [Isolation(("skill-a",)), Isolation(required=("skill-a",)), Isolation(auto=True)])
def test_an_isolated_skill_gets_its_own_resolution_and_the_others_share_theirs(merge_index, cache, isolation):
    env = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, isolation=isolation)
    assert env.isolated_skills == ("skill-a",) and env.isolated[0].venv == "/opt/skill-envs/skill-a"
    assert versions(env.isolated[0].python) == {"mergex": "2.0"}
    assert versions(env.python) == {"mergex": "1.0", "mergey": "1.0"}
    assert env.downgrades == ()
    assert env.to_dict()["isolated"][0]["skill"] == "skill-a"


def test_isolating_a_skill_resolves_a_conflict_the_merge_cannot(merge_index, cache):
    conflicting = decl(("mergex>=2", "skill-a"), ("mergey", "skill-b"))
    with pytest.raises(EnvError, match=r"conflict between skill-a and skill-b.*--isolate-env skill-b"):
        resolve_environment(conflicting, TARGET, index=merge_index.url)
    env = resolve_environment(conflicting, TARGET, index=merge_index.url, isolation=Isolation(("skill-b",)))
    assert versions(env.python) == {"mergex": "2.0"} and versions(env.isolated[0].python) == {"mergex": "1.0",
                                                                                                "mergey": "1.0"}


def test_isolating_a_skill_the_run_does_not_have_is_refused_and_one_without_requirements_noted(merge_index, cache):
    with pytest.raises(EnvError, match=r"^--isolate-env nosuch: nosuch is not a skill of this run; name one of "
                       r"skill-a, skill-b$"):
        resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, isolation=Isolation(required=("nosuch",)))
    said: list[str] = []
    quiet = DOWNGRADED + Declarations(scripts={"plain": ()})
    env = resolve_environment(quiet, TARGET, index=merge_index.url, isolation=Isolation(required=("plain",)),
                              progress=said.append)
    assert env.isolated == () and "environment: plain declares no Python requirements; nothing to isolate" in said


@pytest.mark.parametrize(("value", "message"), [
    ("all", "environment.isolate must be a list of skill names or 'auto', got 'all'"),
    (["Skill_A"], "environment.isolate: 'Skill_A' is not a skill name"),
    ([3], "environment.isolate: 3 is not a skill name"),
])
def test_a_bad_isolate_setting_in_skills_yaml_is_one_line(value, message):
    with pytest.raises(EnvError, match=message.replace("(", r"\(").replace(")", r"\)")):
        project_declarations({"python": ["six"], "isolate": value})
    assert project_isolation({"isolate": "auto"}) == Isolation(auto=True)
    assert project_isolation({"isolate": ["a", "b-c"]}) == Isolation(("a", "b-c"))
    with pytest.raises(EnvError, match="allowed: python, debian, indexes, isolate, ignore-requires-python"):
        project_declarations({"pythn": []})


def test_the_lock_records_isolated_skills_and_downgrades_and_reads_them_back(merge_index, cache, tmp_path):
    lock = tmp_path / "skills.lock"
    merged = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url)
    old_style = environment_section(merged, lock)
    assert old_style["format"] == 1 and "isolated" not in old_style and old_style["downgrades"][0]["skill"] == "skill-a"
    assert environment_from_section(old_style, lock).downgrades == merged.downgrades
    env = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, isolation=Isolation(("skill-a",)))
    section = json.loads(json.dumps(environment_section(env, lock)))
    assert section["format"] == 2
    assert section["isolated"]["skill-a"]["pylock"] == "pylock.skills-skill-a.toml"
    back = environment_from_section(section, lock)
    assert back.isolated_skills == ("skill-a",) and back.isolated[0].python.files == env.isolated[0].python.files
    assert back.python.files == env.python.files
    (tmp_path / "pylock.skills-skill-a.toml").write_text(env.isolated[0].python.pylock + "\n")
    with pytest.raises(EnvIntegrityError, match="pylock.skills-skill-a.toml has digest"):
        environment_from_section(section, lock)
    section["isolated"]["skill-a"]["pylock"] = "../elsewhere.toml"
    with pytest.raises(EnvError, match="environment.isolated.skill-a.pylock must name a file beside the lock"):
        environment_from_section(section, lock)


# ---------------------------------------------------------------------- messages


def test_a_requirement_whose_wheels_are_windows_only_says_so_instead_of_suggesting_sdists(merge_index, cache):
    with pytest.raises(EnvError) as err:
        resolve(decl(("winonly", "win-skill")), TARGET, index=merge_index.url)
    text = str(err.value)
    assert text.startswith("winonly publishes wheels only for Windows, and the agent image is Linux")
    assert "add a marker `; sys_platform == 'win32'` to the requirement or drop it" in text
    assert "win-skill (win-skill/scripts/requirements.txt:1)" in text and "--allow-sdist" not in text
    with pytest.raises(EnvError, match=r"macwin publishes wheels only for Windows and macOS.*`; sys_platform != 'linux'`"):
        resolve(decl(("macwin", "a")), TARGET, index=merge_index.url)


def test_every_unresolvable_requirement_is_named_at_once_with_its_owner(merge_index, cache):
    with pytest.raises(EnvError) as err:
        resolve(decl(("winonly", "skill-a"), ("mergex", "skill-a"), ("nosuchpkg", "skill-b"), ("macwin", "skill-c")),
                TARGET, index=merge_index.url)
    text = str(err.value)
    assert text.startswith("cannot resolve the environment: 3 requirements cannot be installed: "), text
    assert "winonly publishes wheels only for Windows; add a marker `; sys_platform == 'win32'`" in text
    assert "(declared by skill-a (skill-a/scripts/requirements.txt:1))" in text
    assert "nosuchpkg is not on the package index; check its name (declared by skill-b" in text
    assert "macwin publishes wheels only for Windows and macOS" in text and "declared by skill-c" in text
    assert "mergex" not in text and "\n" not in text
    assert MAX_FAILURE_ROUNDS >= 3
    with pytest.raises(EnvError) as err:
        resolve(decl(("needswin", "skill-a"), ("nosuchpkg", "skill-b")), TARGET, index=merge_index.url)
    assert "needswin depends on winonly, which publishes wheels only for Windows; pin a version of needswin" in str(
        err.value) and "--allow-sdist" not in str(err.value)


def test_reason_keeps_uv_whole_and_cuts_a_huge_one_only_at_a_word_end():
    short = "error: No solution found\n  cause: Because nosuchpkg was not found in the package registry"
    assert _reason(short) == "error: No solution found cause: Because nosuchpkg was not found in the package registry"
    words = " ".join(f"requirement{i:04d}" for i in range(400))  # ~6,400 characters
    cut = _reason(words, limit=600)
    assert cut.endswith(" …") and len(cut) <= 602
    assert all(word.startswith("requirement") and len(word) == 15 for word in cut.removesuffix(" …").split(" "))
    assert _reason(words) != words and _reason(words[:1900]) == words[:1900]


# ---------------------------------------------------------------------- the launcher


@pytest.fixture
def launch(tmp_path):
    """The launcher for isolated skill ``alpha``, with stand-in venvs that print their name and
    arguments, run by /bin/sh here: which venv each way of calling python3 picks."""
    skills = tmp_path / "skills"
    for name in ("alpha/scripts", "alpha-two", "beta"):
        (skills / name).mkdir(parents=True)
    for venv in ("alpha-venv", "shared-venv"):
        (tmp_path / venv / "bin").mkdir(parents=True)
        fake = tmp_path / venv / "bin" / "python3"
        fake.write_text(f'#!/bin/sh\necho {venv} "$@"\n')
        fake.chmod(0o755)
    script = tmp_path / "python3"
    script.write_text(launcher([("alpha", str(tmp_path / "alpha-venv"))], shared=str(tmp_path / "shared-venv"),
                               skills_root=str(skills)))
    script.chmod(0o755)
    os.symlink(skills / "alpha" / "scripts", tmp_path / "link-to-alpha")

    def run(*args: str, cwd: Path = tmp_path) -> str:
        return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()

    return skills, run


def test_the_launcher_runs_an_isolated_skills_scripts_with_its_venv_and_everything_else_shared(launch, tmp_path):
    skills, run = launch
    alpha = f"{skills}/alpha/scripts/run.py"
    assert run(alpha, "--flag") == f"alpha-venv {alpha} --flag"
    assert run("-u", "-W", "ignore", "-X", "dev", alpha).startswith("alpha-venv -u -W ignore")
    assert run("--", alpha).startswith("alpha-venv")
    assert run("scripts/run.py", cwd=skills / "alpha").startswith("alpha-venv")  # relative to the working folder
    assert run(str(tmp_path / "link-to-alpha" / "run.py")).startswith("alpha-venv")  # resolved, links followed
    assert run("-c", "print(1)", cwd=skills / "alpha" / "scripts").startswith("alpha-venv")  # no script: the folder
    for other in (f"{skills}/alpha-two/run.py", f"{skills}/beta/run.py", "/workspace/x.py", f"{skills}/alpha"):
        assert run(other).startswith("shared-venv"), other
    assert run("-c", f"open('{alpha}')").startswith("shared-venv")  # -c: the code is not a script path
    assert run("-m", "pip", cwd=tmp_path).startswith("shared-venv")
    assert run("--version") == "shared-venv --version"


def test_the_agent_is_told_which_skills_have_an_environment_of_their_own():
    text = system_prompt("<available_skills>\n</available_skills>\n", isolated=("skill-a",))
    assert "Python environments: skill-a has Python packages of its own. Run its scripts with `python3`" in text
    assert "Python environments" not in system_prompt("<available_skills>\n</available_skills>\n")


# ---------------------------------------------------------------------- in the engine


@pytest.fixture(scope="module")
def merge_wheels_in_index(index, tmp_path_factory):
    made = made_wheels(tmp_path_factory.mktemp("merge-wheels-served"))
    for path in made:
        index.files[path.name] = path
    yield index
    for path in made:
        del index.files[path.name]


SHOW = "#!/usr/bin/env python3\nimport sys, mergex\nprint('{name}', mergex.VERSION, sys.prefix)\n"


@pytest.mark.requires_docker
@pytest.mark.slow
def test_an_isolated_skill_runs_with_its_own_venv_and_the_others_share_one(project, merge_wheels_in_index, tmp_path,
                                                                           own_env_images):
    from .runs import invoke, make_skill, publish, run_outputs

    for name, requirement in (("skill-a", "mergex"), ("skill-b", "mergey")):
        publish(project, make_skill(tmp_path, name, SHOW.format(name=name), {"scripts/requirements.txt": requirement}))
    spec, lock = tmp_path / "skills.yaml", tmp_path / "skills.lock"
    spec.write_text("skills:\n  skill-a: ^1\n  skill-b: ^1\nenvironment:\n  debian: []\n")
    merged = invoke(project, "lock", "--requirements", str(spec), "--lock", str(lock))
    assert merged.exit_code == 0, merged.output
    assert "warning: skill skill-a: mergex 2.0 alone → 1.0 with the others (held back by skill-b)" in merged.stderr
    assert json.loads(lock.read_text())["environment"]["downgrades"][0]["alone"] == "2.0"
    shown = invoke(project, "env", "show", "skill-a", "skill-b", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["downgrades"] == [{"skill": "skill-a", "package": "mergex", "alone": "2.0",
                                                      "merged": "1.0", "held_by": ["skill-b"]}]

    spec.write_text("skills:\n  skill-a: ^1\n  skill-b: ^1\nenvironment:\n  isolate: [skill-a]\n")
    isolated = invoke(project, "lock", "--requirements", str(spec), "--lock", str(lock))
    assert isolated.exit_code == 0 and "warning:" not in isolated.stderr, isolated.output
    section = json.loads(lock.read_text())["environment"]
    assert section["format"] == 2 and list(section["isolated"]) == ["skill-a"] and "downgrades" not in section
    _, outputs = run_outputs(project, tmp_path, "--lock", str(lock), commands=[
        "python3 /skills/skill-a/scripts/run.py; /skills/skill-a/scripts/run.py; python3 /skills/skill-b/scripts/run.py",
        "cd /skills/skill-a && python -c 'import mergex; print(\"here\", mergex.VERSION)'; cd /workspace; "
        "python3 -c 'import mergex; print(\"shared\", mergex.VERSION)'; command -v python3",
    ])
    assert outputs.count("skill-a 2.0 /opt/skill-envs/skill-a") == 2, outputs  # via python3 and via the shebang
    assert "skill-b 1.0 /opt/skills-env" in outputs and "here 2.0" in outputs and "shared 1.0" in outputs, outputs
    assert "/opt/skillctl-env/bin/python3" in outputs
    # The same environment from the command line, no lock: the image is reused.
    result, outputs = run_outputs(project, tmp_path, "--skill", "skill-a", "--skill", "skill-b", "--isolate-env",
                                  "skill-a", commands=["python3 /skills/skill-a/scripts/run.py"])
    assert "skill-a 2.0 /opt/skill-envs/skill-a" in outputs and "is up to date" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(("change", "message"), [
    ({"isolated": ["skill-a"]}, "environment.isolated is malformed"),
    ({"isolated": {"Bad_Name": {"pylock": "x.toml"}}}, "environment.isolated: 'Bad_Name' is not a skill name"),
    ({"isolated": {"skill-a": {}}}, "environment.isolated.skill-a names no pylock"),
    ({"downgrades": [{"skill": "skill-a"}]}, "environment.downgrades is malformed"),
    ({"format": 3}, "the environment section is missing its format 1"),
])
def test_a_malformed_isolated_or_downgrades_entry_in_the_lock_is_one_line(change, message, merge_index, cache, tmp_path):
    lock = tmp_path / "skills.lock"
    env = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, isolation=Isolation(("skill-a",)))
    section = {**environment_section(env, lock), **change}
    with pytest.raises(EnvError, match=message):
        environment_from_section(section, lock)


def test_isolating_for_one_run_what_the_lock_does_not_isolate_is_refused(merge_index, cache, tmp_path):
    from skillctl.env.prepare import run_environment

    lock = tmp_path / "skills.lock"
    env = resolve_environment(DOWNGRADED, TARGET, index=merge_index.url, isolation=Isolation(("skill-a",)))
    section = environment_section(env, lock)
    with pytest.raises(EnvError, match=r"^the lock gives no environment of its own to skill-b; add it to skills.yaml "
                       r"environment: isolate"):
        run_environment([], None, "no-image-needed", lock_path=lock, lock_environment=section, isolate=("skill-b",))


@pytest.mark.parametrize("command", ["show", "build"])
def test_env_isolate_env_with_a_lock_is_a_usage_error(command, tmp_path):
    from .runs import invoke

    lock = tmp_path / "skills.lock"
    lock.write_text("{}")
    result = invoke({}, "env", command, "--lock", str(lock), "--isolate-env", "skill-a")
    assert result.exit_code == 2 and "--isolate-env resolves anew, and --lock resolves nothing" in result.output
    assert "Traceback" not in result.output
