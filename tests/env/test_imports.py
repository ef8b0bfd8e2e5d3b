"""Undeclared imports: validate's SK251 on real skills, and `skillctl env infer`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.skill import check_skill
from skillctl.env.imports import distribution_for

from .conftest import copy_skill, real_skill


def sk25x(report, code="SK251"):
    return [d for d in report.diagnostics if d.code == code]


def test_credit_risk_skill_imports_undeclared_scientific_packages():
    report = check_skill(real_skill("github+awesome-copilot", "datanalysis-credit-risk"))
    found = sk25x(report)
    by_file = {(d.file.split("datanalysis-credit-risk/")[1], d.line) for d in found}
    assert ("scripts/example.py", 9) in by_file  # import pandas as pd
    messages = " ".join(d.message for d in found)
    assert "imports 'sklearn'" in messages and "declare 'scikit-learn'" in messages
    assert "imports 'numpy'" in messages and "imports 'toad'" in messages
    # Its own modules (references/func.py, imported as references.func) are not third-party.
    assert "imports 'references'" not in messages
    assert all(d.severity == "warning" for d in found)


def test_eyeball_maps_import_names_to_distributions():
    messages = " ".join(d.message for d in sk25x(check_skill(real_skill("github+awesome-copilot", "eyeball"))))
    for module, dist in (("fitz", "PyMuPDF"), ("PIL", "Pillow"), ("docx", "python-docx")):
        assert f"imports '{module}'" in messages and f"declare '{dist}'" in messages
    assert "imports 'winreg'" not in messages  # standard library (on Windows), never a package


def test_declared_skills_and_local_modules_are_not_warned_about():
    for owner, name in (
        ("getsentry+skills", "skill-writer"),  # PEP 723: pyyaml provides yaml
        ("github+awesome-copilot", "convert-pdf-to-md"),  # requirements.txt: pymupdf provides fitz
        ("github+awesome-copilot", "mini-context-graph"),  # imports only its own modules
        ("github+awesome-copilot", "nano-banana-pro-openrouter"),  # PEP 723: openai
    ):
        assert sk25x(check_skill(real_skill(owner, name))) == [], name


def test_removing_the_declaration_brings_the_warning(tmp_path):
    skill = copy_skill(real_skill("getsentry+skills", "skill-writer"), tmp_path)
    script = skill / "scripts" / "quick_validate.py"
    script.write_text(script.read_text().replace('# dependencies = ["pyyaml"]', "# dependencies = []"))
    found = sk25x(check_skill(skill))
    assert [(d.line, d.column) for d in found] == [(25, 1)]
    assert "imports 'yaml'" in found[0].message and "declare 'PyYAML'" in found[0].message


def test_type_checking_imports_and_stdlib_are_ignored(tmp_path):
    skill = tmp_path / "quiet"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: quiet\ndescription: d\n---\nbody\n")
    (skill / "scripts" / "a.py").write_text(
        "#!/usr/bin/env python3\nfrom typing import TYPE_CHECKING\nimport json, sqlite3\n"
        "if TYPE_CHECKING:\n    import pandas\nfrom . import sibling\n"
    )
    assert sk25x(check_skill(skill)) == []


def test_an_unusable_requirements_txt_is_sk252(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-word-to-md"), tmp_path)
    (skill / "scripts" / "requirements.txt").write_text("-r ../other.txt\n")
    found = sk25x(check_skill(skill), "SK252")
    assert len(found) == 1 and "'-r' is not allowed" in found[0].message


def test_dotted_map_keys_win_over_their_top_level_name():
    assert distribution_for("google.protobuf.json_format") == "protobuf"
    assert distribution_for("yaml.constructor") == "PyYAML"
    assert distribution_for("somethingnew.sub") == "somethingnew"


def test_validate_prints_sk251_and_strict_fails_on_it():
    path = str(real_skill("github+awesome-copilot", "sql-server-table-reconciliation"))
    result = CliRunner().invoke(cli, ["validate", "--strict", path], catch_exceptions=False)
    assert result.exit_code == 1
    assert "SK251 warning imports 'mssql_python'" in result.output and "declare 'mssql-python'" in result.output


def test_env_infer_prints_a_pep723_block_to_paste():
    path = real_skill("github+awesome-copilot", "sql-server-table-reconciliation")
    result = CliRunner().invoke(cli, ["env", "infer", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        '# /// script\n# dependencies = [\n#     "mssql-python",\n#     "pandas",\n#     "pyarrow",\n# ]\n# ///\n'
    )
    as_json = CliRunner().invoke(cli, ["env", "infer", str(path), "--format", "json"], catch_exceptions=False)
    doc = json.loads(as_json.stdout)
    assert doc["missing"] == ["mssql-python", "pandas", "pyarrow"] and doc["declared"] == []


def test_env_infer_takes_a_published_skill_by_reference(tmp_path, monkeypatch):
    from skillctl.registry import open_registry
    from skillctl.registry.prepare import prepare_folder

    skill = copy_skill(real_skill("github+awesome-copilot", "sql-server-table-reconciliation"), tmp_path / "src")
    registry = tmp_path / "registry"
    with open_registry(str(registry), create=True) as reg:
        reg.publish(prepare_folder(skill, version="2.0.0"))  # a real skill, as it is: it declares no version
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(registry))
    by_ref = CliRunner().invoke(cli, ["env", "infer", "sql-server-table-reconciliation", "--format", "json"], catch_exceptions=False)
    assert by_ref.exit_code == 0, by_ref.output
    assert json.loads(by_ref.stdout)["missing"] == ["mssql-python", "pandas", "pyarrow"]
    gone = CliRunner().invoke(cli, ["env", "infer", "no-such-skill"], catch_exceptions=False)
    assert gone.exit_code == 1 and "no-such-skill" in gone.output and "Traceback" not in gone.output
    folder = CliRunner().invoke(cli, ["env", "infer", "./not/a/folder"], catch_exceptions=False)
    assert folder.exit_code == 2 and "no such folder" in folder.output


def test_env_infer_keeps_what_is_declared_and_adds_what_is_missing(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-pdf-to-md"), tmp_path)
    (skill / "scripts" / "extra.py").write_text("import yaml\n")
    result = CliRunner().invoke(cli, ["env", "infer", str(skill), "--as", "requirements"], catch_exceptions=False)
    assert result.stdout.splitlines() == ["markitdown[pdf]>=0.1.0", "pymupdf>=1.24.0", "PyYAML"]


def test_env_show_lists_declarations_in_merge_order_with_their_sources(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-pdf-to-md"), tmp_path)
    (skill / "scripts" / "first.py").write_text('# /// script\n# requires-python = ">=3.10"\n# dependencies = ["pyyaml"]\n# ///\n')
    (tmp_path / "skills.yaml").write_text("skills: {}\nenvironment:\n  python: [numpy]\n  debian: [jq]\n")
    result = CliRunner().invoke(cli, ["env", "show", str(skill), "--requirements", str(tmp_path / "skills.yaml"),
                                      "--no-resolve", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["declared"]
    assert [(d["requirement"], d["owner"]) for d in doc["python"]] == [
        ("pyyaml", "convert-pdf-to-md"), ("markitdown[pdf]>=0.1.0", "convert-pdf-to-md"),
        ("pymupdf>=1.24.0", "convert-pdf-to-md"), ("numpy", "project"),
    ]
    assert doc["requires_python"][0]["requirement"] == ">=3.10" and doc["debian"][0]["requirement"] == "jq"
    bad = CliRunner().invoke(cli, ["env", "show", str(real_skill("github+awesome-copilot", "convert-pdf-to-md")),
                                   "--requirements", str(tmp_path / "nope.yaml"), "--no-resolve"])
    assert bad.exit_code == 2


# ------------------------------------------------------------------------------ guards, evidence, provenance


def _skill(root, name, scripts: dict[str, str], skill_md: str = "body\n", extra: dict[str, str] | None = None):
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{skill_md}")
    for rel, text in {**{f"scripts/{k}": v for k, v in scripts.items()}, **(extra or {})}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


GUARDED = (
    "import os, sys, platform\n"
    "IS_WINDOWS = os.name == 'nt'\n"
    "def word():\n"
    "    try:\n"
    "        import win32com.client\n"
    "    except (ImportError, OSError):\n"
    "        return None\n"
    "try:\n"
    "    import ujson as json\n"
    "except ModuleNotFoundError:\n"
    "    import json\n"
    "if sys.platform.startswith('win'):\n"
    "    import winsound_helper\n"
    "else:\n"
    "    import termcolor\n"
    "if platform.system() == 'Darwin':\n"
    "    import Quartz\n"
    "if not IS_WINDOWS:\n"
    "    import pexpect\n"
    "import pythoncom\n"
)


def test_guarded_imports_are_optional_or_marked_and_never_an_unmarked_pywin32(tmp_path):
    skill = _skill(tmp_path, "guarded", {"g.py": GUARDED})
    result = CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    by_module = {i["module"]: i for i in doc["imports"]}
    assert by_module["win32com.client"]["caught"] and by_module["win32com.client"]["marker"] == 'sys_platform == "win32"'
    assert by_module["ujson"]["caught"] and by_module["ujson"]["marker"] is None and by_module["ujson"]["optional"]
    assert by_module["winsound_helper"]["marker"] == 'sys_platform == "win32"'
    assert by_module["termcolor"]["marker"] == 'sys_platform != "win32"' and by_module["termcolor"]["needed"]
    assert by_module["Quartz"]["marker"] == 'platform_system == "Darwin"' and not by_module["Quartz"]["needed"]
    assert by_module["pexpect"]["marker"] == 'os_name != "nt"'
    assert by_module["pythoncom"]["marker"] == 'sys_platform == "win32"'  # pywin32 exists for Windows only
    assert doc["missing"] == ['pexpect; os_name != "nt"', 'pywin32; sys_platform == "win32"',
                              'Quartz; platform_system == "Darwin"', 'termcolor; sys_platform != "win32"',
                              'winsound_helper; sys_platform == "win32"']
    assert doc["optional"] == ["ujson"]
    assert not any(r.split(";")[0].strip() == "pywin32" and ";" not in r for r in doc["requirements"])
    text = CliRunner().invoke(cli, ["env", "infer", str(skill)], catch_exceptions=False)
    assert "#     'pywin32; sys_platform == \"win32\"',\n" in text.stdout
    assert "optional: ujson (imported under an ImportError guard at scripts/g.py:9), not added" in text.stderr
    # and the validator does not ask to declare what the agent image (Linux) never imports
    messages = " ".join(d.message for d in sk25x(check_skill(skill)))
    for absent in ("win32com", "pythoncom", "ujson", "winsound_helper", "Quartz"):
        assert f"imports '{absent}'" not in messages
    assert "imports 'termcolor'" in messages and "imports 'pexpect'" in messages


def test_a_guarded_import_the_skills_text_asks_to_install_is_still_required(tmp_path):
    # eyeball's pattern: core modules imported under `except ImportError: fitz = None`, then
    # "pip install pymupdf" when they are missing
    skill = _skill(tmp_path, "core", {"c.py": "try:\n    import fitz\nexcept ImportError:\n    fitz = None\n"},
                   "```\npip3 install pymupdf\n```\n")
    doc = json.loads(CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"]).stdout)
    assert doc["missing"] == ["PyMuPDF"] and doc["optional"] == []
    assert doc["imports"][0]["evidence"] == {"file": "SKILL.md", "line": 6, "command": "pip3 install pymupdf"}


def test_install_lines_of_the_skills_text_choose_the_distribution(tmp_path):
    skill = _skill(
        tmp_path, "texty",
        {"a.py": "import fooz\nimport widgetlib\nimport cv2\nimport esm\nimport bar\n"},
        "Setup:\n\n    python -m pip install --upgrade -i https://example.org/simple \"fooz-client[extra]>=1.0\" && echo\n",
        {"install.sh": "#!/bin/sh\nuv pip install py-widgetlib opencv-python-headless ./local.whl -r requirements-dev.txt\n",
         "docs/notes.txt": "pipx install esm  # not the same esm\n"})
    doc = json.loads(CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"]).stdout)
    by_module = {i["module"]: i for i in doc["imports"]}
    assert (by_module["fooz"]["distribution"], by_module["fooz"]["provenance"]) == ("fooz-client", "text")
    assert by_module["fooz"]["why"].startswith("from SKILL.md:7 `python -m pip install fooz-client[extra]>=1.0`")
    assert (by_module["widgetlib"]["distribution"], by_module["widgetlib"]["provenance"]) == ("py-widgetlib", "text")
    assert (by_module["cv2"]["distribution"], by_module["cv2"]["provenance"]) == ("opencv-python-headless", "text")
    # esm: the map says fair-esm, and the text names `esm`, which the map knows also provides it
    assert (by_module["esm"]["distribution"], by_module["esm"]["provenance"]) == ("esm", "text")
    assert (by_module["bar"]["provenance"], by_module["bar"]["certain"]) == ("name", False)
    assert "fooz-client[extra]>=1.0" in doc["missing"] and "opencv-python-headless" in doc["missing"]
    assert doc["unknown"] == ["bar"]
    lines = CliRunner().invoke(cli, ["env", "infer", str(skill), "--as", "requirements"]).stdout.splitlines()
    assert "bar  # unknown — check" in lines


def test_a_missing_skill_local_module_is_unknown_not_a_pypi_package(tmp_path):
    skill = _skill(tmp_path, "local", {"draw.py": "import icons\nimport requests\n"},
                   "`scripts/draw.py` takes its shapes from `scripts/icons.py`.\n")
    result = CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"], catch_exceptions=False)
    doc = json.loads(result.stdout)
    assert doc["missing"] == ["requests"] and "icons" in doc["unknown"]
    icons = next(i for i in doc["imports"] if i["module"] == "icons")
    assert (icons["distribution"], icons["provenance"]) == (None, "local") and "icons.py" in icons["why"]
    message = " ".join(d.message for d in sk25x(check_skill(skill)))
    assert "imports 'icons', which looks like the skill's own module" in message and "declare 'icons'" not in message


def test_a_declaration_that_plausibly_provides_an_import_covers_it(tmp_path):
    skill = _skill(tmp_path, "covered", {"a.py": '# /// script\n# dependencies = ["parallel-web", "pytdc"]\n# ///\n'
                                                  "import parallel\nimport tdc\n"})
    assert sk25x(check_skill(skill)) == []
    doc = json.loads(CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"]).stdout)
    assert doc["missing"] == [] and {i["provenance"] for i in doc["imports"]} == {"declared"}


def test_a_handler_that_exits_or_a_broad_one_around_real_work_is_no_guard(tmp_path):
    skill = _skill(tmp_path, "strict", {"s.py": (
        "import sys\n"
        "try:\n    from rdkit import Chem\nexcept ImportError:\n    print('conda install rdkit')\n    sys.exit(1)\n"
        "try:\n    import lxml\nexcept ImportError as exc:\n    raise SystemExit(f'pip install lxml: {exc}')\n"
        "def load(path):\n    try:\n        import pandas\n        return pandas.read_csv(path)\n"
        "    except Exception as exc:\n        return {'error': str(exc)}\n"
        "try:\n    import orjson\n    HAVE_ORJSON = True\nexcept Exception:\n    HAVE_ORJSON = False\n")})
    doc = json.loads(CliRunner().invoke(cli, ["env", "infer", str(skill), "--format", "json"]).stdout)
    caught = {i["module"]: i["caught"] for i in doc["imports"]}
    assert caught == {"rdkit": False, "lxml": False, "pandas": False, "orjson": True}
    assert doc["missing"] == ["lxml", "pandas", "rdkit"] and doc["optional"] == ["orjson"]


def test_sk251_names_the_distribution_the_skills_text_gives_and_where(tmp_path):
    skill = _skill(tmp_path, "said", {"a.py": "import fooz\nimport zzguess\n"}, "Install with `pip install fooz-client`.\n")
    messages = [d.message for d in sk25x(check_skill(skill))]
    assert ("imports 'fooz' but no declared requirement provides it; declare 'fooz-client' (from SKILL.md:5 "
            "`pip install fooz-client`) in a PEP 723 block or requirements.txt (`skillctl env infer` prints one)") in messages
    assert any("declare 'zzguess' (a guess from the import name: check it)" in m for m in messages)
