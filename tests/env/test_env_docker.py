"""Environment images and runs in the real engine: skills' declared packages import in the
container with the network off. Wheels come from the loopback index; images are tagged by the
environment's hash, so later sessions reuse them."""

from __future__ import annotations

import json

import pytest

from .conftest import copy_skill, real_skill
from .runs import invoke, make_skill, publish, run_outputs, scripted

pytestmark = [pytest.mark.requires_docker, pytest.mark.slow]


def test_pep723_skill_imports_numpy_and_yaml_in_the_container_network_off(project, tmp_path):
    skill = make_skill(tmp_path, "stats", (
        "#!/usr/bin/env python3\n# /// script\n# dependencies = [\"numpy\", \"pyyaml\"]\n# ///\n"
        "import socket, numpy, yaml\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); net = 'on'\n"
        "except OSError:\n    net = 'off'\n"
        "print(yaml.safe_dump({'mean': float(numpy.mean([1, 2, 3, 6])), 'network': net}).strip())\n"
    ), {"scripts/later.py": "import numpy\nimport pandas\n"})  # not run: pandas is not declared
    publish(project, skill)
    result, outputs = run_outputs(project, tmp_path, "--skill", "stats",
                                  commands=["python3 /skills/stats/scripts/run.py", "/skills/stats/scripts/run.py"])
    assert outputs.count("mean: 3.0") == 2 and "network: 'off'" in outputs  # via PATH and via the shebang
    assert "building environment image skillctl-env:" in result.stderr or "is up to date" in result.stderr
    # the run checks every import against what the built environment's wheels provide
    assert ("warning: stats/scripts/later.py:2: imports 'pandas', which no distribution of the environment "
            "provides; declare 'pandas' (by the import-name map)") in result.stderr
    assert "imports 'numpy'" not in result.stderr and "imports 'yaml'" not in result.stderr
    again = invoke(project, "env", "build", "stats", "--format", "json")
    assert again.exit_code == 0 and "is up to date" in again.stderr, again.output
    doc = json.loads(again.stdout)
    assert doc["image"].startswith("skillctl-env:") and {p["name"] for p in doc["python"]} == {"numpy", "pyyaml"}


def test_requirements_txt_skill_and_project_declared_packages(project, tmp_path):
    skill = make_skill(tmp_path, "dates", (
        "#!/usr/bin/env python3\nimport dateutil.parser, six\nprint(dateutil.parser.parse('2024-02-29').date(), six.PY3)\n"
    ), {"scripts/requirements.txt": "python-dateutil\n"})
    publish(project, skill)
    (tmp_path / "skills.yaml").write_text("skills:\n  dates: ^1\nenvironment:\n  python: ['six==1.16.0']\n")
    lock = tmp_path / "skills.lock"
    made = invoke(project, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock))
    assert made.exit_code == 0 and "with its environment" in made.output, made.output
    section = json.loads(lock.read_text())["environment"]
    assert section["pylock"] == "pylock.skills.toml" and section["pylock_digest"].startswith("sha256:")
    pylock = (tmp_path / "pylock.skills.toml").read_text()
    assert 'name = "six"\nversion = "1.16.0"' in pylock and 'name = "python-dateutil"' in pylock
    _, outputs = run_outputs(project, tmp_path, "--lock", str(lock), commands=["python3 /skills/dates/scripts/run.py"])
    assert "2024-02-29 True" in outputs


def test_run_skill_in_a_project_gets_the_projects_environment_without_a_lock(project, tmp_path, monkeypatch):
    # The skill declares nothing; the project's skills.yaml does. Without a lock, `run --skill` in
    # that folder used the plain image and the script failed to import.
    skill = make_skill(tmp_path, "plainer", "#!/usr/bin/env python3\nimport six\nprint('six', six.__version__)\n")
    publish(project, skill)
    (tmp_path / "skills.yaml").write_text("skills:\n  plainer: ^1\nenvironment:\n  python: ['six==1.16.0']\n")
    monkeypatch.chdir(tmp_path)
    _, outputs = run_outputs(project, tmp_path, "--skill", "plainer", commands=["python3 /skills/plainer/scripts/run.py"])
    assert "six 1.16.0" in outputs, outputs


def test_a_lock_refuses_a_wheel_whose_bytes_changed_on_the_index(project, tmp_path, index, monkeypatch):
    skill = make_skill(tmp_path, "pinned", "#!/usr/bin/env python3\nimport six\n",
                       {"scripts/requirements.txt": "six==1.16.0\n"})
    publish(project, skill)
    (tmp_path / "skills.yaml").write_text("skills:\n  pinned: ^1\n")
    lock = tmp_path / "skills.lock"
    assert invoke(project, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock)).exit_code == 0
    name = next(n for n in index.files if n.startswith("six-1.16.0"))
    original = index.files[name]
    data = bytearray(original.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / name).write_bytes(bytes(data))
    other_machine = dict(project, SKILLCTL_CACHE_DIR=str(tmp_path / "fresh-cache"))
    index.files[name] = tmp_path / name
    try:
        refused = invoke(other_machine, "install", "--frozen", "--requirements", str(tmp_path / "skills.yaml"),
                         "--lock", str(lock), "-o", str(tmp_path / "out"))
    finally:
        index.files[name] = original
    assert refused.exit_code == 1 and "is pinned; refusing it" in refused.stderr, refused.output
    assert not (tmp_path / "out").exists()
    ok = invoke(other_machine, "install", "--frozen", "--requirements", str(tmp_path / "skills.yaml"),
                "--lock", str(lock), "-o", str(tmp_path / "out"))
    assert ok.exit_code == 0, ok.output
    (tmp_path / "pylock.skills.toml").write_text((tmp_path / "pylock.skills.toml").read_text() + "\n")
    edited = invoke(other_machine, "install", "--frozen", "--requirements", str(tmp_path / "skills.yaml"),
                    "--lock", str(lock), "-o", str(tmp_path / "out2"))
    assert edited.exit_code == 1 and "pylock.skills.toml has digest" in edited.stderr, edited.output


def test_requires_python_is_one_rule_with_an_override_the_lock_records(project, tmp_path, monkeypatch):
    """getsentry's skill-writer asks for Python >= 3.12 and declares pyyaml; a skill that asks for
    3.12 and declares nothing else used to run while skill-writer was refused. Now both are
    refused, both run with --ignore-requires-python, and a lock made with it records it."""
    publish(project, copy_skill(real_skill("getsentry+skills", "skill-writer"), tmp_path), "--version", "1.0.0")
    publish(project, make_skill(tmp_path, "newer-only", "# /// script\n# requires-python = \">=3.12\"\n# ///\nprint('ran')\n"))
    for name, source in (("skill-writer", "scripts/quick_validate.py"), ("newer-only", "scripts/run.py")):
        result = invoke(project, "run", "--skill", name, "--model", scripted(tmp_path, ["true"]), "task")
        assert result.exit_code == 1, result.output
        assert (f"{name}: {source} (PEP 723) requires Python >=3.12, but the agent image has Python 3.11.2") in result.stderr
        assert f"pass --ignore-requires-python {name}" in result.stderr and "Traceback" not in result.output
    (tmp_path / "skills.yaml").write_text("skills:\n  skill-writer: ^1\n  newer-only: ^1\n")
    monkeypatch.chdir(tmp_path)
    refused = invoke(project, "lock")
    assert refused.exit_code == 1 and "pass --ignore-requires-python" in refused.stderr, refused.output
    assert not (tmp_path / "skills.lock").exists()
    made = invoke(project, "lock", "--ignore-requires-python", "skill-writer", "--ignore-requires-python", "newer-only",
                  "--ignore-requires-python", "not-here")
    assert made.exit_code == 0, made.output
    assert "--ignore-requires-python not-here: not a skill of this lock" in made.stderr
    assert "newer-only: scripts/run.py (PEP 723) requires Python >=3.12; the agent image has Python 3.11.2" in made.stderr
    assert json.loads((tmp_path / "skills.lock").read_text())["ignore_requires_python"] == ["newer-only", "skill-writer"]
    # The lock's record is enough: its script runs on 3.11 with the pyyaml it declares.
    _, outputs = run_outputs(project, tmp_path, "--lock", "skills.lock", commands=[
        "python3 /skills/skill-writer/scripts/quick_validate.py /skills/skill-writer; echo rc=$?",
        "python3 /skills/newer-only/scripts/run.py"])
    assert '"valid": ' in outputs and "Traceback" not in outputs and "\nran" in "\n" + outputs, outputs


def test_real_excel_skill_converts_a_workbook_offline_with_pandas(project, tmp_path):
    """awesome-copilot's convert-excel-to-md declares markitdown[xlsx] in its own
    requirements.txt; its script runs MarkItDown, which reads the workbook with pandas."""
    publish(project, copy_skill(real_skill("github+awesome-copilot", "convert-excel-to-md"), tmp_path), "--version", "1.0.0")
    make_book = (
        "python3 -c \"import openpyxl; wb = openpyxl.Workbook(); ws = wb.active; ws.title = 'Sales'; "
        "ws.append(['region', 'units']); ws.append(['north', 12]); ws.append(['south', 30]); wb.save('book.xlsx')\""
    )
    convert = "python3 /skills/convert-excel-to-md/scripts/convert_excel_to_md.py book.xlsx -o out && cat out/book.md"
    check = "python3 -c \"import pandas, numpy, socket; print('pandas', pandas.__version__)\""
    _, outputs = run_outputs(project, tmp_path, "--skill", "convert-excel-to-md", commands=[f"{make_book} && {convert} && {check}"])
    assert "## Sales" in outputs and "north" in outputs and "| 30" in outputs, outputs[:2000]
    assert "pandas " in outputs


class CountingRegistry:
    """The real registry, counting how often each bundle is fetched."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fetched: dict[str, int] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def fetch(self, skill):
        self.fetched[skill.name] = self.fetched.get(skill.name, 0) + 1
        return self.inner.fetch(skill)


def test_a_run_fetches_each_bundle_once_for_its_environment_and_its_loader(project, tmp_path, monkeypatch):
    from skillctl.registry import open_registry
    from skillctl.runtime import RunSpec, run

    publish(project, make_skill(tmp_path, "needs-six", "#!/usr/bin/env python3\nimport six\nprint('six', six.__version__)\n",
                                {"scripts/requirements.txt": "six==1.16.0\n"}))
    publish(project, make_skill(tmp_path, "plain", "#!/usr/bin/env python3\nprint('plain')\n"))
    for name, value in project.items():
        monkeypatch.setenv(name, value)
    with open_registry(project["SKILLCTL_REGISTRY"]) as registry:
        counting = CountingRegistry(registry)
        result = run(RunSpec(task="task", model=scripted(tmp_path, ["python3 /skills/needs-six/scripts/run.py"]),
                             skills=["needs-six", "plain"], registry=counting, transcript=tmp_path / "t.jsonl"))
    assert result.outcome == "answered", result.message
    assert counting.fetched == {"needs-six": 1, "plain": 1}
    assert "six 1.16.0" in (tmp_path / "t.jsonl").read_text()


def test_an_environment_with_one_more_package_reuses_the_others_parts(project, tmp_path, docker_client):
    """six | charset-normalizer + idna | pyyaml fall in three parts (by name): adding pyyaml
    builds its part only. The merged venv lists every package, scripts' shebangs name the
    venv's python, and the build log has uv's lines whole."""
    def part_ids():
        return {i["Id"] for i in docker_client.api.images(filters={"label": "org.skillctl.env.part"})}

    before, built, images = part_ids(), [], []
    try:
        base_set = ["six==1.17.0", "charset-normalizer==3.5.3", "idna==3.20"]
        for name, python in (("first", base_set), ("second", base_set + ["pyyaml==6.0.4"])):
            (tmp_path / f"{name}.yaml").write_text(json.dumps({"skills": {}, "environment": {"python": python}}))
            result = invoke(project, "env", "build", "--requirements", str(tmp_path / f"{name}.yaml"), "--format", "json")
            assert result.exit_code == 0, result.output
            images.append(json.loads(result.stdout)["image"])
            if "building environment image" in result.stderr:
                built.append(images[-1])  # this test's own: removed at the end
        log = result.stderr
        assert "(4 wheel(s) in 3 part(s)" in log or "is up to date" in log, log[-3000:]
        if "is up to date" not in log:
            assert log.count("is built already") == 2, log[-3000:]  # six's part, and idna's with charset-normalizer's
            assert "   + pyyaml==6.0.4\n" in log and "\x1b[" not in log and "\n  ==\n" not in log
        script = ("import importlib.metadata as m; print(sorted(d.metadata['Name'].lower() for d in m.distributions()));"
                  "import yaml, six, idna, charset_normalizer; print('imports ok')")
        out = docker_client.containers.run(
            images[1], entrypoint=["/bin/sh", "-c"], remove=True, network_mode="none",
            command=[f'python3 -c "{script}" && head -1 "$(command -v normalizer)" && normalizer --version'],
        ).decode()
        assert "['charset-normalizer', 'idna', 'pyyaml', 'six']" in out and "imports ok" in out, out
        assert "#!/opt/skills-env/bin/python\n" in out and "3.5.3" in out, out
    finally:
        from .conftest import remove_images

        remove_images([*built, *(part_ids() - before)])
